"""The agent-loop events (seeds 003/004): model calls, streamed chunks, errors."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Hooks
from tests.conftest import write_hook

HANG_BOUND = 60.0  # stops a hang only; never a timing


@pytest.fixture
def hooks(user_dir: Path, tmp_path: Path) -> Any:
    with Hooks(tmp_path, user_dir=user_dir) as made:
        yield made


def test_before_model_rewrites_messages_through_both_kinds(hooks: Hooks, user_dir: Path,
                                                           tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    hint = {"role": "system", "content": "be brief"}
    write_hook(user_dir, "add-hint", trigger="pre_reasoning", extra="priority: 500\n",
               script='read -r line\necho \'{"modified_input": {"messages": ['
                      + json.dumps(hint) + ', {"role": "user", "content": "hi"}]}}\'\n')
    write_hook(user_dir, "reader", trigger="PreReasoning", extra="priority: 10\n",
               script=f"cat > {seen}\n")
    got: list[Any] = []

    @hooks.before_model(priority=200)
    def count(messages: list[Any]) -> list[Any]:
        got.append(messages)
        return [*messages, {"role": "user", "content": "and cite"}]

    outcome = hooks.fire("before_model", messages=[{"role": "user", "content": "hi"}],
                         work_dir=str(tmp_path))
    assert got == [[hint, {"role": "user", "content": "hi"}]]
    final = [hint, {"role": "user", "content": "hi"}, {"role": "user", "content": "and cite"}]
    assert outcome.modified_input == {"messages": final}
    payload = json.loads(seen.read_text())
    assert payload["messages"] == final and payload["event_type"] == "PreReasoning"


def test_a_bad_before_model_rewrite_is_ignored_with_a_warning(hooks: Hooks, user_dir: Path,
                                                              tmp_path: Path) -> None:
    write_hook(user_dir, "bad", trigger="before_model",
               script='echo \'{"modified_input": {"prompt": "x"}}\'\n')
    outcome = hooks.fire("before_model", messages=[], work_dir=str(tmp_path))
    assert outcome.modified_input is None
    assert any('must be {"messages": [...]}' in w for w in outcome.warnings)


def test_after_model_replaces_the_response(hooks: Hooks, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "redact", trigger="post_reasoning", extra="priority: 500\n",
               script='echo \'{"modified_output": {"text": "[redacted]"}}\'\n')
    hooks.after_model(lambda response: {**response, "checked": True})
    outcome = hooks.fire("after_model", messages=[], response={"text": "secret"},
                         work_dir=str(tmp_path))
    assert outcome.modified_output == {"text": "[redacted]", "checked": True}
    denied = hooks.fire("PostReasoning", response={"text": "x"}, work_dir=str(tmp_path))
    assert denied.decision == "allow"  # the same hooks, by the Java spelling


def test_chunks_never_wait_for_a_slow_hook(hooks: Hooks, user_dir: Path, tmp_path: Path) -> None:
    gate, done = tmp_path / "gate", tmp_path / "done"
    # a hook that would block (exit 2) and waits for a file the test writes only after
    # fire returned: were the chunk waited for, fire would never return
    write_hook(user_dir, "slow", trigger="ActingChunk",
               script=f"cat > {tmp_path}/chunk.json\n"
                      f"while [ ! -e {gate} ]; do sleep 0.05; done\ntouch {done}\nexit 2\n")
    started: list[Any] = []

    @hooks.on("tool_output_chunk", tool="Shell")
    def raises(chunk_payload: dict[str, Any]) -> None:
        started.append(chunk_payload["chunk"])
        raise RuntimeError("ignored: a notification cannot block")

    outcome = hooks.fire("tool_output_chunk", tool_name="Shell", tool_input={"command": "make"},
                         chunk="line 1\n", work_dir=str(tmp_path))
    assert outcome.decision == "allow" and not done.exists()
    assert [(h.name, h.mode, h.status) for h in outcome.hooks] == [
        ("slow", "async", "scheduled"),
        ("test_chunks_never_wait_for_a_slow_hook.<locals>.raises", "async", "scheduled")]
    gate.touch()
    deadline = time.monotonic() + HANG_BOUND
    while not (done.exists() and started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done.exists() and started == ["line 1\n"]
    assert json.loads((tmp_path / "chunk.json").read_text())["chunk"] == "line 1\n"


@pytest.mark.anyio
async def test_reasoning_chunks_reach_callables_beside_the_stream(hooks: Hooks) -> None:
    import asyncio

    release = asyncio.Event()
    got: list[str] = []

    @hooks.on("ReasoningChunk")
    async def printer(payload: dict[str, Any]) -> None:
        await release.wait()  # would hold the stream, were it awaited
        got.append(payload["chunk"])

    for text in ("a", "b"):
        outcome = await hooks.afire("reasoning_chunk", chunk=text)
        assert outcome.decision == "allow" and outcome.hooks[0].status == "scheduled"
    assert got == []
    release.set()
    for _ in range(100):
        if len(got) == 2:
            break
        await asyncio.sleep(0.01)
    assert sorted(got) == ["a", "b"]


def test_error_event_carries_its_phase(hooks: Hooks, user_dir: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    write_hook(user_dir, "on-error", trigger="Error", script=f"cat > {seen}\nexit 2\n")
    outcome = hooks.fire("error", error="TimeoutError: model", phase="reasoning",
                         session_id="s", work_dir=str(tmp_path))
    payload = json.loads(seen.read_text())
    assert payload["error"] == "TimeoutError: model" and payload["phase"] == "reasoning"
    assert outcome.denied  # reported; the event cannot block, the caller raises anyway
    from mcp_hooks.spec.events import EVENTS

    assert not EVENTS["error"].can_block
