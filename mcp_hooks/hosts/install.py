"""``mcp-hooks install <host>`` / ``uninstall``: write our entries into a host's hook config.

Each host declares its hook config (``Host.config_path``, ``Host.config_format``) and the
handler written there (``Host.entry``); this module knows no host by name. Today:

==============  ==========================================  ===================================
host            project scope                               user scope
==============  ==========================================  ===================================
claude-code     ``.claude/settings.json``                   ``~/.claude/settings.json``
codex           ``.codex/hooks.json`` (needs trust)         ``$CODEX_HOME/hooks.json`` (~/.codex)
gemini-cli      ``.gemini/settings.json``                   ``~/.gemini/settings.json``
cursor          ``.cursor/hooks.json``                      ``~/.cursor/hooks.json``
copilot-cli     ``.github/hooks/mcp-hooks.json``            ``~/.copilot/hooks/mcp-hooks.json``
kimi-cli        (none: Kimi reads only its user config)     ``$KIMI_SHARE_DIR/config.toml``
qwen-code       ``.qwen/settings.json``                     ``~/.qwen/settings.json``
cline           ``.clinerules/hooks/<Event>`` (executables)  ``$CLINE_DIR/hooks/`` (~/.cline)
opencode        ``.opencode/plugins/mcp-hooks.js``          ``~/.config/opencode/plugins/...``
==============  ==========================================  ===================================

Rules: every unrelated entry is kept as it was; installing twice changes nothing; the previous
file is copied to ``$XDG_STATE_HOME/mcp-hooks/backups/`` before a change; ``--dry-run`` prints
the diff and writes nothing; ``uninstall`` removes only our entries (``configfile`` edits the
formats and recognises our entries by their shape; Cline's folder of executables and
OpenCode's plugin are files we generate whole, and only ours are ever replaced or removed).

The command written must keep working (``bridge_prefix``; ``host_command`` checks it):
never a throwaway path, never one that loads code from the project folder. ``--bridge-command`` (or
``MCP_HOOKS_BRIDGE_COMMAND``) overrides the one chosen, unless it would: refused.

``--via`` chooses what the host runs:

- ``command`` (default): ``mcp-hooks bridge <host> --event <Event>``, a new process per
  hook call;
- ``server``: a small Python script (standard library only, ``forward_script``, run with
  ``-I -S``) that POSTs the
  payload to a running ``mcp-hooks serve --transport http`` signed with the server's token
  (read from a 0600 file; the token itself is never sent), accepts the answer only if it is
  signed over that very request (forward protocol v2, docs/safety.md "Forward path"), and
  otherwise runs the bridge locally, so hooks never silently stop and nothing else on the port
  can say "allow";
- ``http`` (Claude Code, ``Host.native_vias``): a native ``type: http`` hook to the server,
  no process at all (Claude Code fails open if the server is down);
- ``mcp`` (Claude Code): a native ``type: mcp_tool`` hook calling our server's
  ``bridge_hook`` tool, for events that cannot block only: Claude Code may run tools before
  its MCP servers connect, and an ``mcp_tool`` hook whose server is not connected does not
  run, so a gate there would be open meanwhile. Blocking events are refused with a message
  that says to use ``--via command`` or ``--via server`` for them.

Options that cannot be carried out (an event or ``--via`` the host has not, no token) are
``InstallOptionError`` (exit 64); a config file we must not touch, or only throwaway copies of
mcp-hooks to point at, ``InstallError`` (exit 1). Nothing is changed in either case.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcp_hooks import options as shared
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, MCPHooksError, exit_code
from mcp_hooks.hosts import UnknownHostError, get_host
from mcp_hooks.hosts.applying import Changes, done, show_diff, unchanged, written
from mcp_hooks.hosts.base import Host
from mcp_hooks.hosts.claude_code import ClaudeCode
from mcp_hooks.hosts.configfile import InstallError, InstallOptionError, Target, edit_all, target
from mcp_hooks.hosts.doctor import read_entries
from mcp_hooks.hosts.forward import FORWARD_PATH, TOOL_NAME
from mcp_hooks.hosts.forward_script import script_path, write_forward_files
from mcp_hooks.hosts.host_command import (
    HOW_TO_INSTALL,
    INSTALL_FOR_GOOD,
    explicit_prefix,
    forward_python,
    stable_prefix,
)
from mcp_hooks.options import CommonOptions
from mcp_hooks.settings import Settings
from mcp_hooks.spec.events import can_block

DEFAULT_URL = "http://127.0.0.1:8765"
VIAS = ("command", "server", "http", "mcp")


@dataclass(frozen=True)
class InstallOptions:
    """What ``install`` / ``uninstall`` are asked to do (``uninstall`` reads the first four).

    Attributes:
        host: the host's name or an alias.
        scope: ``project`` or ``user``; None: the host's default (``Host.default_scope``).
        dry_run: print the diff, write nothing.
        config: write this file instead of the host's usual one.
        via: ``command``, ``server``, ``http`` or ``mcp`` (see the module docstring).
        events: only these events (host or canonical names, comma lists allowed).
        url: the server for ``--via server``/``http``.
        token: the server's bearer token (else ``$MCP_HOOKS_TOKEN``).
        server_name: ``--via mcp``: our server's name in Claude Code's MCP config.
        bridge_command: how the host starts mcp-hooks (else ``$MCP_HOOKS_BRIDGE_COMMAND``).
        common: the shared options as given: the folders, log, stop cap and fault mode are
            passed on to every bridge run the entries start (``project_dir`` also chooses the
            project whose config is written); ``trust_project_hooks`` is not.
        settings: the door's record, whose ``token``, ``bridge_command`` and
            ``project_dir`` (flags, then ``MCP_HOOKS_*``) install reads; None: ``install``
            and ``uninstall`` build it once from the options above (``with_settings``).
    """

    host: str
    scope: str | None = None
    dry_run: bool = False
    config: Path | None = None
    via: str = "command"
    events: tuple[str, ...] = ()
    url: str | None = None
    token: str | None = None
    server_name: str | None = None
    bridge_command: str | None = None
    common: CommonOptions = field(default_factory=CommonOptions)
    settings: Settings | None = None


def with_settings(options: InstallOptions) -> InstallOptions:
    """``options`` with its ``Settings``: the one given, else the one its flags and the
    environment give (``options.settings``: flags, then ``MCP_HOOKS_*``). Raises ConfigError
    for a bad value, naming its flag or variable."""
    if options.settings is not None:
        return options
    return replace(options, settings=shared.settings(
        options.common, token=options.token, bridge_command=options.bridge_command))


def _settings(options: InstallOptions) -> Settings:
    """The options' record (``install``/``uninstall`` built it once; a caller of the
    functions below who passed none gets it built now)."""
    settings = with_settings(options).settings
    assert settings is not None  # with_settings sets it
    return settings


# -- what the host runs -------------------------------------------------------------------


def bridge_prefix(options: InstallOptions, scope: str = "user") -> list[str]:
    """The argv that starts ``mcp-hooks`` in a written entry.

    ``--bridge-command`` wins; project scope (committed by teams) gets plain ``mcp-hooks``,
    found on PATH where the host runs; user scope a stable absolute command
    (``stable_prefix``).
    """
    given = explicit_prefix(_settings(options).bridge_command)
    if given:
        return given
    if scope == "project":
        return ["mcp-hooks"]
    return stable_prefix()


def passed_options(options: InstallOptions) -> list[str]:
    """The folder, log and safety options given to install, passed on to every bridge run."""
    given = options.common
    extra: list[str] = []
    for flag, value in (("--user-dir", given.user_dir), ("--project-dir", given.project_dir)):
        if value is not None:
            extra += [flag, str(Path(value).expanduser().resolve())]
    if given.no_log:
        extra.append("--no-log")
    elif given.log is not None:
        extra += ["--log", str(Path(given.log).expanduser().resolve())]
    if given.stop_block_cap is not None:
        extra += ["--stop-block-cap", str(given.stop_block_cap)]
    if given.on_fault is not None:
        extra += ["--on-fault", str(given.on_fault)]
    return extra


def _url(options: InstallOptions) -> str:
    return (options.url or DEFAULT_URL).rstrip("/")


def _token(options: InstallOptions) -> str:
    token = _settings(options).token
    if not token:
        raise InstallOptionError(
            "--via server needs the server's bearer token: pass --token or set MCP_HOOKS_TOKEN "
            "(the same one `mcp-hooks serve --transport http` uses); the forwarding endpoint "
            "refuses requests without it"
        )
    return token


# -- the entries --------------------------------------------------------------------------


def _project(options: InstallOptions) -> Path:
    """``--project-dir``, else ``MCP_HOOKS_PROJECT_DIR`` (made absolute), else this folder."""
    return _settings(options).project_dir or Path.cwd().resolve()


def _events(options: InstallOptions, host: Host) -> list[str]:
    if (options.via or "command") != "command":  # a prompt event is the bridge's own (prompts.py)
        if any(p in str(e).split(",") for e in options.events for p in host.prompt_events):
            raise InstallOptionError(f"{', '.join(host.prompt_events)} is answered by the bridge "
                                     "itself: install it with --via command")
        return [e for e in _chosen(options, host) if e not in host.prompt_events]
    return _chosen(options, host)


def _chosen(options: InstallOptions, host: Host) -> list[str]:
    if not options.events:
        return list(host.install_events)
    chosen: list[str] = []
    for name in options.events:
        for part in str(name).split(","):
            part = part.strip()
            if not part:
                continue
            matches = [e for e, c in [*host.events.items(), *host.prompt_events.items()]
                       if part == e or (part == c and e in host.events)]
            if not matches:
                raise InstallOptionError(f"{host.title} has no event {part!r}; use a host "
                                         f"event ({', '.join(host.events)}) or a canonical name")
            for match in matches:
                if match not in chosen and (match in host.install_events or part == match):
                    chosen.append(match)
    return chosen


def handler_maker(options: InstallOptions, host: Host, scope: str,
                  events: Sequence[str]) -> Callable[[str], dict[str, Any]]:
    """``event -> handler`` for the entries ``options.via`` asks for, in ``host``'s shape."""
    via = options.via or "command"
    if via not in VIAS:
        raise InstallOptionError(f"--via must be command, server, http or mcp, not {via!r}")
    if via in ("http", "mcp"):
        return _native_maker(options, host, via, events)
    if via == "server":
        token = _token(options)
        # the fallback: absolute, stable
        bridge = explicit_prefix(_settings(options).bridge_command) or stable_prefix()
        python = forward_python(bridge)
        script = write_forward_files(token, bridge, dry_run=options.dry_run)
        # -I: the script needs the standard library only, never a module of the project;
        # -S: nor site-packages (3-4 ms of every call's start)
        argv = [python, "-I", "-S", str(script), _url(options), host.name]

        def line(event: str) -> str:
            return shlex.join([*argv, event, *passed_options(options)])
    else:
        prefix = bridge_prefix(options, scope)

        def line(event: str) -> str:
            return shlex.join([*prefix, "bridge", host.name, "--event", event,
                               *passed_options(options)])
    return lambda event: host.entry(event, line(event))


def _native_maker(options: InstallOptions, host: Host, via: str,
                  events: Sequence[str]) -> Callable[[str], dict[str, Any]]:
    """A host's own hook types (Claude Code: ``http`` and ``mcp_tool``), no process at all."""
    if via not in host.native_vias or not isinstance(host, ClaudeCode):
        raise InstallOptionError(f"--via {via} is a Claude Code hook type; for {host.title} "
                                 "use --via command or --via server")
    claude = host
    if via == "http":
        url = f"{_url(options)}{FORWARD_PATH}{host.name}"
        return lambda event: claude.http_entry(event, url)
    gates = [e for e in events if can_block(host.events[e])]
    if gates:
        raise InstallOptionError(
            f"--via mcp cannot guard {', '.join(gates)}: Claude Code may run tools before "
            "its MCP servers connect, and an mcp_tool hook whose server is not connected "
            "does not run, so these events would go unchecked meanwhile. Install them "
            "with --via command (or --via server, which falls back to the bridge); use "
            "--via mcp only for events that cannot block, e.g. " + " ".join(
                f"--event {e}" for e in host.install_events
                if e in host.events and not can_block(host.events[e])))
    server = options.server_name or "mcp-hooks"
    return lambda event: claude.mcp_tool_entry(event, server, TOOL_NAME)


def install_notes(host: Host, scope: str, options: InstallOptions) -> list[str]:
    """What to tell the user after an install: ours about the command, then the host's."""
    notes = []
    via = options.via or "command"
    if via == "command" and scope == "project" and explicit_prefix(
            _settings(options).bridge_command) is None:
        notes.append(
            "Project scope: the entries run plain `mcp-hooks`, which the host finds on PATH, "
            "so the file holds no path of this machine and can be committed. Everyone who "
            f"uses it needs mcp-hooks on PATH ({HOW_TO_INSTALL}); pass --bridge-command to "
            "write another command.")
        if shutil.which("mcp-hooks") is None:
            notes.append("warning: no `mcp-hooks` is on PATH here, so these entries cannot "
                         "run yet: " + INSTALL_FOR_GOOD + ".")
    if via == "server" and scope == "project":
        notes.append("--via server writes the path of this machine's forward script "
                     f"({script_path()}) into the project's file.")
    return notes + host.install_notes(scope, via, options.server_name or "mcp-hooks")


# -- the commands -------------------------------------------------------------------------


def install(options: InstallOptions) -> int:
    """``mcp-hooks install <host>``: merge our entries into the host's hook config."""
    return _change(options, install=True)


def uninstall(options: InstallOptions) -> int:
    """``mcp-hooks uninstall <host>``: remove only our entries from the host's hook config."""
    return _change(options, install=False)


def _change(options: InstallOptions, install: bool) -> int:
    try:
        host = get_host(options.host)
    except UnknownHostError as exc:
        print(f"mcp-hooks: {exc}", file=sys.stderr)
        return EXIT_USAGE
    scope = options.scope or host.default_scope
    verb = "install" if install else "uninstall"
    try:
        options = with_settings(options)  # the door's record, built once
        where, events, changes = _planned(options, host, scope, install)
    except MCPHooksError as exc:
        print(f"mcp-hooks {verb}: {exc}", file=sys.stderr)
        return exit_code(exc)
    except OSError as exc:
        print(f"mcp-hooks {verb}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    notes = install_notes(host, scope, options) if install else []
    if not changes:
        unchanged(host, scope, where, install, notes)
        return EXIT_OK
    if options.dry_run:
        show_diff(changes, where, verb)
        return EXIT_OK
    backups = written(host, scope, where, changes, verb)
    if backups is None:
        return EXIT_FAILURE
    done(host, where, f"{len(events)} {host.title} event(s)" if install else None, backups,
         notes)
    return EXIT_OK


def _planned(options: InstallOptions, host: Host, scope: str, install: bool
             ) -> tuple[Target, list[str], Changes]:
    """Where the host's config is, the events, and each file's change (only real ones;
    an uninstall leaves a file with no entry of ours exactly as it is: not even reformatted,
    nor removed when empty)."""
    where = target(host, scope, _project(options))
    if options.config is not None:
        where = Target(Path(options.config).expanduser().resolve(), where.format)
    events = _events(options, host) if install else [*host.events, *host.prompt_events]
    make = handler_maker(options, host, scope, events) if install else None
    changes = {path: (old, new) for path, (old, new)
               in edit_all(where, events, make, host).items() if old != new}
    if not install and where.format not in ("files", "module"):
        changes = {path: change for path, change in changes.items()
                   if change[0] and _has_ours(host, where, change[0])}
    return where, events, changes


def _has_ours(host: Host, where: Target, text: str) -> bool:
    """Whether a host config holds any entry of ours (what ``uninstall`` would remove)."""
    try:
        return bool(read_entries(host, where, text))
    except ValueError:  # unreadable here; edit() read it, so let the removal decide
        return True


__all__ = ["InstallError", "InstallOptionError", "InstallOptions", "install", "uninstall"]
