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
from mcp_hooks.errors import EXIT_FAILURE, EXIT_OK, MissingExtraError
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
from mcp_hooks.hosts.doctor_server import check_forward_script, check_server
from mcp_hooks.hosts.doctor_state import check_state
from mcp_hooks.hosts.forward import FORWARD_PATH
from mcp_hooks.hosts.forward_script import read_token
from mcp_hooks.options import CommonOptions
from mcp_hooks.registry.digest import UNVERIFIABLE_DIGEST, hook_digest
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import env_value, trust_store_path
from mcp_hooks.state.remote import redact
from mcp_hooks.state.store import StateUnavailable

EXIT_BROKEN = EXIT_FAILURE
PROBE_HOOK = "mcp-hooks-doctor-probe"
PROBE_MARKER = "echo mcp-hooks-doctor-probe-7f3a"
PROBE_REASON = "mcp-hooks doctor probe: denied as expected"
PROBE_SESSION = "mcp-hooks-doctor"
STATE_ENV = "MCP_HOOKS_STATE"  # settings.VARIABLES: --state
PROBE_TIMEOUT_S = 60.0
UNREACHABLE = "http://127.0.0.1:9"  # no server: a forward script's local fallback answers


@dataclass
class Finding:
    """One problem (breaks the gate) or warning, with how to fix it."""

    what: str
    fix: str | None = None
    host: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "what": self.what, "fix": self.fix}

    def __str__(self) -> str:
        where = f"{self.host}: " if self.host else ""
        return f"{where}{self.what}" + (f"\n    fix: {self.fix}" if self.fix else "")


@dataclass
class Entry:
    """One of our handlers in a host config."""

    event: str
    kind: str  # command, server, http, mcp_tool
    command: str | None = None
    url: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"event": self.event, "via": self.kind, "command": self.command, "url": self.url}


@dataclass
class Wiring:
    """Our entries in one config file of one host."""

    host: str
    scope: str
    file: Path
    entries: list[Entry] = field(default_factory=list)
    resolves: dict[str, bool] = field(default_factory=dict)  # executable -> found
    probe: dict[str, Any] | None = None
    server: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "scope": self.scope, "file": str(self.file),
                "events": [e.event for e in self.entries],
                "entries": [e.as_dict() for e in self.entries],
                "resolves": self.resolves, "probe": self.probe, "server": self.server}


@dataclass
class Report:
    wirings: list[Wiring] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)  # facts worth knowing, nothing to fix
    hooks: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Any] = field(default_factory=dict)

    def problem(self, what: str, fix: str | None = None, host: str | None = None) -> None:
        self.problems.append(Finding(what, fix, host))

    def warn(self, what: str, fix: str | None = None, host: str | None = None) -> None:
        self.warnings.append(Finding(what, fix, host))

    def as_dict(self) -> dict[str, Any]:
        return {"ok": not self.problems,
                "problems": [p.as_dict() for p in self.problems],
                "warnings": [w.as_dict() for w in self.warnings],
                "notes": [n.as_dict() for n in self.notes],
                "hosts": [w.as_dict() for w in self.wirings],
                "hooks": self.hooks, "files": self.files}


# -- the command ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DoctorOptions:
    """What ``doctor`` checks and how it reports.

    Attributes:
        hosts: only these hosts (names or aliases); empty: every host.
        json: print a machine-readable report.
        common: the shared options as given (hook folders, log, trust).
    """

    hosts: tuple[str, ...] = ()
    json: bool = False
    common: CommonOptions = field(default_factory=CommonOptions)


def run_doctor(given: DoctorOptions) -> int:
    """Run every check; print the report; 1 when anything is broken.

    Raises:
        UnknownHostError: a host in ``given.hosts`` that is not bridged.
    """
    report = Report()
    names = [host_name(h) for h in (given.hosts or HOSTS)]
    project = options.project_dir(given.common)
    with tempfile.TemporaryDirectory(prefix="mcp-hooks-doctor-") as tmp:
        probe_root = Path(tmp)
        _write_probe(probe_root)
        for name in names:
            check_host(report, get_host(name), project, probe_root)
    if report.wirings:
        check_environment(report)
    else:
        report.warn("no agent host is wired to mcp-hooks (looked in the project and user "
                    "configs)", "mcp-hooks install <host> (" + ", ".join(HOSTS) + ")")
    check_hooks(report, given.common)
    check_files(report, given.common)
    state = options.settings(given.common).state
    if state and not state.startswith("file:"):  # a shared store (doctor_state.py)
        report.files["state_store"] = check_state(report, state)
    if given.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_report(report))
    return EXIT_BROKEN if report.problems else EXIT_OK


def format_report(report: Report) -> str:
    lines: list[str] = []
    for w in report.wirings:
        events = ", ".join(e.event for e in w.entries)
        lines.append(f"{w.host} ({w.scope}): {w.file}")
        lines.append(f"    events: {events}")
        if w.probe is not None:
            lines.append(f"    probe ({w.probe['event']}): "
                         + ("denied, as it should" if w.probe.get("ok") else "FAILED"))
        if w.server is not None:
            lines.append(f"    server {w.server['url']}: {w.server['status']}")
    hooks = report.hooks
    if hooks:
        same = len(hooks.get("identical", []))
        lines.append(f"hooks: {hooks.get('valid', 0)} valid, {len(hooks.get('invalid', []))} "
                     f"invalid, {len(hooks.get('untrusted', []))} untrusted, "
                     f"{len(hooks.get('replaced', []))} replaced"
                     + (f" ({same} by an identical copy)" if same else ""))
    for key, info in report.files.items():
        lines.append(f"{key.replace('_', ' ')}: {info['path']} ({info['status']})")
    for finding in report.notes:
        lines.append(f"note: {finding}")
    for finding in report.warnings:
        lines.append(f"warning: {finding}")
    for finding in report.problems:
        lines.append(f"PROBLEM: {finding}")
    lines.append(f"{len(report.problems)} problem(s), {len(report.warnings)} warning(s): "
                 + verdict(report))
    return "\n".join(lines)


def verdict(report: Report) -> str:
    """The last word: whether the gate is whole, and that there is none without a host."""
    return ("the gate is NOT whole" if report.problems else "the gate is whole"
            if report.wirings else "no host is wired, so no agent's tool calls are checked "
            "yet (the hooks run only from `mcp-hooks fire`, `serve` and `proxy`)")


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


def check_host(report: Report, host: Host, project: Path, probe_root: Path) -> None:
    for scope, where in _targets(host, project):
        if where.path.exists():
            _check_target(report, host, scope, where, probe_root)


def _check_target(report: Report, host: Host, scope: str, where: Target,
                  probe_root: Path) -> None:
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
    _check_gate(report, host, wiring, gate_entries[0], probe_root)


def _check_gate(report: Report, host: Host, wiring: Wiring, entry: Entry,
                probe_root: Path) -> None:
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
        wiring.server = check_server(report, host, url, env_value("MCP_HOOKS_TOKEN") or None,
                                     gate, fallback=False)
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


# -- hooks and files ------------------------------------------------------------------------


def _layers(report: Report, registry: Any) -> None:
    """Each hook's layer (managed, user, project), the managed folder, and the hooks a
    managed hook's name keeps from running (docs/policy.md)."""
    managed = getattr(registry, "managed_dir", None)
    report.hooks["managed_dir"] = str(managed) if managed else None
    report.hooks["layers"] = {h.name: h.scope for h in registry.hooks()}
    for hook in getattr(registry, "shadowed", []) or []:
        report.warn(f"{hook.scope} hook {hook.name!r} does not run: a managed hook has that "
                    "name, and managed hooks cannot be replaced",
                    f"rename {hook.dir} if both should run")


def check_hooks(report: Report, given: CommonOptions) -> None:
    try:
        registry = options.registry(given, watch=False)
    except (StateUnavailable, MissingExtraError):  # the trust store is the shared store
        report.notes.append(Finding("the hooks' trust is not checked: it is kept in the state "
                                    "store, which cannot be used (its problem is below)"))
        return
    except Exception as exc:
        report.problem(f"the hook folders cannot be read: {type(exc).__name__}: {exc}",
                       "fix the folder permissions, then mcp-hooks validate")
        return
    try:
        invalid = list(registry.invalid)
        untrusted = list(getattr(registry, "untrusted", []) or [])
        replaced: dict[str, Any] = dict(getattr(registry, "replaced", {}) or {})
        report.hooks = {
            "user_dir": str(registry.user_dir),
            "project_dir": str(registry.project_dir) if registry.project_dir else None,
            "valid": len(registry.hooks()),
            "invalid": [i.as_dict() for i in invalid],
            "untrusted": [_as_dict(u) for u in untrusted],
            "replaced": sorted(replaced),
            "identical": [],
        }
        _layers(report, registry)
        for hook in invalid:
            report.problem(f"invalid hook {hook.name!r}: {hook}",
                           f"fix {hook.file}, then check it with `mcp-hooks validate`")
        _untrusted_problems(report, untrusted, given)
        for name in sorted(replaced):
            project_copy = registry.get(name)
            if project_copy is not None and _identical(project_copy.dir, replaced[name].dir):
                report.hooks["identical"].append(name)
                report.notes.append(Finding(f"hook {name!r} is in both the user and the project "
                                            "folder, byte for byte the same: it runs once"))
                continue
            report.warn(f"project hook {name!r} replaces (shadows) the user hook of that name, "
                        "which differs from it: only the project's copy runs",
                        "rename one of them if both should run; make them the same (or remove "
                        "one) if only one should")
    finally:
        close = getattr(registry, "close", None)
        if close is not None:
            close()


def _untrusted_problems(report: Report, untrusted: list[Any], given: CommonOptions) -> None:
    """A problem per untrusted project hook, its fix the `trust` command that reaches the
    trust the replicas read: with ``--state`` when the store is shared."""
    state = shared_state(given)
    for hook in untrusted:
        status = getattr(hook, "status", "untrusted")
        fix = getattr(hook, "fix", None) or "review it, then trust it (mcp-hooks trust)"
        if state is not None:  # trusted in the store the replicas read, not trust.json
            fix = fix.replace("mcp-hooks trust ", f"mcp-hooks trust --state {state} ", 1)
        report.problem(f"project hook {getattr(hook, 'name', hook)!r} is {status} and does "
                       "not run", f"read it, then: {fix}")


def _identical(one: Path, other: Path) -> bool:
    """Whether two hook folders hold the same content (the digest trust uses: relative
    paths, modes and bytes); a folder that cannot be hashed in full is never the same."""
    digest = hook_digest(one)
    return digest != UNVERIFIABLE_DIGEST and digest == hook_digest(other)


def _as_dict(item: Any) -> Any:
    as_dict = getattr(item, "as_dict", None)
    return as_dict() if as_dict is not None else str(item)


def _writable(path: Path) -> bool:
    """Whether ``path`` can be written: the file if it exists, else its nearest folder."""
    if path.exists():
        return os.access(path, os.W_OK)
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)


def _trust_store() -> tuple[Path, str | None]:
    """The trust store's path, and why it cannot be read (None: it can, or is absent)."""
    path = trust_store_path()
    try:
        return path, TrustStore(path).problem
    except Exception as exc:
        return path, f"{path}: {exc}"


def shared_state(given: CommonOptions) -> str | None:
    """The ``--state`` argument that names the shared store as the user gave it, shell-quoted,
    for a command to print: ``"$MCP_HOOKS_STATE"`` when it came from there, else the URL
    without its password (``***``: put it back); None for ``file:``."""
    state = options.settings(given).state
    if state.strip().lower().startswith("file:"):
        return None
    if env_value(STATE_ENV) == state:
        return f'"${STATE_ENV}"'
    return shlex.quote(redact(state))


def check_files(report: Report, given: CommonOptions) -> None:
    log = options.event_log(given)
    if log is None:
        report.files["event_log"] = {"path": None, "status": "off"}
    else:
        path = Path(log.path)
        ok = _writable(path)
        report.files["event_log"] = {"path": str(path),
                                     "status": "writable" if ok else "NOT writable"}
        if not ok:
            report.problem(f"the event log {path} cannot be written: hook runs go unrecorded",
                           f"fix the permissions of {path} (or its folder), or point --log / "
                           "MCP_HOOKS_LOG elsewhere")
    if shared_state(given) is not None:  # trust is kept in the shared store (check_state)
        report.files["trust_store"] = {"path": redact(options.settings(given).state),
                                       "status": "the state store's trust (below)"}
        return
    store, problem = _trust_store()
    ok = _writable(store)
    report.files["trust_store"] = {"path": str(store),
                                   "status": "writable" if ok else "NOT writable"}
    if not ok:
        report.problem(f"the trust store {store} cannot be written: project hooks cannot be "
                       "trusted", f"fix the permissions of {store} (or its folder)")
    if problem:
        report.files["trust_store"]["status"] = "unreadable"
        report.problem(f"the trust store cannot be read: {problem}",
                       "fix or move the file away, then trust the project hooks again")


__all__ = ["DoctorOptions", "host_deny_reason", "run_doctor"]
