"""``mcp-hooks doctor [--json]``: is the gate whole?

For each agent host: where our entries are wired (scope, file, events, how), whether the
command written there still resolves, and whether it really answers a blocking event: a
temporary user hooks folder gets a probe hook that denies a marker shell command, the host's
written command runs (as the host runs it: ``sh -c``) with ``--user-dir <tmp>`` appended, fed
the host's own ``PreToolUse``-style payload, and its answer must be a deny in that host's form
carrying the probe's reason. Then the hooks themselves: invalid ones, untrusted or changed
project hooks, shadowed ones; whether the event log and the trust store can be written; and,
for ``--via server`` / ``--via http`` entries, whether the server answers and proves it holds
the token (a forward protocol v2 request, which never sends the token, answered with a
signature over it, for a payload that runs no hook), and whether the forward script on disk
is one that keeps the token to itself. And what the host runs beyond the probe
(``doctor_commands``): no written command may load code from the project folder, nor the
environment put that folder on PATH or PYTHONPATH; a file install generates whole (OpenCode's
plugin, Cline's scripts) must be byte for byte what this mcp-hooks writes.

Exit 1 when anything is broken, each problem printed with its fix; 0 otherwise. Warnings
(a host wired without its tool gate, a server that is down while the local bridge still
answers) do not fail the check.

What a host looks like is the host's own declaration (``Host.config_path``, ``gate_event``,
``shell_call``, ``deny_reason``); this module knows no host by name.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_hooks import options
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK
from mcp_hooks.hosts import HOSTS, get_host, host_name
from mcp_hooks.hosts.base import Host
from mcp_hooks.hosts.configfile import (
    FORWARD_STEM,
    Target,
    generated,
    is_ours,
    our_files,
    target,
    toml_reader,
)
from mcp_hooks.hosts.doctor_commands import (
    check_cwd_imports,
    check_environment,
    check_generated,
    forward_words,
)
from mcp_hooks.hosts.doctor_files import check_files, check_hooks
from mcp_hooks.hosts.doctor_report import Entry, Report, Wiring, format_report
from mcp_hooks.hosts.doctor_server import check_forward_script, check_server
from mcp_hooks.hosts.doctor_state import check_state
from mcp_hooks.hosts.forward import FORWARD_PATH
from mcp_hooks.hosts.forward_script import read_token
from mcp_hooks.options import CommonOptions
from mcp_hooks.settings import Settings

EXIT_BROKEN = EXIT_FAILURE
PROBE_HOOK = "mcp-hooks-doctor-probe"
PROBE_MARKER = "echo mcp-hooks-doctor-probe-7f3a"
PROBE_REASON = "mcp-hooks doctor probe: denied as expected"
PROBE_SESSION = "mcp-hooks-doctor"
PROBE_TIMEOUT_S = 60.0
UNREACHABLE = "http://127.0.0.1:9"  # no server: a forward script's local fallback answers


# -- the command ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DoctorOptions:
    """What ``doctor`` checks and how it reports.

    Attributes:
        hosts: only these hosts (names or aliases); empty: every host.
        json: print a machine-readable report.
        common: the shared options as given (hook folders, log, trust).
        settings: the door's record (flags, then ``MCP_HOOKS_*``); None: ``run_doctor``
            builds it once from ``common``.
    """

    hosts: tuple[str, ...] = ()
    json: bool = False
    common: CommonOptions = field(default_factory=CommonOptions)
    settings: Settings | None = None


def run_doctor(given: DoctorOptions) -> int:
    """Run every check; print the report; 1 when anything is broken.

    Raises:
        UnknownHostError: a host in ``given.hosts`` that is not bridged.
    """
    report = Report()
    settings = given.settings or options.settings(given.common)  # built once, passed down
    names = [host_name(h) for h in (given.hosts or HOSTS)]
    project = options.project_of(settings)
    with tempfile.TemporaryDirectory(prefix="mcp-hooks-doctor-") as tmp:
        probe_root = Path(tmp)
        _write_probe(probe_root)
        for name in names:
            check_host(report, get_host(name), project, probe_root, settings.token)
    if report.wirings:
        check_environment(report)
    else:
        report.warn("no agent host is wired to mcp-hooks (looked in the project and user "
                    "configs)", "mcp-hooks install <host> (" + ", ".join(HOSTS) + ")")
    check_hooks(report, settings, given.common.state)
    check_files(report, settings, given.common.state)
    state = settings.state
    if state and not state.startswith("file:"):  # a shared store (doctor_state.py)
        report.files["state_store"] = check_state(report, state)
    if given.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_report(report))
    return EXIT_BROKEN if report.problems else EXIT_OK


# -- host wiring ----------------------------------------------------------------------------


def _targets(host: Host, project: Path) -> list[tuple[str, Target]]:
    return [(scope, target(host, scope, project)) for scope in ("project", "user")
            if host.config_path(scope, project) is not None]


def read_entries(host: Host, where: Target, text: str) -> list[Entry]:
    """Our handlers in a host config's text (JSON, Kimi's TOML, a generated module) or, for
    the ``files`` format, in the folder ``where.path``."""
    if where.format in ("files", "module"):
        found = ({e: c for e, (_p, _t, c) in our_files(where.path, host).items()}
                 if where.format == "files" else generated(host).config_commands(text) or {})
        return [_entry(host, event, {"command": command}) for event, command in found.items()]
    if where.format == "toml":
        return _toml_entries(host, text)
    return _json_entries(host, where.format == "grouped", text)


def _toml_entries(host: Host, text: str) -> list[Entry]:
    """Our handlers in Kimi's TOML config: ``[[hooks]]`` tables, each naming its event."""
    toml = toml_reader()
    if toml is None:  # pragma: no cover - Python 3.10 without tomli
        raise ValueError("reading TOML needs Python 3.11 or tomli")
    data: Any = toml.loads(text)
    return [_entry(host, str(hook.get("event")), hook)
            for hook in (data.get("hooks", []) if isinstance(data, dict) else [])
            if isinstance(hook, dict) and is_ours(hook, host)]


def _json_entries(host: Host, grouped: bool, text: str) -> list[Entry]:
    """Our handlers in a JSON config's ``hooks`` map (event to handlers, or to groups of them)."""
    entries: list[Entry] = []
    data = json.loads(text) if text.strip() else {}
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return entries
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            handlers = group.get("hooks") if grouped and isinstance(group, dict) else [group]
            for handler in handlers if isinstance(handlers, list) else []:
                if is_ours(handler, host):
                    entries.append(_entry(host, event, handler))
    return entries


def _entry(host: Host, event: str, handler: dict[str, Any]) -> Entry:
    if handler.get("type") == "mcp_tool":
        return Entry(event, "mcp_tool")
    if handler.get("type") == "http":
        return Entry(event, "http", url=str(handler.get("url")))
    command = host.entry_command(handler) or ""
    kind = "server" if FORWARD_STEM in command else "command"
    return Entry(event, kind, command=command)


def _executable(word: str) -> bool:
    if os.sep in word:
        return os.path.isfile(word) and os.access(word, os.X_OK)
    return shutil.which(word) is not None


def check_host(report: Report, host: Host, project: Path, probe_root: Path,
               token: str | None = None) -> None:
    """``host``'s configs in ``project`` and the user's: read, found, probed; a server they
    name checked with ``token`` (``Settings.token``: ``MCP_HOOKS_TOKEN``) where the entry
    carries none."""
    for scope, where in _targets(host, project):
        if where.path.exists():
            _check_target(report, host, scope, where, probe_root, token)


def _check_target(report: Report, host: Host, scope: str, where: Target,
                  probe_root: Path, token: str | None) -> None:
    """One config file of ``host``: read, its commands found, its gate entry probed."""
    try:
        text = "" if where.format == "files" else where.path.read_text(encoding="utf-8")
        entries = read_entries(host, where, text)
    except (OSError, ValueError) as exc:
        report.problem(f"{where.path} cannot be read ({exc}); the host may not run any "
                       "hook from it", f"fix or restore the file, then mcp-hooks install "
                       f"{host.name} --scope {scope}", host.name)
        return
    if not entries:
        return
    wiring = Wiring(host.name, scope, where.path, entries)
    report.wirings.append(wiring)
    _check_commands(report, wiring, host)
    check_cwd_imports(report, host, scope, where.path,
                      {e.event: e.command for e in entries if e.command})
    check_generated(report, host, scope, where, text)
    gate_entries = [e for e in entries if e.event == host.gate_event]
    if not gate_entries:
        report.warn(f"wired in {where.path} but not for {host.gate_event}: its tool calls are "
                    "not checked", f"mcp-hooks install {host.name} --scope {scope}", host.name)
        return
    _check_gate(report, host, wiring, gate_entries[0], probe_root, token)


def _check_gate(report: Report, host: Host, wiring: Wiring, entry: Entry,
                probe_root: Path, token: str | None) -> None:
    """The gate event's entry: a command probed, a server's health asked, an mcp_tool named."""
    gate, scope = host.gate_event, wiring.scope
    if entry.kind in ("command", "server") and entry.command:
        wiring.probe = probe(host, entry, gate, probe_root)
        if not wiring.probe["ok"]:
            report.problem(
                f"the {gate} entry in {wiring.file} did not deny the probe tool call: "
                f"{wiring.probe['why']}",
                f"mcp-hooks install {host.name} --scope {scope} (rewrites the entries); "
                "if that does not help, run the command by hand to see its error", host.name)
    if entry.kind == "server" and entry.command:
        words = shlex.split(entry.command)
        found = forward_words(words)
        url = found[1] if found else ""
        if found:
            check_forward_script(report, host, Path(words[found[0]]), scope)
        wiring.server = check_server(report, host, url, read_token(), gate, fallback=True)
    elif entry.kind == "http" and entry.url:
        url = entry.url.split(FORWARD_PATH)[0]
        wiring.server = check_server(report, host, url, token, gate, fallback=False)
    elif entry.kind == "mcp_tool":
        report.warn(f"the {gate} entry in {wiring.file} is an mcp_tool hook, which doctor "
                    "cannot probe (and which does not run until Claude Code has connected "
                    "the server)", f"mcp-hooks install {host.name} --scope {scope}", host.name)


def _check_commands(report: Report, wiring: Wiring, host: Host) -> None:
    for entry in wiring.entries:
        if not entry.command:
            continue
        try:
            words = shlex.split(entry.command)
        except ValueError as exc:
            report.problem(f"{wiring.file}: the {entry.event} command cannot be parsed ({exc})",
                           f"mcp-hooks install {host.name} --scope {wiring.scope}", host.name)
            continue
        needed = words[:1]
        script = forward_words(words) if entry.kind == "server" else None
        if script:
            needed.append(words[script[0]])  # the forward script itself
        for index, word in enumerate(needed):
            if word in wiring.resolves:
                continue
            found = _executable(word) if index == 0 else os.path.isfile(word)
            wiring.resolves[word] = found
            if not found:
                report.problem(
                    f"{wiring.file}: {word!r} (run by the {host.title} entries) does not exist "
                    "or is not executable, so the host cannot run the hooks",
                    "install mcp-hooks for good (`uv tool install .` or `pipx install .` in a "
                    "checkout of mcp-hooks; `uv tool install mcp-hooks` once it is on PyPI), "
                    f"then mcp-hooks install {host.name} --scope {wiring.scope}",
                    host.name)


# -- the probe ------------------------------------------------------------------------------


def _write_probe(root: Path) -> None:
    hook = root / "user" / PROBE_HOOK
    (hook / "scripts").mkdir(parents=True)
    (root / "project").mkdir()
    (hook / "HOOK.md").write_text(
        f"---\nname: {PROBE_HOOK}\ndescription: denies the marker command mcp-hooks doctor "
        f"sends\ntrigger: before_tool\nmatcher:\n  tool: Shell\n  pattern: "
        f"{json.dumps(PROBE_MARKER)}\n---\n\n# {PROBE_HOOK}\n", encoding="utf-8")
    run = hook / "scripts" / "run"
    run.write_text(f"#!/bin/sh\necho {shlex.quote(PROBE_REASON)} >&2\nexit 2\n",
                   encoding="utf-8")
    run.chmod(0o755)


def host_deny_reason(host: str, stdout: str, stderr: str, code: int) -> str | None:
    """The reason of a deny in ``host``'s form on its gate event, or None (not a deny)."""
    return get_host(host).deny_reason(stdout, stderr, code)


def probe(host: Host, entry: Entry, event: str, root: Path) -> dict[str, Any]:
    """Run the written command as the host would, against the probe hook only."""
    assert entry.command is not None
    words = shlex.split(entry.command)
    found = forward_words(words) if entry.kind == "server" else None
    if found and found[0] + 1 < len(words):
        words[found[0] + 1] = UNREACHABLE  # the server is checked apart; this the fallback
    user, work = root / "user", root / "project"
    words += ["--user-dir", str(user), "--project-dir", str(work), "--no-log"]
    env = {**os.environ, "MCP_HOOKS_USER_DIR": str(user), "MCP_HOOKS_PROJECT_DIR": str(work),
           "MCP_HOOKS_LOG": "off"}
    env.pop("MCP_HOOKS_ON_FAULT", None)
    result: dict[str, Any] = {"event": event, "command": shlex.join(words), "ok": False}
    try:
        done = subprocess.run(["sh", "-c", shlex.join(words)], cwd=work, env=env,
                              input=json.dumps(host.shell_call(PROBE_MARKER, PROBE_SESSION,
                                                               work)),
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        result["why"] = f"it could not be run: {exc}"
        return result
    result.update(exit_code=done.returncode, stdout=done.stdout[-2000:],
                  stderr=done.stderr[-2000:])
    reason = host.deny_reason(done.stdout, done.stderr, done.returncode)
    if reason is not None and PROBE_REASON in reason:
        result["ok"] = True
    elif reason is not None:
        result["why"] = f"it denied, but not by the probe hook: {reason[:500]}"
    else:
        tail = (done.stderr.strip() or done.stdout.strip())[-500:]
        result["why"] = (f"exit {done.returncode}, no deny in {host.title}'s form"
                         + (f": {tail}" if tail else ""))
    return result


__all__ = ["DoctorOptions", "host_deny_reason", "run_doctor"]
