"""Each setting's value checked: the parsers ``Settings`` applies to a flag, a variable or a
field given directly, the table of which parser reads which field (``PARSE``), and the
defaults.

A parser takes the value and its ``source`` (the flag, the variable or the field that gave
it) and returns the value as ``Settings`` keeps it, or raises a ``ConfigError`` naming the
source and the fix. Nothing here reads the environment: ``mcp_hooks.settings`` does, once.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from mcp_hooks.errors import ConfigError

OnFault = Literal["block", "warn"]

DEFAULT_STOP_BLOCK_CAP = 8  # consecutive before_stop blocks per session, then the stop is let go
DEFAULT_FORWARD_TIMEOUT_S = 5.0  # seconds a whole forward to a server may take
# seconds the sync hooks of one event may take together (the longest one hook may run, so a
# chain never outlasts what a single hook could); a host bridge takes less: below its host's
DEFAULT_CHAIN_TIMEOUT_S = 600.0
DEFAULT_ENVIRONMENT = "development"
DEFAULT_ASK_TIMEOUT_S = 120.0  # seconds a door waits for a person's answer to an ask
OnAskUnavailable = Literal["deny", "allow"]
# where per-session state lives: the embedded files, or a shared store (state/url.py opens it)
MAX_REPLICA_ID = 128  # characters of --replica-id
MIN_TRUST_KEY = 16  # characters of MCP_HOOKS_TRUST_KEY
DEFAULT_MANAGED_DIR = "/etc/agents/hooks"  # the managed layer, where it exists
Mode = Literal["enforce", "audit"]
STATE_BACKENDS = ("file:", "redis://", "rediss://", "postgresql://", "postgres://")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")
_LOG_OFF = ("off", "0", "false", "none")


def _trust_key(value: object, source: str) -> str | None:
    key = str(value).strip()
    if key and len(key) < MIN_TRUST_KEY:
        raise _bad(source, "***", f"a key needs at least {MIN_TRUST_KEY} characters; "
                   "make one with `openssl rand -hex 32`")
    return key or None


def _bad(source: str, value: object, fix: str) -> ConfigError:
    return ConfigError(f"{source}={value!r}: {fix}")


def _on_ask_unavailable(value: str, source: str) -> OnAskUnavailable:
    word = value.strip().lower()
    if word == "deny":
        return "deny"
    if word == "allow":
        return "allow"
    raise _bad(source, value, "use deny (the default) or allow")


def _ask_seconds(value: object, source: str) -> float:
    """Seconds to wait for an answer: a number from 0 (do not wait) up."""
    try:
        seconds = float(str(value).strip().rstrip("s"))
    except ValueError:
        raise _bad(source, value, "give seconds, e.g. 120") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise _bad(source, value, "give seconds from 0 (do not wait) up, e.g. 120")
    return seconds


def _on_fault(value: str, source: str) -> OnFault:
    word = value.strip().lower()
    if word in ("block", "warn"):
        return "warn" if word == "warn" else "block"
    raise _bad(source, value, "use block (deny what mcp-hooks cannot decide) or warn")


def _cap(value: object, source: str) -> int:
    try:
        cap = int(str(value).strip())
    except ValueError:
        cap = -1
    if cap < 0 or isinstance(value, bool):
        raise _bad(source, value, "give a whole number of blocks, 0 or more (0: no cap)")
    return cap


def _flag(value: str, source: str) -> bool:
    word = value.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise _bad(source, value, "use 1 (yes) or 0 (no)")


def forward_seconds(value: str, source: str) -> float:
    """A positive number of seconds, or a ConfigError naming ``source``."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds < math.inf):
        raise _bad(source, value, "give a positive number of seconds")
    return seconds


def forward_warning(value: str, source: str) -> str | None:
    """What whoever forwards says of a deadline ``value`` it replaced by the default (the
    forward protocol's rule: an invalid deadline is said, never fatal); None: unset or valid."""
    try:
        if value:
            forward_seconds(value, source)
        return None
    except ConfigError:
        return (f"{source}={value!r} is not a positive number of seconds; using "
                f"{DEFAULT_FORWARD_TIMEOUT_S:g}")


def _seconds(value: Any, source: str) -> float:
    if isinstance(value, bool):
        raise _bad(source, value, "give a positive number of seconds")
    return forward_seconds(str(value), source)


def _lenient_seconds(value: Any, source: str) -> float:
    try:
        return forward_seconds(str(value), source)
    except ConfigError:
        return DEFAULT_FORWARD_TIMEOUT_S


def _state(value: str, source: str) -> str:
    """A store URL whose scheme ``state.url`` opens. The value is never echoed: a URL may
    carry a password."""
    url = value.strip()
    lowered = url.lower()
    if lowered == "file:" or any(lowered.startswith(s) and len(url) > len(s)
                                 for s in STATE_BACKENDS[1:]):
        return "file:" if lowered == "file:" else url
    said = f"a {lowered.partition(':')[0]!r} URL" if "://" in lowered else "not a store URL"
    raise ConfigError(f"{source}: {said}; give file: (the files under "
                      "$XDG_STATE_HOME/mcp-hooks, the default), redis://[:password@]host[:port]"
                      "[/db] (or rediss:// for TLS) or postgresql://user:password@host[:port]/db")


def _replica(value: object, source: str) -> str | None:
    """A replica's name as given: printable (no newline, no control character), at most
    ``MAX_REPLICA_ID`` characters; None (the default) for none given."""
    if value is None:
        return None
    text = str(value).strip()
    if text and text.isprintable() and len(text) <= MAX_REPLICA_ID:
        return text
    said = "empty" if not text else (f"{len(text)} characters" if text.isprintable()
                                     else "not printable")
    raise ConfigError(f"{source}: the replica name is {said}; give up to {MAX_REPLICA_ID} "
                      "printable characters, e.g. --replica-id web-1 (default hostname:pid)")


def _stdio(value: str, source: str, what: str = "stdio transport") -> Literal["event-loop", "sdk"]:
    word = value.strip().lower()
    if word in ("", "event-loop", "fast"):
        return "event-loop"
    if word == "sdk":
        return "sdk"
    raise _bad(source, value, f"use sdk (the MCP SDK's {what}), or fast (the proxy's or the "
               "event loop's, the default)")


_OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def _otel(value: object, source: str) -> Literal["off", "on", "auto"]:
    if value in ("off", "on", "auto"):
        return value
    if isinstance(value, bool):
        return "on" if value else "off"
    return "on" if _flag(str(value), source) else "off"


def parse_mode(value: str, source: str) -> Mode:
    """``enforce`` or ``audit`` (any case), else a ConfigError naming ``source``."""
    word = value.strip().lower()
    if word in ("enforce", "audit"):
        return "audit" if word == "audit" else "enforce"
    raise _bad(source, value, "use enforce (hooks decide) or audit (hooks only record what "
               "they would have decided)")


def _folder(value: str | Path, *, resolve: bool) -> Path:
    path = Path(value).expanduser()
    return path.resolve() if resolve else Path(os.path.abspath(path))


def _text(value: object, source: str) -> str | None:
    return str(value).strip() or None


def _trust(value: object, source: str) -> bool:
    return value if isinstance(value, bool) else _flag(str(value), source)


# field -> (parse(value, source), default): how each field with a variable is read
PARSE: dict[str, tuple[Callable[[Any, str], Any], Any]] = {
    "project_dir": (lambda value, source: _folder(value, resolve=True), None),
    "user_dir": (lambda value, source: _folder(value, resolve=False), None),
    "on_fault": (lambda value, source: _on_fault(str(value), source), "block"),
    "stop_block_cap": (_cap, DEFAULT_STOP_BLOCK_CAP),
    "trust_project_hooks": (_trust, False),
    "token": (_text, None),
    "server": (_text, None),
    # the forward protocol's rule, shared with the standalone forward script and the Java
    # client: an invalid deadline is said (by whoever forwards) and the default used
    "forward_timeout": (_lenient_seconds, DEFAULT_FORWARD_TIMEOUT_S),
    "bridge_command": (_text, None),
    "chain_timeout": (_seconds, DEFAULT_CHAIN_TIMEOUT_S),
    "environment": (lambda value, source: str(value), DEFAULT_ENVIRONMENT),
    "runner": (lambda value, source: str(value), ""),
    "serve_stdio": (lambda value, source: _stdio(str(value), source), "event-loop"),
    "proxy_stdio": (lambda value, source: _stdio(str(value), source), "event-loop"),
    "proxy_http": (lambda value, source: _stdio(str(value), source, "streamable HTTP"),
                   "event-loop"),
    "state": (lambda value, source: _state(str(value), source), "file:"),
    "otel": (_otel, "off"),
    "replica_id": (_replica, None),
    "watch": (_trust, True),
    "trust_key": (_trust_key, None),
    "ask_key": (_trust_key, None),
    "ask_timeout": (lambda value, source: _ask_seconds(value, source), DEFAULT_ASK_TIMEOUT_S),
    "on_ask_unavailable": (lambda value, source: _on_ask_unavailable(str(value), source),
                           "deny"),
    "ask_webhook": (_text, None),
    "managed_dir": (lambda value, source: _folder(value, resolve=False), None),
    "mode": (lambda value, source: parse_mode(str(value), source), "enforce"),
}

