"""The harness of the end-to-end tests against the real agent hosts (``tests/e2e/``): what
``test_real_hosts.py``, ``test_more_hosts.py`` and ``test_ask_e2e.py`` share.

- **Layer 1**, no mcp-hooks involved: ``native_hook_run`` runs a host with a hand-written
  native pre-tool hook (exit 2 or 0) and stop hook, proving the fake model, the flags and the
  sandboxed HOME drive it.
- **Layer 2**: HOOK.md folders written as a user would (``write_hook``, ``write_tool_policy``,
  ``write_stop_gate``), the real ``mcp-hooks install`` and ``trust`` (``install``), one host
  run (``run_host``), and what the run left: the hooks' saved payloads and parents, the fake
  model's requests, the context a failed assertion prints (``context``).
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import RUN_TIMES, bridges_importable
from tests.e2e.fake_model import WIRES, FakeModelServer, Script
from tests.e2e.hosts import RUN_TIMEOUT, Host, RunResult, Sandbox, run_process

DENY_REASON = "E2E-DENY: writing forbidden-marker.txt is refused by the HOOK.md policy"
STOP_REASON = "E2E-STOP-GATE: run the checks once more before finishing"
NATIVE_REASON = "E2E-NATIVE: blocked by the hand-written native hook"
NATIVE_COMMAND = "echo hello > marker.txt"  # what the fake model asks for in layer 1

needs_bridges = pytest.mark.skipif(
    not bridges_importable(),
    reason="mcp_hooks.hosts.install is not importable yet (host bridges not landed)",
)


def write_exec(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def write_hook(
    folder: Path,
    name: str,
    *,
    trigger: str,
    body: str,
    payload_dir: Path,
    matcher: dict[str, str] | None = None,
    priority: int = 100,
) -> Path:
    """A HOOK.md folder whose ``scripts/run`` saves its payload, then runs ``body`` (sh)."""
    hook_dir = folder / name
    front = [
        f"name: {name}",
        f"description: {json.dumps('end-to-end test hook ' + name)}",
        f"trigger: {trigger}",
        f"priority: {priority}",
    ]
    if matcher:
        front.append(f"matcher: {json.dumps(matcher)}")
    hook_dir.mkdir(parents=True, exist_ok=True)
    (hook_dir / "HOOK.md").write_text("---\n" + "\n".join(front) + "\n---\n\n# " + name + "\n")
    payload_dir.mkdir(parents=True, exist_ok=True)
    write_exec(
        hook_dir / "scripts" / "run",
        f'#!/bin/sh\nf="{payload_dir}/$(date +%s%N)-$$.json"\ncat > "$f"\n'
        # who ran the hook: `mcp-hooks bridge` (a process per call) or `mcp-hooks serve`
        "tr '\\000' ' ' < /proc/$PPID/cmdline > \"$f.parent\" 2>/dev/null\n" + body,
    )
    return hook_dir


def hook_parents(payload_dir: Path) -> list[str]:
    """The command lines of the processes that ran a hook, in the order it ran."""
    return [p.read_text() for p in sorted(payload_dir.glob("*.json.parent"))]


def payloads(payload_dir: Path) -> list[dict[str, Any]]:
    """The payloads a hook saved, in the order it ran."""
    if not payload_dir.exists():
        return []
    return [json.loads(p.read_text()) for p in sorted(payload_dir.glob("*.json"))]


def model_requests(fake: FakeModelServer) -> list[dict[str, Any]]:
    """The logged requests that were conversation turns (not schema/token side calls)."""
    return [
        r for r in fake.requests() if (r.get("reply") or {}).get("kind") in ("tool_call", "text")
    ]


def tool_results(rec: dict[str, Any]) -> list[str]:
    return WIRES[rec["api"]].tool_results(rec["body"])


def user_side_text(rec: dict[str, Any]) -> str:
    return "\n".join(WIRES[rec["api"]].user_texts(rec["body"]))


def log_dump(fake: FakeModelServer) -> str:
    lines = []
    for r in fake.requests():
        body = r.get("body") or {}
        wire = WIRES.get(r.get("api", ""))
        results = wire.tool_results(body) if wire else []
        texts = [t[-300:] for t in wire.user_texts(body)[-2:]] if wire else []
        lines.append(
            f"#{r.get('n')} {r.get('path')} -> {r.get('reply')}\n"
            f"   tool results: {results}\n   user texts (tail): {texts}"
        )
    return "\n".join(lines)


def run_host(
    host: Host,
    box: Sandbox,
    fake: FakeModelServer,
    request: pytest.FixtureRequest,
    extra_path: list[str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> RunResult:
    result = host.run(box, fake.url, extra_path=extra_path, timeout=timeout)
    RUN_TIMES.append((host.name, request.node.name, result.seconds))
    assert not result.timed_out, f"{host.name} hung:\n{result.describe()}\n{log_dump(fake)}"
    return result


def context(host: Host, box: Sandbox, fake: FakeModelServer, result: RunResult) -> str:
    """Everything useful for a failed assertion."""
    files = sorted(
        str(p.relative_to(box.root))
        for p in box.root.rglob("*")
        if p.is_file() and ".git" not in p.parts and "node_modules" not in p.parts
    )
    return (
        f"{result.describe()}\n--- fake model log ---\n{log_dump(fake)}\n"
        f"--- files ---\n{files[:80]}"
    )


@dataclass(frozen=True)
class NativeRun:
    """A layer-1 run: the host's result, the context for a failed assertion, the payloads
    the native pre-tool hook saved and the folder its hooks save into (``stop-*.json``)."""

    result: RunResult
    why: str
    pre_payloads: list[dict[str, Any]]
    seen: Path


def native_hook_run(host: Host, box: Sandbox, fake: FakeModelServer,
                    request: pytest.FixtureRequest, *, block: bool) -> NativeRun:
    """Run ``host`` with a hand-written native pre-tool hook that exits 2 saying
    ``NATIVE_REASON`` (``block``) or exits 0, and a stop hook; each saves its payload. The fake
    model asks for ``NATIVE_COMMAND``. No mcp-hooks is involved."""
    seen = box.root / "native-payloads"
    pre = write_exec(
        box.root / "native" / "pre.sh",
        f'#!/bin/sh\nmkdir -p "{seen}"\ncat > "{seen}/pre-$(date +%s%N).json"\n'
        f"echo '{NATIVE_REASON}' >&2\nexit {2 if block else 0}\n",
    )
    stop = write_exec(
        box.root / "native" / "stop.sh",
        f'#!/bin/sh\nmkdir -p "{seen}"\ncat > "{seen}/stop-$(date +%s%N).json"\nexit 0\n',
    )
    fake.script = Script(commands=[NATIVE_COMMAND])
    host.configure(box, fake.url)
    host.write_native_hooks(box, pre, stop)
    result = run_host(host, box, fake, request)
    pre_payloads = [json.loads(p.read_text()) for p in sorted(seen.glob("pre-*.json"))]
    return NativeRun(result, context(host, box, fake, result), pre_payloads, seen)


def install(
    mcp_hooks_exe: Path,
    host: Host,
    box: Sandbox,
    fake: FakeModelServer,
    scope: str,
    *extra: str,
    trust: bool = True,
) -> None:
    """Run the real ``mcp-hooks install <host> --scope <scope>`` as a user would; then, with
    ``trust`` and project hooks present, trust them as a user would (``trust_project``)."""
    env = host.env(box, fake.url, [str(mcp_hooks_exe.parent)])
    argv = [str(mcp_hooks_exe), "install", host.name, "--scope", scope, *extra]
    res = run_process(argv, cwd=box.project, env=env, timeout=60)
    assert res.returncode == 0, f"mcp-hooks install failed:\n{res.describe()}"
    if trust and box.project_hooks.is_dir():
        trust_project(mcp_hooks_exe, host, box, fake)


def trust_store(box: Sandbox) -> Path:
    """The trust store the host's bridge reads: ``$XDG_STATE_HOME`` of the box's HOME."""
    return box.home / ".local" / "state" / "mcp-hooks" / "trust.json"


def trust_project(mcp_hooks_exe: Path, host: Host, box: Sandbox, fake: FakeModelServer) -> None:
    """The real ``mcp-hooks trust <project> --yes``, in the host's own environment (the same
    ``HOME`` and ``XDG_STATE_HOME`` its bridge sees), run from outside the project; every
    hook folder of ``<project>/.agents/hooks`` must end up in the store."""
    env = host.env(box, fake.url, [str(mcp_hooks_exe.parent)])
    argv = [str(mcp_hooks_exe), "trust", str(box.project), "--yes"]
    res = run_process(argv, cwd=box.root, env=env, timeout=60)
    assert res.returncode == 0, f"mcp-hooks trust failed:\n{res.describe()}"
    assert str(trust_store(box)) in res.stdout, res.describe()  # the store the bridge reads
    names = sorted(p.name for p in box.project_hooks.iterdir() if p.is_dir())
    store = json.loads(trust_store(box).read_text())
    trusted = {n for hooks in store["projects"].values() for n in hooks}
    assert set(names) <= trusted, f"{names} not all in {trust_store(box)}: {store}"


def hooks_folder(box: Sandbox, scope: str) -> Path:
    return box.project_hooks if scope == "project" else box.user_hooks


def write_tool_policy(folder: Path, box: Sandbox) -> tuple[Path, Path]:
    """Two before_tool hooks on the canonical ``Shell`` tool: an auditor that allows (runs
    first) and a guard that denies commands mentioning ``forbidden-marker``."""
    audit = box.root / "audit-payloads"
    guard = box.root / "guard-payloads"
    write_hook(
        folder,
        "audit-shell",
        trigger="before_tool",
        payload_dir=audit,
        priority=900,
        matcher={"tool": "Shell"},
        body="exit 0\n",
    )
    write_hook(
        folder,
        "deny-forbidden",
        trigger="before_tool",
        payload_dir=guard,
        priority=500,
        matcher={"tool": "Shell", "pattern": "forbidden-marker"},
        body=f"echo '{DENY_REASON}' >&2\nexit 2\n",
    )
    return audit, guard


def write_stop_gate(folder: Path, box: Sandbox, *, always: bool) -> tuple[Path, Path]:
    """A before_stop hook: blocks the first stop (or every stop, ``always``)."""
    seen = box.root / "stop-payloads"
    fired = box.root / "stop-gate.fired"
    if always:
        body = f"echo '{STOP_REASON}' >&2\nexit 2\n"
    else:
        body = (
            f'if [ -e "{fired}" ]; then exit 0; fi\n'
            f'touch "{fired}"\n'
            f"echo '{STOP_REASON}' >&2\nexit 2\n"
        )
    write_hook(folder, "stop-gate", trigger="before_stop", payload_dir=seen, body=body)
    return seen, fired
