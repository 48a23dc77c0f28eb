"""The Redis store's Lua scripts (``redis.py``): each operation that must be atomic is one
script, run by ``EVALSHA`` (loaded again when the server lost it, a restart).
"""

from __future__ import annotations

# KEYS: the session's counter hash; ARGV: the key, ttl ms, MAX_COUNT. A value that is not a
# count from 1 to MAX_COUNT starts over (reported by the caller: the second result is 1)
INCREMENT = """
local v = redis.call('HGET', KEYS[1], ARGV[1])
local bad = 0
if v then
  local n = string.match(v, '^%d+$') and #v < 16 and tonumber(v) or nil
  if not n or n < 1 or n > tonumber(ARGV[3]) then
    redis.call('HDEL', KEYS[1], ARGV[1])
    bad = 1
  elseif n >= tonumber(ARGV[3]) then
    redis.call('HSET', KEYS[1], ARGV[1], n - 1)
  end
end
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
local ms = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[1]) < ms then redis.call('PEXPIRE', KEYS[1], ms) end
return {n, bad, v or ''}
"""

# KEYS: the record's seen-key, log stream, session stream (or ""), signal key (or "");
# ARGV: record JSON, caps, session stream ttl ms, signal ttl ms, seen ttl ms. A record whose
# id was seen is not added again (a replay, a retry after a lost reply): 0; else 1
APPEND = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[6]) then return 0 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'r', ARGV[1])
if KEYS[3] ~= '' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[3], '*', 'r', ARGV[1])
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
if KEYS[4] ~= '' then redis.call('SET', KEYS[4], ARGV[1], 'NX', 'PX', ARGV[5]) end
return 1
"""

# KEYS: answer, log stream, session stream (or ""); ARGV: answer JSON, ttl ms, caps
ANSWER = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'r', ARGV[1])
  if KEYS[3] ~= '' then
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'r', ARGV[1])
    redis.call('PEXPIRE', KEYS[3], ARGV[5])
  end
  return {1, ARGV[1]}
end
return {0, redis.call('GET', KEYS[1])}
"""

# KEYS: the ask key; ARGV: 1 when it must hold ARGV[2] now (0: must hold nothing), the value
# expected, the new value, ttl ms. 1 when swapped
SWAP = """
local v = redis.call('GET', KEYS[1])
if ARGV[1] == '0' then
  if v then return 0 end
elseif v ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return 1
"""

SCRIPTS = (INCREMENT, APPEND, ANSWER, SWAP)

__all__ = ["ANSWER", "APPEND", "INCREMENT", "SCRIPTS", "SWAP"]
