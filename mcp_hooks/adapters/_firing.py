"""The one place the framework adapters talk to the engine, and the words they give a model.

``Firing`` fires one event (``fire`` from a coroutine, ``fire_sync`` from a thread), through a
``mcp_hooks.Hooks`` (its own, or one passed in with its Python callables):

* ``Hooks.afire`` runs the hooks on the framework's running event loop (a spawned hook never
  blocks it; persistent hook processes live as long as the ``Hooks``), so parallel tool calls
  fire side by side;
* a fault of ours (an event that cannot be built, the engine failing) is ``fault_outcome``:
  a deny saying what broke on an event that can block (``on_fault="block"``), as everywhere
  in mcp-hooks. ``Firing`` is the adapter's one guard (``guard.py``): it fires through
  ``Hooks`` without the ``Hooks`` guard, so a fault is answered once. It takes any
  ``BaseException`` (``SystemExit``, ``KeyboardInterrupt``, ...); only the caller's own
  interruption goes through: the cancellation of the framework's task
  (``guard.passes_through``), a Ctrl-C while ``fire_sync`` waits (``guard.callers_own``).

Nothing is skipped in silence: each warning of an outcome (a project hook held back for want
of trust, a hook that failed, a tool event with no tool name) is logged once per session, at
WARNING, through the framework's logger (``LOGGERS``: a child of the framework's own, so its
logging set-up applies). Tool names reach hooks in the one vocabulary (``Hooks.fire``:
``Bash``, ``run_shell_command``, ``shell`` are ``Shell``), a rewrite back in the tool's keys.

It imports no framework: ``agentscope.py`` (1.0.x hooks), ``agentscope_middleware.py`` (2.x
middleware), ``langchain.py`` and ``openai_agents.py`` translate their framework's objects
into event fields and back.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_hooks.api import Hooks, Told
from mcp_hooks.engine.asking import HOST
from mcp_hooks.engine.stopguard import DEFAULT_STOP_BLOCK_CAP
from mcp_hooks.guard import callers_own, named, passes_through
from mcp_hooks.spec.asking import AskAnswer, AskRequest
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.outcome import OnFault, Outcome, fault_outcome
from mcp_hooks.state.asks import answer
from mcp_hooks.state.eventlog import EventLog
from mcp_hooks.state.store import AskAnswered, AskExpired, StateStore
from mcp_hooks.state.url import close_store, store_for

# the logger each adapter says what it skipped through: under the framework's own logger
LOGGERS: dict[str, str] = {
    "langchain": "langchain.agents.middleware.mcp_hooks",
    "openai-agents": "openai.agents.mcp_hooks",
    "agentscope": "as.mcp_hooks",  # AgentScope 1.0.x and 2.x log through "as"
    "agentscope2": "as.mcp_hooks",
}


class Firing:
    """Builds (or takes) a ``Hooks`` and fires events at it.

    Args:
        project_dir: the project whose ``.agents/hooks`` run (and the hooks' cwd); None for
            user hooks only, run in the current folder.
        user_dir: the user hooks folder; None for the default (``~/.config/agents/hooks``).
        log: where events are logged; None for no log.
        on_fault: ``block`` (default) or ``warn``, as ``Engine``.
        stop_block_cap: consecutive ``before_stop`` blocks before the stop is let through
            (at least 1: an agent's stop gate always ends). The ``Hooks``' loop guard is the
            one count, of hook blocks and faults alike; an adapter keeps none of its own.
        session_id: the session the hooks see; default one fresh id per adapter.
        hooks: a ``Hooks`` to fire through instead of one built from the above (its
            callables run in the chain too, its ``settings`` apply, the stop cap among them:
            ``Hooks(settings=Settings.from_env())``); ``close`` leaves it open.
        framework: the adapter's name, for the words of a fault and its logger.
        trust_project_hooks: run the project's hooks without the trust store (the code that
            builds the adapter lives in the project too); None reads
            ``MCP_HOOKS_TRUST_PROJECT_HOOKS``, as ``Hooks``.
    """

    def __init__(
        self,
        project_dir: str | Path | None = None,
        *,
        user_dir: str | Path | None = None,
        log: str | Path | EventLog | bool | None = None,
        on_fault: OnFault = "block",
        stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP,
        session_id: str | None = None,
        hooks: Hooks | None = None,
        framework: str = "agentscope",
        trust_project_hooks: bool | None = None,
        approve: Callable[[AskRequest], Any] | None = None,
    ) -> None:
        if hooks is not None and trust_project_hooks is not None:
            raise ValueError("trust_project_hooks is an argument of the Hooks given: pass it "
                             "to Hooks(...), not to the adapter, when you pass hooks=")
        if hooks is not None and approve is not None:
            raise ValueError("approve is an argument of the Hooks given: pass it to "
                             "Hooks(...), not to the adapter, when you pass hooks=")
        self.owned = hooks is None
        self.hooks = hooks if hooks is not None else Hooks(
            project_dir, user_dir=user_dir, log=log, on_fault=on_fault,
            stop_block_cap=max(stop_block_cap, 1), trust_project_hooks=trust_project_hooks,
            approve=approve)
        self.framework = framework
        self.session_id = session_id or f"{framework}-{uuid.uuid4().hex[:12]}"
        self.logger = logging.getLogger(LOGGERS.get(framework, f"{framework}.mcp_hooks"))
        self._told = Told(self.logger)
        self._store: StateStore | None = None  # for the framework's own approvals

    async def fire(self, event_type: str, **fields: Any) -> Outcome:
        """Fire one event from a coroutine; a fault of ours is ``fault_outcome``."""
        fields.setdefault("session_id", self.session_id)
        try:  # the adapter's one guard: ``Hooks`` under it raises (``guard.py``)
            name = canonical_event(event_type)
            outcome = await self.hooks._afire_unguarded(name, event_type, dict(fields))
            return self.tell(outcome, fields["session_id"])
        except BaseException as exc:
            if passes_through(exc):  # the framework cancelled its task: it stays cancelled
                raise
            return self._fault(event_type, exc, fields["session_id"])

    def fire_sync(self, event_type: str, **fields: Any) -> Outcome:
        """``fire`` for synchronous framework code (``Hooks.fire``)."""
        fields.setdefault("session_id", self.session_id)
        try:  # the adapter's one guard, as in ``fire``
            name = canonical_event(event_type)
            outcome = self.hooks._fire_unguarded(name, event_type, dict(fields))
            return self.tell(outcome, fields["session_id"])
        except BaseException as exc:
            if callers_own(exc):  # Ctrl-C while it waited for its hooks: the caller's own
                raise
            return self._fault(event_type, exc, fields["session_id"])

    def answered_natively(self, request: AskRequest, approved: bool = True,
                          reason: str = "") -> None:
        """The framework's own approval step answered the ask of ``request`` (the OpenAI
        SDK runs only an approved call; a LangGraph interrupt is resumed with the answer):
        stored as the person's answer, ``channel`` the framework, so the engine takes it
        when the call fires again; an answer given first stands."""
        if self._store is None:
            settings = self.hooks.settings
            self._store = store_for(settings.state, self.hooks.log, settings.replica_id)
        with contextlib.suppress(AskAnswered, AskExpired):
            answer(self._store, request.id, AskAnswer(approved, reason, channel=self.framework))

    def tell(self, outcome: Outcome, session_id: Any) -> Outcome:
        """Log each warning of ``outcome`` not yet logged for this session; the outcome."""
        return self._told.tell(outcome, session_id)

    def _fault(self, event_type: str, exc: BaseException, session_id: Any) -> Outcome:
        """A fault of the adapter's own, counted by the ``Hooks``' one loop guard (a stop
        that keeps failing is let through at its cap, as a hook's blocks are)."""
        outcome = fault_outcome(
            event_type, f"the {self.framework} adapter could not fire {event_type}: "
            f"{named(exc)}", on_fault=self.hooks.on_fault)
        return self.hooks.stop_guard.settle(
            session_id if isinstance(session_id, str) else None, outcome)

    async def aclose(self) -> None:
        """Stop the hook processes of the ``Hooks`` this adapter made (not of one given)."""
        self._close_store()
        if self.owned:
            await self.hooks.aclose()

    def close(self) -> None:
        """``aclose`` from synchronous code."""
        self._close_store()
        if self.owned:
            self.hooks.close()

    def _close_store(self) -> None:
        if self._store is not None:
            close_store(self._store)
            self._store = None


async def framework_asks_for_tools(request: AskRequest) -> AskAnswer | None:
    """The approver of an adapter whose framework asks the person itself (its native
    approval step): a tool call's ask is deferred to it (``HOST``: the chain goes on, the ask
    pending, the adapter hands it to the framework); any other ask (a stop) goes out of
    band, as without."""
    return AskAnswer(True, channel=HOST) if request.event_type == "before_tool" else None


def refusal(outcome: Outcome, what: str = "tool call") -> str:
    """The text a model reads in place of a refused tool call or output."""
    return outcome.reason or f"this {what} was blocked by hook {outcome.blocked_by}"


def stop_feedback(outcome: Outcome) -> str:
    """The instruction a model reads when a ``before_stop`` hook keeps it working."""
    return outcome.reason or f"a before_stop hook ({outcome.blocked_by}) said keep working"


def with_context(text: str, *outcomes: Outcome) -> str:
    """``text`` with the hooks' ``additional_context`` appended, one paragraph each."""
    extra = [c for o in outcomes for c in o.additional_context]
    return "\n\n".join([text, *extra]) if extra else text


def tool_input(value: Any) -> dict[str, Any]:
    """A tool call's arguments as the JSON object the event carries."""
    return dict(value) if isinstance(value, dict) else {"input": value}
