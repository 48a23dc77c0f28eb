"""The ask: a person approves one exact call (issue 30). The records every door shares.

A hook may answer ``ask`` instead of allow or deny. The engine then stops the chain until a
person answers (``engine/asking.py``), through the door's own approver when it has one (an
``Approver``: the CLI's y/N prompt, an MCP client's elicitation, an adapter's callback), else
out of band (``mcp-hooks pending`` / ``approve`` / ``refuse``, the HTTP endpoints, a webhook).

``AskRequest`` is what a person is shown and answers; ``AskAnswer`` is their answer. Both are
frozen stdlib dataclasses (like ``outcome.py``): a bridge builds one per ask and must not pay
for pydantic.

The binding: an approval covers exactly one call, named by ``binding_of`` = the hex SHA-256 of
the canonical JSON (sorted keys, no spaces, UTF-8) of ``[session, event, tool name, tool
input]``, the input as the tool will receive it (after the rewrites of the hooks before the
asking one). A changed input, another tool, another session or another event has another
binding and needs its own approval. "For this session" (``AskAnswer.for_session``) covers the
same binding again and again (the same tool with the same input in the same session), never
anything else; a plain approval covers one run.

The id: ``ask-`` and 10 hex characters of SHA-256 over the binding, the creation time and 16
random bytes (``secrets``): short enough to type on a phone, and not derivable from the call
(an agent that knows its own arguments cannot guess the id it would need to approve itself;
approving still needs the operator's channel: the CLI on the host, the token of ``serve``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

ID_PREFIX = "ask-"
ID_HEX = 10  # hex characters after the prefix
DEFAULT_ASK_TIMEOUT = 120.0  # seconds a door waits for an answer before its fallback
PENDING_TTL = 3600.0  # seconds an ask stays answerable (block now, approve, re-run)
GRANT_TTL = 86400.0  # seconds an unused approval (or a for-session one) stays valid


def canonical_json(value: Any) -> str:
    """The one canonical JSON text of a value: sorted keys, no spaces, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def binding_of(session_id: str | None, event_type: str, tool_name: str | None,
               tool_input: dict[str, Any] | None) -> str:
    """The hex SHA-256 naming exactly this call (see the module docstring)."""
    text = canonical_json([session_id, event_type, tool_name, tool_input])
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def new_ask_id(binding: str, created: float) -> str:
    """A fresh id for an ask of this binding (unguessable: 16 random bytes go in)."""
    # os.urandom, as secrets.token_hex does (importing secrets: 1.5 ms of every bridge start)
    seed = f"{binding}:{created!r}:{os.urandom(16).hex()}".encode()
    return ID_PREFIX + hashlib.sha256(seed).hexdigest()[:ID_HEX]


@dataclass(frozen=True)
class AskRequest:
    """One pending question to a person: may this exact call go on?

    Attributes:
        id: what a person types to answer (``ask-`` + 10 hex).
        binding: ``binding_of`` the call; an approval covers only this.
        session_id, event_type, tool_name, tool_input: the call, as the tool would get it.
        hook: the hook (or hooks.yaml entry) that asked.
        reason: the hook's reason, shown to the person.
        created, expires: epoch seconds; past ``expires`` the ask cannot be answered.
    """

    id: str
    binding: str
    session_id: str | None
    event_type: str
    tool_name: str | None
    tool_input: dict[str, Any] | None
    hook: str
    reason: str
    created: float
    expires: float

    @classmethod
    def new(cls, *, session_id: str | None, event_type: str, tool_name: str | None,
            tool_input: dict[str, Any] | None, hook: str, reason: str, created: float,
            ttl: float = PENDING_TTL) -> AskRequest:
        """A fresh ask of this call, answerable for ``ttl`` seconds."""
        binding = binding_of(session_id, event_type, tool_name, tool_input)
        return cls(id=new_ask_id(binding, created), binding=binding, session_id=session_id,
                   event_type=event_type, tool_name=tool_name, tool_input=tool_input,
                   hook=hook, reason=reason, created=created, expires=created + ttl)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "binding": self.binding, "session_id": self.session_id,
                "event_type": self.event_type, "tool_name": self.tool_name,
                "tool_input": self.tool_input, "hook": self.hook, "reason": self.reason,
                "created": self.created, "expires": self.expires}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AskRequest:
        """``as_dict``'s shape back. Raises ``KeyError``/``TypeError`` on another shape."""
        return cls(id=str(data["id"]), binding=str(data["binding"]),
                   session_id=data.get("session_id"), event_type=str(data["event_type"]),
                   tool_name=data.get("tool_name"), tool_input=data.get("tool_input"),
                   hook=str(data.get("hook") or ""), reason=str(data.get("reason") or ""),
                   created=float(data["created"]), expires=float(data["expires"]))


@dataclass(frozen=True)
class AskAnswer:
    """A person's answer to an ask.

    Attributes:
        approved: go on (True) or deny (False).
        reason: why (a refusal's reason reaches the agent).
        by: who answered, when known (``--by``, the token's name, the OS user).
        channel: how: ``cli``, ``tty``, ``http``, ``elicitation``, ``callback``, ``stored`` ...
        for_session: the approval covers this same call again in this session.
        at: epoch seconds of the answer (0: not recorded).
    """

    approved: bool
    reason: str = ""
    by: str = ""
    channel: str = ""
    for_session: bool = False
    at: float = field(default=0.0, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"approved": self.approved, "reason": self.reason, "by": self.by,
                "channel": self.channel, "for_session": self.for_session, "at": self.at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AskAnswer:
        return cls(approved=bool(data["approved"]), reason=str(data.get("reason") or ""),
                   by=str(data.get("by") or ""), channel=str(data.get("channel") or ""),
                   for_session=bool(data.get("for_session")), at=float(data.get("at") or 0))


def answer_of(data: Any, approved: bool, *, channel: str) -> AskAnswer:
    """The answer an HTTP body gives (``{"for_session": bool, "reason": "...", "by":
    "name"}``, every field optional but a refusal's reason), answered through ``channel``
    (also the name of who answered when the body gives none). Raises ``ValueError`` naming
    what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("the body must be a JSON object")
    by, reason, scope = data.get("by", ""), data.get("reason", ""), data.get("for_session")
    if not isinstance(by, str) or not isinstance(reason, str):
        raise ValueError("by and reason must be strings")
    if not approved and not reason.strip():
        raise ValueError('a refusal needs a "reason" for the agent')
    if scope is not None and not isinstance(scope, bool):
        raise ValueError("for_session must be true or false")
    return AskAnswer(approved, reason=reason, by=by.strip()[:200] or channel,
                     channel=channel, for_session=bool(scope) and approved)


@dataclass(frozen=True)
class AskRecord:
    """An ask as the store keeps it: the request, its answer (None: pending), whether a
    one-run answer was taken (``approval_for``)."""

    request: AskRequest
    answer: AskAnswer | None = None
    used: bool = False

    def pending(self, now: float) -> bool:
        return self.answer is None and now < self.request.expires

    def as_dict(self) -> dict[str, Any]:
        return {"request": self.request.as_dict(),
                "answer": None if self.answer is None else self.answer.as_dict(),
                "used": self.used}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AskRecord:
        answer = data.get("answer")
        return cls(AskRequest.from_dict(data["request"]),
                   None if answer is None else AskAnswer.from_dict(answer),
                   bool(data.get("used")))


@dataclass(frozen=True)
class Ask:
    """What a Python callable hook returns to ask a person to approve this call (a script
    hook prints ``{"decision": "ask", "reason": ...}``; hookkit: ``ask(reason)``)."""

    reason: str = ""


# A door's way to ask a person: None means no person is reachable through this door (the
# engine then waits out of band, then falls back: ``on_ask_unavailable``).
Approver = Callable[[AskRequest], Awaitable["AskAnswer | None"]]
