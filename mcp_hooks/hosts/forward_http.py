"""One forwarded request and its answer over HTTP/1.1, bounded in time and in size: the client
half that ``fire --server`` (``fire_client.py``) and the forward script (``forward_script.py``)
share. The script runs outside the package, so it carries this module's text from
``EMBED_FROM`` on (standard library only, no import of mcp-hooks, nothing that needs
``from __future__`` beyond what the script starts with).

- **One deadline** over the whole exchange: every address tried, the request sent, each read
  of the answer gets the time left before it (``left``), never a fresh timeout, so a listener
  that drips one byte at a time costs the deadline and no more. ``https://`` goes through
  ``http.client`` (``post_library``), with a watchdog that shuts the socket at the deadline.
- **A cap on the answer**: at most ``MAX_HEAD_BYTES`` of status line and headers and
  ``MAX_ANSWER_BYTES`` of body (as sent: a chunked body's framing counts) are read; a longer
  answer, or one whose ``Content-Length`` says so, raises ``ValueError`` naming the cap
  before more is read. Reading stops once the said length has come.
- **Linear reassembly** of a chunked answer (``dechunk``: offsets, no copy of the rest).
- ``MAX_REQUEST_BYTES``: the most a client sends and the server reads of a request body
  (``forward.py`` refuses a longer one before reading it); a payload over it is not sent.

Every failure raises ``OSError`` (no connection, a reset, ``TimeoutError`` at the deadline)
or ``ValueError`` (not an HTTP answer, cut short, over a cap); the callers then let the local
hooks answer, saying why.
"""

from __future__ import annotations

EMBED_FROM = "# -- the forward script carries this module from here on --"
# -- the forward script carries this module from here on --
import _socket  # noqa: E402 - below the line the script starts its copy at
import time  # noqa: E402

MAX_ANSWER_BYTES = 4 << 20  # an outcome's largest part, a rewritten input: <= 1 MiB of stdout
MAX_HEAD_BYTES = 64 << 10  # the status line and headers of an answer
MAX_REQUEST_BYTES = 4 << 20  # a forwarded payload or event; the local hooks answer a larger one
READ_SIZE = 65536


def left(deadline: float) -> float:
    """Seconds left before ``deadline`` (``time.monotonic``); TimeoutError when none."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("the forward's deadline passed")
    return remaining


def over_cap(what: str, cap: int) -> ValueError:
    """The error for an answer past one of the caps, naming it."""
    return ValueError(f"{what} is over the cap of {cap} bytes ({cap / (1 << 20):g} MiB) a "
                      "forwarded answer may have; not read further")


def connect(host: str, port: int, deadline: float) -> _socket.socket:
    """A TCP connection to ``host``, each address tried within the time left."""
    try:  # bytes: a str host would import the idna codec (about 10 ms)
        name = host.encode("ascii")
    except UnicodeEncodeError:
        name = host.encode("idna")
    error = OSError(f"no address for {host}")
    for family, kind, proto, _, where in _socket.getaddrinfo(name, port, 0,
                                                              _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(left(deadline))
            sock.connect(where)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error


def post_plain(host: str, port: int, path: str, headers: dict[str, str], payload: bytes,
               deadline: float) -> tuple[int, dict[str, str], bytes]:
    """``(status, headers by lowercase name, body)`` of one POST over plain HTTP/1.1."""
    address = ("[" + host + "]" if ":" in host else host) + ":" + str(port)
    head = ["POST " + (path or "/") + " HTTP/1.1", "Host: " + address, "Connection: close",
            "Content-Length: " + str(len(payload))]
    head += [name + ": " + value for name, value in headers.items()]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload
    sock = connect(host, port, deadline)
    try:
        sock.settimeout(left(deadline))  # sendall: the timeout bounds the whole send
        sock.sendall(request)
        return read_answer(sock, deadline)
    finally:
        sock.close()


def read_answer(sock: _socket.socket, deadline: float) -> tuple[int, dict[str, str], bytes]:
    """The answer on ``sock``, read within the deadline and the caps."""
    data = bytearray()
    start = -1  # where the body starts, once the head is complete
    status = 0
    fields: dict[str, str] = {}
    length: int | None = None  # the body's length, when the head says it
    while True:
        sock.settimeout(left(deadline))  # the whole exchange, not each read, is bounded
        chunk = sock.recv(READ_SIZE)
        if not chunk:
            break
        data += chunk
        if start < 0:
            end = data.find(b"\r\n\r\n", max(0, len(data) - len(chunk) - 3))
            if end < 0:
                if len(data) > MAX_HEAD_BYTES:
                    raise over_cap("the answer's head", MAX_HEAD_BYTES)
                continue
            start = end + 4
            status, fields = parse_head(bytes(data[:end]))
            length = said_length(fields)
        if length is not None and len(data) - start >= length:
            break
        if len(data) - start > MAX_ANSWER_BYTES:
            raise over_cap("the answer", MAX_ANSWER_BYTES)
    if start < 0:
        raise ValueError("the answer ended before its headers did")
    body = bytes(data[start:])
    if length is not None:
        if len(body) < length:
            raise ValueError("the answer was cut short")
        return status, fields, body[:length]
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    return status, fields, body


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """``(status, headers by lowercase name)`` of an answer's head."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    if not version.startswith("HTTP/") or not rest[:3].isdigit():
        raise ValueError("not an HTTP answer: " + repr(status_line[:80]))
    fields = {}
    for line in lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(rest[:3]), fields


def said_length(fields: dict[str, str]) -> int | None:
    """The body length the headers give (None: chunked, or until the connection closes);
    ValueError when it is not a number or over the cap."""
    if fields.get("transfer-encoding", "").lower() == "chunked" or \
            "content-length" not in fields:
        return None
    text = fields["content-length"]
    if not text.isdigit() or len(text) > 18:
        raise ValueError("not an HTTP answer: Content-Length " + repr(text[:40]))
    if int(text) > MAX_ANSWER_BYTES:
        raise over_cap("the answer (Content-Length " + text + ")", MAX_ANSWER_BYTES)
    return int(text)


def dechunk(data: bytes) -> bytes:
    """The body of a chunked answer, in one pass (each chunk copied once)."""
    out = bytearray()
    at = 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            raise ValueError("a chunk was cut short")
        size_text = data[at:end].split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ValueError("not a chunked answer: chunk size " + repr(size_text[:20])) \
                from None
        if size == 0:
            return bytes(out)
        at = end + 2
        if size < 0 or len(data) < at + size + 2:
            raise ValueError("a chunk was cut short")
        out += data[at:at + size]
        at += size + 2


def post_library(scheme: str, host: str, port: int, path: str, headers: dict[str, str],
                 payload: bytes, deadline: float) -> tuple[int, dict[str, str], bytes]:
    """The same through ``http.client`` (``https://``), capped alike; a watchdog shuts the
    socket at the deadline, which wakes a read blocked past it."""
    # lazy: 40 ms of the forward script's start (http.client, threading); https only
    import threading

    # lazy: 40 ms of the forward script's start (http.client); https only
    from http.client import HTTPConnection, HTTPSConnection

    kind = HTTPSConnection if scheme == "https" else HTTPConnection
    conn = kind(host, port, timeout=left(deadline))

    def cut() -> None:
        sock = conn.sock
        if sock is not None:
            try:  # noqa: SIM105 - contextlib is one more import for the script; under TLS,
                _socket.socket.shutdown(sock, _socket.SHUT_RDWR)  # the raw socket
            except OSError:
                pass

    watchdog = threading.Timer(left(deadline), cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.request("POST", path or "/", body=payload, headers=headers)
        response = conn.getresponse()
        fields = {k.lower(): v for k, v in response.getheaders()}
        said_length(fields)
        buffer = bytearray(MAX_ANSWER_BYTES + 1)
        view, got = memoryview(buffer), 0
        while got <= MAX_ANSWER_BYTES:
            left(deadline)
            n = response.readinto(view[got:])
            if not n:
                break
            got += n
        left(deadline)
        if got > MAX_ANSWER_BYTES:
            raise over_cap("the answer", MAX_ANSWER_BYTES)
        return response.status, fields, bytes(view[:got])
    except Exception as exc:  # http.client and ssl raise more than OSError when cut
        if isinstance(exc, (OSError, ValueError)):
            raise
        raise ValueError(type(exc).__name__ + ": " + str(exc)) from None
    finally:
        watchdog.cancel()
        conn.close()


__all__ = ["MAX_ANSWER_BYTES", "MAX_HEAD_BYTES", "MAX_REQUEST_BYTES", "connect", "dechunk",
           "left", "over_cap", "parse_head", "post_library", "post_plain", "read_answer",
           "said_length"]
