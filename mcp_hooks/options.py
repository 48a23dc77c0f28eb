"""The options every command shares, and what they turn into.

``--user-dir``, ``--project-dir``, ``--log`` / ``--no-log`` and ``--stop-block-cap`` mean the
same in ``fire``, ``serve``, ``proxy`` and ``bridge``; this module declares them once and
builds the ``Registry`` and ``EventLog`` they describe. They are accepted before the command
too (``mcp-hooks --user-dir X list``); given on both sides, the one after the command wins.
Environment variables give the same settings to commands a host runs for us
(``MCP_HOOKS_USER_DIR``, ``MCP_HOOKS_PROJECT_DIR``, ``MCP_HOOKS_LOG``, ...; docs/settings.md):
``settings()`` turns the options given into one ``Settings`` record (``mcp_hooks.settings``
reads the variables, flags first). Defaults on disk come from :mod:`mcp_hooks.paths`.

Adapters take typed options, never an ``argparse.Namespace``: :class:`CommonOptions` holds
these settings as given (``CommonOptions.from_args`` at the command line, or built directly
by a program), and every function here reads either it or a Namespace, applying the
environment and the defaults when called (through ``settings()``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from mcp_hooks import paths
from mcp_hooks.registry.discovery import Registry, find_project_dir
from mcp_hooks.registry.signing import unsigned_warning
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import DEFAULT_STOP_BLOCK_CAP, OnFault, Settings
from mcp_hooks.state.eventlog import EventLog

ON_FAULT_ENV = "MCP_HOOKS_ON_FAULT"


@dataclass(frozen=True)
class CommonOptions:
    """The shared options as given; None means "not given" (the environment, then the
    default, decides when the option is read).

    Attributes:
        user_dir: ``--user-dir``.
        project_dir: ``--project-dir``.
        log: ``--log``.
        no_log: ``--no-log``.
        stop_block_cap: ``--stop-block-cap``.
        on_fault: ``--on-fault``: ``block`` or ``warn``.
        trust_project_hooks: ``--trust-project-hooks``.
        state: ``--state``: where per-session state lives (a store URL).
        chain_timeout: ``--chain-timeout``: seconds the hooks of one event may take together.
        managed_dir: ``--managed-dir``: the managed hooks folder (docs/policy.md).
        mode: ``--mode``: ``enforce`` or ``audit``.
    """

    user_dir: Path | None = None
    project_dir: Path | None = None
    log: Path | None = None
    no_log: bool = False
    stop_block_cap: int | None = None
    on_fault: str | None = None
    trust_project_hooks: bool | None = None
    state: str | None = field(default=None, repr=False)  # a URL may carry a password
    chain_timeout: float | None = None
    managed_dir: Path | None = None
    mode: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CommonOptions:
        """The shared options of a parsed command line (absent ones are not given)."""
        return cls(user_dir=getattr(args, "user_dir", None),
                   project_dir=getattr(args, "project_dir", None),
                   log=getattr(args, "log", None),
                   no_log=bool(getattr(args, "no_log", False)),
                   stop_block_cap=getattr(args, "stop_block_cap", None),
                   on_fault=getattr(args, "on_fault", None),
                   trust_project_hooks=getattr(args, "trust_project_hooks", None),
                   state=getattr(args, "state", None),
                   chain_timeout=getattr(args, "chain_timeout", None),
                   managed_dir=getattr(args, "managed_dir", None),
                   mode=getattr(args, "mode", None))


# What the functions below read: typed options, or a parsed command line (its attributes are
# the same names). None: nothing given, the environment and the defaults decide.
Given: TypeAlias = "CommonOptions | argparse.Namespace | None"


# The shared options that take a value: how `mcp-hooks` finds the command word in a command
# line whose shared options come first (`mcp-hooks --user-dir X list`).
VALUE_OPTIONS = ("--user-dir", "--project-dir", "--log", "--stop-block-cap", "--on-fault",
                 "--state", "--chain-timeout", "--managed-dir", "--mode")


_FLAGS = ("user_dir", "project_dir", "log", "stop_block_cap", "on_fault",
          "trust_project_hooks", "state", "chain_timeout", "managed_dir", "mode")
_ALL = frozenset({"user_dir", "project_dir", "log", "no_log", "stop_block_cap", "on_fault",
                  "trust_project_hooks", "state", "chain_timeout", "managed_dir", "mode"})
_FOLDERS = frozenset({"user_dir", "project_dir"})
_LISTED = _FOLDERS | {"managed_dir", "trust_project_hooks"}  # what list, show, doctor read
_NOT_PASSED = frozenset({"trust_project_hooks", "state", "chain_timeout", "managed_dir", "mode"})
# The shared options each command reads (by dest). A command's --help shows only these; the
# others are still accepted after it, as before it (they are global: a wrapper may pass the
# same ones to every command), and change nothing there. A command missing here shows all.
READ_BY: dict[str, frozenset[str]] = {
    "fire": _ALL, "serve": _ALL, "proxy": _ALL, "bridge": _ALL,
    # passed on to every bridge command they write (``install.passed_options``)
    "install": _ALL - _NOT_PASSED, "init": _ALL - _NOT_PASSED,
    "list": _LISTED, "show": _LISTED, "doctor": _LISTED | {"log", "no_log", "state"},
    "validate": _FOLDERS, "new": _FOLDERS, "add": _FOLDERS,
    "uninstall": frozenset({"project_dir"}), "trust": frozenset({"project_dir", "state"}),
    "log": frozenset({"log", "state"}), "signals": frozenset({"log", "state"}),
    "replay": frozenset({"log", "state"}),
    "respond": frozenset({"log", "state"}),
    "pending": frozenset({"log", "state"}), "approve": frozenset({"log", "state"}),
    "refuse": frozenset({"log", "state"}),
    "dashboard": _FOLDERS | {"log", "state", "trust_project_hooks"},
    "events": frozenset(),
}


def add_common_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Declare the shared options on a parser.

    The ``mcp-hooks`` parser declares them with ``top=True``, with their defaults, so they
    may come before the command; every command's parser declares them again without
    defaults (``argparse.SUPPRESS``), so a value given after the command replaces the one
    given before it, and one not given after it leaves it as it was. A command's parser
    (named by the last word of its ``prog``) shows in its help only the ones it reads
    (``READ_BY``).
    """
    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    reads = _ALL if top else READ_BY.get(parser.prog.split()[-1], _ALL)

    def shown(dest: str, text: str) -> str:
        return text if dest in reads else argparse.SUPPRESS

    group = parser.add_argument_group(
        "hook folders and log" + (" (also after the command)" if top else ""),
        "each command's --help lists the ones it reads" if top else None)
    group.add_argument(
        "--user-dir", type=Path, metavar="DIR", default=default(None),
        help=shown("user_dir", "user hooks folder (default $XDG_CONFIG_HOME/agents/hooks, "
                   "~/.config/agents/hooks)"),
    )
    group.add_argument(
        "--project-dir", type=Path, metavar="DIR", default=default(None),
        help=shown("project_dir", "project whose .agents/hooks to load (default: the nearest "
                   "folder at or above the current one that has .agents/hooks, else the "
                   "current folder)"),
    )
    group.add_argument(
        "--log", type=Path, metavar="FILE", default=default(None),
        help=shown("log", "event log (default $XDG_STATE_HOME/mcp-hooks/events.jsonl)"),
    )
    group.add_argument("--no-log", action="store_true", default=default(False),
                       help=shown("no_log", "do not write the event log"))
    group.add_argument(
        "--stop-block-cap", type=int, metavar="N", default=default(None),
        help=shown("stop_block_cap", "consecutive before_stop blocks per session before the "
                   f"stop is allowed anyway (default {DEFAULT_STOP_BLOCK_CAP}; 0 = no cap)"),
    )
    group.add_argument(
        "--managed-dir", type=Path, metavar="DIR", default=default(None),
        help=shown("managed_dir", "the managed hooks folder an administrator owns: its hooks "
                   "run first and nothing below can override them (default /etc/agents/hooks "
                   "where it exists; or MCP_HOOKS_MANAGED_DIR)"),
    )
    safety = parser.add_argument_group("safety" + (" (also after the command)" if top else ""))
    safety.add_argument(
        "--on-fault", choices=("block", "warn"), default=default(None),
        help=shown("on_fault", "when mcp-hooks itself cannot reach a decision (a broken hook, "
                   "an unreadable payload): block denies the event, saying what broke "
                   f"(default); warn lets it through with a warning (or {ON_FAULT_ENV})"),
    )
    safety.add_argument(
        "--chain-timeout", type=float, metavar="SECONDS", default=default(None),
        help=shown("chain_timeout", "seconds the hooks of one event may take together; past "
                   "it the hooks left fail under their on_error, and each hook's own timeout is "
                   "cut to what is left (default 600; a host bridge stays below its host's hook "
                   "timeout; or MCP_HOOKS_CHAIN_TIMEOUT)"),
    )
    safety.add_argument(
        "--mode", choices=("enforce", "audit"), default=default(None),
        help=shown("mode", "audit: hooks only record what they would have decided (`mcp-hooks "
                   "log --would`), managed hooks excepted; enforce: hooks decide (default; or "
                   "MCP_HOOKS_MODE)"),
    )
    safety.add_argument(
        "--trust-project-hooks", action="store_true", default=default(None),
        help=shown("trust_project_hooks", "run every project hook without asking for trust "
                   "first (CI, containers; or MCP_HOOKS_TRUST_PROJECT_HOOKS=1); see "
                   "`mcp-hooks trust`"),
    )
    safety.add_argument(
        "--state", metavar="URL", default=default(None),
        help=shown("state", "where per-session state lives (stop counts, signals, aid, the "
                   "ladder): file: (default, the files under $XDG_STATE_HOME/mcp-hooks), "
                   "redis://[:password@]host[:port][/db] or postgresql://user:password@host/db, "
                   "shared by every replica (or MCP_HOOKS_STATE, where a password belongs: "
                   "the command line is public)"),
    )


def settings(args: Given = None, environ: Mapping[str, str] | None = None,
             **more: Any) -> Settings:
    """The ``Settings`` the shared options give (flags first, then ``MCP_HOOKS_*``, then the
    defaults: ``Settings.from_env``), plus ``more`` fields a command has (``token``, ...).
    Raises ConfigError for a bad value, naming its flag or variable."""
    flags = {name: getattr(args, name, None) for name in _FLAGS}
    flags["no_log"] = bool(getattr(args, "no_log", False))
    if not flags["trust_project_hooks"]:
        flags["trust_project_hooks"] = None  # not given: the environment decides
    return Settings.from_env(environ, **flags, **more)


def user_dir(args: Given) -> Path | None:
    """The user hooks folder given (flag, then ``MCP_HOOKS_USER_DIR``), made absolute; None
    when neither is set (``Registry`` then takes ``paths.user_hooks_dir()``)."""
    return settings(args).user_dir


def user_hooks_dir(args: Given) -> Path:
    """The user hooks folder to read or write: as given, else ``paths.user_hooks_dir()``."""
    return user_hooks_of(settings(args))


def user_hooks_of(given: Settings) -> Path:
    """The settings' user hooks folder, else ``paths.user_hooks_dir()``."""
    return given.user_dir or paths.user_hooks_dir()


def project_of(given: Settings) -> Path:
    """The settings' project, else the nearest folder at or above the current one that has
    ``.agents/hooks`` (else the current folder)."""
    return given.project_dir or find_project_dir(Path.cwd())


def project_dir(args: Given) -> Path:
    """The project: flag, then ``MCP_HOOKS_PROJECT_DIR``, then the nearest folder at or
    above the current one that has ``.agents/hooks`` (else the current folder)."""
    return project_of(settings(args))


def log_of(given: Settings) -> EventLog | None:
    """The ``EventLog`` the settings write to; None: none."""
    return EventLog(given.log) if given.log is not None else None


def event_log(args: Given) -> EventLog | None:
    """The log to write: ``--no-log`` or ``MCP_HOOKS_LOG=off`` none; else flag, then
    ``MCP_HOOKS_LOG``, then ``paths.log_path()``."""
    return log_of(settings(args))


def state_url(args: Given) -> str:
    """The state store URL: ``--state``, then ``MCP_HOOKS_STATE``, then ``file:``."""
    return settings(args).state


def log_path(args: Given) -> Path:
    """Where the event log is read from (``mcp-hooks log``), even when writing is off."""
    return settings(args).log_read or paths.log_path()


def stop_block_cap(args: Given) -> int:
    """The stop loop guard's cap: flag, then ``MCP_HOOKS_STOP_BLOCK_CAP``, then the default."""
    return settings(args).stop_block_cap


def on_fault(args: Given = None) -> OnFault:
    """``block`` (the default) or ``warn``: what a fault of our own does to a blocking event
    (flag, then ``MCP_HOOKS_ON_FAULT``; another value is a ConfigError naming it)."""
    return settings(args).on_fault


def trust_project_hooks(args: Given = None) -> bool:
    """Whether to trust every project hook: the flag, else ``MCP_HOOKS_TRUST_PROJECT_HOOKS``."""
    return settings(args).trust_project_hooks


def registry_of(given: Settings, *, strict: bool = False, watch: bool = True) -> Registry:
    """The Registry the settings describe (user folder plus the project's); with a shared
    ``--state``, project hooks are trusted by the digests kept there (``trust_store_of``)."""
    return Registry(given.user_dir, project_of(given), strict=strict, watch=watch,
                    trust_project_hooks=given.trust_project_hooks,
                    trust_store=registry_trust(given), managed_dir=given.managed_dir)


def registry_trust(given: Settings) -> TrustStore:
    """The trust store a door's registry checks project hooks against: ``trust_store_of``
    (a shared ``--state``'s digests, else the trust file); with ``trust_project_hooks`` the
    file, never asked, and no shared store opened for it."""
    return TrustStore(given.trust_store) if given.trust_project_hooks else trust_store_of(given)


def trust_store_of(given: Settings, store: object = None) -> TrustStore:
    """The trust store the settings name: the trust file (``trust_store``) for ``file:``;
    else the one in the shared state store ``--state`` names (``store``: that store, already
    open; else it is opened now, ``StateUnavailable`` when it cannot be), so trusting once
    serves every replica, its records signed with ``trust_key`` (``MCP_HOOKS_TRUST_KEY``)."""
    if given.state.strip().lower().startswith("file:"):
        return TrustStore(given.trust_store)
    # lazy: 8 ms of cold fire (python -X importtime), only with a shared --state
    from mcp_hooks.state.remote import redact

    # lazy: 29 ms of cold fire (python -X importtime), only with a shared --state
    from mcp_hooks.state.url import open_store, replica_name

    shared = store if store is not None else open_store(given.state, replica=replica_name())
    return TrustStore.over(shared, redact(given.state), given.trust_key) or TrustStore(
        given.trust_store)


def trust_writer(given: Settings, command: str) -> TrustStore:
    """The trust store ``mcp-hooks COMMAND`` records trust in (``trust_store_of``); a shared
    one written without ``MCP_HOOKS_TRUST_KEY`` is said on stderr: its records are unsigned,
    and a replica that has a key counts them as none."""
    store = trust_store_of(given)
    if store.shared is not None and store.signatures is None:
        print(f"mcp-hooks {command}: warning: {unsigned_warning(store.where)}",
              file=sys.stderr, flush=True)
    return store


def registry(args: Given, *, strict: bool = False, watch: bool = True) -> Registry:
    """The Registry the options describe (user folder plus the project's)."""
    return registry_of(settings(args), strict=strict, watch=watch)


SCOPES = ("user", "project")


def add_scope_option(parser: argparse.ArgumentParser, *, default: str | None, user: str,
                     project: str, default_said: str | None = None) -> None:
    """``--scope user|project``, as every command that reads or writes one of them takes it,
    with what each scope means for this command and its default, said in its help.

    Args:
        default: ``user`` or ``project``; None when the command chooses (per host, say).
        user, project: what each scope means here.
        default_said: the default as the help says it, when ``default`` alone does not.
    """
    parser.add_argument("--scope", choices=SCOPES, default=default,
                        help=f"user: {user}; project: {project} "
                        f"(default: {default_said or default})")
