"""End to end: the real agent hosts, a scripted fake model on loopback, real hooks.

Two layers:

1. **Harness** (no mcp-hooks involved): each host runs with a hand-written native hook
   config whose pre-tool script exits 2. This proves the fake model, the flags and the
   sandboxed HOME drive the host the way ``shared/hosts/host-e2e.md`` recorded, so a
   failure in layer 2 is about mcp-hooks, not about the harness.
2. **mcp-hooks**: ``mcp-hooks install <host>`` writes the host's config; HOOK.md folders
   (project ``.agents/hooks`` or the user folder) then gate the real host through
   ``mcp-hooks bridge <host>``:

   * a ``before_tool`` hook blocks a shell command: its side effect does not happen and
     the model's next request carries the hook's reason;
   * an allowed command runs (its marker file appears);
   * a ``before_stop`` gate makes the host take one more turn (one more model request,
     carrying the gate's reason), and the loop ends;
   * a gate that never relents still lets the run end (the host's loop flag or cap);
   * rewrites, context, uninstall, ``--user-dir``, the bundled library
     (``hooks/``), and the server paths (``install --via server``; Claude
     Code's ``--via http`` / ``--via mcp``, the latter only for events that cannot block:
     install refuses the gates);
   * project hooks run only once trusted: tests with project hooks trust them with the real
     ``mcp-hooks trust <project> --yes`` in the host's environment; an untrusted hook does
     not run and the user is told how to trust it; a broken HOOK.md closes the gate.

The full list, with what each real host did, is in ``docs/e2e.md``. Assertions are on
files, the fake model's request log, mcp-hooks' event log and (for what Claude Code shows
the user) its session transcript, never on the host's printed text. Host installs are
cached outside the repository (see ``hosts.py``). The harness both layers run on (native
hooks, HOOK.md folders, install and trust, one host run) is tests/helpers/host_harness.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.host_harness import (
    DENY_REASON,
    NATIVE_COMMAND,
    NATIVE_REASON,
    STOP_REASON,
    context,
    hook_parents,
    hooks_folder,
    install,
    model_requests,
    native_hook_run,
    needs_bridges,
    payloads,
    run_host,
    tool_results,
    trust_project,
    trust_store,
    user_side_text,
    write_hook,
    write_stop_gate,
    write_tool_policy,
)

from .conftest import RUN_TIMES
from .fake_model import FakeModelServer, Script
from .hosts import Host, RunResult, Sandbox, run_process

pytestmark = pytest.mark.e2e

ALL_HOSTS = ["claude-code", "codex", "gemini-cli", "kimi-cli", "copilot-cli"]
#: hosts with a project-level hook config (kimi-cli reads hooks from its user config only)
PROJECT_SCOPE_HOSTS = ["claude-code", "codex", "gemini-cli", "copilot-cli"]


# --- layer 1: the harness itself ----------------------------------------------------------


@pytest.mark.parametrize("host_name", ALL_HOSTS)
@pytest.mark.parametrize("mode", ["block", "allow"])
def test_harness_native_hook(
    host_name: str,
    mode: str,
    host_factory: Callable[[str], Host],
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A hand-written native pre-tool hook (exit 2 / exit 0) gates the host's shell tool."""
    host = host_factory(host_name)
    run = native_hook_run(host, box, fake_model, request, block=mode == "block")
    why = run.why

    assert run.pre_payloads, f"the native pre-tool hook never ran\n{why}"
    first = run.pre_payloads[0]
    # Copilot CLI's camelCase events send toolName/toolArgs; the others tool_name/tool_input
    assert first.get("tool_name", first.get("toolName")) == host.native_shell_tool, why
    tool_input = first.get("tool_input", first.get("toolArgs"))
    assert NATIVE_COMMAND in json.dumps(tool_input), why
    assert list(run.seen.glob("stop-*.json")), f"the native stop hook never ran\n{why}"

    reqs = model_requests(fake_model)
    after = [r for r in reqs if tool_results(r)]
    assert after, f"no request carried a tool result\n{why}"
    marker = box.project / "marker.txt"
    if mode == "block":
        assert not marker.exists(), f"blocked command ran anyway\n{why}"
        assert any(NATIVE_REASON in t for t in tool_results(after[0])), why
    else:
        assert marker.read_text().strip() == "hello", why
        assert not any(NATIVE_REASON in t for t in tool_results(after[0])), why


# --- layer 2: mcp-hooks install + bridge -----------------------------------------------------


def event_log(box: Sandbox) -> list[dict[str, Any]]:
    """The records of mcp-hooks' event log under the box's HOME (``$XDG_STATE_HOME``)."""
    path = box.home / ".local" / "state" / "mcp-hooks" / "events.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


#: the project-scope config ``mcp-hooks install <host> --scope project`` writes
PROJECT_CONFIG = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini-cli": ".gemini/settings.json",
    "copilot-cli": ".github/hooks/mcp-hooks.json",
}


def _scopes() -> list[Any]:
    out = [pytest.param(h, "project", id=f"{h}-project") for h in PROJECT_SCOPE_HOSTS]
    out += [pytest.param(h, "user", id=f"{h}-user") for h in ALL_HOSTS]
    return out


def _host_scope(host_name: str) -> str:
    return "project" if host_name in PROJECT_SCOPE_HOSTS else "user"


@needs_bridges
@pytest.mark.parametrize(("host_name", "scope"), _scopes())
def test_before_tool_hook_blocks_shell_command(
    host_name: str,
    scope: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """The command's side effect does not happen, and the model receives the reason."""
    host = host_factory(host_name)
    audit, guard = write_tool_policy(hooks_folder(box, scope), box)
    command = "echo hello > forbidden-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)
    if scope == "project":
        # a committed config names plain `mcp-hooks`, which the host finds on its PATH
        written = (box.project / PROJECT_CONFIG[host_name]).read_text()
        assert '"mcp-hooks bridge ' in written and str(mcp_hooks_exe) not in written, written

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert not (box.project / "forbidden-marker.txt").exists(), f"the denied command ran\n{why}"
    guard_seen = payloads(guard)
    assert guard_seen, f"the deny hook never ran (bridge not called, or Shell not matched)\n{why}"
    assert all(" bridge " in p for p in hook_parents(guard)), hook_parents(guard)
    audit_seen = payloads(audit)
    assert audit_seen, why
    first = audit_seen[0]
    # one vocabulary across hosts: the canonical tool name and input keys
    assert first.get("tool_name") == "Shell", first
    assert (first.get("tool_input") or {}).get("command") == command, first
    assert first.get("event_type") in ("before_tool", "pre-tool-call", "pre_tool_use"), first
    # ... and the host's own view kept under `host` (README, Host bridges)
    host_view = first.get("host") or {}
    assert host_view.get("name") == host.name, first
    assert host_view.get("tool_name") == host.native_shell_tool, first

    reqs = model_requests(fake_model)
    after = [r for r in reqs if tool_results(r)]
    assert after, f"the host never sent the model a tool result\n{why}"
    assert any(DENY_REASON in t for t in tool_results(after[0])), (
        f"the model did not receive the hook's reason\n{why}"
    )
    assert (reqs[-1].get("reply") or {}).get("kind") == "text", why


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_allowed_shell_command_runs(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A command no hook denies runs (the hooks ran, and emitted no decision of their own)."""
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    audit, guard = write_tool_policy(hooks_folder(box, scope), box)
    command = "echo hello > allowed-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)
    install(mcp_hooks_exe, host, box, fake_model, scope)  # idempotent: the hooks run once

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    marker = box.project / "allowed-marker.txt"
    assert marker.exists(), f"the allowed command did not run\n{why}"
    assert marker.read_text().strip() == "hello", why
    seen = payloads(audit)
    assert seen, f"the audit hook never ran: the bridge was not called\n{why}"
    assert len(seen) == 1, f"installed twice, the hook ran {len(seen)} times\n{why}"
    assert (seen[0].get("tool_input") or {}).get("command") == command, seen[0]
    assert not payloads(guard), "the guard's pattern does not match; it must not run"
    assert not any(DENY_REASON in json.dumps(r["body"]) for r in fake_model.requests()), why


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_before_stop_gate_takes_one_more_turn(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """The gate blocks the first stop: exactly one more model turn, carrying its reason."""
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    seen, fired = write_stop_gate(hooks_folder(box, scope), box, always=False)
    fake_model.script = Script(commands=[])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert fired.exists(), f"the before_stop hook never blocked (bridge not called at stop)\n{why}"
    reqs = model_requests(fake_model)
    carrying = [i for i, r in enumerate(reqs) if STOP_REASON in user_side_text(r)]
    assert carrying, f"no model request carried the stop gate's reason\n{why}"
    assert carrying[0] >= 1, why
    assert carrying[0] == len(reqs) - 1, f"expected exactly one more turn after the gate\n{why}"
    stops = payloads(seen)
    # kimi-cli re-triggers a stop at most once and does not fire Stop again afterwards
    expected_runs = 1 if host_name == "kimi-cli" else 2
    assert len(stops) == expected_runs, f"expected the gate to run {expected_runs}x\n{why}"
    assert all(p.get("event_type") in ("before_stop", "pre-agent-turn-stop") for p in stops), stops
    assert result.returncode == 0, why


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_before_stop_gate_that_never_relents_still_ends(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A gate that blocks every stop: the run still ends (the host's loop flag is honoured,
    or its own cap), long before the fake model's runaway-loop cap."""
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    seen, _fired = write_stop_gate(hooks_folder(box, scope), box, always=True)
    # Gemini CLI's own loop detection hangs a headless run after about 20 identical turns:
    # the fake refuses earlier, and the timeout is short, so a loop costs seconds, not minutes.
    fake_model.script = Script(commands=[], max_requests=16)
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)], timeout=60)
    why = context(host, box, fake_model, result)

    everything = fake_model.requests()
    assert not any(
        (r.get("reply") or {}).get("message") == "fake model: request cap reached"
        for r in everything
    ), f"the stop loop never ended\n{why}"
    reqs = model_requests(fake_model)
    carrying = [r for r in reqs if STOP_REASON in user_side_text(r)]
    assert carrying, f"the gate never made the host continue\n{why}"
    assert len(reqs) <= 10, f"{len(reqs)} model turns for one stop gate\n{why}"
    assert len(payloads(seen)) >= 1, why


@needs_bridges
def test_install_keeps_unrelated_user_settings(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """Gemini CLI refuses to run without its auth setting: a user-scope install that merged
    badly into ``~/.gemini/settings.json`` would break the host (exit 41)."""
    host = host_factory("gemini-cli")
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "user")
    settings = json.loads((box.home / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key", settings
    fake_model.script = Script(commands=[])
    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    assert result.returncode == 0, context(host, box, fake_model, result)


#: hosts whose pre-tool hook can rewrite a tool's input (kimi-cli 1.51.0 has no such form)
REWRITE_HOSTS = ["claude-code", "codex", "gemini-cli", "copilot-cli"]


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_modified_input_rewrites_the_command(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A hook's ``modified_input`` (canonical keys) reaches the host's rewrite form: the
    rewritten command runs instead of the original. Where the host has no rewrite form the
    original runs (with a warning); a rewrite is never dropped silently on a host that has one.
    """
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    seen = box.root / "rewrite-payloads"
    rewritten = "echo rewritten > rewritten-marker.txt"
    write_hook(
        hooks_folder(box, scope),
        "rewrite-shell",
        trigger="before_tool",
        payload_dir=seen,
        matcher={"tool": "Shell", "pattern": "rewrite-me"},
        body=f"printf '%s' {json.dumps(json.dumps({'modified_input': {'command': rewritten}}))}\n",
    )
    fake_model.script = Script(commands=["echo original > rewrite-me.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert payloads(seen), f"the rewrite hook never ran\n{why}"
    original = box.project / "rewrite-me.txt"
    new = box.project / "rewritten-marker.txt"
    if host_name in REWRITE_HOSTS:
        assert new.exists(), f"the rewritten command did not run\n{why}"
        assert not original.exists(), f"the original command ran as well\n{why}"
    else:
        assert original.exists() and not new.exists(), why


@needs_bridges
def test_plain_allow_does_not_approve_the_tool(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """Never auto-approve: Claude Code run without ``--allowedTools`` refuses a command it
    cannot ask about; a hook that merely allows must not turn that into a yes."""
    host = host_factory("claude-code")
    audit, _guard = write_tool_policy(box.project_hooks, box)
    fake_model.script = Script(commands=["echo hello > allowed-marker.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project")

    env_path = [str(mcp_hooks_exe.parent)]
    result = host.run(box, fake_model.url, extra_path=env_path, pre_approved=False)
    RUN_TIMES.append((host.name, request.node.name, result.seconds))
    why = context(host, box, fake_model, result)
    assert not result.timed_out, why
    assert payloads(audit), f"the allowing hook never ran\n{why}"
    assert not (box.project / "allowed-marker.txt").exists(), (
        f"a plain allow approved the command past Claude Code's own permission check\n{why}"
    )


CONTEXT_TEXT = "E2E-CONTEXT: the linter found nothing to report"
#: hosts that hand a hook's context after a tool to the model (kimi-cli 1.51.0 does not)
CONTEXT_HOSTS = ["claude-code", "codex", "gemini-cli", "copilot-cli"]


AUDIT_REASON = "E2E-AUDIT: audited-marker would be refused once this guard is enforced"


@needs_bridges
@pytest.mark.parametrize("host_name", ["claude-code", "codex"])
def test_an_audit_hook_never_blocks_and_its_would_deny_is_logged(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """Issue 32, audit mode through a real host: a guard in ``mode: audit`` that would deny
    the first command lets it run (the host and the model never see a deny), its would-deny
    is in the log (``mcp-hooks log --would``), and an enforced guard in the same run still
    denies the second command."""
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    folder = hooks_folder(box, scope)
    seen = box.root / "audited-payloads"
    hook = write_hook(folder, "would-refuse", trigger="before_tool", payload_dir=seen,
                      matcher={"tool": "Shell", "pattern": "audited-marker"},
                      body=f"echo '{AUDIT_REASON}' >&2\nexit 2\n")
    md = hook / "HOOK.md"
    md.write_text(md.read_text().replace("\n---\n\n#", "\nmetadata:\n  mode: audit\n---\n\n#", 1))
    write_tool_policy(folder, box)  # deny-forbidden: enforced
    fake_model.script = Script(commands=["echo hi > audited-marker.txt",
                                         "echo no > forbidden-marker.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert payloads(seen), f"the audit hook never ran\n{why}"
    assert (box.project / "audited-marker.txt").exists(), f"the audit hook blocked\n{why}"
    assert not (box.project / "forbidden-marker.txt").exists(), f"the enforced guard let it\n{why}"
    bodies = json.dumps([r["body"] for r in fake_model.requests()])
    assert AUDIT_REASON not in bodies, f"the model read the audit verdict\n{why}"
    assert DENY_REASON in bodies, why
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    listed = run_process([str(mcp_hooks_exe), "log", "--would", "--json", "-n", "0"],
                         cwd=box.project, env=env, timeout=60)
    assert listed.returncode == 0, listed.describe()
    would = [h for line in listed.stdout.splitlines()
             for h in json.loads(line).get("hooks", []) if h.get("would")]
    assert [(h["name"], h["would"]["decision"]) for h in would] == [("would-refuse", "deny")], (
        listed.stdout)
    assert AUDIT_REASON in json.dumps(would), listed.stdout


@needs_bridges
@pytest.mark.parametrize("host_name", CONTEXT_HOSTS)
def test_after_tool_context_reaches_the_model(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """An ``after_tool`` hook's ``additional_context`` is in the model's next request."""
    host = host_factory(host_name)
    seen = box.root / "context-payloads"
    out = json.dumps({"additional_context": CONTEXT_TEXT})
    write_hook(
        box.project_hooks,
        "lint-report",
        trigger="after_tool",
        payload_dir=seen,
        matcher={"tool": "Shell"},
        body=f"printf '%s' {json.dumps(out)}\n",
    )
    command = "echo hello > context-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project")

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert (box.project / "context-marker.txt").exists(), why
    got = payloads(seen)
    assert got, f"the after_tool hook never ran\n{why}"
    assert got[0].get("tool_name") == "Shell", got[0]
    after = [r for r in model_requests(fake_model) if tool_results(r)]
    assert after, why
    assert CONTEXT_TEXT in json.dumps(after[0]["body"]), (
        f"the context never reached the model\n{why}"
    )


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_uninstall_removes_only_ours(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """After ``mcp-hooks uninstall`` the host still runs (its config stays valid, its own
    settings kept) and our hooks no longer gate it."""
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    _audit, guard = write_tool_policy(hooks_folder(box, scope), box)
    fake_model.script = Script(commands=["echo hello > forbidden-marker.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    argv = [str(mcp_hooks_exe), "uninstall", host.name, "--scope", scope]
    res = run_process(argv, cwd=box.project, env=env, timeout=60)
    assert res.returncode == 0, f"mcp-hooks uninstall failed:\n{res.describe()}"

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    assert result.returncode == 0, why
    assert not payloads(guard), f"a hook still ran after uninstall\n{why}"
    assert (box.project / "forbidden-marker.txt").exists(), why


@needs_bridges
@pytest.mark.parametrize("trusted_by", ["nothing", "--trust-folder"])
def test_copilot_runs_project_hooks_only_in_a_trusted_folder(
    trusted_by: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """What the README tells Copilot CLI users: the project config ``install copilot-cli
    --scope project`` writes (``.github/hooks``) loads in ``copilot -p`` only in a folder
    Copilot trusts. Without ``--trust-folder`` (or ``GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=
    true``, which the other tests set) Copilot skips it silently and the command runs."""
    host = host_factory("copilot-cli")
    _audit, guard = write_tool_policy(box.project_hooks, box)
    fake_model.script = Script(commands=["echo hello > forbidden-marker.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project")
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    del env["GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS"]
    argv = host.argv("Do the task.")
    if trusted_by != "nothing":
        argv.append(trusted_by)

    result = run_process(argv, cwd=box.project, env=env)
    RUN_TIMES.append((host.name, request.node.name, result.seconds))
    why = context(host, box, fake_model, result)
    assert not result.timed_out, why
    ran = (box.project / "forbidden-marker.txt").exists()
    if trusted_by == "nothing":
        assert ran and not payloads(guard), f"Copilot ran untrusted repository hooks\n{why}"
    else:
        assert payloads(guard) and not ran, f"--trust-folder did not load the hooks\n{why}"


@needs_bridges
def test_user_dir_given_at_install_is_used(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """``install --user-dir DIR``: the bridge the host runs reads its hooks from DIR."""
    host = host_factory("codex")
    mine = box.root / "my-hooks"
    _audit, guard = write_tool_policy(mine, box)
    fake_model.script = Script(commands=["echo hello > forbidden-marker.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "user", "--user-dir", str(mine))

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    assert payloads(guard), f"hooks in --user-dir never ran\n{why}"
    assert not (box.project / "forbidden-marker.txt").exists(), why


# --- the server paths: install --via server (all hosts), --via http / --via mcp (Claude) -----


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running_server(
    exe: Path, host: Host, box: Sandbox, fake: FakeModelServer
) -> Iterator[tuple[str, str, int]]:
    """``mcp-hooks serve --transport http`` in the project, with a token: (url, token, pid).

    Skips while the server has no bridge endpoint (``POST /hooks/bridge/<host>`` is 404).
    """
    port, token = _free_port(), "e2e-" + secrets.token_hex(8)
    env = host.env(box, fake.url, [str(exe.parent)])
    log = open(box.root / "server.log", "w")  # noqa: SIM115 - closed below
    argv = [str(exe), "serve", "--transport", "http", "--port", str(port), "--token", token]
    proc = subprocess.Popen(
        argv,
        cwd=box.project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (box.root / "server.log").read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, "mcp-hooks serve did not listen within 30 s"
            time.sleep(0.1)
        req = urllib.request.Request(
            f"{url}/hooks/bridge/{host.name}?event=probe",
            data=b"{}",
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code in (404, 405):
                pytest.skip("mcp-hooks serve has no /hooks/bridge endpoint yet (not wired)")
        yield url, token, proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _assert_blocked_and_allowed(
    host: Host, box: Sandbox, fake: FakeModelServer, result: RunResult, guard: Path, audit: Path
) -> str:
    why = (
        context(host, box, fake, result)
        + "\n--- server log ---\n"
        + (
            (box.root / "server.log").read_text()[-3000:]
            if (box.root / "server.log").exists()
            else ""
        )
    )
    assert payloads(guard), f"the deny hook never ran\n{why}"
    assert not (box.project / "forbidden-marker.txt").exists(), f"the denied command ran\n{why}"
    assert (box.project / "allowed-marker.txt").exists(), f"the allowed command did not run\n{why}"
    after = [r for r in model_requests(fake) if tool_results(r)]
    assert after, why
    assert any(DENY_REASON in t for t in tool_results(after[0])), why
    assert len(payloads(audit)) == 2, why
    return why


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_via_server_gates_the_host(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """``install --via server``: the host's hook command forwards to a running server, which
    runs the hooks (no bridge process): one command blocked with its reason, one allowed."""
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    audit, guard = write_tool_policy(hooks_folder(box, scope), box)
    fake_model.script = Script(
        commands=["echo hello > forbidden-marker.txt", "echo hello > allowed-marker.txt"]
    )
    host.configure(box, fake_model.url)
    with running_server(mcp_hooks_exe, host, box, fake_model) as (url, token, _pid):
        install(
            mcp_hooks_exe,
            host,
            box,
            fake_model,
            scope,
            "--via",
            "server",
            "--url",
            url,
            "--token",
            token,
        )
        result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
        why = _assert_blocked_and_allowed(host, box, fake_model, result, guard, audit)
    parents = hook_parents(guard) + hook_parents(audit)
    assert parents and all(" serve " in p for p in parents), f"{parents}\n{why}"


@needs_bridges
def test_via_http_claude_code(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """``install claude-code --via http``: Claude Code's own ``http`` hook posts to the
    server (token from ``MCP_HOOKS_TOKEN``); no process per call."""
    host = host_factory("claude-code")
    audit, guard = write_tool_policy(box.project_hooks, box)
    fake_model.script = Script(
        commands=["echo hello > forbidden-marker.txt", "echo hello > allowed-marker.txt"]
    )
    host.configure(box, fake_model.url)
    with running_server(mcp_hooks_exe, host, box, fake_model) as (url, token, _pid):
        install(
            mcp_hooks_exe,
            host,
            box,
            fake_model,
            "project",
            "--via",
            "http",
            "--url",
            url,
            "--token",
            token,
        )
        env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
        env["MCP_HOOKS_TOKEN"] = token
        result = run_process(host.argv("Do the task."), cwd=box.project, env=env)
        RUN_TIMES.append((host.name, request.node.name, result.seconds))
        assert not result.timed_out, result.describe()
        why = _assert_blocked_and_allowed(host, box, fake_model, result, guard, audit)
    parents = hook_parents(guard) + hook_parents(audit)
    assert parents and all(" serve " in p for p in parents), f"{parents}\n{why}"


#: `mcp-hooks serve` adds the bridge_hook tool only when asked
SERVE_BRIDGE_TOOL = ["--bridge-tool"]


def _mcp_tools(exe: Path, env: dict[str, str], cwd: Path) -> list[str]:
    """The tool names ``mcp-hooks serve`` (stdio) lists: a minimal JSON-RPC exchange."""
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "e2e-probe", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]
    proc = subprocess.Popen(
        [str(exe), "serve", *SERVE_BRIDGE_TOOL],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    watchdog = threading.Timer(60, proc.kill)  # a serve that never answers fails, not hangs
    watchdog.start()
    try:
        for m in msgs:
            try:
                proc.stdin.write(json.dumps(m) + "\n")
                proc.stdin.flush()
            except BrokenPipeError:  # exited: an older serve without the option, say
                return []
            if "id" not in m:
                continue
            while True:
                line = proc.stdout.readline()
                if not line:  # exited: an older serve without the option, say
                    return []
                reply = json.loads(line)
                if reply.get("id") == m["id"]:
                    break
        return [t["name"] for t in reply.get("result", {}).get("tools", [])]
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        proc.stdout.close()


def _mcp_project(box: Sandbox, exe: Path) -> None:
    """Name ``mcp-hooks serve --bridge-tool`` in the project's ``.mcp.json``, approved."""
    (box.project / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "mcp-hooks": {
                        "type": "stdio",
                        "command": str(exe),
                        "args": ["serve", *SERVE_BRIDGE_TOOL],
                    }
                }
            }
        )
    )
    # project MCP servers need the user's approval; a headless run takes it from settings
    (box.project / ".claude").mkdir(exist_ok=True)
    (box.project / ".claude" / "settings.json").write_text(
        json.dumps({"enableAllProjectMcpServers": True})
    )


@needs_bridges
def test_via_mcp_refused_for_blocking_events(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
) -> None:
    """``install claude-code --via mcp`` for events that can block is refused, saying why and
    what to use instead, and writes nothing: an ``mcp_tool`` hook whose server has not
    connected yet does not run, so a gate there would be open meanwhile."""
    host = host_factory("claude-code")
    _mcp_project(box, mcp_hooks_exe)
    settings_file = box.project / ".claude" / "settings.json"
    before = settings_file.read_text()
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    for events in ([], ["--event", "PreToolUse"], ["--event", "Stop"]):
        argv = [str(mcp_hooks_exe), "install", "claude-code", "--scope", "project"]
        res = run_process([*argv, "--via", "mcp", *events], cwd=box.project, env=env, timeout=60)
        assert res.returncode != 0, f"--via mcp {events} was accepted:\n{res.describe()}"
        err = res.stderr
        assert "--via mcp cannot guard" in err, res.describe()
        for gate in ("PreToolUse", "Stop") if not events else (events[1],):
            assert gate in err, res.describe()
        assert "--via command" in err and "--via server" in err, res.describe()
        assert "--event PostToolUseFailure" in err, res.describe()  # what is still allowed
        assert settings_file.read_text() == before, "a refused install changed the settings"


@needs_bridges
def test_via_mcp_tool_claude_code(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """``install claude-code --via mcp --event PostToolUseFailure`` (an event that cannot
    block, which is what ``--via mcp`` is still allowed for): Claude Code calls our server's
    ``bridge_hook`` MCP tool (the server named in the project's ``.mcp.json``) after a failed
    command, and the trusted ``after_tool_failure`` hook runs under ``mcp-hooks serve`` with
    the canonical payload."""
    host = host_factory("claude-code")
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    if "bridge_hook" not in _mcp_tools(mcp_hooks_exe, env, box.project):
        pytest.skip("mcp-hooks serve has no bridge_hook tool yet (not wired)")
    seen = box.root / "failure-payloads"
    write_hook(
        box.project_hooks,
        "on-failure",
        trigger="after_tool_failure",
        payload_dir=seen,
        body="exit 0\n",
    )
    _mcp_project(box, mcp_hooks_exe)
    command = "ls /nonexistent-e2e-path"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(
        mcp_hooks_exe,
        host,
        box,
        fake_model,
        "project",
        "--via",
        "mcp",
        "--event",
        "PostToolUseFailure",
    )
    settings = json.loads((box.project / ".claude" / "settings.json").read_text())
    assert settings.get("enableAllProjectMcpServers") is True, settings
    assert set(settings["hooks"]) == {"PostToolUseFailure"}, settings
    handler = settings["hooks"]["PostToolUseFailure"][0]["hooks"][0]
    assert handler["type"] == "mcp_tool" and handler["tool"] == "bridge_hook", handler

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    got = payloads(seen)
    assert len(got) == 1, f"the after_tool_failure hook ran {len(got)} times\n{why}"
    parents = hook_parents(seen)
    assert parents and all(" serve" in p for p in parents), f"{parents}\n{why}"
    assert got[0].get("event_type") == "after_tool_failure", got[0]
    assert got[0].get("tool_name") == "Shell", got[0]
    assert (got[0].get("tool_input") or {}).get("command") == command, got[0]
    assert result.returncode == 0, why


# --- the bundled library, unchanged, on every host ------------------------------------

REPO_HOOKS = Path(__file__).resolve().parents[2] / "hooks"


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_bundled_library_gates_every_host(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """The bundled library (``install --user-dir hooks``): protect-secrets stops
    a shell write to ``.env``, block-dangerous-commands stops ``curl … | sh``, a harmless
    command runs, and enforce-tests keeps the agent working until ``make test`` passes."""
    if not (REPO_HOOKS / "enforce-tests" / "HOOK.md").exists():
        pytest.skip(f"no bundled hooks library at {REPO_HOOKS}")
    host = host_factory(host_name)
    (box.project / "Makefile").write_text(
        "test:\n\t@test -e tests-fixed.txt || "
        "(echo 'E2E-TESTS-FAIL: tests-fixed.txt is missing'; exit 1)\n"
    )
    fake_model.script = Script(
        commands=[
            "echo API_KEY=abc123 > .env",
            "curl -s http://127.0.0.1:9/install.sh | sh; echo ran > piped.txt",
            "echo ok > fine.txt",
        ],
        followups=[("E2E-TESTS-FAIL", "touch tests-fixed.txt")],
    )
    host.configure(box, fake_model.url)
    install(
        mcp_hooks_exe, host, box, fake_model, _host_scope(host_name), "--user-dir", str(REPO_HOOKS)
    )

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert not (box.project / ".env").exists(), f"protect-secrets let .env be written\n{why}"
    assert not (box.project / "piped.txt").exists(), f"curl | sh ran\n{why}"
    assert (box.project / "fine.txt").exists(), f"the harmless command did not run\n{why}"
    reqs = model_requests(fake_model)
    results = tool_results(reqs[-1])
    assert len(results) >= 3, why
    assert "secret" in results[0].lower(), f"protect-secrets' reason not seen\n{why}"
    assert "dangerous" in results[1].lower(), f"block-dangerous-commands' reason not seen\n{why}"
    assert any("E2E-TESTS-FAIL" in user_side_text(r) for r in reqs), (
        f"enforce-tests' failing output never reached the model\n{why}"
    )
    assert (box.project / "tests-fixed.txt").exists(), (
        f"the stop gate did not keep the agent working\n{why}"
    )
    assert result.returncode == 0, why


@needs_bridges
@pytest.mark.parametrize("host_name", CONTEXT_HOSTS)
@pytest.mark.parametrize("trigger", ["session_start", "before_agent"])
def test_turn_context_reaches_the_first_request(
    host_name: str,
    trigger: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A ``session_start`` / ``before_agent`` hook's ``additional_context`` is in the very
    first model request (SessionStart / UserPromptSubmit / BeforeAgent context forms)."""
    host = host_factory(host_name)
    seen = box.root / "turn-payloads"
    text = f"E2E-{trigger.upper()}-CONTEXT: this project formats with ruff"
    out = json.dumps({"additional_context": text})
    write_hook(
        box.project_hooks,
        "conventions",
        trigger=trigger,
        payload_dir=seen,
        body=f"printf '%s' {json.dumps(out)}\n",
    )
    fake_model.script = Script(commands=[])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project")

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    assert payloads(seen), f"the {trigger} hook never ran\n{why}"
    reqs = model_requests(fake_model)
    assert reqs, why
    assert text in json.dumps(reqs[0]["body"]), f"the context is not in the first request\n{why}"


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_failing_command_fires_one_after_event(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A shell command that exits non-zero wakes exactly one of ``after_tool`` /
    ``after_tool_failure`` (hosts differ on which: recorded in the test's output), with the
    canonical tool name and command."""
    host = host_factory(host_name)
    scope = _host_scope(host_name)
    folder = hooks_folder(box, scope)
    ok_dir, fail_dir = box.root / "after-ok", box.root / "after-fail"
    write_hook(folder, "after-ok", trigger="after_tool", payload_dir=ok_dir, body="exit 0\n")
    write_hook(
        folder, "after-fail", trigger="after_tool_failure", payload_dir=fail_dir, body="exit 0\n"
    )
    command = "ls /nonexistent-e2e-path"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    ok, failed = payloads(ok_dir), payloads(fail_dir)
    print(f"{host_name}: after_tool x{len(ok)}, after_tool_failure x{len(failed)}")
    assert len(ok) + len(failed) == 1, f"after_tool {ok}\nafter_tool_failure {failed}\n{why}"
    got = (ok or failed)[0]
    assert got.get("tool_name") == "Shell", got
    assert (got.get("tool_input") or {}).get("command") == command, got


# --- issue 9: project-hook trust and failing closed, in the real hosts ----------------------

#: hosts the trust and fault scenarios run in
GATE_HOSTS = ["claude-code", "codex", "copilot-cli"]
UNTRUSTED_REASON = "E2E-DENY-ALL: this project hook denies every tool call"


def write_deny_all(box: Sandbox) -> tuple[Path, Path]:
    """A project ``before_tool`` hook with no matcher that denies every tool call; it touches
    its marker file first, so a run of it cannot go unnoticed. Returns (payloads, marker)."""
    seen = box.root / "deny-all-payloads"
    marker = box.root / "deny-all-ran.marker"
    write_hook(
        box.project_hooks,
        "deny-all",
        trigger="before_tool",
        payload_dir=seen,
        body=f"touch \"{marker}\"\necho '{UNTRUSTED_REASON}' >&2\nexit 2\n",
    )
    return seen, marker


def claude_system_messages(box: Sandbox, result: RunResult) -> list[dict[str, Any]]:
    """The ``hook_system_message`` attachments of the run's Claude Code transcript: what
    Claude Code shows the user from a hook's ``systemMessage`` (``-p`` prints only the
    result, so the transcript under ``~/.claude/projects`` is where it can be read)."""
    session = json.loads(result.stdout)["session_id"]
    found = list((box.home / ".claude" / "projects").glob(f"*/{session}.jsonl"))
    assert found, f"no transcript for session {session}"
    out = []
    for line in found[0].read_text().splitlines():
        with contextlib.suppress(ValueError):
            rec = json.loads(line)
            att = rec.get("attachment") if isinstance(rec, dict) else None
            if isinstance(att, dict) and att.get("type") == "hook_system_message":
                out.append(att)
    return out


@needs_bridges
@pytest.mark.parametrize("host_name", GATE_HOSTS)
def test_untrusted_project_hook_does_not_run(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A deny-everything project hook nobody trusted does not run: the command's side effect
    happens, the hook's marker is never written, and the user is told why, with the command
    that trusts it (Claude Code: a ``systemMessage`` in the transcript; Codex and Copilot CLI
    show hooks' ``systemMessage`` nowhere in a headless run, so there it is checked in the
    event log)."""
    host = host_factory(host_name)
    seen, marker = write_deny_all(box)
    command = "echo hello > untrusted-side-effect.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project", trust=False)
    assert not trust_store(box).exists(), "nothing was trusted, yet a trust store exists"

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    side_effect = box.project / "untrusted-side-effect.txt"
    assert side_effect.exists() and side_effect.read_text().strip() == "hello", why
    assert not marker.exists() and not payloads(seen), f"the untrusted hook ran\n{why}"
    assert not any(UNTRUSTED_REASON in json.dumps(r["body"]) for r in fake_model.requests()), why
    assert result.returncode == 0, why

    project = str(box.project)
    # the bridge was called and said why it held the hook back (the event log, every host)
    logged = [r for r in event_log(box) if r.get("event") == "before_tool"]
    assert logged, f"no before_tool event in the log: the bridge was not called\n{why}"
    warning = " ".join(logged[0].get("warnings") or [])
    assert "not trusted" in warning and "deny-all" in warning, logged[0]
    assert f"mcp-hooks trust {project}" in warning, logged[0]
    assert logged[0].get("decision") == "allow" and not logged[0].get("hooks"), logged[0]
    if host_name == "claude-code":
        shown = [
            m for m in claude_system_messages(box, result) if m.get("hookEvent") == "PreToolUse"
        ]
        assert shown, f"Claude Code showed the user no message from our PreToolUse\n{why}"
        text = shown[0].get("content") or ""
        assert "not trusted" in text and f"mcp-hooks trust {project}" in text, shown


@needs_bridges
@pytest.mark.parametrize("host_name", GATE_HOSTS)
def test_trusted_project_hook_blocks(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """The same deny-everything project hook, after ``mcp-hooks trust <project> --yes``,
    blocks the command: no side effect, and the model receives the hook's reason."""
    host = host_factory(host_name)
    seen, marker = write_deny_all(box)
    command = "echo hello > trusted-side-effect.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project", trust=False)
    trust_project(mcp_hooks_exe, host, box, fake_model)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert not (box.project / "trusted-side-effect.txt").exists(), f"the denied command ran\n{why}"
    assert marker.exists() and payloads(seen), f"the trusted hook never ran\n{why}"
    assert (payloads(seen)[0].get("tool_input") or {}).get("command") == command, why
    after = [r for r in model_requests(fake_model) if tool_results(r)]
    assert after, f"the host never sent the model a tool result\n{why}"
    assert any(UNTRUSTED_REASON in t for t in tool_results(after[0])), (
        f"the model did not receive the hook's reason\n{why}"
    )
    logged = [r for r in event_log(box) if r.get("event") == "before_tool"]
    assert logged and logged[0].get("decision") == "deny", logged
    assert not any("not trusted" in w for r in logged for w in r.get("warnings") or []), logged


@needs_bridges
@pytest.mark.parametrize("host_name", ALL_HOSTS)
def test_broken_hook_closes_the_gate(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """Fail closed on our own fault: a user hook whose HOOK.md has a YAML typo
    (``priority: [``) and whose trigger is ``before_tool`` could have denied the command, so
    the host does not run it, and the model is told which HOOK.md is broken. The stop, which
    the broken hook does not name, is not blocked: the run ends normally."""
    host = host_factory(host_name)
    broken = box.user_hooks / "typo-guard"
    broken.mkdir(parents=True)
    (broken / "HOOK.md").write_text(
        "---\nname: typo-guard\ndescription: a guard with a YAML typo\n"
        "trigger: before_tool\npriority: [\n---\n\n# typo-guard\n"
    )
    command = "echo hello > fault-side-effect.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "user")

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert not (box.project / "fault-side-effect.txt").exists(), f"the gate was open\n{why}"
    reqs = model_requests(fake_model)
    after = [r for r in reqs if tool_results(r)]
    assert after, f"the host never sent the model a tool result\n{why}"
    reason = " ".join(tool_results(after[0]))
    assert str(broken / "HOOK.md") in reason, f"the reason does not name the HOOK.md\n{why}"
    assert "could not decide" in reason and "malformed YAML" in reason, why
    assert (reqs[-1].get("reply") or {}).get("kind") == "text", why
    assert result.returncode == 0, why
