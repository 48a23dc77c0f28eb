"""A hook's ask at ``POST /hooks/fire`` (issue 30, ``docs/ask.md``): how the forward client
that fired the event reaches a person, said in the request's query (covered by its v2 MAC,
so nobody on the way can change it).

==================================  ========================================================
query                               a hook's ask
==================================  ========================================================
(none)                              out of band: the server waits on the store until
                                    ``ask_timeout`` (``mcp-hooks approve``, ``/asks``)
``ask=now``                         the fallback at once, the ask left pending: for a
                                    client that gives up within seconds; the deny names
                                    the id, and after ``mcp-hooks approve ID`` the same
                                    call passes when fired again
``ask=native&channel=NAME``         the client's framework asks the person itself (the
                                    AgentScope Java middleware's user confirmation): a
                                    tool call's ask is deferred to it (the outcome allows
                                    and carries ``ask``, pending, so a later hook can still
                                    deny); any other ask is the fallback at once
``...&confirmed=ask-ID``            the person confirmed ``ask-ID`` through the framework:
                                    when it is the ask pending for exactly this call (the
                                    same session, tool and input), it is approved (channel
                                    ``NAME``, logged) and the chain goes on; for any other
                                    call it is not touched and the call is asked anew
==================================  ========================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mcp_hooks.engine.asking import HOST, NOBODY, nobody_waits
from mcp_hooks.errors import ConfigError
from mcp_hooks.spec.asking import ID_HEX, ID_PREFIX, Approver, AskAnswer, AskRequest

ASK, CHANNEL, CONFIRMED = "ask", "channel", "confirmed"  # the query's parameters
_CHANNEL = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")
_ASK_ID = re.compile(re.escape(ID_PREFIX) + f"[0-9a-f]{{{ID_HEX}}}")


def fire_approver(query: Mapping[str, str]) -> Approver | None:
    """The approver a ``/hooks/fire`` request's query asks for (the module docstring); None:
    out of band. Raises ``ConfigError`` naming the parameter that is wrong and the fix."""
    mode = query.get(ASK)
    extra = sorted(k for k in (CHANNEL, CONFIRMED) if k in query)
    if mode is None:
        if extra:
            raise ConfigError(f"query {extra[0]}= needs ask=native: add it, or drop "
                              f"{extra[0]}=")
        return None
    if mode == "now":
        if extra:
            raise ConfigError(f"query {extra[0]}= goes with ask=native, not ask=now")
        return nobody_waits
    if mode != "native":
        raise ConfigError(f"query ask={mode!r}: use ask=now or ask=native (or no ask= to "
                          "wait out of band)")
    channel = query.get(CHANNEL, "")
    if not _CHANNEL.fullmatch(channel):
        raise ConfigError(f"query channel={channel!r}: ask=native needs channel=NAME, the "
                          "framework that asks (lower case letters, digits, . _ -, at most "
                          "40), e.g. channel=agentscope-java")
    confirmed = query.get(CONFIRMED)
    if confirmed is not None and not _ASK_ID.fullmatch(confirmed):
        raise ConfigError(f"query confirmed={confirmed!r}: not an ask id (ask- and "
                          f"{ID_HEX} hex characters)")
    return _native(channel, confirmed)


def _native(channel: str, confirmed: str | None) -> Approver:
    async def framework_asks(request: AskRequest) -> AskAnswer:
        if confirmed is not None and request.id == confirmed:  # the ask of exactly this call
            return AskAnswer(True, by=channel, channel=channel)
        if request.event_type == "before_tool":
            return AskAnswer(True, channel=HOST)  # deferred: the framework asks the person
        return AskAnswer(False, channel=NOBODY)  # a stop's ask: the fallback at once
    return framework_asks


__all__ = ["fire_approver"]
