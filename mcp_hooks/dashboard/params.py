"""The dashboard's query parameters, checked: a bad one is a ``ParamError`` naming it and
what it takes (the endpoint answers 400 with it)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from mcp_hooks.dashboard.source import DECISIONS, MAX_LIMIT, Filters
from mcp_hooks.errors import ConfigError

DEFAULT_LIMIT = 200
MAX_WORD = 256  # characters of a session id, hook name or door
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}(:\d{2}(:\d{2}(\.\d{1,6})?)?)?Z?)?")
WINDOWS = {"15m": 900, "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400, "all": 0}


class ParamError(ConfigError):
    """A query parameter the dashboard does not take."""


def _word(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if len(value) > MAX_WORD or not value.isprintable():
        raise ParamError(f"{name}: at most {MAX_WORD} printable characters")
    return value


def _stamp(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name)
    if not value:
        return None
    if not _STAMP.fullmatch(value):
        raise ParamError(f"{name}: {value[:40]!r} is not a UTC time like "
                         "2026-01-15T10:30:00Z (or a prefix of one: 2026-01-15)")
    return value.rstrip("Z")


def event_filters(params: Mapping[str, str]) -> Filters:
    """The Activity filters (``session`` or ``id``, ``hook``, ``decision``, ``door``,
    ``since``, ``until``)."""
    decision = _word(params, "decision")
    if decision is not None and decision not in DECISIONS:
        raise ParamError(f"decision: {decision[:40]!r} is none of {', '.join(DECISIONS)}")
    return Filters(session=_word(params, "session") or _word(params, "id"),
                   hook=_word(params, "hook"), decision=decision, door=_word(params, "door"),
                   since=_stamp(params, "since"), until=_stamp(params, "until"))


def limit_of(params: Mapping[str, str]) -> int:
    """``limit``: how many events, 1 to ``MAX_LIMIT`` (default ``DEFAULT_LIMIT``)."""
    raw = params.get("limit")
    if raw is None or raw == "":
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise ParamError(f"limit: {raw[:40]!r} is not a whole number from 1 to {MAX_LIMIT}")
    return int(raw)


def hooks_window(params: Mapping[str, str]) -> str | None:
    """``window`` (``15m``, ``1h``, ``6h``, ``24h`` (default), ``7d``, ``all``) as the
    ``since`` stamp it means (None for ``all``)."""
    window = params.get("window") or "24h"
    if window not in WINDOWS:
        raise ParamError(f"window: {window[:40]!r} is none of {', '.join(WINDOWS)}")
    seconds = WINDOWS[window]
    if not seconds:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - seconds))


__all__ = ["DEFAULT_LIMIT", "WINDOWS", "ParamError", "event_filters", "hooks_window",
           "limit_of"]
