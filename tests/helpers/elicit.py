"""An MCP client's person: elicitation and sampling handlers for the SDK ``Client`` that
answer as told and record what they were shown (proxy pass-through, the MCP doors' asks)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext


class Person:
    """Answers every form with ``action`` (and ``content`` when it accepts), every sampling
    request with a fixed message; ``forms`` and ``prompts`` keep what was shown."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.forms: list[types.ElicitRequestParams] = []
        self.prompts: list[types.CreateMessageRequestParams] = []

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.forms.append(params)
        return types.ElicitResult(action=self.action,  # type: ignore[arg-type]
                                  content=self.content if self.action == "accept" else None)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.prompts.append(params)
        return types.CreateMessageResult(
            role="assistant", model="test-model",
            content=types.TextContent(type="text", text="the model's words"))


async def never(context: ClientRequestContext, params: types.ElicitRequestParams
                ) -> types.ElicitResult:
    """A person who never answers the form."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")
