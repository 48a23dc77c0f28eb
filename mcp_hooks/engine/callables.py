"""Python callables as hooks: in process, in the same ordered chain as HOOK.md hooks.

A callable hook is a ``CallableHook``, a ``HookSpec`` whose "script" is a Python function, so
the registry selects it (``Registry.select`` merges a ``CallableView``), its matcher is read as
a HOOK.md matcher (``tool``, ``pattern``) and ``discovery.run_order`` places it in the chain.
The engine calls it where it would spawn a process (``links.HookLink``): no stdin, no JSON,
no process; its verdict is built here, directly.

What a callable gets and may return (the AgentScope 1.x contract, seed 003):

============== ================================ =============================================
event          ``value`` (a deep copy)          a return value other than None
============== ================================ =============================================
before_tool    ``tool_input`` (a dict)          the new tool input (a dict)
before_model   ``messages`` (a list)            the new messages (a list)
after_tool     ``tool_output``                  the new tool output
after_model    ``response``                     the new response
any other      the whole payload (a dict)       ignored, with a warning
============== ================================ =============================================

- **Returning ``Ask("reason")``** asks a person to approve this call (``asking.py``): the
  chain waits for the answer; on an event that cannot block it allows with a warning.
- ``fn(value)`` or ``fn(value, payload)``: the second form also gets the event's payload (a
  shallow copy: read it, do not change it). An ``async def`` is awaited in the chain.
- **Raising blocks** (fail closed, as AgentScope's hooks do): the verdict is a deny whose
  reason is the exception's message (its type's name when it has none). Any exception:
  ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``, a ``CancelledError`` it raises
  itself and its own ``BaseException`` subclasses are denies naming the type, and nothing of
  them reaches the caller; only a cancellation of the awaiting task (or the chain's coroutine
  being closed) still propagates, told apart exactly (``_Own``).
- Each callable sees what the hooks before it made of the value, and its return is what the
  hooks after it see: a rewrite chains, exactly as ``modified_input`` does between scripts.
- The chunk events (``events.NOTIFY_ONLY``) start every matching callable at once beside the
  caller (``notify``): on the running event loop (``call_soon``, or a task for an ``async
  def``), or on a small thread pool when none runs; their results and errors are ignored.
- A callable has no timeout and no process limits: it runs in the caller's process.

**Order.** ``run_order``: priority descending (the Agent Hooks spec: higher first; AgentScope
Java's ``Hook.priority()`` is the opposite, lower first). At equal priority: user HOOK.md
hooks, project HOOK.md hooks, then callables: instance ones before class ones (as AgentScope
1.x's ``_wrap_with_hooks`` runs instance hooks, then class hooks), each in registration order.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import time
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from mcp_hooks.engine.judge import Verdict
from mcp_hooks.errors import ConfigError
from mcp_hooks.guard import named
from mcp_hooks.runner import RunResult
from mcp_hooks.spec.asking import Ask
from mcp_hooks.spec.events import TOOL_EVENTS, can_block, canonical_event
from mcp_hooks.spec.hookfile import HookSpec, Scope
from mcp_hooks.spec.matching import MAX_DEPTH

Level = Literal["instance", "class"]
# event -> the payload field a callable gets and may replace, and which way it flows
SUBJECTS: dict[str, tuple[str, Literal["input", "output"]]] = {
    "before_tool": ("tool_input", "input"), "before_model": ("messages", "input"),
    "after_tool": ("tool_output", "output"), "after_model": ("response", "output"),
}
_ALLOWED = Verdict("allow")  # shared: a verdict is never changed once judged
_RANK: dict[str, int] = {"instance": 2, "class": 3}  # after user (0) and project (1) hooks
_SEQ = [0]  # registration order across every table
_GENERATION = [0]  # bumped by every change to any table: views rebuild their cache


class CallableHookError(ConfigError, TypeError):
    """A callable hook that cannot be registered (not callable, a matcher on an event that
    has no tool, a priority out of range); the message names the argument."""


@dataclass(frozen=True, eq=False)
class CallableHook(HookSpec):
    """A Python function in the chain (see the module docstring).

    Attributes:
        fn: the function.
        level: ``instance`` (one ``Hooks`` object) or ``class`` (every instance of a class).
        seq: its place in registration order.
        with_payload: ``fn`` takes the payload as a second argument.
        awaits: ``fn`` is an ``async def`` (it needs an event loop).
    """

    fn: Callable[..., Any] | None = None
    level: Level = "instance"
    seq: int = 0
    with_payload: bool = False
    awaits: bool = False
    order_key: tuple[int, int, str] = field(default=(0, 0, ""), init=False, repr=False)

    __eq__ = object.__eq__  # one registration is one hook, whatever its fields
    __hash__ = object.__hash__

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "order_key",
                           (-self.priority, _RANK[self.level], f"{self.seq:012d}"))

    async def call(self, event: str, payload: dict[str, Any]) -> tuple[RunResult, Verdict]:
        """Run the function on the current payload; its run and verdict for the chain."""
        subject = SUBJECTS.get(event)
        assert self.fn is not None
        start = time.perf_counter()
        raised: BaseException | None = None
        try:
            value = _copy(payload.get(subject[0]) if subject else payload)
            answer = self.fn(value, dict(payload)) if self.with_payload else self.fn(value)
        except BaseException as exc:  # raising blocks: fail closed, whatever it raised
            raised = exc
        else:
            if hasattr(answer, "__await__"):
                answer, raised = await _Own(answer)
        if raised is not None:
            reason = self._reason(raised)
            verdict = Verdict("deny")
            verdict.deny, verdict.reason = True, reason
            verdict.message = reason if len(reason) <= 500 else reason[:500] + "..."
            return RunResult(2, duration_ms=(time.perf_counter() - start) * 1000), verdict
        took = (time.perf_counter() - start) * 1000
        if answer is None:
            return RunResult(0, duration_ms=took), _ALLOWED
        if isinstance(answer, Ask):
            return RunResult(0, duration_ms=took), self._asked(event, answer)
        return RunResult(0, duration_ms=took), self._changed(event, subject, answer)

    def _asked(self, event: str, answer: Ask) -> Verdict:
        verdict = Verdict("allow")
        if can_block(event):
            verdict.ask = answer.reason or f"hook {self.name} asks a person to approve this call"
        else:
            verdict.warning = f"{self.name}: Ask on {event}, which cannot block: allowed"
        return verdict

    def _reason(self, exc: BaseException) -> str:
        """An exception's message; the hook and the type too when it is not an ``Exception``
        (``SystemExit(3)`` says ``3``) or has no message."""
        if isinstance(exc, Exception) and str(exc):
            return str(exc)
        return f"{named(exc)} raised by hook {self.name}"

    def _changed(self, event: str, subject: tuple[str, str] | None, answer: Any) -> Verdict:
        verdict = Verdict("allow")
        if subject is None:
            verdict.warning = (f"{self.name}: a return value only applies to "
                               f"{', '.join(SUBJECTS)}, not {event}; ignored")
        elif event == "before_tool" and not isinstance(answer, dict):
            verdict.warning = (f"{self.name}: must return the new tool_input as a dict (or "
                               f"None), got {type(answer).__name__}; ignored")
        elif event == "before_model" and not isinstance(answer, list):
            verdict.warning = (f"{self.name}: must return the new messages as a list (or "
                               f"None), got {type(answer).__name__}; ignored")
        elif subject[1] == "input":
            verdict.modified_input = answer if event == "before_tool" else {"messages": answer}
        else:
            verdict.modified_output = answer
        return verdict


class _Own:
    """Awaits a callable's awaitable, telling what it raised itself from what the caller threw
    into it. Its own exception (even ``CancelledError`` or ``GeneratorExit``) is returned, to
    become its deny; what answers a throw from outside (the awaiting task cancelled, the
    chain's coroutine closed) propagates, so a real cancellation still cancels. The same
    delegation as ``await``, step by step (``yield from`` cannot tell the two apart).

    Awaiting it gives ``(result, None)`` or ``(None, exception)``.
    """

    __slots__ = ("_it",)

    def __init__(self, awaitable: Any) -> None:
        self._it = awaitable.__await__()

    def __await__(self) -> Generator[Any, Any, tuple[Any, BaseException | None]]:
        it = self._it
        try:
            yielded = it.send(None)
        except StopIteration as done:
            return done.value, None
        except BaseException as exc:  # raised by the callable itself
            return None, exc
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:  # the chain is closed: close the callable with it
                it.close()
                raise
            except BaseException as thrown:  # a cancellation: the callable may answer it
                throw = getattr(it, "throw", None)
                if throw is None:
                    raise
                try:
                    yielded = throw(thrown)
                except StopIteration as done:
                    return done.value, None
                continue  # whatever it raised in answer propagates: the caller's own
            try:
                yielded = it.send(sent)
            except StopIteration as done:
                return done.value, None
            except BaseException as exc:  # raised by the callable itself
                return None, exc


def _copy(value: Any) -> Any:
    """A deep copy for the callable (it must return a change, not make one in place): JSON
    shapes are copied directly; anything else by ``copy.deepcopy``, and an object that
    cannot be copied (a lock, a socket) is handed over as it is.

    Raises:
        ValueError: the value nests deeper than ``matching.MAX_DEPTH`` (the callable's run
            is then a deny saying so: fail closed).
    """
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        return _copy_json(value, 0)
    except TypeError:  # not one of JSON's shapes
        pass

    try:
        return copy.deepcopy(value)
    except RecursionError:
        raise ValueError(f"the input nests deeper than {MAX_DEPTH} levels") from None
    except Exception:
        return value


def _copy_json(value: Any, level: int) -> Any:
    if level > MAX_DEPTH:
        raise ValueError(f"the input nests deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SCALARS else _copy_json(v, level + 1)
                for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SCALARS else _copy_json(v, level + 1) for v in value]
    if kind in _SCALARS:
        return value
    raise TypeError(kind)  # outside JSON's shapes: copied by copy.deepcopy instead


_SCALARS = frozenset({str, int, float, bool, type(None)})


def make_hook(fn: Callable[..., Any], event: str, *, level: Level = "instance",
              tool: str | None = None, pattern: str | None = None, priority: int = 100,
              name: str | None = None) -> CallableHook:
    """A ``CallableHook`` for ``fn`` on ``event`` (any spelling).

    Raises:
        UnknownEventError: ``event`` is not in the catalogue.
        CallableHookError: ``fn`` is not callable, ``tool``/``pattern`` on an event with no
            tool, ``priority`` outside 0-1000.
        MatcherError: ``tool`` or ``pattern`` is not an RE2 expression.
    """
    if not callable(fn):
        raise CallableHookError(f"fn: {fn!r} is not callable; pass a function")
    canonical = canonical_event(event)
    if (tool is not None or pattern is not None) and canonical not in TOOL_EVENTS:
        raise CallableHookError(
            f"tool/pattern: {event!r} has no tool to match; a matcher only applies to "
            f"{', '.join(sorted(TOOL_EVENTS))}")
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 1000:
        raise CallableHookError(f"priority: must be an integer from 0 to 1000 (higher runs "
                                f"first), got {priority!r}")
    code = getattr(fn, "__code__", None)
    where = Path(code.co_filename) if code is not None else Path(".")
    _SEQ[0] += 1
    return CallableHook(
        name=name or getattr(fn, "__qualname__", None) or type(fn).__name__,
        description=((getattr(fn, "__doc__", None) or "").strip().splitlines() or [""])[0],
        trigger=event, event=canonical, scope=cast(Scope, level), dir=where.parent,
        hook_file=where, entry=(), matcher_tool=tool, matcher_pattern=pattern,
        priority=priority, fn=fn, level=level, seq=_SEQ[0], with_payload=_takes_two(fn),
        awaits=_is_async(fn))


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None))  # noqa: B004 - an object with an async __call__


def _takes_two(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a second positional argument (the payload)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def tables_generation() -> int:
    """A number every change to any callable table (``HookTable``) moves."""
    return _GENERATION[0]


class HookTable:
    """Callable hooks of one level (one ``Hooks`` object, or one class), by event."""

    def __init__(self) -> None:
        self._by_event: dict[str, tuple[CallableHook, ...]] = {}

    def add(self, hook: CallableHook) -> CallableHook:
        self._by_event[hook.event] = (*self._by_event.get(hook.event, ()), hook)
        _GENERATION[0] += 1
        return hook

    def remove(self, hook: CallableHook) -> None:
        """Take ``hook`` out. Raises ``ValueError`` when it is not in this table."""
        hooks = self._by_event.get(hook.event, ())
        if hook not in hooks:
            raise ValueError(f"hook {hook.name!r} ({hook.event}) is not registered here")
        self._by_event[hook.event] = tuple(h for h in hooks if h is not hook)
        _GENERATION[0] += 1

    def clear(self) -> None:
        self._by_event = {}
        _GENERATION[0] += 1

    def hooks(self) -> list[CallableHook]:
        return [h for hooks in self._by_event.values() for h in hooks]

    def for_event(self, event: str) -> tuple[CallableHook, ...]:
        return self._by_event.get(event, ())


class CallableView:
    """What one ``Hooks`` object runs: its own table and its classes' tables, in run order.

    Args:
        tables: called to list the tables that apply (the instance's, then its classes');
            the merged lists are cached until any table changes.
    """

    def __init__(self, tables: Callable[[], Iterable[HookTable]]) -> None:
        self._tables = tables
        self._seen = -1
        self._cache: dict[str, tuple[CallableHook, ...]] = {}

    def for_event(self, event: str) -> tuple[CallableHook, ...]:
        if self._seen != _GENERATION[0]:
            merged: dict[str, list[CallableHook]] = {}
            for table in self._tables():
                for hook in table.hooks():
                    merged.setdefault(hook.event, []).append(hook)
            self._cache = {e: tuple(sorted(hs, key=lambda h: h.order_key))
                           for e, hs in merged.items()}
            self._seen = _GENERATION[0]
        return self._cache.get(event, ())

    def wakes(self, event: str) -> bool:
        return bool(self.for_event(event))

    def select(self, event: str, tool_name: str | None,
               tool_input: Any) -> list[CallableHook]:
        """The callables a canonical event wakes, in run order, matchers applied."""
        return [h for h in self.for_event(event)
                if not h.has_matcher or h.matches(tool_name, tool_input)]


# -- notifications (the chunk events) ---------------------------------------------------

_TASKS: set[Any] = set()  # running notification tasks: kept alive until done
_POOL: list[Any] = []  # the thread pool for notifications fired with no event loop


def notify(hooks: list[CallableHook], event: str, payload: dict[str, Any]) -> None:
    """Start every callable of a notification event beside the caller; never waits, never
    raises, ignores what they return."""
    # lazy: 59 ms of cold fire (python -X importtime)
    import asyncio  # only once a notification has a callable: never on a one-shot path

    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    for hook in hooks:
        step = hook.call(event, payload)
        if loop is not None:
            task = loop.create_task(_quietly(step))
            _TASKS.add(task)
            task.add_done_callback(_TASKS.discard)
        else:
            if not _POOL:
                # lazy: 4.5 ms of cold fire (python -X importtime)
                from concurrent.futures import ThreadPoolExecutor

                _POOL.append(ThreadPoolExecutor(4, thread_name_prefix="mcp-hooks-notify"))
            _POOL[0].submit(asyncio.run, _quietly(step))


async def _quietly(step: Awaitable[Any]) -> None:
    with contextlib.suppress(Exception):  # a notification's result and errors are ignored
        await step
