"""The forward script ``install --via server`` writes, and the token file beside it.

The script (standard library only, run by the host on every hook call) hands the host's
payload to a running ``mcp-hooks serve --transport http`` as a forward protocol v2 request
(``forward_auth``): a fresh nonce, its clock and an HMAC-SHA256 over the request keyed by the
token, never the token itself. It prints the answer if and only if it is signed over that
request with the token, so only the real server can answer it; anything else (no server,
an unproven answer, an answer over ``forward_http.MAX_ANSWER_BYTES``, no answer within
``MCP_HOOKS_FORWARD_TIMEOUT`` seconds, default 5, for the whole exchange) runs the bridge
locally instead, with one line on stderr saying why. An error status from the URL (unsigned
and not 200, or signed and neither 200 nor 422: a proxy's 404 for a path it does not route, a
401 for a wrong token, a 5xx) blocks the call instead (exit 2, or 1 under
``MCP_HOOKS_ON_FAULT=warn``), naming the URL and the status: the configured policy server's
path is broken, and the hook must not be decided quietly on this machine. The exchange is
``forward_http``'s text, which the script carries. One script
serves every host installed that way: ``paths.config_dir()/mcp-hooks-forward.py``, with the
token in a 0600 header file beside it. ``uninstall`` removes the host entries that call it,
not these files.

Start-up (issue 34): the host runs it as ``python -I -S`` (no site-packages, nothing from the
current folder) and it is two files: the script, a few lines that load the body
(``mcp-hooks-forward-body.py`` beside it) from its cached bytecode, which Python's own
loader writes to ``__pycache__/`` on the first run and checks on every run (a new
interpreter compiles its own), so no call pays for compiling 300 lines; once its answer is
flushed it leaves with ``os._exit`` (the interpreter's teardown was half of its own CPU
time). A body that cannot be loaded blocks the call (exit 2, 1 under
``MCP_HOOKS_ON_FAULT=warn``), naming the file and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp_hooks import paths
from mcp_hooks.hosts import forward_http
from mcp_hooks.hosts.configfile import FORWARD_SCRIPT
from mcp_hooks.hosts.forward import FORWARD_PATH
from mcp_hooks.hosts.forward_auth import (
    AUTH_HEADER,
    DEFAULT_FORWARD_TIMEOUT_S,
    FORWARD_TIMEOUT_ENV,
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIME_HEADER,
)

HEADER_FILE = "forward.header"
BODY_FILE = "mcp-hooks-forward-body.py"  # beside the script, which runs it


def script_path() -> Path:
    """Where the forward script is written."""
    return paths.config_dir() / FORWARD_SCRIPT


def body_path() -> Path:
    """Where the forward script's body is written."""
    return paths.config_dir() / BODY_FILE


def header_path() -> Path:
    """The 0600 file holding the script's token (as ``Authorization: Bearer <token>``, a
    format older scripts sent as it stands; the script now only keys its MACs with it)."""
    return paths.config_dir() / HEADER_FILE


def read_token() -> str | None:
    """The token the forward script signs with (None: not installed, or unreadable)."""
    try:
        text = header_path().read_text(encoding="utf-8")
    except OSError:
        return None
    return text.strip().partition("Bearer ")[2].strip() or None


STUB_TEXT = '''\
# mcp-hooks forward: hand an agent host's hook payload to a running `mcp-hooks serve`
# (HTTP transport) and print its answer, if and only if the answer proves it comes from that
# server in answer to this very request (forward protocol v2, docs/safety.md "Forward path").
# The token is never sent (it stays in its 0600 file): the request carries a nonce, the time,
# MAC = HMAC-SHA256(token, "mcp-hooks/2 request" + method, path, nonce, time, folder headers,
# sha256(body)); the answer must carry HMAC-SHA256(token, "mcp-hooks/2 answer" + nonce, MAC,
# status, sha256(answer)). Anything else (no server, an unproven answer, an answer over
# MAX_ANSWER_BYTES, no answer within {timeout_env} seconds, default {timeout:g}, for the
# whole exchange) runs the bridge locally instead, with one line on stderr: same answer, one
# start slower. An error status from the URL (a proxy's 404, a 401 for a wrong token, a 5xx)
# blocks the call (exit 2), naming the URL and status.
# Written by `mcp-hooks install --via server` (shared by every host installed that way;
# `mcp-hooks uninstall` removes the host entries that call it, not this file).
# Usage: python mcp-hooks-forward.py URL HOST EVENT [bridge options...]
# A plain http:// URL is spoken to by hand (one POST, Connection: close) with the
# interpreter's built-in modules only (_socket, _sha256): importing socket, json, urllib and
# hashlib costs more than the whole exchange. https://, or MCP_HOOKS_FORWARD_HTTP=library,
# uses http.client. Either way only a signed answer counts. The exchange below the line
# "the forward script carries this module" is mcp_hooks/hosts/forward_http.py, copied.
# This file is the small part the host runs (`python -I -S`: the standard library only, no
# site-packages, nothing from the current folder) and holds this installation's settings;
# the code is in {body_name} beside it, which it runs from its cached bytecode
# (__pycache__/, written on the first run), so no call pays for compiling it. If that file
# cannot be loaded, the call is blocked (exit 2), naming it.
import sys

HEADER = {header!r}
BRIDGE = {bridge!r}
DEFAULT_TIMEOUT = {timeout!r}
BODY = {body!r}

try:
    from _frozen_importlib_external import SourceFileLoader  # CPython: already loaded
except ImportError:
    from importlib.machinery import SourceFileLoader
try:
    CODE = SourceFileLoader("mcp_hooks_forward_body", BODY).get_code("mcp_hooks_forward_body")
except Exception as exc:
    sys.stderr.write("mcp-hooks forward: cannot load " + BODY + " (" + type(exc).__name__
                     + ": " + str(exc) + "); blocked. Fix: mcp-hooks install "
                     + (sys.argv[2] if len(sys.argv) > 2 else "HOST")
                     + " --via server (writes it again)\\n")
    import os

    sys.exit(1 if os.environ.get("MCP_HOOKS_ON_FAULT", "").strip().lower() == "warn" else 2)
exec(CODE)
'''

BODY_TEXT = '''\
# mcp-hooks forward, its code: run by mcp-hooks-forward.py beside it, which defines HEADER,
# BRIDGE and DEFAULT_TIMEOUT (see its comments); not a program of its own. Written by
# `mcp-hooks install --via server`; the same for every installation of one mcp-hooks.
from __future__ import annotations

import os
import sys
import time


UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
FIXES = {{404: ": nothing answers there: route /hooks/ to the server (docs/deploy.md) and "
              "serve it with --token",
         401: ": the server refused the request's signature (not its token)"}}


def pct(text):
    \"\"\"``text`` percent-encoded for a URL path segment or query value.\"\"\"
    return "".join(c if c in UNRESERVED else "".join("%" + format(b, "02X")
                                                     for b in c.encode()) for c in text)


def split_url(url):
    \"\"\"(scheme, host, port, path) of a URL, by hand (urllib.parse imports re).\"\"\"
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


def sha256():
    try:
        from _sha256 import sha256
    except ImportError:  # Python 3.12+: _sha2
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    return sha256


def proof(token, message):
    \"\"\"The hex HMAC-SHA256 of ``message`` (bytes) keyed by the token (RFC 2104).\"\"\"
    hash_ = sha256()
    key = token.encode()
    if len(key) > 64:
        key = hash_(key).digest()
    key = key + bytes(64 - len(key))
    inner = hash_(bytes(b ^ 0x36 for b in key) + message).digest()
    return hash_(bytes(b ^ 0x5C for b in key) + inner).hexdigest()


def request_mac(token, method, target, nonce, when, user_dir, project_dir, body):
    \"\"\"The request's MAC (forward protocol v2), hex.\"\"\"
    fields = [method, target, nonce, when, user_dir, project_dir, sha256()(body).hexdigest()]
    return proof(token, b"mcp-hooks/2 request\\n" + "\\n".join(fields).encode())


def answer_signature(token, nonce, mac, status, body):
    \"\"\"The signature the server's answer to that request must carry.\"\"\"
    fields = [nonce, mac, str(status), sha256()(body).hexdigest()]
    return "v2=" + proof(token, b"mcp-hooks/2 answer\\n" + "\\n".join(fields).encode())


def same(a, b):
    \"\"\"Constant-time comparison of two strings.\"\"\"
    try:
        from _operator import _compare_digest
    except ImportError:
        from hmac import compare_digest as _compare_digest
    return _compare_digest(a.encode(), b.encode())


def deadline_seconds():
    \"\"\"The deadline of the whole forward: {timeout_env}, else the default.\"\"\"
    value = os.environ.get("{timeout_env}", "").strip()
    if value:
        try:
            seconds = float(value)
        except ValueError:
            seconds = 0.0
        if 0 < seconds < float("inf"):
            return seconds
        sys.stderr.write("mcp-hooks forward: {timeout_env}=" + repr(value) + " is not a "
                         "positive number of seconds; using " + str(DEFAULT_TIMEOUT) + "\\n")
    return DEFAULT_TIMEOUT


{http}

def forward(url, host, event, payload):
    \"\"\"(the server's verified answer or None, why not): the answer's bytes when its
    signature proves the server holding the token answered this request.\"\"\"
    with open(HEADER, encoding="utf-8") as f:
        token = f.read().strip().partition("Bearer ")[2].strip()
    if not token:
        return None, "no token in " + HEADER
    seconds = deadline_seconds()
    deadline = time.monotonic() + seconds
    if len(payload) > MAX_REQUEST_BYTES:
        return None, ("the payload is " + str(len(payload)) + " bytes, over the cap of "
                      + str(MAX_REQUEST_BYTES) + " bytes the server reads")
    scheme, hostname, port, base = split_url(url)
    path = base.rstrip("/") + "{path}" + pct(host) + "?event=" + pct(event)
    nonce = os.urandom(16).hex()
    when = str(int(time.time()))
    mac = request_mac(token, "POST", path, nonce, when, "", "", payload)
    headers = {{"Content-Type": "application/json", "{nonce_header}": nonce,
               "{time_header}": when, "{auth_header}": "v2=" + mac}}
    library = scheme != "http" or os.environ.get("MCP_HOOKS_FORWARD_HTTP") == "library"
    try:
        if library:
            status, fields, body = post_library(scheme, hostname, port, path, headers, payload,
                                                deadline)
        else:
            status, fields, body = post_plain(hostname, port, path, headers, payload, deadline)
    except Exception as exc:
        if time.monotonic() >= deadline:
            return None, "no answer from " + url + " within " + str(seconds) + " s"
        if isinstance(exc, ValueError):
            return None, "no usable answer from " + url + ": " + str(exc)
        return None, "no answer from " + url + " (" + type(exc).__name__ + ": " + str(exc) + ")"
    signature = fields.get("{signature_header}".lower()) or ""
    signed = same(signature, answer_signature(token, nonce, mac, status, body))
    if status != 200 and (signed and status != 422 or not signature):
        raise Refused(url + " answered POST " + path.partition("?")[0] + " with HTTP "
                      + str(status) + ("" if signed else " (unsigned)") + FIXES.get(status, ""))
    if not signed:
        return None, ("the answer from " + url + " (HTTP " + str(status) + ") did not prove it "
                      "came from the mcp-hooks server (" + ("a wrong" if signature else "no")
                      + " signature)")
    if status != 200:
        return None, ""  # signed 422: the server asks the local bridge to answer (an exit code)
    return body, ""


class Refused(Exception):
    \"\"\"The server's address answered with an error status: the path to the server is
    broken (a proxy's 404, a 401 for a wrong token, a 5xx), so the call is blocked.\"\"\"


def main():
    url, host, event = sys.argv[1:4]
    payload = sys.stdin.buffer.read()
    try:
        body, why = forward(url, host, event, payload)
    except Refused as exc:
        sys.stderr.write("mcp-hooks forward: the policy server " + str(exc).replace("\\n", " ")
                         + "; blocked. Fix the server, or its URL and token: mcp-hooks install "
                         + host + " --via server --url URL --token TOKEN\\n")
        return 1 if os.environ.get("MCP_HOOKS_ON_FAULT", "").strip().lower() == "warn" else 2
    except Exception as exc:
        body, why = None, type(exc).__name__ + ": " + str(exc)
    if body is not None:
        if body:
            sys.stdout.buffer.write(body.rstrip(b"\\n") + b"\\n")
        return 0
    if why:
        sys.stderr.write("mcp-hooks forward: " + why.replace("\\n", " ")
                         + "; ignored, the local bridge answers\\n")
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


def finish(code):
    \"\"\"Exit with ``code`` once the answer is out, without the interpreter's teardown
    (half of the script's own CPU time): nothing is left to clean up.\"\"\"
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


finish(main())
'''


def http_text() -> str:
    """The text of ``forward_http`` the script carries (from its ``EMBED_FROM`` line on)."""
    source = Path(forward_http.__file__).read_text(encoding="utf-8")
    return source[source.index("\n" + forward_http.EMBED_FROM + "\n") + 1:].rstrip() + "\n"


def script_text(header: str, bridge: list[str], body: str) -> str:
    """The forward script a host runs: reading its token from ``header``, falling back to
    ``bridge``, running the code at ``body`` (``body_text``)."""
    return STUB_TEXT.format(timeout=DEFAULT_FORWARD_TIMEOUT_S, timeout_env=FORWARD_TIMEOUT_ENV,
                            header=header, bridge=bridge, body=body, body_name=BODY_FILE)


def body_text() -> str:
    """The forward script's code (``forward_http``'s exchange included)."""
    return BODY_TEXT.format(
        timeout_env=FORWARD_TIMEOUT_ENV, path=FORWARD_PATH, nonce_header=NONCE_HEADER,
        time_header=TIME_HEADER, auth_header=AUTH_HEADER, signature_header=SIGNATURE_HEADER,
        http="{http}",
    ).replace("{http}", http_text(), 1)


def write_forward_files(token: str, bridge: list[str], *, dry_run: bool) -> Path:
    """Write the forward script and its body (falling back to ``bridge``, an argv that
    starts mcp-hooks) and its token file, unless ``dry_run``; returns the script's path.
    The body's cached bytecode is removed, so its next run compiles the new text (a cache
    is checked by the source's mtime in seconds and size: a body rewritten within the
    second could pass as the old one). Raises OSError."""
    script, header, body = script_path(), header_path(), body_path()
    if dry_run:
        return script
    script.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(header, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"Authorization: Bearer {token}\n")
    os.chmod(header, 0o600)
    body.write_text(body_text())  # before the script that runs it
    os.chmod(body, 0o644)
    for cached in (body.parent / "__pycache__").glob(body.stem + ".*.pyc"):
        cached.unlink(missing_ok=True)
    script.write_text(script_text(str(header), bridge, str(body)))
    os.chmod(script, 0o644)
    return script


__all__ = ["body_path", "body_text", "header_path", "read_token", "script_path", "script_text",
           "write_forward_files"]
