"""A minimal HTTP/1.1 client for the raw channel to a plain ``http://`` upstream: POSTs on
kept-alive connections (a pool, shared by every downstream session), each request written in
one piece (headers and body: one segment, where a general client writes two), the answer read
whole (``Content-Length``, or chunked up to its last chunk: an SSE answer ends with the
request's answer). ``upstream_http.HttpChannel`` uses it; ``https://`` upstreams, proxies and
redirects stay with the SDK transport's ``httpx2`` client.

A connection goes back to the pool only after a whole answer that does not ask to close it; a
caller that gives up (cancelled) closes its connection, which is how the upstream hears it. A
kept-alive connection the server has closed meanwhile (no byte of an answer came back) is
retried once on a new one. Errors are ``OSError`` (``ConnectionError`` for a connection that
ended early, ``ValueError`` for an answer that is not HTTP/1.1).
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from urllib.parse import urlsplit

_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]
POOL_SIZE = 32  # idle connections kept per upstream
_LINE_LIMIT = 1 << 16


def plain_http(url: str, headers: dict[str, str]) -> bool:
    """Whether this client serves ``url`` (``http://``, no user info) with ``headers`` (each
    one line of latin-1: anything else is left to ``httpx2``, which says what is wrong)."""
    parts = urlsplit(url)
    try:
        text = "".join(f"{k}{v}" for k, v in headers.items()).encode("latin-1")
    except UnicodeEncodeError:
        return False
    return parts.scheme == "http" and bool(parts.hostname) and parts.username is None \
        and b"\r" not in text and b"\n" not in text


class HttpWire:
    """POSTs to one ``http://`` endpoint on kept-alive connections.

    Args:
        url: the endpoint (``plain_http``).
        headers: sent with every request (the upstream's configured headers).
    """

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or ""
        self._port = parts.port or 80
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        netloc = parts.netloc
        fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items() if k.lower() != "host")
        self._head = f"POST {path} HTTP/1.1\r\nhost: {netloc}\r\n{fixed}"
        self._idle: list[_Conn] = []

    async def post(self, body: bytes, headers: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        """Status, headers (lower-case names) and body of the answer to one POST."""
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        request = (f"{self._head}{extra}content-length: {len(body)}\r\n\r\n").encode(
            "latin-1") + body
        while self._idle:
            conn = self._idle.pop()
            if conn[1].is_closing():
                continue
            answer = await self._exchange(conn, request, reused=True)
            if answer is not None:
                return answer
        conn = await asyncio.open_connection(self._host, self._port, limit=_LINE_LIMIT)
        answer = await self._exchange(conn, request, reused=False)
        assert answer is not None
        return answer

    async def _exchange(self, conn: _Conn, request: bytes, *, reused: bool
                        ) -> tuple[int, dict[str, str], bytes] | None:
        reader, writer = conn
        done = False
        try:
            writer.write(request)
            try:
                status_line = await reader.readline()
            except ConnectionError:
                status_line = b""
            if not status_line and reused:  # closed while idle: the caller retries
                return None
            status, headers = await _head(reader, status_line)
            body = await _body(reader, headers)
            done = True
        finally:
            if not done:
                _close(writer)
        if headers.get("connection", "").lower() == "close" or len(self._idle) >= POOL_SIZE:
            _close(writer)
        else:
            self._idle.append(conn)
        return status, headers, body

    def close(self) -> None:
        """Close the idle connections."""
        while self._idle:
            _close(self._idle.pop()[1])


def _close(writer: asyncio.StreamWriter) -> None:
    with suppress(Exception):
        writer.close()


async def _head(reader: asyncio.StreamReader, status_line: bytes
                ) -> tuple[int, dict[str, str]]:
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        if not status_line:
            raise ConnectionError("the upstream closed the connection without an answer")
        raise ValueError(f"not an HTTP/1.1 answer: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
        length = headers.get("content-length")
        if length is not None:
            return await reader.readexactly(int(length))
        headers["connection"] = "close"  # the body ends with the connection
        return await reader.read()
    except asyncio.IncompleteReadError:
        raise ConnectionError("the upstream closed the connection in the middle of an "
                              "answer") from None
