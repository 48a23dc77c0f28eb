"""End to end: hosts 7, 8 and 9 (Qwen Code, Cline CLI, OpenCode) as the real programs run.

The same two layers as ``test_real_hosts.py``, on its harness (tests/helpers/host_harness.py):
a hand-written native hook proves the harness drives each program (layer 1); then ``mcp-hooks
install <host>`` wires it and HOOK.md hooks gate it through ``mcp-hooks bridge <host>`` (layer 2):

* a ``before_tool`` deny holds: the model asked for the command, the command never ran, and
  the reason reaches the model where the host can show it (Qwen Code and OpenCode: as the
  tool's result; Cline: as the hook context Cline adds after it);
* an allowed command runs;
* Qwen Code's stop gate takes exactly one more turn, and a gate that never relents still
  ends; Cline and OpenCode have no stop gate: a ``before_stop`` deny never runs there, the
  run ends, and their after-stop event (``after_stop``) is what fires instead;
* a rewrite runs the rewritten command (Cline, OpenCode) or, where the host cannot apply one
  (Qwen Code 0.24.4 ignores ``updatedInput``), the call is refused rather than run as sent;
* an ``after_tool`` hook's context reaches the model;
* ``uninstall`` leaves the host ungated.

What each real program showed is summed up in docs/bridges.md (per-host sections).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
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
    user_side_text,
    write_hook,
    write_stop_gate,
    write_tool_policy,
)

from .fake_model import FakeModelServer, Script
from .hosts import Host, Sandbox, run_process

pytestmark = pytest.mark.e2e

HOSTS = ["qwen-code", "cline", "opencode"]
#: every scope each host has a hook config for (Cline: ~/.cline/hooks, .clinerules/hooks)
SCOPES = [pytest.param(h, s, id=f"{h}-{s}") for h in HOSTS for s in ("project", "user")]
#: the scope a test uses when it does not matter (Cline's default is the user's folder)
DEFAULT_SCOPE = {"qwen-code": "project", "cline": "user", "opencode": "project"}
#: where the host shows the model a deny's reason: the tool's result, or a user-side message
REASON_IN = {"qwen-code": "tool result", "cline": "user message", "opencode": "tool result"}


def reason_seen(host_name: str, rec: dict[str, Any], reason: str) -> bool:
    if REASON_IN[host_name] == "tool result":
        return any(reason in t for t in tool_results(rec))
    return reason in user_side_text(rec)


def asked_for(fake: FakeModelServer, command: str) -> bool:
    """Whether the fake model asked the host to run ``command`` (whatever the tool's shape)."""
    return any((r.get("reply") or {}).get("kind") == "tool_call"
               and command in json.dumps((r.get("reply") or {}).get("args"))
               for r in fake.requests())


def wait_for(path_glob: Callable[[], list[Any]], seconds: float = 60.0) -> list[Any]:
    """Poll for what a detached hook writes after the host has exited (Cline runs its
    TaskComplete hooks detached); the limit only stops a hang."""
    deadline = time.monotonic() + seconds
    found = path_glob()
    while not found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = path_glob()
    return found


# --- layer 1: the harness ------------------------------------------------------------------


@pytest.mark.parametrize("host_name", HOSTS)
@pytest.mark.parametrize("mode", ["block", "allow"])
def test_harness_native_hook(
    host_name: str,
    mode: str,
    host_factory: Callable[[str], Host],
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A hand-written native pre-tool hook gates the host's shell tool (no mcp-hooks)."""
    host = host_factory(host_name)
    run = native_hook_run(host, box, fake_model, request, block=mode == "block")
    why = run.why

    assert run.pre_payloads, f"the native pre-tool hook never ran\n{why}"
    assert NATIVE_COMMAND in json.dumps(run.pre_payloads[0]), why
    assert wait_for(lambda: list(run.seen.glob("stop-*.json"))), f"no native stop hook ran\n{why}"
    after = [r for r in model_requests(fake_model) if tool_results(r)]
    assert after, f"no request carried a tool result\n{why}"
    marker = box.project / "marker.txt"
    if mode == "block":
        assert not marker.exists(), f"blocked command ran anyway\n{why}"
        assert reason_seen(host_name, after[0], NATIVE_REASON), why
    else:
        assert marker.read_text().strip() == "hello", why


# --- layer 2: mcp-hooks install + bridge ----------------------------------------------------


@needs_bridges
@pytest.mark.parametrize(("host_name", "scope"), SCOPES)
def test_a_deny_holds_and_the_model_reads_why(
    host_name: str,
    scope: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """The model asks for a forbidden command; it never runs, the reason reaches the model,
    and the run goes on to the model's next turn."""
    host = host_factory(host_name)
    audit, guard = write_tool_policy(hooks_folder(box, scope), box)
    command = "echo hello > forbidden-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert asked_for(fake_model, command), f"the model never asked for the command\n{why}"
    assert not (box.project / "forbidden-marker.txt").exists(), f"the denied command ran\n{why}"
    assert payloads(guard), f"the deny hook never ran (bridge not called?)\n{why}"
    assert all(" bridge " in p for p in hook_parents(guard)), hook_parents(guard)
    first = payloads(audit)[0]
    assert first.get("tool_name") == "Shell", first  # one vocabulary across hosts
    assert (first.get("tool_input") or {}).get("command") == command, first
    assert (first.get("host") or {}).get("name") == host.name, first
    assert (first.get("host") or {}).get("tool_name") == host.native_shell_tool, first
    reqs = model_requests(fake_model)
    after = [r for r in reqs if tool_results(r)]
    assert after, f"the host never sent the model a tool result\n{why}"
    assert reason_seen(host_name, after[0], DENY_REASON), (
        f"the model did not receive the hook's reason ({REASON_IN[host_name]})\n{why}")
    assert (reqs[-1].get("reply") or {}).get("kind") == "text", why  # the run went on
    assert result.returncode == 0, why


@needs_bridges
@pytest.mark.parametrize("host_name", HOSTS)
def test_an_allowed_command_runs(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A command no hook denies runs; installed twice, the hooks run once."""
    host = host_factory(host_name)
    scope = DEFAULT_SCOPE[host_name]
    audit, guard = write_tool_policy(hooks_folder(box, scope), box)
    command = "echo hello > allowed-marker.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    marker = box.project / "allowed-marker.txt"
    assert marker.exists() and marker.read_text().strip() == "hello", why
    seen = payloads(audit)
    assert len(seen) == 1, f"the audit hook ran {len(seen)} times\n{why}"
    assert (seen[0].get("tool_input") or {}).get("command") == command, seen[0]
    assert not payloads(guard), why


@needs_bridges
def test_qwen_stop_gate_takes_one_more_turn(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """Qwen Code: the gate blocks the first stop; exactly one more model turn, which carries
    the gate's reason, and the second stop (``stop_hook_active``) is let through."""
    host = host_factory("qwen-code")
    seen, fired = write_stop_gate(box.project_hooks, box, always=False)
    fake_model.script = Script(commands=[])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project")

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert fired.exists(), f"the before_stop hook never blocked\n{why}"
    reqs = model_requests(fake_model)
    carrying = [i for i, r in enumerate(reqs) if STOP_REASON in user_side_text(r)]
    assert carrying == [len(reqs) - 1] and len(reqs) == 2, why
    stops = payloads(seen)
    assert [p.get("stop_hook_active") for p in stops] == [False, True], stops
    assert result.returncode == 0, why


@needs_bridges
def test_qwen_stop_gate_that_never_relents_still_ends(
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A gate that blocks every stop: Qwen's cap (8) and our loop guard (8) end the run long
    before the fake model's runaway cap."""
    host = host_factory("qwen-code")
    seen, _fired = write_stop_gate(box.project_hooks, box, always=True)
    fake_model.script = Script(commands=[], max_requests=16)
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project")

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert not any((r.get("reply") or {}).get("message") == "fake model: request cap reached"
                   for r in fake_model.requests()), f"the stop loop never ended\n{why}"
    reqs = model_requests(fake_model)
    assert any(STOP_REASON in user_side_text(r) for r in reqs), why
    assert 2 <= len(reqs) <= 10, why
    assert payloads(seen), why


@needs_bridges
@pytest.mark.parametrize("host_name", ["cline", "opencode"])
def test_no_stop_gate_a_stop_hook_does_not_run_and_after_stop_fires(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """Cline and OpenCode have no stop gate (docs/bridges.md): a ``before_stop`` hook that
    would block every stop never runs, the run ends after the model's one text turn, and what
    fires instead is ``after_stop`` (Cline's TaskComplete, OpenCode's session.idle)."""
    host = host_factory(host_name)
    scope = DEFAULT_SCOPE[host_name]
    folder = hooks_folder(box, scope)
    seen, _fired = write_stop_gate(folder, box, always=True)
    after_stop = box.root / "after-stop-payloads"
    write_hook(folder, "after-stop", trigger="after_stop", payload_dir=after_stop,
               body="exit 0\n")
    fake_model.script = Script(commands=[])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    reqs = model_requests(fake_model)
    assert not any(STOP_REASON in user_side_text(r) for r in reqs), why
    assert [(r.get("reply") or {}).get("kind") for r in reqs][-1] == "text", why
    assert result.returncode == 0, why
    ended = wait_for(lambda: payloads(after_stop))
    assert ended, f"after_stop never fired\n{why}"
    assert ended[0].get("event_type") == "after_stop", ended[0]
    assert not payloads(seen), f"a before_stop hook ran on {host_name}\n{why}"


@needs_bridges
@pytest.mark.parametrize("host_name", HOSTS)
def test_a_rewrite_runs_the_new_command_or_is_refused(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A hook's ``modified_input`` (canonical ``command``) goes back in the host's shape:
    Cline's ``overrideInput`` (``commands`` list), OpenCode's ``output.args``. Qwen Code
    0.24.4 ignores ``updatedInput``, so there the call is refused, saying why, rather than
    run with the input the hook replaced."""
    host = host_factory(host_name)
    scope = DEFAULT_SCOPE[host_name]
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
    command = "echo original > rewrite-me.txt"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert asked_for(fake_model, command), why
    assert payloads(seen), f"the rewrite hook never ran\n{why}"
    assert not (box.project / "rewrite-me.txt").exists(), f"the original command ran\n{why}"
    new = box.project / "rewritten-marker.txt"
    if host_name == "qwen-code":
        assert not new.exists(), why
        after = [r for r in model_requests(fake_model) if tool_results(r)]
        assert any("updatedInput" in t for t in tool_results(after[0])), why
    else:
        assert new.exists() and new.read_text().strip() == "rewritten", why


CONTEXT_TEXT = "E2E-CONTEXT: the linter found nothing to report"


@needs_bridges
@pytest.mark.parametrize("host_name", HOSTS)
def test_after_tool_context_reaches_the_model(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """An ``after_tool`` hook's ``additional_context`` is in the model's next request (Qwen:
    appended to the result; Cline: a hook-context message; OpenCode: appended to the output)."""
    host = host_factory(host_name)
    scope = DEFAULT_SCOPE[host_name]
    seen = box.root / "context-payloads"
    write_hook(
        hooks_folder(box, scope),
        "lint-report",
        trigger="after_tool",
        payload_dir=seen,
        matcher={"tool": "Shell"},
        body=f"printf '%s' {json.dumps(json.dumps({'additional_context': CONTEXT_TEXT}))}\n",
    )
    fake_model.script = Script(commands=["echo hello > context-marker.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, scope)

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)

    assert (box.project / "context-marker.txt").exists(), why
    got = payloads(seen)
    assert got, f"the after_tool hook never ran\n{why}"
    assert got[0].get("tool_name") == "Shell", got[0]
    assert "tool_output" in got[0], got[0]
    after = [r for r in model_requests(fake_model) if tool_results(r)]
    assert after and CONTEXT_TEXT in json.dumps(after[0]["body"]), (
        f"the context never reached the model\n{why}")


@needs_bridges
@pytest.mark.parametrize("host_name", HOSTS)
def test_uninstall_leaves_the_host_ungated(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """After ``mcp-hooks uninstall`` nothing we wrote is left and the host runs ungated."""
    host = host_factory(host_name)
    scope = DEFAULT_SCOPE[host_name]
    _audit, guard = write_tool_policy(hooks_folder(box, scope), box)
    fake_model.script = Script(commands=["echo hello > forbidden-marker.txt"])
    host.configure(box, fake_model.url)

    def files() -> set[str]:
        return {str(p.relative_to(box.root)) for p in box.root.rglob("*") if p.is_file()}

    before = files()
    install(mcp_hooks_exe, host, box, fake_model, scope)
    assert files() != before
    env = host.env(box, fake_model.url, [str(mcp_hooks_exe.parent)])
    argv = [str(mcp_hooks_exe), "uninstall", host.name, "--scope", scope]
    res = run_process(argv, cwd=box.project, env=env, timeout=60)
    assert res.returncode == 0, res.describe()
    left = {f for f in files() - before if "mcp-hooks/backups" not in f
            and "mcp-hooks/trust.json" not in f}
    assert left == set(), left

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    assert not payloads(guard), f"a hook still ran after uninstall\n{why}"
    assert (box.project / "forbidden-marker.txt").exists(), why


@needs_bridges
@pytest.mark.parametrize("trigger", ["session_start", "before_agent"])
def test_qwen_turn_context_reaches_the_first_request_once(
    trigger: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """Qwen Code: a ``session_start`` / ``before_agent`` hook's context is in the first model
    request. Qwen fires UserPromptSubmit before every model call; the continuation after the
    tool result (an empty prompt) is ``before_model``, so a ``before_agent`` hook runs once."""
    host = host_factory("qwen-code")
    seen = box.root / "turn-payloads"
    text = f"E2E-{trigger.upper()}-CONTEXT: this project formats with ruff"
    write_hook(box.project_hooks, "conventions", trigger=trigger, payload_dir=seen,
               body=f"printf '%s' {json.dumps(json.dumps({'additional_context': text}))}\n")
    fake_model.script = Script(commands=["echo hello > turn-marker.txt"])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, "project")

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    reqs = model_requests(fake_model)
    assert len(reqs) == 2 and (box.project / "turn-marker.txt").exists(), why
    assert text in json.dumps(reqs[0]["body"]), f"the context is not in the first request\n{why}"
    assert len(payloads(seen)) == 1, f"the {trigger} hook ran {len(payloads(seen))} times\n{why}"


@needs_bridges
@pytest.mark.parametrize("host_name", HOSTS)
def test_a_failing_command_is_after_tool_failure(
    host_name: str,
    host_factory: Callable[[str], Host],
    mcp_hooks_exe: Path,
    fake_model: FakeModelServer,
    box: Sandbox,
    request: pytest.FixtureRequest,
) -> None:
    """A command that exits non-zero wakes ``after_tool_failure`` once on all three (Qwen
    has PostToolUseFailure; Cline and OpenCode report it as a result, read as a failure)."""
    host = host_factory(host_name)
    folder = hooks_folder(box, DEFAULT_SCOPE[host_name])
    ok_dir, fail_dir = box.root / "after-ok", box.root / "after-fail"
    write_hook(folder, "after-ok", trigger="after_tool", payload_dir=ok_dir, body="exit 0\n")
    write_hook(folder, "after-fail", trigger="after_tool_failure", payload_dir=fail_dir,
               body="exit 0\n")
    command = "ls /nonexistent-e2e-path"
    fake_model.script = Script(commands=[command])
    host.configure(box, fake_model.url)
    install(mcp_hooks_exe, host, box, fake_model, DEFAULT_SCOPE[host_name])

    result = run_host(host, box, fake_model, request, [str(mcp_hooks_exe.parent)])
    why = context(host, box, fake_model, result)
    assert payloads(ok_dir) == [], why
    (failed,) = payloads(fail_dir)
    assert failed.get("tool_name") == "Shell", failed
    assert (failed.get("tool_input") or {}).get("command") == command, failed
    assert failed.get("error"), failed
