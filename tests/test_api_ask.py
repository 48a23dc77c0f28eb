"""``Hooks(approve=...)``: a hook's ask answered by the caller's callback, sync or async,
through ``fire`` (the worker loop, and the inline chain of callables) and ``afire``; a bool
or an ``AskAnswer``; None falls back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Ask, AskAnswer, AskRequest, Hooks
from tests.conftest import write_hook

ASKS = """cat >/dev/null
echo '{"decision": "ask", "reason": "deletes need a person"}'
"""
CALL: dict[str, Any] = {"tool_name": "Shell", "tool_input": {"command": "rm -rf build"},
                        "session_id": "s1"}


def test_a_sync_callback_answers_a_script_hooks_ask(user_dir: Path) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    seen: list[AskRequest] = []

    def approve(request: AskRequest) -> bool:
        seen.append(request)
        return request.tool_input == {"command": "rm -rf build"}

    with Hooks(user_dir=user_dir, approve=approve) as hooks:
        allowed = hooks.fire("before_tool", **CALL)
        denied = hooks.fire("before_tool", **{**CALL, "tool_input": {"command": "rm -rf /"}})
    assert allowed.decision == "allow" and seen[0].reason == "deletes need a person"
    assert denied.denied and "refused by the approve callback" in (denied.reason or "")


def test_an_inline_callable_chain_asks_the_sync_callback(user_dir: Path) -> None:
    with Hooks(user_dir=user_dir,
               approve=lambda request: AskAnswer(False, reason="not today", by="cb")) as hooks:
        hooks.on("before_tool")(lambda value: Ask("payments need a person"))
        outcome = hooks.fire("before_tool", **CALL)
    assert outcome.denied and "not today" in (outcome.reason or "")


@pytest.mark.anyio
async def test_an_async_callback_through_afire_and_fire(user_dir: Path) -> None:
    write_hook(user_dir, "asker", script=ASKS)
    answers = iter([True, False])

    async def approve(request: AskRequest) -> bool:
        return next(answers)

    async with Hooks(user_dir=user_dir, approve=approve) as hooks:
        assert (await hooks.afire("before_tool", **CALL)).decision == "allow"
        assert (await hooks.afire("before_tool", **CALL)).denied


def test_an_async_callback_with_an_inline_callable_chain(user_dir: Path) -> None:
    async def approve(request: AskRequest) -> AskAnswer:
        return AskAnswer(True, by="async")

    with Hooks(user_dir=user_dir, approve=approve) as hooks:
        hooks.on("before_tool")(lambda value: Ask("a person checks"))
        assert hooks.fire("before_tool", **CALL).decision == "allow"


def test_no_person_reachable_falls_back(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_HOOKS_ASK_TIMEOUT", "0")
    write_hook(user_dir, "asker", script=ASKS)
    from mcp_hooks import Settings

    with Hooks(settings=Settings.from_env(user_dir=user_dir),
               approve=lambda request: None) as hooks:
        outcome = hooks.fire("before_tool", **CALL)
    assert outcome.denied and outcome.ask is not None
    assert f"mcp-hooks approve {outcome.ask.id}" in (outcome.reason or "")
