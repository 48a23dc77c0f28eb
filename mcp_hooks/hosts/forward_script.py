"""The forward script ``install --via server`` writes, and the token file beside it.

The script (standard library only, run by the host on every hook call) hands the host's
payload to a running ``mcp-hooks serve --transport http`` with a random nonce and prints the
answer if and only if it carries the HMAC-SHA256 of nonce and body keyed by the server's
token (``forward.sign``), so only the real server can answer; anything else (no server,
another program on the port, a wrong token, an error) runs the bridge locally instead. One
script serves every host installed that way: ``paths.config_dir()/mcp-hooks-forward.py``,
with the token in a 0600 header file beside it. ``uninstall`` removes the host entries that
call it, not these files.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp_hooks import paths
from mcp_hooks.hosts.base import HOOK_TIMEOUT_S
from mcp_hooks.hosts.configfile import FORWARD_SCRIPT
from mcp_hooks.hosts.forward import FORWARD_PATH, NONCE_HEADER, SIGNATURE_HEADER

HEADER_FILE = "forward.header"


def script_path() -> Path:
    """Where the forward script is written."""
    return paths.config_dir() / FORWARD_SCRIPT


def header_path() -> Path:
    """The 0600 file holding ``Authorization: Bearer <token>`` for the script."""
    return paths.config_dir() / HEADER_FILE


def read_token() -> str | None:
    """The token the forward script sends (None: not installed, or unreadable)."""
    try:
        text = header_path().read_text(encoding="utf-8")
    except OSError:
        return None
    return text.strip().partition("Bearer ")[2].strip() or None


FORWARD_SCRIPT_TEXT = '''\
# mcp-hooks forward: hand an agent host's hook payload to a running `mcp-hooks serve`
# (HTTP transport) and print its answer, if and only if the answer proves it comes from that
# server: the request carries a random nonce, the answer the HMAC-SHA256 of nonce + "\\n" +
# body keyed by the server's token. Anything else (no server, another program on the port,
# a wrong token, an error) runs the bridge locally instead: same answer, one start slower.
# Written by `mcp-hooks install --via server` (shared by every host installed that way;
# `mcp-hooks uninstall` removes the host entries that call it, not this file).
# Usage: python mcp-hooks-forward.py URL HOST EVENT [bridge options...]
# A plain http:// URL is spoken to by hand (one POST, Connection: close) with the
# interpreter's built-in modules only (_socket, _sha256): importing socket, json, urllib and
# hashlib costs more than the whole exchange. https://, or MCP_HOOKS_FORWARD_HTTP=library,
# uses http.client. Either way only a signed answer counts.
import os
import sys

HEADER = {header!r}
BRIDGE = {bridge!r}
TIMEOUT = {timeout}


UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"


def pct(text):
    """``text`` percent-encoded for a URL path segment or query value."""
    return "".join(c if c in UNRESERVED else "".join("%" + format(b, "02X")
                                                     for b in c.encode()) for c in text)


def split_url(url):
    """(scheme, host, port, path) of a URL, by hand (urllib.parse imports re)."""
    scheme, _, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rpartition("@")[2]
    if netloc.startswith("["):
        host, _, tail = netloc[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        host, _, port = netloc.partition(":")
    default = 443 if scheme == "https" else 80
    return scheme, host or "127.0.0.1", int(port) if port else default, slash + path


def proof(token, nonce, body):
    """The hex HMAC-SHA256 of nonce + "\\n" + body keyed by the token (RFC 2104)."""
    try:
        from _sha256 import sha256
    except ImportError:  # Python 3.12+: _sha2
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    key = token.encode()
    if len(key) > 64:
        key = sha256(key).digest()
    key = key + bytes(64 - len(key))
    inner = sha256(bytes(b ^ 0x36 for b in key) + nonce.encode() + b"\\n" + body).digest()
    return sha256(bytes(b ^ 0x5C for b in key) + inner).hexdigest()


def same(a, b):
    """Constant-time comparison of two strings."""
    try:
        from _operator import _compare_digest
    except ImportError:
        from hmac import compare_digest as _compare_digest
    return _compare_digest(a.encode(), b.encode())


def post_library(parts, path, headers, payload):
    """(status, headers by lowercase name, body) of one POST, through http.client."""
    from http.client import HTTPConnection, HTTPSConnection

    scheme, hostname, port, _ = parts
    kind = HTTPSConnection if scheme == "https" else HTTPConnection
    conn = kind(hostname, port, timeout=TIMEOUT)
    try:
        conn.request("POST", path, body=payload, headers=headers)
        response = conn.getresponse()
        body = response.read()
        return response.status, {{k.lower(): v for k, v in response.getheaders()}}, body
    finally:
        conn.close()


def post_plain(parts, path, headers, payload):
    """(status, headers by lowercase name, body) of one POST over plain HTTP/1.1, by hand.
    Anything it cannot read raises: the caller then lets the local bridge answer."""
    import _socket

    _, hostname, port, _ = parts
    address = ("[" + hostname + "]" if ":" in hostname else hostname) + ":" + str(port)
    head = ["POST " + path + " HTTP/1.1", "Host: " + address, "Connection: close",
            "Content-Length: " + str(len(payload))]
    head += [name + ": " + value for name, value in headers.items()]
    chunks = []
    sock, error = None, OSError("no address for " + hostname)
    try:  # bytes: a str host would import the idna codec (about 10 ms)
        name = hostname.encode("ascii")
    except UnicodeEncodeError:
        name = hostname.encode("idna")
    for family, kind, proto, _, where in _socket.getaddrinfo(name, port, 0,
                                                              _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(TIMEOUT)
            sock.connect(where)
            break
        except OSError as exc:
            sock.close()
            sock, error = None, exc
    if sock is None:
        raise error
    try:
        sock.sendall(("\\r\\n".join(head) + "\\r\\n\\r\\n").encode("latin-1") + payload)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    raw, sep, body = b"".join(chunks).partition(b"\\r\\n\\r\\n")
    if not sep:
        raise ValueError("no complete answer")
    status_line, *lines = raw.decode("latin-1").split("\\r\\n")
    status = int(status_line.split(" ", 2)[1])
    fields = {{}}
    for line in lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    elif "content-length" in fields:
        length = int(fields["content-length"])
        if len(body) < length:
            raise ValueError("answer cut short")
        body = body[:length]
    return status, fields, body


def dechunk(data):
    out = []
    while True:
        size, sep, data = data.partition(b"\\r\\n")
        if not sep:
            raise ValueError("chunk cut short")
        size = int(size.split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        if len(data) < size + 2:
            raise ValueError("chunk cut short")
        out.append(data[:size])
        data = data[size + 2:]


def forward(url, host, event, payload):
    """The server's verified answer (bytes), or None."""
    with open(HEADER, encoding="utf-8") as f:
        token = f.read().strip().partition("Bearer ")[2].strip()
    if not token:
        return None
    parts = split_url(url)
    nonce = os.urandom(16).hex()
    path = parts[3].rstrip("/") + "{path}" + pct(host) + "?event=" + pct(event)
    headers = {{"Authorization": "Bearer " + token, "Content-Type": "application/json",
               "{nonce_header}": nonce}}
    library = parts[0] != "http" or os.environ.get("MCP_HOOKS_FORWARD_HTTP") == "library"
    status, fields, body = (post_library if library else post_plain)(parts, path, headers,
                                                                      payload)
    if status != 200:
        return None
    signature = fields.get("{signature_header}".lower()) or ""
    if not same(signature, proof(token, nonce, body)):
        sys.stderr.write("mcp-hooks forward: the answer from " + url + " did not prove it came "
                         "from the mcp-hooks server (no valid signature); ignored, the local "
                         "bridge answers\\n")
        return None
    return body


def main():
    url, host, event = sys.argv[1:4]
    payload = sys.stdin.buffer.read()
    try:
        body = forward(url, host, event, payload)
    except Exception:
        body = None
    if body is not None:
        if body:
            sys.stdout.buffer.write(body.rstrip(b"\\n") + b"\\n")
        return 0
    import subprocess

    argv = [*BRIDGE, "bridge", host, "--event", event, *sys.argv[4:]]
    try:
        done = subprocess.run(argv, input=payload, stdout=subprocess.PIPE)
    except OSError as exc:
        sys.stderr.write("mcp-hooks forward: cannot run the bridge " + repr(argv) + " (" + str(exc)
                         + "); blocked. Fix: run `mcp-hooks doctor`, or reinstall: "
                         "uv tool install . in a checkout of mcp-hooks (uv tool install "
                         "mcp-hooks once it is on PyPI), then mcp-hooks install " + host + "\\n")
        return 1 if os.environ.get("MCP_HOOKS_ON_FAULT", "").strip().lower() == "warn" else 2
    sys.stdout.buffer.write(done.stdout)
    return done.returncode


sys.exit(main())
'''


def write_forward_files(token: str, bridge: list[str], *, dry_run: bool) -> Path:
    """Write the forward script (falling back to ``bridge``, an argv that starts mcp-hooks)
    and its token file, unless ``dry_run``; returns the script's path. Raises OSError."""
    script, header = script_path(), header_path()
    if dry_run:
        return script
    script.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(header, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"Authorization: Bearer {token}\n")
    os.chmod(header, 0o600)
    script.write_text(FORWARD_SCRIPT_TEXT.format(
        timeout=HOOK_TIMEOUT_S, header=str(header), path=FORWARD_PATH, bridge=bridge,
        nonce_header=NONCE_HEADER, signature_header=SIGNATURE_HEADER,
    ))
    os.chmod(script, 0o644)
    return script


__all__ = ["header_path", "read_token", "script_path", "write_forward_files"]
