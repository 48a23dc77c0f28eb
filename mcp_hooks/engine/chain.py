"""One event's chain: its payload, and what its links have decided so far.

The engine's step 3 accumulator (``engine.py``), run by the one loop of ``links.py``. The
chain's links are the HOOK.md hooks (scripts and callables, by run order), then the hooks.yaml
entries (in their own priority order); each gives a ``judge.Verdict``. What a link did is
recorded by its kind (``Chain.ran``: a hook's run, its output and its signals, from
``signals.from_hook_run``: a deny is a block, a rewrite a control, context or a hook's warning
a prompt, or the signal the hook printed itself; ``Chain.heard``: the entries' oracle
signals); what its verdict does to the event is applied in one place for every kind
(``Chain.apply``): warnings, context, a deny, an ask, and the rewrites of the input and output.

The chain owns the event's payload (``payload.event_payload``): a rewrite is carried into it
where it is applied (``payload.rewritten``), so every later link, of any kind, reads the
input as rewritten; ``Chain.stdin`` is its bytes on a script hook's stdin, encoded again only
when the payload changed or the hook spells its trigger otherwise.

``Chain.stopped`` is the one rule "the first block stops the rest". Delivered aid joins too;
``Chain.outcome`` is the one ``Outcome``. ``Chain.left`` is what remains of the chain deadline
(``budget`` seconds from the event's start for all its links together).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any, Literal

from mcp_hooks.engine.judge import Verdict
from mcp_hooks.engine.payload import rewritten, stdin_for
from mcp_hooks.runner import RunResult
from mcp_hooks.spec.asking import Approver, AskRequest
from mcp_hooks.spec.events import can_block
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import Event, HookRun, Outcome, cap_text
from mcp_hooks.spec.signals import INTENSITIES, Signal, from_hook_run, new_id
from mcp_hooks.state.inbox import aid_context


class Chain:
    """One event's payload and what its links have decided so far (step 3's accumulator).

    ``payload``: the event's payload (``payload.event_payload``), owned by the chain from
    here on; None: an empty one (a chain whose links read no payload).
    """

    __slots__ = ("_correlation", "_stdin", "approve", "ask", "asking", "blocked_by", "budget",
                 "contexts", "deadline", "decision", "delivered", "failed", "files",
                 "input_changed", "issue_id", "name", "output_changed", "outputs", "payload",
                 "reason", "runs", "signals", "tool_input", "tool_output", "warnings")

    def __init__(self, name: str, event: Event, runs: list[HookRun],
                 warnings: list[str], budget: float = math.inf,
                 start: float | None = None, payload: dict[str, Any] | None = None) -> None:
        self.name = name
        self.payload: dict[str, Any] = payload if payload is not None else {}
        self._stdin: tuple[str, bytes] | None = None  # (trigger spelling, its encoding)
        self.budget = budget  # seconds the links may take together (the chain deadline)
        self.deadline = (time.monotonic() if start is None else start) + budget
        self.failed: list[str] = []  # links that failed and were let through (fail open)
        self.signals: list[Signal] = []
        self.delivered: frozenset[str] = frozenset()  # aid handed over, logged when made
        self._correlation: str | None = None
        issue = event.payload.get("issue")
        issue = issue if isinstance(issue, dict) else {}
        self.issue_id: str | None = issue.get("id")
        self.files: tuple[str, ...] = tuple(issue.get("files_changed") or ())
        self.runs = runs
        self.warnings = list(warnings)
        self.outputs: dict[str, RunResult] = {}
        self.contexts: list[str] = []
        self.tool_input = event.tool_input
        self.tool_output = event.tool_output
        self.input_changed = self.output_changed = False
        self.decision: Literal["allow", "deny"] = "allow"
        self.reason: str | None = None
        self.blocked_by: str | None = None
        self.asking: tuple[str, str] | None = None  # (who asked, why): waiting for a person
        self.ask: AskRequest | None = None  # the ask left pending (the outcome's ``ask``)
        self.approve: Approver | None = None  # the door's way to ask a person

    def left(self) -> float:
        """Seconds left before the chain deadline (0 or less: none)."""
        return self.deadline - time.monotonic()

    @property
    def stopped(self) -> bool:
        """Whether a link of the chain has blocked: the first block stops the rest (scripts,
        callables and hooks.yaml entries alike). The one place this rule lives: the chain's
        loop asks it before every link (``links.ChainRun.run``). An ask stops it too, until
        ``asking.Asker.settle`` has the answer."""
        return self.decision == "deny" or self.asking is not None

    def stdin(self, hook: HookSpec) -> bytes:
        """The payload as ``hook``'s stdin (``payload.stdin_for``), kept until it changes."""
        kept = self._stdin
        if kept is None or kept[0] != hook.trigger:
            kept = self._stdin = (hook.trigger, stdin_for(hook, self.payload))
        return kept[1]

    def ran(self, hook: HookSpec, result: RunResult, verdict: Verdict,
            would: dict[str, Any] | None = None) -> HookRun:
        """Record one HOOK.md link's run, its output and its signals (before ``apply`` changes
        ``tool_input``); ``would``: what an audited hook would have done. Returns its
        ``HookRun``."""
        self.outputs[hook.name] = result
        run = HookRun.whole(name=hook.name, scope=hook.scope, priority=hook.priority,
                            mode="sync", status=verdict.status, exit_code=result.exit_code,
                            duration_ms=round(result.duration_ms, 3), message=verdict.message,
                            would=would)
        self.runs.append(run)
        if verdict.status in ("error", "timeout") and not verdict.deny:
            self.failed.append(hook.name)
        if (verdict.deny or verdict.context or verdict.signal is not None
                or verdict.modified_input is not None or verdict.modified_output is not None):
            self._signal(hook, verdict)
        return run

    def heard(self, verdicts: Iterable[Verdict]) -> None:
        """Record hooks.yaml entries' verdicts, in order: each oracle's signal (what ran),
        and the entry's fault when it let the event through. An entry decided with its group
        (``links.HooksYaml``) is heard whether or not a link before it in the group blocks
        the chain; only its effect waits for its turn (``apply``)."""
        for verdict in verdicts:
            if verdict.signal is not None:
                self.signals.append(verdict.signal)
                if verdict.status == "error" and not verdict.deny:  # a fault let through
                    self.failed.append(verdict.signal.source)

    def entries(self, verdicts: list[Verdict]) -> list[Verdict]:
        """The hooks.yaml entries' verdicts (``entries.ControlLayer.decide``) as the chain's
        loop takes them (``links.ChainRun``), for a caller with no engine to settle an ask:
        each one heard, applied until the chain stops. Returns the verdicts after the first
        one that asks."""
        for position, verdict in enumerate(verdicts):
            self.heard((verdict,))
            if not self.stopped:
                self.apply(verdict, verdict.blocked_by or "hooks.yaml")
                if self.asking is not None:
                    return verdicts[position + 1:]
        return []

    def apply(self, verdict: Verdict, source: str) -> None:
        """The one place a link's verdict acts on the event, whatever the link: warning,
        context, the rewrites (carried into the payload later links read), a deny, an ask."""
        if verdict.warning:
            self.warnings.append(verdict.warning)
        if verdict.context:
            self.contexts.append(cap_text(verdict.context))
        if verdict.modified_input is not None:
            self.tool_input, self.input_changed = verdict.modified_input, True
        if verdict.modified_output is not None:
            self.tool_output, self.output_changed = verdict.modified_output, True
        if (verdict.modified_input is not None or verdict.modified_output is not None) and (
                rewritten(self.name, self.payload, verdict.modified_input, self.tool_input,
                          verdict.modified_output)):
            self._stdin = None  # encoded again for the next script
        if verdict.deny:
            self.refuse(verdict.blocked_by or source,
                        cap_text(verdict.reason or f"blocked by hook {source}"))
        elif verdict.ask is not None:
            self.asking = (source, verdict.ask)

    def refuse(self, source: str, reason: str) -> None:
        """Deny the event: ``source`` blocked it, ``reason`` tells the agent why."""
        self.decision, self.blocked_by, self.reason = "deny", source, reason

    def _signal(self, hook: HookSpec, verdict: Verdict) -> None:
        """The signals of one run (before ``apply`` changes ``tool_input``)."""
        where: dict[str, Any] = {"issue_id": self.issue_id, "files": self.files,
                                 "correlation_id": self.correlation}
        printed = verdict.signal
        derived = from_hook_run(
            source=hook.name, hook=self.name, deny=verdict.deny, reason=verdict.reason,
            modified_input=verdict.modified_input, original_input=self.tool_input,
            modified_output=verdict.modified_output,
            context=None if printed is not None or verdict.notice else verdict.context,
            warning=verdict.notice, **where)
        if printed is not None:
            printed = printed.with_context(
                correlation_id=self.correlation, issue_id=printed.context.issue_id
                or self.issue_id, files=printed.context.files or self.files)
            derived = [printed, *(s for s in derived if not (printed.blocks and s.blocks))]
        self.signals.extend(derived)

    def fail_open(self) -> list[str]:
        """The links whose failure let this event through (``on_error: allow``, or a fault
        under ``on_fault: warn``): none unless it was allowed and could have been denied."""
        if self.decision != "allow" or not can_block(self.name):
            return []
        return list(dict.fromkeys(self.failed))

    @property
    def correlation(self) -> str:
        """The id linking this event's signals (made when the first one needs it)."""
        if self._correlation is None:
            self._correlation = new_id()
        return self._correlation

    def deliver(self, aid: list[Signal]) -> None:
        """Aid left for this session by an earlier event (``inbox.py``)."""
        if not aid:
            return
        self.contexts.extend(cap_text(aid_context(s)) for s in aid)
        self.signals.extend(aid)
        self.delivered = frozenset(s.id for s in aid)

    def outcome(self, name: str) -> Outcome:
        allowed = self.decision == "allow"
        return Outcome.whole(
            event_type=name,
            decision=self.decision,
            reason=self.reason,
            blocked_by=self.blocked_by,
            modified_input=self.tool_input if self.input_changed and allowed else None,
            modified_output=self.tool_output if self.output_changed and allowed else None,
            additional_context=self.contexts,
            continue_working=not allowed and name == "before_stop",
            hooks=self.runs,
            warnings=self.warnings,
            signals=sorted(self.signals, key=lambda s: INTENSITIES.index(s.intensity)),
            ask=self.ask,
            stop_block_count=None,
        )

