"""The LangChain 1.x middleware (``mcp_hooks.adapters.langchain``) in a real ``create_agent``
loop: LangChain from PyPI in its own cached venv (``tests/helpers/framework_venv.py``), a scripted
OpenAI-compatible model on loopback (``tests/helpers/scripted_model.py``), real HOOK.md hooks in
temporary folders. The scenario runs as a subprocess (``tests/scenarios/langchain_agent.py``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_hook
from tests.helpers.framework_venv import (
    ASKS_FOR_DANGER,
    GATE,
    GUARD,
    REWRITE,
    WRITE_TOOL_ONLY,
    broken_stop_hook,
    framework_python,
    run_scenario,
)
from tests.helpers.scripted_model import ScriptedModel, Text, ToolCall

PINS = ("langchain==1.4.7", "langchain-openai==1.7.3")
CHECK = "import langchain.agents, langchain_openai, mcp_hooks.adapters.langchain"


@pytest.fixture(scope="module")
def python() -> Path:
    return framework_python("langchain", PINS, CHECK)


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    d = tmp_path / "sandbox"
    d.mkdir()
    return d


def run(python: Path, model: ScriptedModel, user_dir: Path, project: Path, sandbox: Path,
        **options: Any) -> dict[str, Any]:
    return run_scenario(python, "langchain_agent.py", sandbox.parent / "gate-mark",
                        base_url=model.base_url, project_dir=str(project),
                        user_dir=str(user_dir), sandbox=str(sandbox), **options)


@pytest.mark.parametrize(("mode", "stream"), [("sync", False), ("async", True)])
def test_a_denied_tool_call_does_not_run_and_the_model_reads_why(
        python: Path, user_dir: Path, project: Path, sandbox: Path, mode: str,
        stream: bool) -> None:
    write_hook(user_dir, "guard", script=GUARD, extra=WRITE_TOOL_ONLY)
    script = [ToolCall("write_file", {"path": "danger.txt", "text": "boom"}),
              ToolCall("write_file", {"path": "fine.txt", "text": "ok"}), Text("all done")]
    with ScriptedModel(script) as model:
        result = run(python, model, user_dir, project, sandbox, mode=mode, stream=stream)
    assert not (sandbox / "danger.txt").exists()  # the side effect did not happen
    assert (sandbox / "fine.txt").read_text() == "ok"  # an allowed call still runs
    results = model.tool_results()
    assert "policy P-7" in results[0]
    assert "wrote 2 characters" in results[1]
    # the request after the denied call carries the reason in its tool message
    second = model.completions()[1].messages
    assert any(m.get("role") == "tool" and "policy P-7" in str(m.get("content"))
               for m in second)
    assert result["final"] == "all done"


def test_a_rewrite_reaches_the_tool(python: Path, user_dir: Path, project: Path,
                                    sandbox: Path) -> None:
    write_hook(project / ".agents" / "hooks", "redirect", script=REWRITE,
               extra=WRITE_TOOL_ONLY)
    script = [ToolCall("write_file", {"path": "wanted.txt", "text": "original"}), Text("done")]
    with ScriptedModel(script) as model:
        run(python, model, user_dir, project, sandbox)
    assert not (sandbox / "wanted.txt").exists()
    assert (sandbox / "safe.txt").read_text() == "rewritten by hook"
    assert "wrote 17 characters to safe.txt" in model.tool_results()[0]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stop_gate_keeps_the_agent_working(python: Path, user_dir: Path, project: Path,
                                             sandbox: Path, mode: str) -> None:
    write_hook(user_dir, "gate", trigger="before_stop", script=GATE)
    script = [Text("finished early"),
              ToolCall("write_file", {"path": "tests.log", "text": "passed"}),
              Text("finished for real")]
    with ScriptedModel(script) as model:
        result = run(python, model, user_dir, project, sandbox, mode=mode)
    assert model.turns_used == 3  # asked again after the refused stop
    second = model.completions()[1].messages
    assert "gate G-3" in str(second[-1].get("content"))
    assert second[-1].get("role") == "user"
    assert (sandbox / "tests.log").read_text() == "passed"  # it kept working
    assert result["final"] == "finished for real"  # the second stop passed
    texts = [m["text"] for m in result["messages"]]
    assert texts.index("finished early") < texts.index("finished for real")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_model_hooks_rewrite_the_messages_and_the_answer(
        python: Path, user_dir: Path, project: Path, sandbox: Path, mode: str) -> None:
    write_hook(user_dir, "prompt", trigger="before_model", script=(
        "cat >/dev/null\necho '{\"modified_input\": {\"messages\": "
        "[{\"role\": \"user\", \"content\": \"rewritten prompt M-1\"}]}}'\n"))
    write_hook(user_dir, "answer", trigger="post_reasoning", script=(  # an alias, as AgentScope
        "cat >/dev/null\necho '{\"modified_output\": \"rewritten answer A-2\"}'\n"))
    with ScriptedModel([Text("original answer")]) as model:
        result = run(python, model, user_dir, project, sandbox, mode=mode)
    assert model.completions()[0].messages == [
        {"role": "user", "content": "rewritten prompt M-1"}]
    assert result["final"] == "rewritten answer A-2"


def test_a_denied_model_call_is_not_made_and_the_reason_is_the_answer(
        python: Path, user_dir: Path, project: Path, sandbox: Path) -> None:
    write_hook(user_dir, "no-model", trigger="before_model",
               script="cat >/dev/null\necho 'model calls are off today (M-9)' >&2\nexit 2\n")
    with ScriptedModel([]) as model:
        result = run(python, model, user_dir, project, sandbox)
    assert model.completions() == []
    assert "M-9" in result["final"]

def test_mcp_hooks_never_imports_the_framework(python: Path) -> None:
    code = ("import sys, mcp_hooks; mcp_hooks.Engine; mcp_hooks.Registry; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('langchain', 'langchain_core', 'langgraph') or m.startswith('mcp_hooks.adapters')))")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_engines_loop_guard_ends_a_stop_gate_that_keeps_failing(
        python: Path, user_dir: Path, project: Path, sandbox: Path, mode: str) -> None:
    """The middleware keeps no stop count of its own: a stop denied every time (a fault of
    ours) is let through by the engine's loop guard at its cap (2 here)."""
    broken_stop_hook(user_dir)
    script = [Text("stop one"), Text("stop two"), Text("stop three"), Text("never asked")]
    with ScriptedModel(script) as model:
        result = run(python, model, user_dir, project, sandbox, mode=mode, stop_block_cap=2)
    assert model.turns_used == 3  # asked again twice, then the third stop passed
    assert "failed to load" in str(model.completions()[1].messages[-1].get("content"))
    assert result["final"] == "stop three"


@pytest.mark.parametrize("approved", [True, False])
def test_an_ask_goes_to_the_approve_callback(
        python: Path, user_dir: Path, project: Path, sandbox: Path, approved: bool) -> None:
    write_hook(user_dir, "asker", script=ASKS_FOR_DANGER, extra=WRITE_TOOL_ONLY)
    script = [ToolCall("write_file", {"path": "danger.txt", "text": "boom"}), Text("all done")]
    with ScriptedModel(script) as model:
        result = run(python, model, user_dir, project, sandbox, approve=approved)
    assert result["asked"][0]["reason"] == "danger files need a person"
    assert result["asked"][0]["tool_input"]["text"] == "boom"
    assert (sandbox / "danger.txt").exists() is approved  # the call ran only once approved
    if not approved:
        assert "refused by the approve callback" in model.tool_results()[0]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("answer", ["approve", "reject"])
def test_native_approval_is_langgraphs_interrupt(
        python: Path, user_dir: Path, project: Path, sandbox: Path, answer: str,
        mode: str) -> None:
    """``native_approval=True``: a hook's ask pauses the graph with LangGraph's interrupt
    (the exact call shown); ``Command(resume=...)`` answers it: approved, exactly that call
    runs (the approval logged on the ask, channel ``langchain``); refused, it never runs
    and the model reads the person's reason."""
    write_hook(user_dir, "asker", script=ASKS_FOR_DANGER, extra=WRITE_TOOL_ONLY)
    log = sandbox.parent / "events.jsonl"
    script = [ToolCall("write_file", {"path": "danger.txt", "text": "boom"}), Text("all done")]
    with ScriptedModel(script) as model:
        result = run(python, model, user_dir, project, sandbox, native=answer, mode=mode,
                     log=str(log))
    [shown] = result["asked"]
    assert shown["tool"] == "write_file" and shown["reason"] == "danger files need a person"
    assert shown["arguments"] == {"path": "danger.txt", "text": "boom"}
    assert (sandbox / "danger.txt").exists() is (answer == "approve")
    assert result["final"] == "all done"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    answers = [(r["channel"], r["approved"]) for r in records if r.get("kind") == "ask_answer"
               and r["channel"] != "host"]  # "host": each deferral to the interrupt, logged
    assert answers == [("langchain", answer == "approve")]
    if answer == "reject":
        assert "the person said no" in model.tool_results()[0]
