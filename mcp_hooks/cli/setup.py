"""``mcp-hooks add`` and ``mcp-hooks init``: the bundled hook library, and the first run.

``add NAME...`` copies bundled hooks (:mod:`mcp_hooks.registry.bundle`) into the user hooks folder
(``--scope user``, the default: ``--user-dir``, else ``paths.user_hooks_dir()``) or the
project's ``.agents/hooks`` (``--scope project``), trusting a project copy. ``add --list``
prints the library (``--json`` for programs).

``init`` is the first-run command: it adds the recommended guards (``bundle.RECOMMENDED``),
wires every agent host it finds installed (``Host.installed``: its program on PATH or its
config folder) or those named with ``--host``, through ``hosts.install.install``, and ends
with the command that proves the gate works (a ``fire`` that is denied) and ``doctor``.
``--dry-run`` writes nothing and prints the same plan. Running it again changes nothing and
says so.

Exit codes: 0 done (or nothing to do); 1 a hook left alone because a different one of the
same name is there (``--force`` replaces it), or a host config that could not be written;
64 a usage error (an unknown hook or host name: a ``ConfigError``, raised to the boundary).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcp_hooks import options
from mcp_hooks.cli.report import emit_json
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, UsageError
from mcp_hooks.hosts import HOSTS, get_host, host_name
from mcp_hooks.options import CommonOptions
from mcp_hooks.registry import bundle
from mcp_hooks.registry.discovery import project_hooks_dir
from mcp_hooks.settings import Settings

PROOF_INPUT = '{"command": "rm -rf /"}'

# -- parsers -------------------------------------------------------------------------------


def add_add_parser(sub: Any) -> None:
    """Declare ``add`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "add", help="copy hooks from the bundled library into your hooks folder",
        description="Copy hooks of the library that ships with mcp-hooks into the user hooks "
        "folder (default) or the project's .agents/hooks (a project copy is trusted: it is "
        "our own code). A different hook of the same name is left alone unless --force. "
        "--list shows the library.",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="bundled hooks (see --list)")
    p.add_argument("--list", action="store_true",
                   help="print the library: name, event, fail-closed or not, what it does")
    p.add_argument("--json", action="store_true", help="with --list: print JSON")
    options.add_scope_option(p, default="user", user="your hooks folder, for every project",
                             project="this project's .agents/hooks (the copy is trusted)")
    p.add_argument("--dry-run", action="store_true",
                   help="change nothing; print what would be copied")
    p.add_argument("--force", action="store_true",
                   help="replace a different hook of the same name (the old one is kept in "
                   "$XDG_STATE_HOME/mcp-hooks/backups/hooks)")
    options.add_common_options(p)


def add_init_parser(sub: Any) -> None:
    """Declare ``init`` on the ``mcp-hooks`` subparsers."""
    p = sub.add_parser(
        "init", help="first run: add the recommended guards and wire your agent hosts",
        description="Add the recommended guards from the bundled library ("
        + ", ".join(bundle.RECOMMENDED) + "), wire the agent hosts found on this machine "
        "(their program on PATH or their config folder) or those named with --host, and "
        "print the command that shows the gate works. Safe to run again.",
    )
    p.add_argument("--host", dest="hosts", action="append", metavar="HOST",
                   help="wire this host (repeatable; default: every host found installed)")
    options.add_scope_option(p, default="user", user="your hooks folder and host configs, "
                             "for every project", project="this project's .agents/hooks and "
                             "host configs")
    p.add_argument("--dry-run", action="store_true",
                   help="change nothing; print what would be done")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout (hooks, hosts, the check "
                   "commands); the text goes to stderr")
    options.add_common_options(p)




# -- add -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddOptions:
    """What ``add`` is asked to do.

    Attributes:
        names: bundled hooks to copy.
        scope: ``user`` or ``project``.
        force: replace a different hook of the same name.
        dry_run: write nothing.
        common: the shared options (``user_dir``, ``project_dir`` choose the folders).
    """

    names: tuple[str, ...] = ()
    scope: str = "user"
    force: bool = False
    dry_run: bool = False
    common: CommonOptions = field(default_factory=CommonOptions)


def hooks_dir(scope: str, given: Settings) -> tuple[Path, Path | None]:
    """The hooks folder of ``scope`` and, for a project, the project (to trust copies in)."""
    if scope == "project":
        project = options.project_of(given)
        return project_hooks_dir(project), project
    return options.user_hooks_of(given), None


def add(opts: AddOptions) -> int:
    """Copy the named bundled hooks; print one line each. 1 when one was left alone.

    Raises:
        UnknownBundledHookError: a name the library has not (exit 64).
    """
    if not opts.names:
        raise UsageError("name the hooks to add (see `mcp-hooks add --list`)")
    chosen = bundle.select(opts.names)
    given = options.settings(opts.common)  # once: the folders and the trust store
    target, project = hooks_dir(opts.scope, given)
    results = bundle.add_hooks(chosen, target, force=opts.force, dry_run=opts.dry_run,
                               trust_project=project, trust_store=None if (
                                   opts.dry_run or project is None) else
                               options.trust_writer(given, "add"))
    _print_results(results, opts.dry_run)
    return EXIT_FAILURE if any(r.status == "conflict" for r in results) else EXIT_OK


_SAID = {
    "added": ("added", "would add"),
    "same": ("already in place, unchanged:", "already in place, unchanged:"),
    "replaced": ("replaced", "would replace"),
}


def _print_results(results: Sequence[bundle.Added], dry_run: bool) -> None:
    for r in results:
        if r.status == "conflict":
            print(f"mcp-hooks: {r.dest} holds a hook named {r.name} that differs from the "
                  f"bundled one ({r.source}); left as it is. Pass --force to replace it (the "
                  "old folder is kept as a backup).", file=sys.stderr)
            continue
        line = f"{_SAID[r.status][dry_run]} {r.name} {'->' if r.status != 'same' else 'at'} " \
               f"{r.dest}"
        if r.backup is not None:
            line += f" (the previous folder is kept at {r.backup})"
        if r.trusted:
            line += " (trusted for this project: it is the bundled code, byte for byte)"
        print(line)


def print_library(as_json: bool) -> int:
    """``add --list``: the bundled hooks, for people or (``as_json``) for programs."""
    hooks = bundle.bundled_hooks()
    if as_json:
        print(json.dumps([h.as_dict() for h in hooks], indent=2))
        return EXIT_OK
    width = max((len(h.name) for h in hooks), default=4)
    events = max((len(h.trigger) for h in hooks), default=5)
    print(f"{'NAME':<{width}}  {'EVENT':<{events}}  {'ON ERROR':<11}  WHAT IT DOES")
    for h in hooks:
        mode = "fail-closed" if h.fail_closed else "fail-open"
        mark = " (init adds it)" if h.recommended else ""
        print(f"{h.name:<{width}}  {h.trigger:<{events}}  {mode:<11}  {h.summary}{mark}")
    print(f"\nfrom {bundle.LIBRARY_DIR}; copy with `mcp-hooks add NAME...` (fail-closed: a "
          "crash or timeout of the hook denies)")
    return EXIT_OK


def add_command(args: argparse.Namespace) -> int:
    """``mcp-hooks add``: the parsed command line -> ``AddOptions`` -> ``add``."""
    if args.list:
        if args.names:
            raise UsageError("--list takes no hook names")
        return print_library(bool(args.json))
    if args.json:
        raise UsageError("--json goes with --list")
    return add(AddOptions(names=tuple(args.names), scope=args.scope, force=bool(args.force),
                          dry_run=bool(args.dry_run), common=CommonOptions.from_args(args)))


# -- init ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class InitOptions:
    """What ``init`` is asked to do.

    Attributes:
        hosts: hosts to wire; empty: every host found installed.
        scope: ``user`` or ``project``, for the hooks and the host configs alike.
        dry_run: write nothing; print the plan.
        home: where hosts keep their config folders (default: the home folder).
        path: where their programs are looked for (default: ``$PATH``).
        common: the shared options (folders, log, ...), passed on to the host entries.
        json: print one JSON document on stdout (``init_json``); the text goes to stderr.
        settings: the door's record (flags, then ``MCP_HOOKS_*``); None: ``init`` builds it
            once from ``common`` and hands it to each host's ``install``.
    """

    hosts: tuple[str, ...] = ()
    scope: str = "user"
    dry_run: bool = False
    home: Path | None = None
    path: str | None = None
    common: CommonOptions = field(default_factory=CommonOptions)
    json: bool = False
    settings: Settings | None = None

    @property
    def record(self) -> Settings:
        """The settings ``init`` reads (``settings``, built by ``init`` when not given)."""
        return self.settings if self.settings is not None else options.settings(self.common)


def found_hosts(home: Path, path: str | None = None) -> list[tuple[str, str]]:
    """(host name, why it looks installed) for every host found on this machine."""
    found = []
    for name in HOSTS:
        why = get_host(name).installed(home, path)
        if why is not None:
            found.append((name, why))
    return found


def init_project(settings: Settings) -> Path:
    """The project ``init --scope project`` sets up: ``--project-dir``, else
    ``$MCP_HOOKS_PROJECT_DIR`` (``settings.project_dir``), else the current folder (where
    ``install`` writes too)."""
    return settings.project_dir or Path.cwd().resolve()


def _folders(opts: InitOptions) -> list[str]:
    """The folder options a check of what init wrote needs (none for the defaults)."""
    words = []
    if opts.common.user_dir is not None:
        words += ["--user-dir", str(options.user_hooks_of(opts.record))]
    if opts.common.project_dir is not None:
        words += ["--project-dir", str(init_project(opts.record))]
    return words


def _snapshot(files: Sequence[Path | None]) -> list[bytes | None]:
    found: list[bytes | None] = []
    for path in files:
        try:
            found.append(path.read_bytes() if path is not None else None)
        except OSError:
            found.append(None)
    return found


def init(opts: InitOptions) -> int:
    """Add the recommended guards, wire the hosts, print what was done and how to check it
    (``opts.json``: the text on stderr, one JSON document of it on stdout).

    Raises:
        UnknownHostError: a ``--host`` that is not bridged (exit 64).
    """
    opts = replace(opts, settings=opts.record)  # built once, passed down
    if not opts.json:
        return _init(opts, {})
    record: dict[str, Any] = {"dry_run": opts.dry_run, "scope": opts.scope}
    with contextlib.redirect_stdout(sys.stderr):
        code = _init(opts, record)
    emit_json({**record, "exit_code": code, "ok": code == EXIT_OK})
    return code


def _init(opts: InitOptions, record: dict[str, Any]) -> int:
    named = [host_name(h) for h in opts.hosts]  # every name checked before anything is done
    if opts.dry_run:
        print("(dry run: nothing is written; this is what init would do)\n")
    project = init_project(opts.record) if opts.scope == "project" else None
    results = _add_guards(opts, project, record)
    code = EXIT_FAILURE if any(r.status == "conflict" for r in results) else EXIT_OK
    changed = any(r.status != "same" for r in results)

    hosts = _hosts_to_wire(opts, named)
    record["hosts"] = [_wire(opts, name, why, project) for name, why in hosts]
    for wired in record["hosts"]:
        changed = changed or wired["changed"]
        code = code or wired["exit_code"]
    _print_check(opts, [name for name, _ in hosts], record)
    record["changed"] = changed and not opts.dry_run
    if not changed and not opts.dry_run:
        print("\nEverything was already in place: nothing was changed.")
    return code


def _hosts_to_wire(opts: InitOptions, named: list[str]) -> list[tuple[str, str]]:
    """Step 2's heading and the hosts to wire: (name, why)."""
    if named:
        hosts = [(n, "named with --host") for n in dict.fromkeys(named)]
    else:
        hosts = found_hosts(opts.home or Path(os.path.expanduser("~")), opts.path)
    print(f"\n2. Agent hosts ({opts.scope} scope):")
    if not hosts:
        print("   none found (no claude, codex, gemini, cursor-agent, copilot, kimi, qwen, cline "
              "or opencode on PATH, no config folder of theirs). The hooks run from `mcp-hooks "
              "fire`, `mcp-hooks serve` and `mcp-hooks proxy` already; wire a host later with "
              "`mcp-hooks init --host HOST` or `mcp-hooks install HOST`.")
    return hosts


def _add_guards(opts: InitOptions, project: Path | None,
                record: dict[str, Any]) -> list[bundle.Added]:
    """Step 1: the recommended guards into the hooks folder of ``opts.scope``."""
    target = project_hooks_dir(project) if project is not None else \
        options.user_hooks_of(opts.record)
    print(f"1. The recommended guards, into {target}:")
    for name, why in bundle.RECOMMENDED.items():
        print(f"   {name}: {why}")
    results = bundle.add_hooks(bundle.select(bundle.RECOMMENDED), target,
                               dry_run=opts.dry_run, trust_project=project,
                               trust_store=None if opts.dry_run or project is None else
                               options.trust_writer(opts.record, "init"))
    _print_results(results, opts.dry_run)
    record.update(hooks_dir=str(target), hooks=[
        {"name": r.name, "status": r.status, "dest": str(r.dest),
         "backup": str(r.backup) if r.backup is not None else None, "trusted": r.trusted}
        for r in results])
    return results


def _print_check(opts: InitOptions, hosts: list[str], record: dict[str, Any]) -> None:
    """Step 3: the commands that prove the gate works."""
    folders = _folders(opts)
    record["check"] = [
        shlex.join(["mcp-hooks", *folders, "fire", "pre-tool-call", "--tool", "Shell",
                    "--input", PROOF_INPUT]),
        shlex.join(["mcp-hooks", *folders, "doctor", *(w for n in hosts for w in ("--host", n))])]
    print("\n3. Check it: this must be denied (exit 2), and doctor must find the gate whole:")
    for line in record["check"]:
        print("   " + line)


def _wire(opts: InitOptions, name: str, why: str, project: Path | None) -> dict[str, Any]:
    """Wire one host as ``install`` would; what was done (``init --json``'s host record)."""
    # lazy: 71 ms of cold start for `init` without a host to wire
    from mcp_hooks.hosts.install import InstallOptions, install

    host = get_host(name)
    scope = opts.scope if opts.scope == "user" or host.project_config else "user"
    print(f"   {host.title} ({why})" + ("" if scope == opts.scope else
                                       ": it has no project config, so user scope"))
    config = host.config_path(scope, project or init_project(opts.record))
    before = _snapshot([config])
    sys.stdout.flush()
    result = install(InstallOptions(host=name, scope=scope, dry_run=opts.dry_run,
                                    common=opts.common, settings=opts.record))
    sys.stdout.flush()
    return {"host": name, "why": why, "scope": scope,
            "config": str(config) if config is not None else None, "exit_code": result,
            "changed": result != EXIT_OK or _snapshot([config]) != before}


def init_command(args: argparse.Namespace) -> int:
    """``mcp-hooks init``: the parsed command line -> ``InitOptions`` -> ``init``."""
    return init(InitOptions(hosts=tuple(args.hosts or ()), scope=args.scope,
                            dry_run=bool(args.dry_run), common=CommonOptions.from_args(args),
                            json=bool(getattr(args, "json", False))))


__all__ = ["AddOptions", "InitOptions", "add", "add_add_parser", "add_command",
           "add_init_parser", "found_hosts", "init", "init_command", "print_library"]
