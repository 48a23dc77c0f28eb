"""An OpenAI Agents SDK agent gated by mcp-hooks, against a scripted model.

Run by tests/adapters/test_adapter_openai_agents.py in the framework's venv
(tests/helpers/framework_venv.py)::

    python openai_agents_agent.py '{"base_url": ..., "project_dir": ..., "user_dir": ...,
                                    "sandbox": ..., "mode": "run" | "sync" | "streamed"}'

Its one tool, ``write_file(path, text)``, writes ``text`` to ``sandbox/path`` (the side effect
a test looks for). With ``"approve": true|false`` a callback answers a hook's ask (and the
asks it saw are printed under ``asked``); with ``"native": "approve"|"reject"`` the adapter's
``native_approval`` turns an ask into the SDK's interruption, answered with
``RunState.approve``/``reject`` and resumed (the interruptions under ``asked``). ``run`` is
``await AgentsHooks.run``, ``sync`` is ``run_sync`` and ``streamed`` is
``Runner.run_streamed`` on ``wrap_agent`` (tools gated, no stop gate). Prints one JSON line:
the final output.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agents import (
    Agent,
    AsyncOpenAI,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)

from mcp_hooks.adapters.openai_agents import AgentsHooks


def main() -> None:
    args = json.loads(sys.argv[1])
    sandbox = Path(args["sandbox"])
    set_tracing_disabled(True)

    @function_tool
    def write_file(path: str, text: str) -> str:
        """Write text to a file in the sandbox."""
        (sandbox / path).write_text(text)
        return f"wrote {len(text)} characters to {path}"

    client = AsyncOpenAI(base_url=args["base_url"], api_key="test", max_retries=0)
    agent = Agent(name="worker", instructions="Do the task.", tools=[write_file],
                  model=OpenAIChatCompletionsModel(model="scripted", openai_client=client))
    asked: list[dict[str, object]] = []
    approve = None
    if "approve" in args:  # a person's answer to a hook's ask, as a callback gives it
        def approve(request: object) -> bool:
            asked.append({"reason": request.reason, "tool_input": request.tool_input})
            return bool(args["approve"])
    hooks = AgentsHooks(project_dir=args["project_dir"], user_dir=args["user_dir"],
                        session_id="scenario", stop_block_cap=int(args.get("stop_block_cap", 8)),
                        approve=approve, log=args.get("log"),
                        native_approval="native" in args)
    mode = args.get("mode", "run")
    if "native" in args:  # the SDK's own approval step: interruptions, then approve/reject
        async def native() -> str:
            gated = hooks.wrap_agent(agent)
            result = await Runner.run(gated, "do the task")
            state = result.to_state()
            for item in result.interruptions:
                asked.append({"tool": item.tool_name, "arguments": item.arguments})
                if args["native"] == "approve":
                    state.approve(item)
                else:
                    state.reject(item, rejection_message="the person said no")
            return str((await Runner.run(gated, state)).final_output)

        final = asyncio.run(native())
    elif mode == "sync":
        final = hooks.run_sync(agent, "do the task").final_output
    elif mode == "streamed":
        async def streamed() -> str:
            result = Runner.run_streamed(hooks.wrap_agent(agent), "do the task")
            async for _ in result.stream_events():
                pass
            return str(result.final_output)

        final = asyncio.run(streamed())
    else:
        final = asyncio.run(hooks.run(agent, "do the task")).final_output
    print(json.dumps({"final": final, "asked": asked}))


if __name__ == "__main__":
    main()
