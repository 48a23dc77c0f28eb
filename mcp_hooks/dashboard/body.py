"""A request's body read up to a cap, never past it (``read_capped``): the dashboard's
answers and the server's ``/asks`` and forward endpoints read theirs with it.

It lives in the dashboard's room because that is the lowest door that reads a body: the
server (a room above) may import it, the dashboard may import nothing of the server. It
imports no Starlette (the caller hands it the request), so importing it costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request

MAX_ANSWER_BODY = 1 << 16  # bytes of a person's answer to an ask (the dashboard, ``/asks``)


async def read_capped(request: Request, limit: int) -> bytes | None:
    """The request's body, or None when it is over ``limit`` bytes: refused on its
    ``Content-Length`` before any of it is read (one that is not a number too), or as soon
    as more has come (chunked)."""
    said = request.headers.get("content-length")
    if said is not None and (not said.isdigit() or len(said) > 18 or int(said) > limit):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


__all__ = ["MAX_ANSWER_BODY", "read_capped"]
