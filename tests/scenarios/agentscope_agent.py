"""One AgentScope agent run under mcp-hooks, for tests/adapters/test_adapter_agentscope.py.

Run inside a venv holding AgentScope (1.0.x or 2.x) and mcp-hooks::

    python tests/scenarios/agentscope_agent.py GENERATION INSTALL STREAM BASE_URL HOOKS_DIR \
        WORK_DIR [CAP]

GENERATION is ``1`` (``AgentScopeHooks``; INSTALL ``instance`` or ``class``) or ``2``
(``HooksMiddleware``; INSTALL ignored); STREAM ``stream`` or ``whole``. The agent has one
tool, ``write_file(path, text)``, which writes into WORK_DIR and answers ``wrote <path>``;
the model is the scripted one at BASE_URL. The last line printed is a JSON object:
``{"reply": <final text>, "written": [<files the tool wrote>]}``. CAP is the adapter's
``stop_block_cap`` (default 8). With ``SCENARIO_APPROVE=yes|no`` in the environment the
adapter fires through a ``Hooks(approve=callback)`` that answers a hook's ask so, and the
reasons it was asked with are printed under ``asked``. With ``SCENARIO_NATIVE=yes|no``
(2.x): ``HooksMiddleware(native_approval=True)``; the reply stops at AgentScope's
``RequireUserConfirmEvent`` and is resumed with a ``UserConfirmResultEvent`` answering so;
each confirmation asked for is printed under ``asked`` (its tool call's input); events are
logged to ``events.jsonl`` next to WORK_DIR.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

GENERATION, INSTALL, STREAM, BASE_URL, HOOKS_DIR, WORK_DIR = sys.argv[1:7]
CAP = int(sys.argv[7]) if len(sys.argv) > 7 else 8
APPROVE = os.environ.get("SCENARIO_APPROVE")  # yes | no: a callback answers a hook's ask
NATIVE = os.environ.get("SCENARIO_NATIVE")  # yes | no: the 2.x user confirmation answers it
WRITTEN: list[str] = []
ASKED: list[str] = []


def _adapter_options() -> dict[str, Any]:
    """The adapter's hook options: its own ``Hooks``, or one with the approve callback."""
    if NATIVE is not None:
        return {"user_dir": HOOKS_DIR, "stop_block_cap": CAP, "native_approval": True,
                "log": str(Path(WORK_DIR).parent / "events.jsonl")}
    if APPROVE is None:
        return {"user_dir": HOOKS_DIR, "stop_block_cap": CAP}
    from mcp_hooks import Hooks

    def approve(request: Any) -> bool:
        ASKED.append(request.reason)
        return APPROVE == "yes"

    return {"hooks": Hooks(WORK_DIR, user_dir=HOOKS_DIR, stop_block_cap=CAP, approve=approve)}


def _write(path: str, text: str) -> str:
    Path(WORK_DIR, path).write_text(text)
    WRITTEN.append(path)
    return f"wrote {path}"


async def run_v1() -> str:
    # the adapter first: it lets AgentScope 1.0.x import beside mcp 2 (its import shim)
    from mcp_hooks.adapters.agentscope import AgentScopeHooks  # noqa: I001

    from agentscope.agent import ReActAgent
    from agentscope.formatter import OpenAIChatFormatter
    from agentscope.memory import InMemoryMemory
    from agentscope.message import Msg, TextBlock
    from agentscope.model import OpenAIChatModel
    from agentscope.tool import Toolkit, ToolResponse

    def write_file(path: str, text: str) -> ToolResponse:
        """Write text to a file.

        Args:
            path (str): the file's name.
            text (str): what to write.
        """
        return ToolResponse(content=[TextBlock(type="text", text=_write(path, text))])

    toolkit = Toolkit()
    toolkit.register_tool_function(write_file)
    model = OpenAIChatModel("scripted-model", api_key="test", stream=STREAM == "stream",
                            client_kwargs={"base_url": BASE_URL})
    agent = ReActAgent(name="worker", sys_prompt="You write files.", model=model,
                       formatter=OpenAIChatFormatter(), toolkit=toolkit,
                       memory=InMemoryMemory())
    agent.set_console_output_enabled(False)
    hooks = AgentScopeHooks(WORK_DIR, **_adapter_options())
    if INSTALL == "class":
        hooks.install_class()
    else:
        hooks.install(agent)
    try:
        reply = await agent(Msg("user", "write the files", "user"))
    finally:
        if INSTALL == "class":
            hooks.uninstall()
        await hooks.aclose()
    return reply.get_text_content() or ""


async def run_v2() -> str:
    from agentscope.agent import Agent
    from agentscope.credential import OpenAICredential
    from agentscope.message import Msg, TextBlock
    from agentscope.model import OpenAIChatModel
    from agentscope.permission import PermissionBehavior, PermissionDecision
    from agentscope.tool import FunctionTool, Toolkit

    from mcp_hooks.adapters.agentscope_middleware import HooksMiddleware

    def write_file(path: str, text: str) -> str:
        """Write text to a file.

        Args:
            path (str): the file's name.
            text (str): what to write.
        """
        return _write(path, text)

    # AgentScope asks the user before a tool that writes; the test's tool is allowed outright
    allowed = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="test tool")
    credential = OpenAICredential(api_key="test", base_url=BASE_URL)
    model = OpenAIChatModel(credential, "scripted-model", stream=STREAM == "stream")
    middleware = HooksMiddleware(WORK_DIR, **_adapter_options())
    outer = [_allows_everything()] if NATIVE == "outer" else []
    agent = Agent(name="worker", system_prompt="You write files.", model=model,
                  toolkit=Toolkit(tools=[FunctionTool(write_file, permission=allowed)]),
                  middlewares=[*outer, middleware])
    try:
        first = Msg(name="user", role="user", content=[TextBlock(text="write the files")])
        reply = await (_confirming(agent, first) if NATIVE else agent.reply(first))
    finally:
        await middleware.aclose()
    return str(reply.get_text_content() or "")


def _allows_everything() -> Any:
    """``SCENARIO_NATIVE=outer``: a middleware outside ours that answers every permission
    step with ALLOW itself, so ours is never asked and the user never sees the ask."""
    from agentscope.middleware import MiddlewareBase
    from agentscope.permission import PermissionBehavior, PermissionDecision

    class AllowsEverything(MiddlewareBase):  # type: ignore[misc]
        async def on_check_permission(self, agent: Any, input_kwargs: dict[str, Any],
                                      next_handler: Any) -> Any:
            return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="outer")

    return AllowsEverything()


async def _confirming(agent: Any, first: Any) -> Any:
    """Run until AgentScope asks the user to confirm tool calls; answer them (``NATIVE``)."""
    from agentscope.event import ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent
    from agentscope.message import Msg

    inputs: Any = first
    final = None
    for _ in range(4):
        asking = None
        async for event in agent.reply_stream(inputs, yield_final_msg=True):
            if isinstance(event, RequireUserConfirmEvent):
                asking = event
            elif isinstance(event, Msg):
                final = event
        if asking is None:
            break
        ASKED.extend(call.input for call in asking.tool_calls)
        inputs = UserConfirmResultEvent(reply_id=asking.reply_id, confirm_results=[
            ConfirmResult(confirmed=NATIVE == "yes", tool_call=call)
            for call in asking.tool_calls])
    return final


def main() -> None:
    reply = asyncio.run(run_v1() if GENERATION == "1" else run_v2())
    print(json.dumps({"reply": reply, "written": WRITTEN,
                      **({"asked": ASKED} if APPROVE or NATIVE else {})}))


if __name__ == "__main__":
    main()
