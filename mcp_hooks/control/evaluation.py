"""``evaluate(trigger, context)``: the hooks.yaml entries of one event -> signals.

The contract the engine relies on:

- ``trigger`` is any spelling ``config.canonical_trigger`` reads; ``context`` is an
  ``OracleContext`` or the event payload hooks receive (a mapping).
- A broken hooks.yaml fails closed: if any problem could concern this trigger
  (``ControlConfig.problems_for``), the result is one block signal per problem (source
  ``hooks.yaml``, type ``config_error``) and no oracle runs. On an event that cannot block,
  the caller reports them as it reports a broken hook there.
- Otherwise the enabled entries whose ``when`` holds run one after the other in run order
  (``Entry.sort_key``: priority >= 1 ascending, then priority 0 in definition order). Each
  signal gets ``source`` (the entry's ``id``, or the oracle's name in kebab case:
  ``checklist-validator``), ``hook`` (the canonical trigger), the issue id and
  ``correlation_id``. An entry with ``escalation`` goes through the ``Ladder``.
- The first block stops the run (the Agent Hooks rule "first blocking hook stops the
  rest"): the block is the last signal of the list.
- ``background=False`` runs the sync entries; ``background=True`` the ``async: true``
  ones, whose signals are all turned into aid (they cannot block or adjust) and never stop.
- Each oracle runs in a worker thread (a daemon, taken from a small pool of idle ones:
  starting a thread costs about 100 µs here, handing a job to a waiting one about 13 µs)
  under a ``runtime.Scope``: it has ``config.timeout`` seconds (``Oracle.timeout``); past
  them it is abandoned (its thread ends when the oracle returns, never reused) and the
  caller goes on at once (a command it was running is cut at the same deadline, its process
  group killed). Only while such a command is being killed does the caller wait up to
  ``CLEANUP_GRACE`` more, so a one-shot process leaves nothing behind.
- An oracle that raises anything (a bug, custom code; ``SystemExit``, ``KeyboardInterrupt``,
  ``GeneratorExit`` and any ``BaseException`` included: it is caught in the worker, never
  printed there nor raised here), or does not answer in time, or whose ladder state cannot
  be updated, becomes a prompt signal of type ``oracle_fault`` naming the oracle and what
  happened, which the engine treats as it treats a hook that crashed (its on-fault policy).
  While ``MAX_ABANDONED`` abandoned oracles are still running, no new one is started: its
  entry is such a fault at once.
- Untrusted project entries (``ControlConfig.untrusted_for``) never run; the caller may
  report them as it reports untrusted HOOK.md hooks.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from mcp_hooks.control import runtime
from mcp_hooks.control.config import (
    ControlConfig,
    Entry,
    canonical_trigger,
    load_config,
)
from mcp_hooks.control.context import OracleContext
from mcp_hooks.control.ladder import Ladder, convert
from mcp_hooks.control.oracles.base import EVALUATION_TIMEOUT
from mcp_hooks.settings import DEFAULT_ENVIRONMENT
from mcp_hooks.spec.signals import Signal

CLEANUP_GRACE = 2.0  # seconds a timed-out oracle's command may take to be killed
MAX_ABANDONED = 16  # abandoned oracle threads still running before no new one starts
MAX_IDLE = 4  # idle worker threads kept for the next oracles


def source_name(entry: Entry) -> str:
    """The signal source of an entry: its ``id``, or its oracle's name in kebab case."""
    if entry.id != entry.oracle_name:
        return entry.id
    name = entry.oracle_name.rpartition(":")[2]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


def _fault(entry: Entry, exc: BaseException) -> Signal:
    try:
        text = str(exc)
    except Exception:  # custom code's exception whose str() raises too
        text = "(its message cannot be shown)"
    return _fault_text(entry, f"failed: {type(exc).__name__}: {text}")


def _fault_text(entry: Entry, what: str, *fixes: str) -> Signal:
    return Signal.prompt(f"oracle {entry.oracle_name} {what}", severity="high",
                         type="oracle_fault",
                         suggestions=[*fixes, f"fix the oracle or its entry in {entry.file}"])


class _Job:
    """One oracle evaluation handed to a worker: what it returned or raised, and whether
    it finished before its caller gave up on it (both decided under ``lock``)."""

    def __init__(self, entry: Entry, context: OracleContext, scope: runtime.Scope) -> None:
        self.entry, self.context, self.scope = entry, context, scope
        self.signal: Signal | None = None
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.finished = False
        self.abandoned = False

    def run(self) -> bool:
        """Evaluate (in the worker); True when the caller had already given up."""
        try:
            with runtime.entered(self.scope):
                self.signal = self.entry.oracle.evaluate(self.context)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, ... from an oracle:
            self.error = exc  # its fault, reported by the caller
        with self.lock:
            self.finished = True
            self.done.set()
            return self.abandoned

    def wait(self, timeout: float) -> bool:
        """Wait for the result (in the caller); False, and the job abandoned, past
        ``timeout`` (longer while a command of it is being killed)."""
        if not self.done.wait(timeout) and self.scope.commands:
            self.done.wait(CLEANUP_GRACE)  # its command's group is being killed
        with self.lock:
            self.abandoned = not self.finished
            return self.finished


class _Worker:
    """A daemon thread that runs jobs one after the other until one is abandoned."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="mcp-hooks-oracle",
                                       daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while (job := self.jobs.get()) is not None:
            if job.run():
                return  # its caller went on: this thread ends with the job


class _Pool:
    """Idle workers, and the threads of abandoned jobs still running."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []
        self.abandoned: list[threading.Thread] = []

    def busy(self) -> int:
        with self.lock:
            self.abandoned = [t for t in self.abandoned if t.is_alive()]
            return len(self.abandoned)

    def take(self) -> _Worker:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return _Worker()

    def give(self, worker: _Worker) -> None:
        with self.lock:
            if len(self.idle) < MAX_IDLE:
                self.idle.append(worker)
                return
        worker.jobs.put(None)

    def lose(self, worker: _Worker) -> None:
        with self.lock:
            self.abandoned.append(worker.thread)


_pool = _Pool()


def run_oracle(entry: Entry, context: OracleContext, secrets: Collection[str] = (),
               cap: float | None = None) -> Signal | None:
    """Ask one entry's oracle, within its deadline (see the module docstring; ``cap``: at
    most that many seconds, what is left of the event's chain deadline): its signal, None, or
    its fault signal; never raises."""
    own = float(getattr(entry.oracle, "timeout", EVALUATION_TIMEOUT))
    timeout = own if cap is None else min(own, cap)
    if _pool.busy() >= MAX_ABANDONED:
        return _fault_text(entry, f"was not started: {MAX_ABANDONED} oracles are still "
                           "running past their timeout", "restart the server once the slow "
                           "oracles are fixed")
    job = _Job(entry, context, runtime.Scope(timeout, secrets))
    try:
        worker = _pool.take()
    except RuntimeError as exc:  # no thread can be started (a resource limit)
        return _fault(entry, exc)
    worker.jobs.put(job)
    if not job.wait(timeout):
        _pool.lose(worker)
        why = "its config.timeout" if timeout == own else "the event's chain deadline"
        return _fault_text(entry, f"timed out: no answer within {timeout:g} s ({why}); it "
                           "was abandoned",
                           f"make it faster, or raise config.timeout (at most "
                           f"{runtime.MAX_TIMEOUT:g} s)")
    _pool.give(worker)
    if job.error is not None:
        return _fault(entry, job.error)
    signal = job.signal
    if signal is not None and not isinstance(signal, Signal):
        return _fault_text(entry, f"returned {type(signal).__name__}, not a Signal or None")
    return signal


def config_signals(config: ControlConfig, trigger: str, *,
                   correlation_id: str | None = None) -> list[Signal]:
    """One block signal per hooks.yaml problem that could concern ``trigger``."""
    return [Signal.block(str(p), type="config_error", source="hooks.yaml", hook=trigger,
                         correlation_id=correlation_id,
                         resolution_path=[f"fix {p.file}", "run `mcp-hooks validate`"])
            for p in config.problems_for(trigger)]


def evaluate(trigger: str, context: OracleContext | Mapping[str, Any], *,
             config: ControlConfig | None = None, project_dir: Path | None = None,
             ladder: Ladder | None = None, background: bool = False,
             correlation_id: str | None = None, secrets: Collection[str] = (),
             deadline: float | None = None, environment: str = DEFAULT_ENVIRONMENT
             ) -> list[Signal]:
    """The signals of ``trigger``'s hooks.yaml entries for one event (see the module doc).

    Args:
        config: the merged hooks.yaml; None loads it for ``project_dir`` (default the
            context's ``work_dir``).
        ladder: the escalation store; None for the default file, used only by entries with
            ``escalation``.
        secrets: values no oracle's command may see in its environment (beside
            ``MCP_HOOKS_TOKEN``, always left out).
        deadline: the event's chain deadline (``time.monotonic()``): each oracle gets at most
            what is left of it; one with none left is not started, a fault of its own.
        environment: the process's deployment environment (``Settings.environment``), which
            ``when.environment`` tests when the payload names none.
    """
    trigger = canonical_trigger(trigger)
    if not isinstance(context, OracleContext):
        context = OracleContext.from_payload(trigger, context, environment=environment)
    if config is None:
        config = load_config(project_dir or context.work_dir)
    broken = config_signals(config, trigger, correlation_id=correlation_id)
    if broken:
        return [] if background else broken
    out: list[Signal] = []
    for entry in config.for_trigger(trigger, context):
        if entry.async_ != background:
            continue
        signal = _stamped(entry, _ask(entry, context, secrets, deadline), trigger, context,
                          correlation_id)
        if background:
            if signal is not None:
                out.append(convert(signal, "aid"))
            continue
        if entry.escalation and (signal is None or signal.header.type != "oracle_fault"):
            signal = _escalated(entry, signal, trigger, context, ladder, correlation_id)
        if signal is None:
            continue
        out.append(signal)
        if signal.blocks:
            break
    return out


def _ask(entry: Entry, context: OracleContext, secrets: Collection[str],
         deadline: float | None) -> Signal | None:
    """``run_oracle`` within what is left of the chain deadline (none left: a fault)."""
    if deadline is None:
        return run_oracle(entry, context, secrets)
    left = deadline - time.monotonic()
    if left <= 0:
        return _fault_text(entry, "was not started: the links before it used up the event's "
                           "chain deadline", "raise --chain-timeout (MCP_HOOKS_CHAIN_TIMEOUT) "
                           "or make the hooks faster")
    return run_oracle(entry, context, secrets, left)


def _stamped(entry: Entry, signal: Signal | None, trigger: str, context: OracleContext,
             correlation_id: str | None) -> Signal | None:
    """An oracle's signal with its source, hook, issue and correlation filled in."""
    if signal is None:
        return None
    try:
        return signal.with_context(
            source=source_name(entry), hook=trigger,
            issue_id=signal.context.issue_id or context.issue_id,
            correlation_id=signal.header.correlation_id or correlation_id)
    except Exception as exc:  # a malformed signal from custom code: its fault
        return _fault(entry, exc).with_context(source=source_name(entry), hook=trigger,
                                               correlation_id=correlation_id)


def _escalated(entry: Entry, signal: Signal | None, trigger: str, context: OracleContext,
               ladder: Ladder | None, correlation_id: str | None) -> Signal | None:
    """The signal after the entry's escalation ladder; a fault when its state is not kept."""
    try:
        return (ladder or Ladder()).apply(context.session_id, trigger, entry.id,
                                          signal, entry.escalation or ())
    except (OSError, runtime.FileRefused) as exc:  # the state cannot be kept
        return _fault_text(
            entry, f"could not update its escalation ladder: {exc}",
            "check the state folder ($XDG_STATE_HOME/mcp-hooks) is writable"
        ).with_context(source=source_name(entry), hook=trigger,
                       correlation_id=correlation_id)
