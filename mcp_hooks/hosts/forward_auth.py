"""Forward protocol v2: a forwarded event's answer is believed only from the server that holds
the token, and only as the answer to the exact request that was sent.

Shared by the server's forwarding endpoints (``forward.py``), ``fire --server``
(``fire_client.py``) and ``doctor``; the forward script (``forward_script.py``) speaks it in
built-in modules only, and the AgentScope Java client from the same text. ``docs/safety.md``
("Forward path") says what each side proves.

The client never sends the token. Its request carries (header names case-insensitive)::

    X-MCP-Hooks-Nonce: 32 lowercase hex (16 random bytes, fresh per request)
    X-MCP-Hooks-Time:  the client's clock, integer Unix seconds
    X-MCP-Hooks-Auth:  v2=<hex HMAC-SHA256(key=token, msg=REQ)>
    REQ = "mcp-hooks/2 request\\n" METHOD "\\n" PATH_AND_QUERY "\\n" NONCE "\\n" TIME "\\n"
          USER_DIR_HEADER_VALUE "\\n" PROJECT_DIR_HEADER_VALUE "\\n" hex(SHA256(body))

``PATH_AND_QUERY`` is the request target as sent on the request line; an absent folder
header is the empty string. The server checks, in this order, before it reads the body: the
three headers are there and well-formed; its clock and ``TIME`` differ by at most
``MAX_SKEW_S``; it has not accepted the nonce (``RequestVerifier.early``). Then it reads the
body, at most ``forward_http.MAX_REQUEST_BYTES`` (``413`` past it, unread), and checks that
the MAC is the one its token makes (constant time) and claims the nonce for ``NONCE_TTL_S``,
in the shared state store when it has one (``StateStore.claim``). Any failure is ``401`` with
one line saying why, and nothing is fired. Every answer after the MAC check passed (200, 400,
404, 422, 503 when the shared store cannot be asked ...) is signed::

    X-MCP-Hooks-Signature: v2=<hex HMAC-SHA256(key=token, msg=ANS)>
    ANS = "mcp-hooks/2 answer\\n" NONCE "\\n" REQUEST_MAC_HEX "\\n" STATUS "\\n"
          hex(SHA256(answer body))

so a client checks the signature before it believes anything, a 4xx text included. All hex is
lowercase. Standard library only: ``fire`` imports this on its way to the server.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

# far below the hosts' hook timeout (HOOK_TIMEOUT_S, 600); Settings.forward_timeout reads it
from mcp_hooks.settings import DEFAULT_FORWARD_TIMEOUT_S

NONCE_HEADER = "X-MCP-Hooks-Nonce"
TIME_HEADER = "X-MCP-Hooks-Time"
AUTH_HEADER = "X-MCP-Hooks-Auth"
SIGNATURE_HEADER = "X-MCP-Hooks-Signature"
USER_DIR_HEADER = "X-MCP-Hooks-User-Dir"  # percent-encoded; the hooks the caller would load
PROJECT_DIR_HEADER = "X-MCP-Hooks-Project-Dir"
VERSION = "v2="
REQUEST_LABEL = b"mcp-hooks/2 request\n"
ANSWER_LABEL = b"mcp-hooks/2 answer\n"
MAX_SKEW_S = 300  # the most a request's time may differ from the server's clock
NONCE_TTL_S = 600  # how long an accepted nonce is remembered: 2 x MAX_SKEW_S covers any replay
MAX_NONCES = 200_000  # live nonces kept (some 40 MB at most); beyond, refused, never evicted
FORWARD_TIMEOUT_ENV = "MCP_HOOKS_FORWARD_TIMEOUT"

REPLAYED = "replayed nonce: this request was already answered"
SHARED_NONCE = "forward-nonce:"  # + nonce: its name in a shared store (``StateStore.claim``)
_NONCE = re.compile(r"[0-9a-f]{32}")
_TIME = re.compile(r"[0-9]{1,18}")
_MAC = re.compile(r"v2=[0-9a-f]{64}")


def _hmac(token: str, message: bytes) -> str:
    return hmac.new(token.encode("utf-8"), message, hashlib.sha256).hexdigest()


def request_mac(token: str, method: str, target: str, nonce: str, time_s: str, user_dir: str,
                project_dir: str, body: bytes) -> str:
    """The hex MAC of a request (``X-MCP-Hooks-Auth`` without ``v2=``).

    Args:
        token: the server's token.
        method: ``POST``.
        target: the path and query as sent on the request line (``/hooks/fire``).
        nonce: the request's nonce header.
        time_s: the request's time header (decimal Unix seconds).
        user_dir: the ``X-MCP-Hooks-User-Dir`` header as sent ("" when absent).
        project_dir: the ``X-MCP-Hooks-Project-Dir`` header as sent ("" when absent).
        body: the request body.
    """
    message = "\n".join((method, target, nonce, time_s, user_dir, project_dir,
                         hashlib.sha256(body).hexdigest()))
    return _hmac(token, REQUEST_LABEL + message.encode("utf-8"))


def answer_signature(token: str, nonce: str, mac: str, status: int, body: bytes) -> str:
    """The ``X-MCP-Hooks-Signature`` value of an answer (with ``v2=``) to the request whose
    nonce and hex MAC are given."""
    message = "\n".join((nonce, mac, str(status), hashlib.sha256(body).hexdigest()))
    return VERSION + _hmac(token, ANSWER_LABEL + message.encode("utf-8"))


# -- the client side --------------------------------------------------------------------------


@dataclass(frozen=True)
class SignedRequest:
    """The v2 headers of one request, and what its answer must be signed over."""

    nonce: str
    mac: str
    headers: dict[str, str]


def sign_request(token: str, target: str, body: bytes, *, user_dir: str = "",
                 project_dir: str = "", method: str = "POST", nonce: str | None = None,
                 now: float | None = None) -> SignedRequest:
    """The headers that authenticate a request to the server holding ``token``, without
    sending it: nonce, time, MAC, and the folder headers when given (already encoded)."""
    nonce = nonce or os.urandom(16).hex()
    time_s = str(int(time.time() if now is None else now))
    mac = request_mac(token, method, target, nonce, time_s, user_dir, project_dir, body)
    headers = {NONCE_HEADER: nonce, TIME_HEADER: time_s, AUTH_HEADER: VERSION + mac}
    if user_dir:
        headers[USER_DIR_HEADER] = user_dir
    if project_dir:
        headers[PROJECT_DIR_HEADER] = project_dir
    return SignedRequest(nonce, mac, headers)


def answer_problem(token: str, request: SignedRequest, status: int,
                   headers: Mapping[str, str], body: bytes) -> str | None:
    """Why an answer is not the server's answer to ``request`` (``headers`` by lowercase
    name), or None when its signature proves it is."""
    given = headers.get(SIGNATURE_HEADER.lower(), "")
    if not given:
        return "no signature"
    expected = answer_signature(token, request.nonce, request.mac, status, body)
    if not hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode()):
        return ("a signature that is not the server's answer to this request (another token, "
                "or an answer to another request)")
    return None


# -- the server side --------------------------------------------------------------------------


class Checked(NamedTuple):
    """A request's v2 check: the MAC its answer is signed over, or None and why (for 401)."""

    mac: str | None
    why: str = ""


class RequestVerifier:
    """The server's v2 check of a request, with the nonces it accepted (one per server
    process; the endpoints run on one event loop, and ``check`` does not await).

    ``early`` refuses what the headers alone show to be wrong, before the body is read; the
    MAC, which covers the body, is checked by ``check``. With ``shared`` (a ``--state`` store
    several replicas share: ``forward.py`` claims each accepted nonce there too), the
    nonces kept here only spare the store a call: when they are ``max_nonces``, the oldest is
    forgotten here instead of refusing, since the store remembers it.
    """

    def __init__(self, token: str, *, clock: Callable[[], float] = time.time,
                 max_nonces: int = MAX_NONCES, shared: bool = False) -> None:
        self._token = token
        self._clock = clock
        self._max = max_nonces
        self.shared = shared
        self._seen: OrderedDict[str, float] = OrderedDict()  # nonce -> expiry, oldest first

    def early(self, headers: Mapping[str, str]) -> str | None:
        """Why the request is refused from its headers alone (their form, the time window, a
        nonce already accepted here), or None: then read the body and ``check``."""
        nonce = headers.get(NONCE_HEADER.lower(), "")
        time_s = headers.get(TIME_HEADER.lower(), "")
        auth = headers.get(AUTH_HEADER.lower(), "")
        if not (_NONCE.fullmatch(nonce) and _TIME.fullmatch(time_s) and _MAC.fullmatch(auth)):
            return (f"not a v2 signed request: {NONCE_HEADER} (32 lowercase hex), "
                    f"{TIME_HEADER} (Unix seconds) and {AUTH_HEADER} (v2=<64 lowercase "
                    "hex>) are all required")
        now = self._clock()
        if abs(now - int(time_s)) > MAX_SKEW_S:
            return (f"clock skew: the request's time {time_s} is {int(time_s) - now:+.0f} s off "
                    f"the server's clock (at most {MAX_SKEW_S} s); set the clocks right")
        while self._seen and next(iter(self._seen.values())) <= now:
            self._seen.popitem(last=False)
        if nonce in self._seen:
            return REPLAYED
        return None

    def check(self, method: str, target: str, headers: Mapping[str, str],
              body: bytes) -> Checked:
        """Check one request (``headers`` looked up by lowercase name, as Starlette's are):
        ``early``, then the MAC; a request that passes has its nonce remembered here."""
        why = self.early(headers)
        if why is not None:
            return Checked(None, why)
        nonce = headers[NONCE_HEADER.lower()]
        mac = request_mac(self._token, method, target, nonce, headers[TIME_HEADER.lower()],
                          headers.get(USER_DIR_HEADER.lower(), ""),
                          headers.get(PROJECT_DIR_HEADER.lower(), ""), body)
        if not hmac.compare_digest(headers[AUTH_HEADER.lower()][len(VERSION):].encode(),
                                   mac.encode()):
            return Checked(None, f"{AUTH_HEADER} is not this server's MAC of the request: the "
                           "client holds another token, or the request was changed on the way")
        if len(self._seen) >= self._max:
            if not self.shared:
                return Checked(None, f"more than {self._max} forwarded requests in "
                               f"{NONCE_TTL_S} s; the replay guard is full, retry later")
            self._seen.popitem(last=False)
        self._seen[nonce] = self._clock() + NONCE_TTL_S
        return Checked(mac)


__all__ = ["AUTH_HEADER", "DEFAULT_FORWARD_TIMEOUT_S", "FORWARD_TIMEOUT_ENV", "MAX_SKEW_S",
           "NONCE_HEADER", "NONCE_TTL_S", "PROJECT_DIR_HEADER", "REPLAYED", "SHARED_NONCE",
           "SIGNATURE_HEADER",
           "TIME_HEADER", "USER_DIR_HEADER", "Checked", "RequestVerifier", "SignedRequest",
           "answer_problem", "answer_signature", "request_mac",
           "sign_request"]
