"""Every setting mcp-hooks reads, in one frozen record, built once from flags and environment.

``Settings.from_env(environ=None, **flags)`` is the only place the package reads its own
``MCP_HOOKS_*`` variables: a flag given wins, then the variable, then the default. A bad value
is a ``ConfigError`` naming the flag or variable and the fix. ``Engine``, ``HookService``,
``Hooks`` and the adapters take the record (an adapter takes a ``Hooks``)::

    from mcp_hooks import Hooks, Settings

    settings = Settings.from_env(on_fault="warn")      # flags, then MCP_HOOKS_*, then defaults
    hooks = Hooks(settings=settings)

``VARIABLES`` lists every variable with its field and default (docs/settings.md is the same
table). A few values are needed where no record reaches (the runner's spawn strategy, read once
at import; the trust store's file, read where a store is opened; the deployment environment of a
hooks.yaml ``when``): those modules call ``env_value`` with a declared name, so every read still
goes through here. Exceptions, by design: ``hookkit`` runs inside a hook's own process and
imports nothing of the package, the generated ``forward.py`` script stands alone, and
``runner.hookenv`` *removes* our variables from a hook's environment (it names them, it reads no
setting from them). ``tests/test_settings.py`` checks it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, NamedTuple

from mcp_hooks import paths
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


class Variable(NamedTuple):
    """One ``MCP_HOOKS_*`` variable: the ``Settings`` field it gives (None: read outside the
    package, by a hook or a generated script), its flag, its default as said, what it means."""

    name: str
    field: str | None
    flag: str | None
    default: str
    meaning: str


VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("MCP_HOOKS_PROJECT_DIR", "project_dir", "--project-dir",
             "nearest folder at or above the current one with .agents/hooks, else the current",
             "the project whose .agents/hooks and .ahp/hooks.yaml apply"),
    Variable("MCP_HOOKS_USER_DIR", "user_dir", "--user-dir", "$XDG_CONFIG_HOME/agents/hooks",
             "the user hooks folder, shared by every project"),
    Variable("MCP_HOOKS_MANAGED_DIR", "managed_dir", "--managed-dir",
             f"{DEFAULT_MANAGED_DIR} where it exists",
             "the managed hooks folder an administrator owns: its hooks and hooks.yaml run "
             "first and no user or project layer can override them (docs/policy.md)"),
    Variable("MCP_HOOKS_MODE", "mode", "--mode", "enforce",
             "audit: every hook this process runs only records what it would have done "
             "(managed hooks excepted, docs/policy.md); enforce: hooks decide"),
    Variable("MCP_HOOKS_LOG", "log", "--log / --no-log", "$XDG_STATE_HOME/mcp-hooks/events.jsonl",
             "the event log (off: none)"),
    Variable("MCP_HOOKS_ON_FAULT", "on_fault", "--on-fault", "block",
             "block: a fault of ours denies an event that can block; warn: let it through"),
    Variable("MCP_HOOKS_STOP_BLOCK_CAP", "stop_block_cap", "--stop-block-cap",
             str(DEFAULT_STOP_BLOCK_CAP),
             "consecutive before_stop blocks per session before the stop is allowed (0: no cap)"),
    Variable("MCP_HOOKS_TRUST_PROJECT_HOOKS", "trust_project_hooks", "--trust-project-hooks",
             "0", "1 runs every project hook without the trust store (CI, containers)"),
    Variable("MCP_HOOKS_TRUST_STORE", "trust_store", None,
             "$XDG_STATE_HOME/mcp-hooks/trust.json", "the trust store file"),
    Variable("MCP_HOOKS_TOKEN", "token", "--token", "none",
             "the server's bearer token (serve, install --via server, fire --server)"),
    Variable("MCP_HOOKS_SERVER", "server", "--server", "none",
             "the server `fire` forwards events to"),
    Variable("MCP_HOOKS_CHAIN_TIMEOUT", "chain_timeout", "--chain-timeout",
             f"{DEFAULT_CHAIN_TIMEOUT_S:g}",
             "seconds the hooks of one event may take together; a hook's own timeout is cut "
             "to what is left (a host bridge: at most its host's deadline, docs/bridges.md)"),
    Variable("MCP_HOOKS_FORWARD_TIMEOUT", "forward_timeout", None,
             f"{DEFAULT_FORWARD_TIMEOUT_S:g}", "seconds a whole forward to the server may take"),
    Variable("MCP_HOOKS_BRIDGE_COMMAND", "bridge_command", "--bridge-command",
             "the running mcp-hooks", "how a host starts mcp-hooks (install)"),
    Variable("MCP_HOOKS_ENVIRONMENT", "environment", None, DEFAULT_ENVIRONMENT,
             "the deployment environment a hooks.yaml `when.environment` tests (the payload's "
             "`environment` first)"),
    Variable("MCP_HOOKS_RUNNER", "runner", None, "empty (posix_spawn, pidfd)",
             "how hooks are spawned: library, no-pidfd, no-posix-spawn (comma-separated)"),
    Variable("MCP_HOOKS_SERVE_STDIO", "serve_stdio", None, "event-loop",
             "sdk: serve stdio with the MCP SDK's transport"),
    Variable("MCP_HOOKS_PROXY_STDIO", "proxy_stdio", None, "event-loop",
             "sdk: the proxy serves and reaches stdio with the MCP SDK's transports"),
    Variable("MCP_HOOKS_PROXY_HTTP", "proxy_http", None, "event-loop",
             "sdk: the proxy serves and calls streamable HTTP tools/call through the MCP SDK"),
    Variable("MCP_HOOKS_STATE", "state", "--state", "file:",
             "where per-session state lives: file: (the files under $XDG_STATE_HOME/mcp-hooks), "
             "redis://, rediss:// or postgresql:// (shared by every replica)"),
    Variable("MCP_HOOKS_PERSISTENT", None, None, "unset",
             "set to 1 by mcp-hooks in a persistent hook's environment (read by hookkit)"),
    Variable("MCP_HOOKS_FORWARD_HTTP", None, None, "unset",
             "library: the installed forward.py script speaks HTTP with urllib"),
    Variable("MCP_HOOKS_OTEL", "otel", "--otel", "0 (auto when OTEL_EXPORTER_OTLP_ENDPOINT is set)",
             "1: serve and proxy send a span per event and per hook run over OTLP/HTTP "
             "(extra otel); 0: never"),
    Variable("MCP_HOOKS_REPLICA_ID", "replica_id", "--replica-id", "hostname:pid (serve)",
             "the name this process stamps on every record it writes (`replica`), up to "
             f"{MAX_REPLICA_ID} printable characters"),
    Variable("MCP_HOOKS_WATCH", "watch", "--no-watch", "1",
             "0: list the hooks folders once at start, never again (a folder shipped "
             "read-only per deploy); what runs is still checked against its trust"),
    Variable("MCP_HOOKS_ASK_TIMEOUT", "ask_timeout", None,
             f"{DEFAULT_ASK_TIMEOUT_S:g}",
             "seconds a door waits for a person to answer a hook's ask (docs/ask.md); a hook's "
             "metadata.ask_timeout wins; never past the chain deadline"),
    Variable("MCP_HOOKS_ON_ASK_UNAVAILABLE", "on_ask_unavailable", None,
             "deny", "deny or allow: the answer when no person answered an ask in time (a "
             "hook's metadata.on_ask_unavailable wins); the ask stays pending"),
    Variable("MCP_HOOKS_ASK_WEBHOOK", "ask_webhook", None, "none",
             "a URL each new ask is posted to as JSON (with a Slack-compatible text field)"),
    Variable("MCP_HOOKS_TRUST_KEY", "trust_key", None, "none",
             "the key that signs and checks the trust records of a shared --state store, "
             f"at least {MIN_TRUST_KEY} characters (the same wherever the store is used)"),
    Variable("MCP_HOOKS_ASK_KEY", "ask_key", None, "from MCP_HOOKS_TRUST_KEY, else per process",
             "the key that seals an ask's input_required round (2026-07-28 clients), at least "
             f"{MIN_TRUST_KEY} characters, the same on every replica so a retry may reach any"),
)}


def _trust_key(value: object, source: str) -> str | None:
    key = str(value).strip()
    if key and len(key) < MIN_TRUST_KEY:
        raise _bad(source, "***", f"a key needs at least {MIN_TRUST_KEY} characters; "
                   "make one with `openssl rand -hex 32`")
    return key or None


def env_value(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The stripped value of one declared ``MCP_HOOKS_*`` variable ("" when unset). Raises
    KeyError for a name ``VARIABLES`` does not declare: every variable read is documented."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not declared in mcp_hooks.settings.VARIABLES")
    return (os.environ if environ is None else environ).get(name, "").strip()


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


def trust_all_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``MCP_HOOKS_TRUST_PROJECT_HOOKS`` says to trust every project hook (``1``,
    ``true``, ``yes``, ``on``, any case); any other value trusts nothing."""
    return env_value("MCP_HOOKS_TRUST_PROJECT_HOOKS", environ).lower() in _TRUE


def parse_mode(value: str, source: str) -> Mode:
    """``enforce`` or ``audit`` (any case), else a ConfigError naming ``source``."""
    word = value.strip().lower()
    if word in ("enforce", "audit"):
        return "audit" if word == "audit" else "enforce"
    raise _bad(source, value, "use enforce (hooks decide) or audit (hooks only record what "
               "they would have decided)")


def mode_from_env(environ: Mapping[str, str] | None = None) -> Mode:
    """``$MCP_HOOKS_MODE`` (``enforce`` when unset); a bad value is a ConfigError naming it."""
    return parse_mode(env_value("MCP_HOOKS_MODE", environ) or "enforce", "MCP_HOOKS_MODE")


def managed_dir_from_env(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$MCP_HOOKS_MANAGED_DIR``, else ``/etc/agents/hooks`` when that folder exists, else
    None (no managed layer)."""
    given = env_value("MCP_HOOKS_MANAGED_DIR", environ)
    if given:
        return _folder(given, resolve=False)
    default = Path(DEFAULT_MANAGED_DIR)
    return default if default.is_dir() else None


def trust_store_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$MCP_HOOKS_TRUST_STORE``, else ``$XDG_STATE_HOME/mcp-hooks/trust.json``."""
    given = env_value("MCP_HOOKS_TRUST_STORE", environ)
    return Path(os.path.expanduser(given)) if given else paths.state_dir() / "trust.json"


def _folder(value: str | Path, *, resolve: bool) -> Path:
    path = Path(value).expanduser()
    return path.resolve() if resolve else Path(os.path.abspath(path))


@dataclass(frozen=True)
class Settings:
    """Every setting, resolved (see the module docstring and docs/settings.md).

    Built directly, a field left out has its default (no log, no project, ``block``); built by
    ``from_env``, flags first, then ``MCP_HOOKS_*``, then the same defaults (there the log
    defaults to ``paths.log_path()``).

    Attributes:
        project_dir: the project (``--project-dir``, ``MCP_HOOKS_PROJECT_DIR``); None: none
            given (the commands then take the nearest one with ``.agents/hooks``).
        user_dir: the user hooks folder (``--user-dir``, ``MCP_HOOKS_USER_DIR``); None:
            ``paths.user_hooks_dir()``.
        log: the event log to write (``--log``, ``MCP_HOOKS_LOG``); None: none.
        log_read: where ``mcp-hooks log`` reads, even when writing is off.
        on_fault: ``block`` or ``warn`` (``--on-fault``, ``MCP_HOOKS_ON_FAULT``).
        stop_block_cap: the before_stop loop guard's cap (``--stop-block-cap``,
            ``MCP_HOOKS_STOP_BLOCK_CAP``); 0: no cap.
        trust_project_hooks: run every project hook without the trust store
            (``--trust-project-hooks``, ``MCP_HOOKS_TRUST_PROJECT_HOOKS``).
        secrets: values no hook may see in its environment (the server's token, upstream
            header secrets); ``MCP_HOOKS_TOKEN`` is always left out.
        trust_store: the trust store file (``MCP_HOOKS_TRUST_STORE``).
        token: the server's bearer token (``--token``, ``MCP_HOOKS_TOKEN``).
        server: the server ``fire`` forwards to (``--server``, ``MCP_HOOKS_SERVER``).
        forward_timeout: seconds a whole forward may take (``MCP_HOOKS_FORWARD_TIMEOUT``).
        chain_timeout: seconds the sync hooks of one event may take together
            (``--chain-timeout``, ``MCP_HOOKS_CHAIN_TIMEOUT``); past it, the hooks left fail
            under their ``on_error``, and each hook's own timeout is cut to what is left.
        bridge_command: how a host starts mcp-hooks (``--bridge-command``,
            ``MCP_HOOKS_BRIDGE_COMMAND``); None: the running one.
        environment: the deployment environment (``MCP_HOOKS_ENVIRONMENT``).
        runner: the spawn strategy's words (``MCP_HOOKS_RUNNER``), checked by the runner.
        serve_stdio, proxy_stdio, proxy_http: ``event-loop`` or ``sdk``
            (``MCP_HOOKS_SERVE_STDIO``, ``MCP_HOOKS_PROXY_STDIO``, ``MCP_HOOKS_PROXY_HTTP``).
        state: where per-session state lives (``--state``, ``MCP_HOOKS_STATE``): ``file:``
            (the files under ``$XDG_STATE_HOME/mcp-hooks``), or a shared store's URL
            (``redis://``, ``rediss://``, ``postgresql://``; never printed: it may hold a
            password).
        otel: traces (``--otel``, ``MCP_HOOKS_OTEL``; ``tracing.py``): ``on`` (the extra
            must be installed), ``auto`` (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
            ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set and ``MCP_HOOKS_OTEL`` is not: on if
            the extra is installed, else a warning) or ``off``.
        replica_id: the name stamped as ``replica`` on every record this process writes
            (``--replica-id``, ``MCP_HOOKS_REPLICA_ID``); None: none given (``serve`` then
            takes ``hostname:pid``, ``state.url.replica_name()``; the shared stores stamp that
            anyway).
        watch: follow the hooks folders and hooks.yaml for changes (``--no-watch``,
            ``MCP_HOOKS_WATCH=0``: list them once, for a folder shipped read-only).
        trust_key: the key that signs and checks trust records in a shared store
            (``MCP_HOOKS_TRUST_KEY``; ``registry/trust.py``); None: records are unsigned.
        ask_key: the key that seals the ``requestState`` of an ask's ``input_required``
            round (``MCP_HOOKS_ASK_KEY``; ``server/approval.py``); None: one derived from
            ``trust_key``, else a key of the process (a retry must reach the same one).
        ask_timeout: seconds a door waits for a person's answer to an ask
            (``MCP_HOOKS_ASK_TIMEOUT``; ``engine/asking.py``).
        on_ask_unavailable: ``deny`` or ``allow`` when nobody answered in time
            (``MCP_HOOKS_ON_ASK_UNAVAILABLE``).
        ask_webhook: where each new ask is posted (``MCP_HOOKS_ASK_WEBHOOK``); None:
            nowhere.
        managed_dir: the managed hooks folder (``--managed-dir``, ``MCP_HOOKS_MANAGED_DIR``);
            None: ``/etc/agents/hooks`` where it exists (``managed_dir_from_env``).
        mode: ``enforce`` or ``audit`` (``--mode``, ``MCP_HOOKS_MODE``): in audit every
            hook but the managed ones only records what it would have done.
        door: what fires this process's events, stamped as ``door`` on each event record
            (the dashboard's filter): ``serve``, ``proxy``, ``fire``, ``bridge/<host>``,
            ``api``; set by the door itself, never from the environment ("": not said).
    """

    project_dir: Path | None = None
    user_dir: Path | None = None
    log: Path | None = None
    log_read: Path | None = None
    on_fault: OnFault = "block"
    stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP
    trust_project_hooks: bool = False
    secrets: tuple[str, ...] = field(default=(), repr=False)  # never printed
    trust_store: Path | None = None
    token: str | None = field(default=None, repr=False)
    server: str | None = None
    forward_timeout: float = DEFAULT_FORWARD_TIMEOUT_S
    chain_timeout: float = DEFAULT_CHAIN_TIMEOUT_S
    bridge_command: str | None = None
    environment: str = DEFAULT_ENVIRONMENT
    runner: str = ""
    serve_stdio: Literal["event-loop", "sdk"] = "event-loop"
    proxy_stdio: Literal["event-loop", "sdk"] = "event-loop"
    proxy_http: Literal["event-loop", "sdk"] = "event-loop"
    state: str = field(default="file:", repr=False)  # a URL may carry a password
    otel: Literal["off", "on", "auto"] = "off"
    replica_id: str | None = None
    watch: bool = True
    trust_key: str | None = field(default=None, repr=False)  # never printed
    ask_key: str | None = field(default=None, repr=False)  # never printed
    ask_timeout: float = DEFAULT_ASK_TIMEOUT_S
    on_ask_unavailable: OnAskUnavailable = "deny"
    ask_webhook: str | None = field(default=None, repr=False)  # a URL may carry a token
    managed_dir: Path | None = None
    mode: Mode = "enforce"
    door: str = ""  # who fires: serve, proxy, fire, bridge/<host>, api (on each event record)

    def __post_init__(self) -> None:
        object.__setattr__(self, "on_fault", _on_fault(str(self.on_fault), "on_fault"))
        object.__setattr__(self, "stop_block_cap", _cap(self.stop_block_cap, "stop_block_cap"))
        object.__setattr__(self, "state", _state(self.state, "state"))
        object.__setattr__(self, "chain_timeout", _seconds(self.chain_timeout, "chain_timeout"))
        object.__setattr__(self, "otel", _otel(self.otel, "otel"))
        object.__setattr__(self, "mode", parse_mode(str(self.mode), "mode"))
        object.__setattr__(self, "replica_id", _replica(self.replica_id, "replica_id"))
        object.__setattr__(self, "secrets", tuple(s for s in self.secrets if s))
        object.__setattr__(self, "trust_key", _trust_key(self.trust_key or "", "trust_key"))
        object.__setattr__(self, "ask_key", _trust_key(self.ask_key or "", "ask_key"))
        object.__setattr__(self, "ask_timeout", _ask_seconds(self.ask_timeout, "ask_timeout"))
        object.__setattr__(self, "on_ask_unavailable", _on_ask_unavailable(
            str(self.on_ask_unavailable), "on_ask_unavailable"))
        for secret in (self.token, self.trust_key, self.ask_key):
            if secret and secret not in self.secrets:
                object.__setattr__(self, "secrets", (*self.secrets, secret))
        shared = None if self.state.strip().lower().startswith("file:") else self.state
        if shared and shared not in self.secrets:  # a store URL may hold its password
            object.__setattr__(self, "secrets", (*self.secrets, shared))

    @property
    def fast_serve_stdio(self) -> bool:
        """Whether ``serve`` uses the event loop's stdio transport (not the SDK's)."""
        return self.serve_stdio != "sdk"

    @property
    def fast_proxy_stdio(self) -> bool:
        """Whether the proxy uses the event loop's stdio transports (not the SDK's)."""
        return self.proxy_stdio != "sdk"

    @property
    def fast_proxy_http(self) -> bool:
        """Whether the proxy's streamable-HTTP fast paths are on (``proxy/http_fast.py``)."""
        return self.proxy_http != "sdk"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **flags: Any) -> Settings:
        """The settings the flags, then the environment (default ``os.environ``), then the
        defaults give. ``flags`` are ``Settings`` field names (None: not given), plus
        ``no_log=True``. Raises ConfigError for a bad value, naming its flag or variable."""
        known = {f.name for f in fields(cls)} | {"no_log"}
        unknown = sorted(set(flags) - known)
        if unknown:
            raise ConfigError(f"Settings.from_env: unknown setting(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(known))}")
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for variable in VARIABLES.values():  # the table: flag, then variable, then default
            if variable.field in _PARSE:
                values[variable.field] = _read(variable, flags.get(variable.field), env)
        values["log"], values["log_read"] = _logs(flags.get("log"), bool(flags.get("no_log")),
                                                  env_value("MCP_HOOKS_LOG", env))
        values["secrets"] = tuple(flags.get("secrets") or ())
        values["door"] = str(flags.get("door") or "")
        if values["otel"] == "off" and not flags.get("otel") and not env_value(
                "MCP_HOOKS_OTEL", env) and any(env.get(n, "").strip() for n in _OTLP_ENDPOINTS):
            values["otel"] = "auto"  # the standard OpenTelemetry variable asks for traces
        if values["managed_dir"] is None:
            values["managed_dir"] = managed_dir_from_env(env)
        store = flags.get("trust_store")
        values["trust_store"] = Path(store) if store else trust_store_path(env)
        return cls(**values)


def _text(value: object, source: str) -> str | None:
    return str(value).strip() or None


def _trust(value: object, source: str) -> bool:
    return value if isinstance(value, bool) else _flag(str(value), source)


# field -> (parse(value, source), default): how each field with a variable is read
_PARSE: dict[str, tuple[Callable[[Any, str], Any], Any]] = {
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


def _read(variable: Variable, flag: object, env: Mapping[str, str]) -> Any:
    """One field: the flag given (not None, not empty), else the variable, else the default;
    a bad value names its flag (or keyword) or its variable."""
    parse, default = _PARSE[variable.field or ""]
    if flag is not None and flag != "":
        return parse(flag, variable.flag.split()[0] if variable.flag else variable.field or "")
    raw = env_value(variable.name, env)
    return parse(raw, variable.name) if raw else default


def _logs(flag: Path | str | None, no_log: bool, env: str) -> tuple[Path | None, Path]:
    """The log to write (None: none) and the one ``mcp-hooks log`` reads."""
    if flag is not None:
        path = Path(flag).expanduser()
        return (None if no_log else path), path
    if env and env.lower() in _LOG_OFF:
        return None, paths.log_path()
    path = Path(env).expanduser() if env else paths.log_path()
    return (None if no_log else path), path
