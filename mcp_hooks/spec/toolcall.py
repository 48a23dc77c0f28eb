"""A caller's tool call through the shared vocabulary: read in, and its rewrite written back.

A door that takes a tool call from a caller (the Python API's ``fire``, ``mcp-hooks fire``,
the MCP server's ``fire_hook_event``, the proxy, the host bridges) reads the call through a
table of ``spec/vocabulary.py`` (``caller_tool``, ``read_tool_call``): hooks see the canonical
name and keys, the caller's own under ``payload["host"]``. On the way out the ``CallerTool``
maps a hook's ``modified_input`` back to the caller's keys (``CallerTool.answer``,
``answered``); a rewrite the caller's tool cannot express is ``unexpressible``: a deny under
``on_fault="block"``, never the original input run in its place.

Core, like the vocabulary: no host, no MCP, no command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from mcp_hooks.spec.outcome import Event, Outcome, fault_outcome
from mcp_hooks.spec.toolshapes import RewriteError
from mcp_hooks.spec.vocabulary import MCP_CLIENTS, ToolMap, Vocabulary


def rewrite_failed(exc: RewriteError) -> str:
    """What broke when a rewrite cannot go back to the caller's tool."""
    return f"the rewrite by a hook was not applied: {exc}"


def unexpressible(event: str, outcome: Outcome, why: str, on_fault: str) -> Outcome:
    """The answer when a hook's ``modified_input`` cannot be expressed in the caller's tool.

    Running the tool with its original input would run what a hook replaced (a sanitised
    command, a redirected path), so it is a fault of ours: under ``on_fault="block"`` a deny
    saying so; under ``warn`` the outcome without the rewrite, with the warning.
    """
    if on_fault == "warn":
        return replace(outcome, modified_input=None, warnings=[*outcome.warnings, why])
    return fault_outcome(event, (
        f"{why}; the call is refused rather than run with the input the hook replaced. Fix "
        "the hook's rewrite for this tool (or run with --on-fault warn to drop it)"),
        on_fault=on_fault, warnings=list(outcome.warnings))


@dataclass(frozen=True)
class CallerTool:
    """One tool call as a caller sent it and as hooks see it.

    Attributes:
        tool_name: the name hooks see (canonical when the table has the caller's name).
        tool_input: the input hooks see (in canonical keys).
        sent_name: the tool's name as the caller sent it.
        sent_input: the tool's input as the caller sent it.
        tool: the table's entry for ``sent_name``; None when the call passes unchanged.
    """

    tool_name: str
    tool_input: dict[str, Any]
    sent_name: str
    sent_input: dict[str, Any]
    tool: ToolMap | None = None

    @property
    def host(self) -> dict[str, Any] | None:
        """The caller's own view for the event payload's ``host`` (None: nothing renamed)."""
        if self.tool_name == self.sent_name and self.tool_input == self.sent_input:
            return None
        return {"tool_name": self.sent_name, "tool_input": self.sent_input}

    def to_caller(self, rewritten: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """A hook's ``modified_input`` in the caller's keys, as a whole replacement input; or
        None and the warning that says why it cannot be expressed (then it is not applied)."""
        if self.tool is None:
            return dict(rewritten), None
        try:
            return self.tool.to_host(rewritten, self.sent_input), None
        except RewriteError as exc:
            return None, rewrite_failed(exc)

    def answer(self, outcome: Outcome, on_fault: str = "block") -> Outcome:
        """``outcome`` with its ``modified_input`` in the caller's keys; a rewrite that cannot
        be expressed there is ``unexpressible`` (a deny under ``on_fault="block"``)."""
        if outcome.modified_input is None or self.tool is None:
            return outcome
        rewritten, why = self.to_caller(outcome.modified_input)
        if rewritten is None:
            return unexpressible(outcome.event_type, outcome, why or "", on_fault)
        return replace(outcome, modified_input=rewritten)

    def payload(self, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        """The event payload with the caller's own view under ``host`` (merged into a
        ``host`` mapping the caller sent); unchanged when nothing was renamed."""
        out = dict(payload or {})
        host = self.host
        if host is not None:
            sent = out.get("host")
            out["host"] = {**sent, **host} if isinstance(sent, dict) else host
        return out


def caller_tool(vocab: Vocabulary, tool_name: str, tool_input: Mapping[str, Any]) -> CallerTool:
    """The call ``tool_name(tool_input)`` read through ``vocab``; unknown names pass unchanged."""
    tool = vocab.get(tool_name)
    sent = dict(tool_input)
    if tool is None:
        return CallerTool(tool_name, sent, tool_name, sent)
    return CallerTool(tool.canonical, tool.to_canonical(sent), tool_name, sent, tool)


# -- a caller's tool call (the Python API, ``mcp-hooks fire``, the MCP server) -----------

# the names MCP_CLIENTS reads as another name or other keys (Shell itself renames nothing)
_RENAMES: frozenset[str] = frozenset(
    n for n, t in MCP_CLIENTS.tools.items() if t.canonical != n or t.keys or t.edits)
# the tool events whose hooks match on the tool's name: fired without one, none can match
NAMED_TOOL_EVENTS = frozenset({"before_tool", "after_tool", "after_tool_failure"})


def read_tool_call(event: str | Event, fields: dict[str, Any]) -> tuple[
        str | Event, dict[str, Any], CallerTool | None]:
    """The event's tool call as hooks see it: a name of ``MCP_CLIENTS`` (``Bash``)
    renamed to the canonical one (``Shell``) with its input keys, the caller's own under
    ``payload["host"]``; and the ``CallerTool`` that maps a rewrite back (None: nothing was
    renamed). A field of the wrong shape is left as sent, for ``Event`` to name."""
    source = ({"tool_name": event.tool_name, "tool_input": event.tool_input,
               "payload": event.payload} if isinstance(event, Event) else fields)
    name = source.get("tool_name")
    if not isinstance(name, str) or name not in _RENAMES:  # Shell, and names no host uses
        return event, fields, None
    sent, payload = source.get("tool_input"), source.get("payload")
    if not (sent is None or isinstance(sent, dict)) or not (
            payload is None or isinstance(payload, dict)):
        return event, fields, None
    call = caller_tool(MCP_CLIENTS, name, sent or {})
    if call.host is None:
        return event, fields, None
    mapped: dict[str, Any] = {"tool_name": call.tool_name,
                              "tool_input": call.tool_input if sent is not None else None,
                              "payload": call.payload(payload)}
    if isinstance(event, Event):
        return replace(event, **mapped), fields, call
    return event, {**fields, **mapped}, call


def tool_name_of(event: str | Event, fields: dict[str, Any]) -> Any:
    """The tool name of an ``Event`` or of ``fire``'s keywords."""
    return event.tool_name if isinstance(event, Event) else fields.get("tool_name")


def no_tool_name(event: str, fix: str = "pass tool_name=") -> str:
    """The warning of a tool event fired without a tool name."""
    return (f"{event} was fired without a tool name, so no hook with a tool matcher "
            f"(`tool: Shell`) could match it: {fix}")


def answered(name: str, outcome: Outcome, call: CallerTool | None, on_fault: str,
             tool_name: Any) -> Outcome:
    """``outcome`` for the caller: a rewrite in its tool's keys (``CallerTool.answer``), and
    the warning of a tool event fired without a tool name."""
    if call is not None:
        return call.answer(outcome, on_fault)
    if name in NAMED_TOOL_EVENTS and not tool_name:
        return replace(outcome, warnings=[*outcome.warnings, no_tool_name(name)])
    return outcome
