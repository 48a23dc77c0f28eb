"""Every setting mcp-hooks reads, in one frozen record, built once from flags and environment.

``Settings.from_env(environ=None, **flags)`` is the only place the package reads its own
``MCP_HOOKS_*`` variables: a flag given wins, then the variable, then the default. A bad value
is a ``ConfigError`` naming the flag or variable and the fix. ``Engine``, ``HookService``,
``Hooks`` and the adapters take the record (an adapter takes a ``Hooks``)::

    from mcp_hooks import Hooks, Settings

    settings = Settings.from_env(on_fault="warn")      # flags, then MCP_HOOKS_*, then defaults
    hooks = Hooks(settings=settings)

``VARIABLES`` (``settings/variables.py``) lists every variable with its field and default
(docs/settings.md is the same table); ``settings/values.py`` checks each value. Each door (a
command, ``Hooks``, the server) builds the record once and passes it down: no other module reads
an ``MCP_HOOKS_*`` variable, directly or through a helper of this one, and ``_env_value`` is
this module's own. Two kinds of value say where they come from:

- A record from ``from_env`` is whole: ``trust_store`` is a path and ``managed_dir`` a folder
  or ``False`` (no managed layer), so nothing below a door looks at the environment again.
- A public constructor a library caller may use without a door (``Registry``, ``TrustStore``,
  ``load_config``) reads "not said" (None) as what this process's environment says, through
  ``trust_store_path``, ``trust_all_from_env`` and ``managed_dir_from_env``: those are the
  library's doors (``LIBRARY_DOORS`` in the test), and every call inside the package passes
  its door's value instead (checked there too). ``Hooks``' keywords become a whole record
  here (``for_library``).

Exceptions, by design: ``hookkit``
runs inside a hook's own process and imports nothing of the package, the generated
``forward.py`` script stands alone, and ``runner.hookenv`` *removes* our variables from a
hook's environment (it names them, it reads no setting from them). ``tests/test_settings.py``
checks it (an AST scan of ``mcp_hooks/``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from mcp_hooks import paths
from mcp_hooks.errors import ConfigError
from mcp_hooks.settings.values import (
    _LOG_OFF,
    _OTLP_ENDPOINTS,
    _TRUE,
    DEFAULT_ASK_TIMEOUT_S,
    DEFAULT_CHAIN_TIMEOUT_S,
    DEFAULT_ENVIRONMENT,
    DEFAULT_FORWARD_TIMEOUT_S,
    DEFAULT_MANAGED_DIR,
    DEFAULT_STOP_BLOCK_CAP,
    MAX_REPLICA_ID,
    MIN_TRUST_KEY,
    PARSE,
    STATE_BACKENDS,
    Mode,
    OnAskUnavailable,
    OnFault,
    _ask_seconds,
    _cap,
    _folder,
    _on_ask_unavailable,
    _on_fault,
    _otel,
    _replica,
    _seconds,
    _state,
    _trust_key,
    forward_seconds,
    forward_warning,
    parse_mode,
)
from mcp_hooks.settings.variables import VARIABLES, Variable


def _env_value(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The stripped value of one declared ``MCP_HOOKS_*`` variable ("" when unset). Raises
    KeyError for a name ``VARIABLES`` does not declare: every variable read is documented."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not declared in mcp_hooks.settings.VARIABLES")
    return (os.environ if environ is None else environ).get(name, "").strip()


def trust_all_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``MCP_HOOKS_TRUST_PROJECT_HOOKS`` says to trust every project hook (``1``,
    ``true``, ``yes``, ``on``, any case); any other value trusts nothing."""
    return _env_value("MCP_HOOKS_TRUST_PROJECT_HOOKS", environ).lower() in _TRUE


def managed_dir_from_env(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$MCP_HOOKS_MANAGED_DIR``, else ``/etc/agents/hooks`` when that folder exists, else
    None (no managed layer)."""
    given = _env_value("MCP_HOOKS_MANAGED_DIR", environ)
    if given:
        return _folder(given, resolve=False)
    default = Path(DEFAULT_MANAGED_DIR)
    return default if default.is_dir() else None


def trust_store_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$MCP_HOOKS_TRUST_STORE``, else ``$XDG_STATE_HOME/mcp-hooks/trust.json``."""
    given = _env_value("MCP_HOOKS_TRUST_STORE", environ)
    return Path(os.path.expanduser(given)) if given else default_trust_store()


def default_trust_store() -> Path:
    """``$XDG_STATE_HOME/mcp-hooks/trust.json``: the trust store when none is named."""
    return paths.state_dir() / "trust.json"


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
        forward_timeout_warning: what a forward says on stderr when
            ``MCP_HOOKS_FORWARD_TIMEOUT`` was invalid and the default is used; None: it was not.
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
        trust_store: the trust store file (``MCP_HOOKS_TRUST_STORE``, else
            ``$XDG_STATE_HOME/mcp-hooks/trust.json``); None: not said, the environment's.
        managed_dir: the managed hooks folder (``--managed-dir``, ``MCP_HOOKS_MANAGED_DIR``,
            else ``/etc/agents/hooks`` where it exists); False: none; None: not said, the
            environment's (``from_env`` always says).
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
    forward_timeout_warning: str | None = None
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
    managed_dir: Path | Literal[False] | None = None
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
            if variable.field in PARSE:
                values[variable.field] = _read(variable, flags.get(variable.field), env)
        values["log"], values["log_read"] = _logs(flags.get("log"), bool(flags.get("no_log")),
                                                  _env_value("MCP_HOOKS_LOG", env))
        values["forward_timeout_warning"] = _forward_warning(flags.get("forward_timeout"), env)
        values["secrets"] = tuple(flags.get("secrets") or ())
        values["door"] = str(flags.get("door") or "")
        if values["otel"] == "off" and not flags.get("otel") and not _env_value(
                "MCP_HOOKS_OTEL", env) and any(env.get(n, "").strip() for n in _OTLP_ENDPOINTS):
            values["otel"] = "auto"  # the standard OpenTelemetry variable asks for traces
        return cls(**(values | _places(values["managed_dir"], flags.get("trust_store"), env)))


def _places(managed: Path | None, store: object, env: Mapping[str, str]) -> dict[str, Any]:
    """The managed folder (False: none) and the trust store file, whole: a record that says
    them leaves nothing for a constructor below its door to read from the environment."""
    return {"managed_dir": managed if managed is not None else managed_dir_from_env(env) or False,
            "trust_store": Path(str(store)) if store else trust_store_path(env)}


def for_library(**keywords: Any) -> Settings:
    """The ``Settings`` a library caller's keywords give (``Hooks(...)``; None: not given,
    the field's default): what no keyword says of trust, the trust store and the managed
    folder is this process's environment's, and the ``PROCESS_WIDE`` values are the
    environment's whatever the keywords."""
    given = {key: value for key, value in keywords.items() if value is not None}
    said = {"trust_project_hooks": trust_all_from_env(), **_places(None, None, os.environ)}
    return Settings(**(said | given | process_values()))


# what a process honours whatever its door, even a library caller's keywords (``Hooks(...)``)
PROCESS_WIDE = ("mode", "runner", "environment")


def process_values(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The fields every ``Settings`` of this process takes from the environment whatever
    door made it (``PROCESS_WIDE``): ``mode`` (``MCP_HOOKS_MODE``: an audit roll-out covers
    everything a process runs), ``runner`` (``MCP_HOOKS_RUNNER``) and ``environment``
    (``MCP_HOOKS_ENVIRONMENT``: a hooks.yaml ``when.environment`` guard holds in every
    door). A bad value is a ConfigError naming its variable."""
    env = os.environ if environ is None else environ
    return {variable.field: _read(variable, None, env) for variable in VARIABLES.values()
            if variable.field in PROCESS_WIDE}


def _read(variable: Variable, flag: object, env: Mapping[str, str]) -> Any:
    """One field: the flag given (not None, not empty), else the variable, else the default;
    a bad value names its flag (or keyword) or its variable."""
    parse, default = PARSE[variable.field or ""]
    if flag is not None and flag != "":
        return parse(flag, variable.flag.split()[0] if variable.flag else variable.field or "")
    raw = _env_value(variable.name, env)
    return parse(raw, variable.name) if raw else default


def _forward_warning(flag: object, env: Mapping[str, str]) -> str | None:
    """What a forward says of an invalid ``MCP_HOOKS_FORWARD_TIMEOUT`` (None: a flag was
    given, or the variable is unset or valid)."""
    if flag is not None:
        return None
    return forward_warning(_env_value("MCP_HOOKS_FORWARD_TIMEOUT", env),
                           "MCP_HOOKS_FORWARD_TIMEOUT")


def _logs(flag: Path | str | None, no_log: bool, env: str) -> tuple[Path | None, Path]:
    """The log to write (None: none) and the one ``mcp-hooks log`` reads."""
    if flag is not None:
        path = Path(flag).expanduser()
        return (None if no_log else path), path
    if env and env.lower() in _LOG_OFF:
        return None, paths.log_path()
    path = Path(env).expanduser() if env else paths.log_path()
    return (None if no_log else path), path


__all__ = [
    "DEFAULT_ASK_TIMEOUT_S", "DEFAULT_CHAIN_TIMEOUT_S", "DEFAULT_ENVIRONMENT",
    "DEFAULT_FORWARD_TIMEOUT_S", "DEFAULT_MANAGED_DIR", "DEFAULT_STOP_BLOCK_CAP",
    "MAX_REPLICA_ID", "MIN_TRUST_KEY", "STATE_BACKENDS", "VARIABLES", "Mode",
    "OnAskUnavailable", "OnFault", "Settings", "Variable", "_ask_seconds",
    "_on_ask_unavailable", "default_trust_store", "for_library", "forward_seconds",
    "managed_dir_from_env",
    "parse_mode", "process_values", "trust_all_from_env", "trust_store_path",
]
