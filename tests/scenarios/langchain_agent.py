"""A LangChain 1.x agent with mcp-hooks as its middleware, against a scripted model.

Run by tests/adapters/test_adapter_langchain.py in the framework's venv
(tests/helpers/framework_venv.py)::

    python langchain_agent.py '{"base_url": ..., "project_dir": ..., "user_dir": ...,
                               "sandbox": ..., "mode": "sync" | "async", "stream": false,
                               "stop_block_cap": 8}'

Its one tool, ``write_file(path, text)``, writes ``text`` to ``sandbox/path`` (the side effect
a test looks for). Prints one JSON line: the final answer and every message's type and text.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from mcp_hooks.adapters.langchain import HooksMiddleware


def main() -> None:
    args = json.loads(sys.argv[1])
    sandbox = Path(args["sandbox"])

    @tool
    def write_file(path: str, text: str) -> str:
        """Write text to a file in the sandbox."""
        (sandbox / path).write_text(text)
        return f"wrote {len(text)} characters to {path}"

    model = ChatOpenAI(model="scripted", base_url=args["base_url"], api_key="test",
                       streaming=bool(args.get("stream")), max_retries=0)
    asked: list[dict[str, object]] = []
    approve = None
    if "approve" in args:  # a person's answer to a hook's ask, as a callback gives it
        def approve(request: object) -> bool:
            asked.append({"reason": request.reason, "tool_input": request.tool_input})
            return bool(args["approve"])
    middleware = HooksMiddleware(project_dir=args["project_dir"], user_dir=args["user_dir"],
                                 session_id="scenario",
                                 stop_block_cap=int(args.get("stop_block_cap", 8)),
                                 approve=approve, log=args.get("log"),
                                 native_approval="native" in args)
    agent = create_agent(model, [write_file], middleware=[middleware],
                         checkpointer=InMemorySaver() if "native" in args else None)
    request = {"messages": [{"role": "user", "content": "do the task"}]}
    if "native" in args:  # LangGraph's interrupt: shown, then resumed with the answer
        config = {"configurable": {"thread_id": "scenario-thread"}}
        answer = ({"approve": True} if args["native"] == "approve"
                  else {"approve": False, "reason": "the person said no"})

        async def resumed() -> dict[str, object]:
            first = await agent.ainvoke(request, config)
            asked.extend(i.value for i in first.get("__interrupt__", ()))
            return await agent.ainvoke(Command(resume=answer), config)

        if args.get("mode") == "async":
            state = asyncio.run(resumed())
        else:
            first = agent.invoke(request, config)
            asked.extend(i.value for i in first.get("__interrupt__", ()))
            state = agent.invoke(Command(resume=answer), config)
    elif args.get("mode") == "async":
        state = asyncio.run(agent.ainvoke(request))
    else:
        state = agent.invoke(request)
    messages = [{"type": m.type, "text": str(m.text)} for m in state["messages"]]
    print(json.dumps({"final": messages[-1]["text"], "messages": messages, "asked": asked}))


if __name__ == "__main__":
    main()
