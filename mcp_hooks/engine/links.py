"""The chain's one loop: an event's links in order, until one blocks (``Engine.fire``'s step 3).

An event's chain is one ordered list of links, whatever their kind: its sync HOOK.md hooks
(``HookLink``: a script, or a Python callable, in ``discovery.run_order``), then its hooks.yaml
entries (``HooksYaml``, in their own priority order). ``ChainRun.run`` is the one loop over
them, and for every kind alike:

- **stop**: before each link, the chain is asked whether a link has blocked
  (``Chain.stopped``); the first block stops every later link. A link reached after the
  stop does not run (``passed``; the hooks.yaml group still hands its ``async: true``
  entries on);
- **apply**: what ran is recorded by its kind (a hook's run and signals, ``Chain.ran``;
  the entries' oracle signals, ``Chain.heard``, when their group is decided), then each
  link's verdict acts on the event in one place (``Chain.apply``): warnings, context, a
  deny, an ask, and the rewrites, which the chain carries into the payload every later link
  reads (``Chain.payload``);
- **ask**: a link that asks a person is settled there and then (``asking.Asker.settle``,
  with the hook's ``metadata``, an entry's none); approved, the next link runs;
- **rewrite**: a rewritten input chooses again the HOOK.md links still to come
  (``registry.select`` on the input the tool will now receive, ``index.runs_after``: later
  in run order, or a managed hook again), the hooks.yaml entries staying last;
- **report**: ``on_hook_done`` hears of each HOOK.md link's run.

Before a HOOK.md link runs, ``registry.recheck`` confirms it has not changed since it was
selected (a changed project hook is skipped, with a warning). The links share one deadline
(``Settings.chain_timeout`` from the event's start, ``Chain.left``): each script's timeout
(and each oracle's) is cut to what is left, and a link left with none is its failure under
its ``on_error`` (``judge.out_of_time``), never run. ``judge.judge`` turns a script's run into
its verdict (exit 0 allows, exit 2 denies, anything else fails open unless the hook fails
closed); a callable's call gives its verdict directly. In audit mode a link's verdict is
recorded as what it would have done, and applied as a plain allow (``audit.py``).

The hooks.yaml entries keep their cost model: when the loop reaches them, they are decided
as a group in one blocking call off the event loop (``entries.ControlLayer.decide``: the
oracles share the chain deadline), on the payload as the HOOK.md links left it; the group
then puts one ``EntryLink`` per verdict in its place, which the loop takes as it takes a
hook's (an entry after a block in the group ran, so its signal is recorded; its effect is
not applied). Their ``async: true`` entries go to the launcher when the group is reached,
blocked or not, with that same payload.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from mcp_hooks.engine.asking import Asker
from mcp_hooks.engine.audit import audited, would_runs
from mcp_hooks.engine.callables import CallableHook
from mcp_hooks.engine.chain import Chain
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.engine.judge import Verdict, judge, out_of_time
from mcp_hooks.engine.launch import Launcher
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.registry.index import runs_after
from mcp_hooks.runner import RunResult
from mcp_hooks.spec.events import can_block, is_notification
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import Event, HookRun, OnFault
from mcp_hooks.state.eventlog import EventLog

_NOT_RUN = RunResult(None)  # a link the chain deadline left no time to run

HookDone = Callable[[HookRun], Awaitable[None]]
# runs one script hook: (hook, its stdin, work_dir, event, timeout in seconds)
ScriptRunner = Callable[[HookSpec, bytes, str, Event, float], Awaitable[RunResult]]
Blocking = Callable[[Callable[[], Any]], Awaitable[Any]]  # where blocking work runs
Step = tuple[Verdict, HookRun | None]  # a link's verdict, and a HOOK.md link's run


class HookLink:
    """A sync HOOK.md hook (a script, or a Python callable) as a link of the chain."""

    __slots__ = ("hook", "metadata", "source")

    def __init__(self, hook: HookSpec) -> None:
        self.hook, self.source, self.metadata = hook, hook.name, hook.metadata

    async def decide(self, run: ChainRun) -> Step | None:
        """Run the hook within what is left of the chain deadline (a script's timeout cut to
        it; past it, the link is its failure, ``out_of_time``) and record its run; its
        verdict, audited. None: not run, the hook changed since it was selected."""
        hook, chain = self.hook, run.chain
        if not run.registry.recheck(hook, chain.warnings):  # changed since selected
            return None
        left = chain.left()
        if left <= 0:
            result, verdict = _NOT_RUN, out_of_time(hook, chain.budget, ran=False)
        elif isinstance(hook, CallableHook):  # in process: no stdin, its verdict built directly
            result, verdict = await hook.call(run.name, chain.payload)
        else:
            timeout = hook.timeout / 1000
            result = await run.run_script(hook, chain.stdin(hook), run.work_dir, run.event,
                                          min(timeout, left))
            verdict = (out_of_time(hook, chain.budget, ran=True)  # the deadline hit, not its own
                       if result.timed_out and left < timeout
                       else judge(hook, run.name, result, run.on_fault, run.registry.replaced))
        verdict, would = audited(hook, run.name, verdict, run.mode)  # audit: only recorded
        return verdict, chain.ran(hook, result, verdict, would)

    def passed(self, run: ChainRun) -> None:
        """Reached after the chain stopped: not run."""


class EntryLink:
    """One hooks.yaml entry's verdict (decided with its group, ``HooksYaml``) as a link."""

    __slots__ = ("source", "verdict")
    hook = None  # not a HOOK.md hook
    metadata: ClassVar[dict[str, Any]] = {}  # an entry's ask takes the settings' policy

    def __init__(self, verdict: Verdict) -> None:
        self.verdict, self.source = verdict, verdict.blocked_by or "hooks.yaml"

    async def decide(self, run: ChainRun) -> Step:
        return self.verdict, None  # heard with its group (``HooksYaml.decide``)

    def passed(self, run: ChainRun) -> None:
        """Reached after the chain stopped: its effect is not applied (its oracle ran with
        the group, and its signal is recorded)."""


class HooksYaml:
    """The trigger's hooks.yaml entries, decided as a group when the loop reaches them."""

    __slots__ = ("blocking", "control", "launcher", "log")
    source, hook = "hooks.yaml", None
    metadata: ClassVar[dict[str, Any]] = {}

    def __init__(self, control: ControlLayer, blocking: Blocking, launcher: Launcher,
                 log: EventLog | None) -> None:
        self.control, self.blocking, self.launcher = control, blocking, launcher
        self.log = log.path if log is not None else None  # where background aid is logged

    async def decide(self, run: ChainRun) -> None:
        """Decide the sync entries in one blocking call (``ControlLayer.decide``), hand the
        ``async: true`` ones on, and put one ``EntryLink`` per verdict in the group's place."""
        chain = run.chain
        decide = functools.partial(
            self.control.decide, run.name, chain.payload, can_block=can_block(run.name),
            fail_closed=run.on_fault == "block", correlation_id=chain.correlation,
            deadline=chain.deadline)
        verdicts: list[Verdict] = await self.blocking(decide)
        chain.runs.extend(would_runs(verdicts))  # audited entries (engine/audit.py)
        chain.heard(verdicts)  # what ran, blocked after or not; each applied in its turn
        self.passed(run)
        run.todo[0:0] = [EntryLink(verdict) for verdict in verdicts]

    def passed(self, run: ChainRun) -> None:
        """The ``async: true`` entries to the launcher, whether or not the chain stopped."""
        self.control.background(run.name, run.chain.payload, session_id=run.event.session_id,
                                log_path=self.log, correlation_id=run.chain.correlation,
                                launcher=self.launcher)


Link = HookLink | EntryLink | HooksYaml


def sync_links(name: str, hooks: list[HookSpec]) -> list[Link]:
    """The HOOK.md links of an event's chain, in run order (none for a notification: every
    hook of one is started beside the caller, ``Engine._start_async``)."""
    return [] if is_notification(name) else [HookLink(h) for h in hooks if not h.is_async]


class ChainRun:
    """One event's chain run by the one loop (see the module docstring).

    Args:
        name: the canonical event.
        event, work_dir: the event and the folder its scripts run in.
        chain: the accumulator, which owns the payload (``chain.py``).
        todo: the links, in order (``sync_links``, then ``HooksYaml`` when there are entries).
        registry: re-checks a hook before it runs, selects again after a rewrite.
        run_script: runs one script hook (the engine's choice of runner or persistent pool).
        asker: settles an ask (``asking.py``).
        on_fault, mode: the engine's ``on_fault`` policy and ``Settings.mode`` (audit).
        on_hook_done: told of each HOOK.md link's run.
    """

    __slots__ = ("asker", "chain", "event", "mode", "name", "on_fault", "on_hook_done",
                 "registry", "run_script", "todo", "work_dir")

    def __init__(self, name: str, event: Event, work_dir: str, chain: Chain, todo: list[Link],
                 *, registry: Registry, run_script: ScriptRunner, asker: Asker,
                 on_fault: OnFault, mode: str, on_hook_done: HookDone | None) -> None:
        self.name, self.event, self.work_dir, self.chain, self.todo = (
            name, event, work_dir, chain, todo)
        self.registry, self.run_script, self.asker = registry, run_script, asker
        self.on_fault, self.mode, self.on_hook_done = on_fault, mode, on_hook_done

    async def run(self) -> None:
        """Every link in turn: the one place that stops on the first block, the one place a
        verdict is applied."""
        chain, todo = self.chain, self.todo
        while todo:
            link = todo.pop(0)
            if chain.stopped:  # the first block stops every later link, of any kind
                link.passed(self)
                continue
            step = await link.decide(self)
            if step is None:  # not run (changed since selected), or a group now in its place
                continue
            verdict, run = step
            chain.apply(verdict, link.source)  # the one place a verdict acts on the event
            if chain.asking is not None:  # the chain waits for a person (asking.py)
                await self.asker.settle(chain, self.event, link.metadata, chain.approve)
            if verdict.modified_input is not None and link.hook is not None:
                self._choose_again(link.hook)
            if run is not None and self.on_hook_done is not None:
                await self.on_hook_done(run)

    def _choose_again(self, rewriter: HookSpec) -> None:
        """The HOOK.md links after ``rewriter`` are chosen by what the tool will now receive;
        the links of other kinds keep their place after them."""
        later = self.registry.select(self.name, self.event.tool_name, self.chain.tool_input)
        rest = [link for link in self.todo if link.hook is None]
        self.todo[:] = [HookLink(h) for h in later if not h.is_async and runs_after(h, rewriter)]
        self.todo += rest
