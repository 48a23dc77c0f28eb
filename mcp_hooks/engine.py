"""One event -> one ``Outcome``: select, order, run, chain, aggregate; the stop loop guard.

The engine knows nothing of MCP, the command line or any agent host: adapters build an
``Event``, call ``Engine.fire`` and translate the ``Outcome`` back.

Running an event:

1. Select the hooks whose trigger resolves to the event (matchers on tool events only).
2. Async hooks start at once with the original payload; they cannot block or modify, and
   their results go to the event log when they finish, after the reply.
3. Sync hooks run one after another in ``discovery.run_order``; each sees ``tool_input``
   (and, after a tool, ``tool_output``) as modified by the hooks before it.
4. Per sync hook: exit 0 allows, and its stdout (if any) must be a JSON object; exit 2
   denies with stderr as the reason; any other exit, a timeout or unparsable stdout fails
   open with a warning, unless the hook sets ``metadata.on_error: block``. The first deny
   ends the chain.
5. ``before_stop`` denied -> ``continue_working``. The loop guard counts consecutive blocks
   per session; the next ``before_stop`` carries ``stop_hook_active`` and
   ``stop_block_count``; at the cap the stop is allowed and the outcome says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from mcp_hooks import matching
from mcp_hooks.discovery import Registry, run_order
from mcp_hooks.errors import InvalidEventError
from mcp_hooks.eventlog import EventLog
from mcp_hooks.events import can_block, canonical_event
from mcp_hooks.hookfile import HookSpec
from mcp_hooks.runner import RunResult, run_hook, run_hook_blocking

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

Status = Literal["allow", "deny", "error", "timeout", "scheduled"]
DEFAULT_STOP_BLOCK_CAP = 8
AGENT_TEXT_CAP = 4000  # characters of a reason or context handed to the agent
_ENV_CACHE = 256  # hook environments kept (one per hook, work_dir and session)
_ENV_VALUE_CAP = 4096  # longer event values reach the hook on stdin only, never in its env
_THREAD_MATCH = 1 << 16  # characters of tool input past which matching leaves the event loop
FAULT_SOURCE = "mcp-hooks"  # ``blocked_by`` of a deny that is our own fault
OnFault = Literal["block", "warn"]
# Never handed to a hook: the server's own secret (and any value equal to a configured one).
SECRET_VARS = frozenset({"MCP_HOOKS_TOKEN"})


# Event fields and what each must be, declared once: (name, JSON kind, may be null).
_EVENT_FIELDS: dict[str, tuple[str, bool]] = {
    "event_type": ("string", False),
    "session_id": ("string", True),
    "work_dir": ("string", True),
    "tool_name": ("string", True),
    "tool_input": ("object", True),
    "tool_use_id": ("string", True),
    "tool_output": ("any", True),
    "error": ("any", True),
    "payload": ("object", True),
    "context": ("object", True),
}
_KINDS: dict[str, tuple[type, str]] = {
    "string": (str, "a string"), "object": (dict, "a JSON object"),
}


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class Event:
    """One lifecycle event, as an adapter hands it to the engine.

    Attributes:
        event_type: canonical name or any alias.
        work_dir: the project the hooks run in (their cwd); default the registry's project.
        payload: further fields for the hooks (``stop_reason``, ``subagent_name``, ...).
        context: free-form object passed to hooks as ``context``.

    Raises:
        InvalidEventError: a field has the wrong type; the message names it.
    """

    event_type: str
    session_id: str | None = None
    work_dir: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    tool_output: Any = None
    error: Any = None
    payload: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, (kind, nullable) in _EVENT_FIELDS.items():
            value = getattr(self, name)
            if kind == "any" or (value is None and nullable):
                continue
            want, words = _KINDS[kind]
            if not isinstance(value, want):
                raise InvalidEventError(name, f"must be {words}, got {_type_name(value)}")
        for name in ("payload", "context"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, {})

    @classmethod
    def create(cls, **fields: Any) -> Event:
        """Build an event from keyword fields, naming any unknown or malformed one.

        Raises:
            InvalidEventError: an unknown field, or a field of the wrong type.
        """
        unknown = sorted(set(fields) - set(_EVENT_FIELDS))
        if unknown:
            raise InvalidEventError(unknown[0], f"unknown field; use {', '.join(_EVENT_FIELDS)}")
        if "event_type" not in fields:
            raise InvalidEventError("event_type", "is required")
        return cls(**fields)


@dataclass(frozen=True, init=False)
class HookRun:
    """What one hook did in one event."""

    name: str
    scope: str
    priority: int
    mode: Literal["sync", "async"]
    status: Status
    exit_code: int | None = None
    duration_ms: float = 0.0
    message: str | None = None

    def __init__(self, name: str, scope: str, priority: int, mode: Literal["sync", "async"],
                 status: Status, exit_code: int | None = None, duration_ms: float = 0.0,
                 message: str | None = None) -> None:
        # by hand, into __dict__: the generated frozen __init__ sets each field through
        # object.__setattr__, and one of these is made per hook run
        fields_ = self.__dict__
        fields_["name"] = name
        fields_["scope"] = scope
        fields_["priority"] = priority
        fields_["mode"] = mode
        fields_["status"] = status
        fields_["exit_code"] = exit_code
        fields_["duration_ms"] = duration_ms
        fields_["message"] = message

    def as_dict(self) -> dict[str, Any]:
        # by hand: dataclasses.asdict deep-copies, which costs more than the rest of an event
        return {"name": self.name, "scope": self.scope, "priority": self.priority,
                "mode": self.mode, "status": self.status, "exit_code": self.exit_code,
                "duration_ms": self.duration_ms, "message": self.message}


@dataclass(frozen=True)
class Outcome:
    """The one decision an agent must follow after an event.

    Attributes:
        decision: ``allow`` or ``deny``.
        reason: why it was denied (the first blocking hook's reason), for the agent.
        blocked_by: the hook that denied.
        modified_input: the tool input to use instead, when a hook rewrote it; else null.
        modified_output: the tool output to use instead (``after_tool``), when a hook rewrote it.
        additional_context: text the hooks ask the agent to read.
        continue_working: ``before_stop`` was denied: keep working, with ``reason`` as feedback.
        hooks: one entry per hook woken, in the order they ran (async ones ``scheduled``).
        warnings: hooks that failed open, ignored fields, the loop guard overriding a block.
    """

    event_type: str
    decision: Literal["allow", "deny"] = "allow"
    reason: str | None = None
    blocked_by: str | None = None
    modified_input: dict[str, Any] | None = None
    modified_output: Any = None
    additional_context: list[str] = field(default_factory=list)
    continue_working: bool = False
    hooks: list[HookRun] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def denied(self) -> bool:
        return self.decision == "deny"

    def as_dict(self) -> dict[str, Any]:
        """The outcome as JSON-ready data (the shape of DESIGN.md "The result")."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["hooks"] = [run.as_dict() for run in self.hooks]
        data["additional_context"] = list(self.additional_context)
        data["warnings"] = list(self.warnings)
        return data

    def to_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.as_dict(), indent=indent, ensure_ascii=False, default=str)


HookDone = Callable[[HookRun], Awaitable[None]]
Runner = Callable[..., Awaitable[RunResult]]


def fault_outcome(event: str, what: str, *, on_fault: str = "block",
                  warnings: list[str] | None = None) -> Outcome:
    """The answer when mcp-hooks itself cannot decide an event (not a hook's own failure).

    For an event that can block, under ``on_fault="block"`` (the default): a deny whose reason
    says what broke, ``blocked_by="mcp-hooks"``. Otherwise an allow carrying the warning.

    Args:
        event: the canonical event (an unknown name is treated as one that can block).
        what: what broke and how to fix it, for the person reading the reason.
    """
    blocks = can_block(event)
    if on_fault != "warn" and blocks:
        return Outcome(
            event_type=event, decision="deny", blocked_by=FAULT_SOURCE,
            reason=cap_text(f"mcp-hooks could not decide this event, so it is blocked: {what}"
                            " (to let such events through instead: MCP_HOOKS_ON_FAULT=warn)"),
            continue_working=event == "before_stop",
            warnings=[*(warnings or []), f"fault: {what}; blocked (on-fault: block)"])
    how = "on-fault: warn" if blocks else f"{event} cannot block"
    return Outcome(event_type=event,
                   warnings=[*(warnings or []), f"fault: {what}; allowed ({how})"])


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
# The C encoder JSONEncoder.encode builds on every call, built once; without the circular
# reference check, so a circular payload (only the Python API can make one) falls back.
def _c_encoder() -> Callable[[Any, int], Any] | None:
    make = getattr(json.encoder, "c_make_encoder", None)  # None without the C module
    try:
        return None if make is None else make(
            None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    except TypeError:  # another Python's private signature: the public encoder will do
        return None


_C_ENCODE = _c_encoder()


def _encode(payload: dict[str, Any]) -> bytes:
    try:
        if _C_ENCODE is not None:
            with contextlib.suppress(RecursionError):
                return "".join(_C_ENCODE(payload, 0)).encode()
        return _ENCODER.encode(payload).encode()
    except UnicodeEncodeError:  # a lone surrogate (JSON allows "\udcff"; UTF-8 does not)
        return json.dumps(payload, default=str).encode()  # ASCII, escaped: it round-trips


def hook_environment(environ: Mapping[str, str], secrets: Collection[str] = ()) -> dict[str, str]:
    """The environment every hook starts from: the caller's ordinary variables, less the
    server's secrets (``MCP_HOOKS_TOKEN`` and any variable whose value is a configured token
    or header secret) and any ``AGENT_HOOKS_*`` the caller had (the engine sets its own),
    plus ``PYTHONDONTWRITEBYTECODE=1``."""
    hidden = {value for value in secrets if value}
    env = {key: value for key, value in environ.items()
           if key not in SECRET_VARS and value not in hidden
           and not key.startswith("AGENT_HOOKS_")}
    # a Python hook must not write __pycache__ into its folder: that would change the content
    # a project hook was trusted with (and a stale .pyc could run instead of the source)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _env_safe(value: str) -> bool:
    if "\0" in value:
        return False
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


async def _run_blocking(argv: tuple[str, ...], stdin: bytes, **options: Any) -> RunResult:
    """The blocking runner behind the async interface: it never suspends, so a one-shot
    engine's ``fire`` runs to the end in one step (``fire_blocking``)."""
    return run_hook_blocking(argv, stdin, **options)


def cap_text(text: str, limit: int = AGENT_TEXT_CAP) -> str:
    """Shorten text meant for an agent, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut; see the event log]"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


_second: list[Any] = [0, ""]  # the last second formatted, and how: events come in bursts


def _now() -> str:
    """ISO 8601 UTC with milliseconds, e.g. 2026-01-15T10:30:00.123Z."""
    now = time.time()
    second = int(now)
    if _second[0] != second:
        _second[:] = [second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))]
    return f"{_second[1]}.{int((now - second) * 1000):03d}Z"


class _Verdict:
    """One sync hook's effect on the chain."""

    __slots__ = ("blocked_by", "context", "deny", "log", "message", "modified_input",
                 "modified_output", "reason", "status", "warning")

    def __init__(self, status: Status) -> None:
        self.status: Status = status
        self.deny = False
        self.blocked_by: str | None = None  # who denied, when not the hook itself
        self.reason: str | None = None
        self.message: str | None = None
        self.modified_input: dict[str, Any] | None = None
        self.modified_output: Any = None
        self.context: str | None = None
        self.warning: str | None = None
        self.log: str | None = None


_ALLOW = _Verdict("allow")  # shared: a verdict is never changed once judged


class Engine:
    """Fires events at the hooks of a ``Registry``.

    Use as an async context manager: async hooks run in the engine's task group, and leaving
    the block waits for them (each bounded by its own timeout).

    Args:
        registry: where the hooks come from.
        log: where to append event records; None for no log.
        stop_block_cap: consecutive ``before_stop`` blocks allowed per session before the
            loop guard lets the agent stop; 0 turns the guard off.
        detach_async: run async hooks in a detached process instead of the engine's task
            group, so a short-lived caller (``mcp-hooks fire``, a host bridge) can exit at
            once; their results still reach the log.
        one_shot: for a process that fires one event and exits: ``detach_async``, and
            ``fire_blocking`` runs the hooks without an event loop (no asyncio to import).
        on_fault: ``block`` (default): a fault of ours on an event that can block is a deny
            saying what broke; ``warn``: an allow with the warning (``fault_outcome``).
        secrets: values no hook may see in its environment (a server's token, upstream
            header secrets); ``MCP_HOOKS_TOKEN`` is always left out (``hook_environment``).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        log: EventLog | None = None,
        stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP,
        detach_async: bool = False,
        one_shot: bool = False,
        on_fault: OnFault = "block",
        secrets: Collection[str] = (),
    ) -> None:
        self.registry = registry
        self.log = log
        self.stop_block_cap = stop_block_cap
        self.detach_async = detach_async or one_shot
        self.one_shot = one_shot
        self.on_fault: OnFault = "warn" if on_fault == "warn" else "block"
        self._runner: Runner = _run_blocking if one_shot else run_hook
        self._stop_blocks: dict[str, int] = {}
        self._tg: TaskGroup | None = None
        self._base_env = hook_environment(os.environ, secrets)
        self._envs: dict[tuple[Any, ...], dict[str, str]] = {}

    async def __aenter__(self) -> Engine:
        if not self.detach_async:  # short-lived callers never load anyio's task groups
            import anyio

            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        if tg is None:
            return None
        if exc is None:
            return await tg.__aexit__(None, None, None)
        # The caller's own error wins: stop the async hooks (their groups are killed) and
        # let it propagate as it was, not wrapped in an exception group.
        tg.cancel_scope.cancel()
        with contextlib.suppress(BaseException):
            await tg.__aexit__(None, None, None)
        return None

    # -- firing --------------------------------------------------------------------------

    async def fire(self, event: Event, *, on_hook_done: HookDone | None = None) -> Outcome:
        """Run the hooks an event wakes and return the one decision.

        Never raises for what it cannot process (a payload too deep or unencodable, a hook in
        scope that did not load or could not start, a missing ``work_dir``, an error of our
        own): that is a fault, answered by ``fault_outcome`` under the engine's ``on_fault``
        policy: a deny saying what broke, for an event that can block.

        Args:
            event: the event.
            on_hook_done: awaited after each sync hook finishes (for progress reports).

        Raises:
            UnknownEventError: the event type is not in the catalogue.
        """
        name = canonical_event(event.event_type)
        try:
            return await self._fire(name, event, on_hook_done)
        except Exception as exc:  # our own fault: never a crash, never a silent allow
            outcome = fault_outcome(
                name, f"the engine failed: {type(exc).__name__}: {cap_text(str(exc), 300)}",
                on_fault=self.on_fault)
            if self.log is not None:
                with contextlib.suppress(Exception):
                    self._log_event(event, name, self._work_dir(event), outcome, {})
            return outcome

    async def _fire(self, name: str, event: Event, on_hook_done: HookDone | None) -> Outcome:
        self.registry.refresh()
        if (not self.one_shot and event.tool_input and self.registry.has_patterns(name)
                and matching.larger_than(event.tool_input, _THREAD_MATCH)):
            import anyio  # a big input is matched off the event loop: other clients go on

            hooks = await anyio.to_thread.run_sync(
                self.registry.select, name, event.tool_name, event.tool_input)
        else:
            hooks = self.registry.select(name, event.tool_name, event.tool_input)
        work_dir = self._work_dir(event)
        payload = self._payload(name, event, work_dir)
        notes = self._notes(name, event)
        fault = self._fault(name, hooks, payload, work_dir)
        if fault is not None:
            outcome = fault_outcome(name, fault, on_fault=self.on_fault, warnings=notes)
            if outcome.denied or not hooks or not os.path.isdir(work_dir):
                if self.log is not None:
                    self._log_event(event, name, work_dir, outcome, {})
                return outcome
            notes = outcome.warnings  # warn: the valid hooks run, the warning stays
        guard = self._guard_before(event, payload) if name == "before_stop" else None
        if not hooks:
            outcome = Outcome(event_type=name, warnings=notes)
            if guard is not None:
                self._guard_after(guard, outcome)
            if self.log is not None:
                self._log_event(event, name, work_dir, outcome, {})
            return outcome

        runs: list[HookRun] = []
        detached: list[dict[str, Any]] = []
        for hook in hooks:
            if hook.is_async:
                runs.append(self._schedule(hook, payload, work_dir, event, detached))
        if detached:
            self._spawn_detached(name, event, detached)

        outputs: dict[str, RunResult] = {}
        warnings: list[str] = list(notes)
        contexts: list[str] = []
        tool_input = event.tool_input
        tool_output = event.tool_output
        input_changed = output_changed = False
        decision: Literal["allow", "deny"] = "allow"
        reason = blocked_by = None
        stdin, stdin_for = b"", ""  # the payload as bytes, and the trigger spelling in them
        chain = [h for h in hooks if not h.is_async]
        position = 0
        while position < len(chain):
            hook = chain[position]
            position += 1
            if stdin_for != hook.trigger:  # encoded again only when something changed
                stdin, stdin_for = self._stdin(hook, payload), hook.trigger
            result = await self._runner(hook.entry, stdin, cwd=work_dir,
                                        env=self._env(hook, event, work_dir),
                                        timeout=hook.timeout / 1000, limits=hook.limits)
            outputs[hook.name] = result
            verdict = _judge(hook, name, result, self.on_fault, self.registry.replaced)
            run = HookRun(
                name=hook.name, scope=hook.scope, priority=hook.priority, mode="sync",
                status=verdict.status, exit_code=result.exit_code,
                duration_ms=round(result.duration_ms, 3), message=verdict.message,
            )
            runs.append(run)
            if verdict.warning:
                warnings.append(verdict.warning)
            if verdict.context:
                contexts.append(cap_text(verdict.context))
            if verdict.modified_input is not None:
                tool_input, input_changed = verdict.modified_input, True
                if "tool_input" in payload:
                    payload["tool_input"], stdin_for = tool_input, ""
                # the hooks after this one are chosen by what the tool will now receive
                later = self.registry.select(name, event.tool_name, tool_input)
                chain = chain[:position] + [
                    h for h in later if not h.is_async and run_order(h) > run_order(hook)]
            if verdict.modified_output is not None:
                tool_output, output_changed = verdict.modified_output, True
                if name == "after_tool":
                    payload["tool_output"], stdin_for = tool_output, ""
            if on_hook_done is not None:
                await on_hook_done(run)
            if verdict.deny:
                decision, blocked_by = "deny", verdict.blocked_by or hook.name
                reason = cap_text(verdict.reason or f"blocked by hook {hook.name}")
                break

        outcome = Outcome(
            event_type=name,
            decision=decision,
            reason=reason,
            blocked_by=blocked_by,
            modified_input=tool_input if input_changed and decision == "allow" else None,
            modified_output=tool_output if output_changed and decision == "allow" else None,
            additional_context=contexts,
            continue_working=decision == "deny" and name == "before_stop",
            hooks=runs,
            warnings=warnings,
        )
        if guard is not None:
            outcome = self._guard_after(guard, outcome)
        if self.log is not None:
            self._log_event(event, name, work_dir, outcome, outputs)
        return outcome

    def _fault(self, name: str, hooks: list[HookSpec], payload: dict[str, Any],
               work_dir: str) -> str | None:
        """What stops this event being decided, or None: broken hooks in scope, a payload
        we cannot hand on, a missing folder."""
        broken = self.registry.faults_for(name)
        if broken:
            shown = "; ".join(str(i) for i in broken[:5])
            more = f" (and {len(broken) - 5} more)" if len(broken) > 5 else ""
            return (f"{len(broken)} hook(s) that could handle {name} failed to load: {shown}"
                    f"{more}. Fix or remove them (`mcp-hooks validate` shows each problem)")
        if not hooks:
            return None
        deepest = matching.depth(payload)
        if deepest > matching.MAX_DEPTH:
            return (f"the event nests {deepest}+ levels deep; mcp-hooks hands hooks at most "
                    f"{matching.MAX_DEPTH}. Send a flatter tool input")
        if not os.path.isdir(work_dir):
            return f"work_dir {work_dir!r} is not an existing folder, so no hook can run in it"
        return None

    def _notes(self, name: str, event: Event) -> list[str]:
        """The warnings every outcome of this event carries: hooks held back by trust."""
        held = self.registry.untrusted_for(name, event.tool_name, event.tool_input)
        if not held:
            return []
        which = ", ".join(f"{u.name} ({u.status})" for u in held)
        project = held[0].project_dir
        return [f"project hook(s) not trusted, so not run: {which}. Read them, then trust "
                f"them with: mcp-hooks trust {shlex.quote(str(project))}"]

    def _work_dir(self, event: Event) -> str:
        if event.work_dir is not None:
            work_dir = event.work_dir
        elif self.registry.project_dir is not None:
            work_dir = str(self.registry.project_dir)
        else:
            work_dir = os.getcwd()
        return work_dir

    def _payload(self, name: str, event: Event, work_dir: str) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "event_type": name,
            "timestamp": _now(),
            "session_id": event.session_id,
            "work_dir": work_dir,
        }
        if event.tool_name is not None or name in ("before_tool", "after_tool",
                                                   "after_tool_failure"):
            payload["tool_name"] = event.tool_name
            payload["tool_input"] = event.tool_input
            payload["tool_use_id"] = event.tool_use_id
        if name == "after_tool" or event.tool_output is not None:
            payload["tool_output"] = event.tool_output
        if name == "after_tool_failure" or event.error is not None:
            payload["error"] = event.error
        for key, value in event.payload.items():
            payload.setdefault(key, value)
        payload["context"] = event.context
        return payload

    def _env(self, hook: HookSpec, event: Event, work_dir: str) -> dict[str, str]:
        key = (hook.dir, hook.name, hook.trigger, work_dir, event.session_id)
        env = self._envs.get(key)
        if env is None:  # built once per hook, folder and session (the runners never edit it)
            if len(self._envs) >= _ENV_CACHE:
                self._envs.clear()
            env = self._envs[key] = dict(self._base_env)
            env["AGENT_HOOKS_EVENT"] = hook.trigger
            env["AGENT_HOOKS_HOOK_NAME"] = hook.name
            env["AGENT_HOOKS_HOOK_DIR"] = str(hook.dir)
            # an event's own values can be any size; too big for exec (E2BIG), they reach
            # the hook on stdin only, so no event can make a spawn fail
            for var, value in (("AGENT_HOOKS_WORK_DIR", work_dir),
                               ("AGENT_HOOKS_SESSION_ID", event.session_id or "")):
                if len(value) <= _ENV_VALUE_CAP and _env_safe(value):
                    env[var] = value
        return env

    @staticmethod
    def _stdin(hook: HookSpec, payload: dict[str, Any]) -> bytes:
        payload["event_type"] = hook.trigger  # as the hook's own trigger spells it
        return _encode(payload)

    def fire_blocking(self, event: Event) -> Outcome:
        """``fire`` for a one-shot process, with no event loop at all.

        With ``one_shot`` the engine never suspends (hooks run in ``poll``, async hooks are
        handed to a detached process), so its coroutine runs to the end in one step.

        Raises:
            UnknownEventError: as ``fire``.
        """
        if not self.one_shot:
            raise RuntimeError("fire_blocking needs an Engine made with one_shot=True")
        step = self.fire(event)
        try:
            step.send(None)
        except StopIteration as done:
            outcome: Outcome = done.value
            return outcome
        step.close()
        raise RuntimeError("a one-shot engine must not wait on an event loop")

    # -- async hooks ---------------------------------------------------------------------

    def _schedule(
        self, hook: HookSpec, payload: dict[str, Any], work_dir: str, event: Event,
        detached: list[dict[str, Any]],
    ) -> HookRun:
        stdin = self._stdin(hook, payload)  # the original payload, whatever sync hooks do next
        run = HookRun(name=hook.name, scope=hook.scope, priority=hook.priority, mode="async",
                      status="scheduled")
        if self.detach_async:
            detached.append({
                "hook": {"name": hook.name, "scope": hook.scope, "priority": hook.priority},
                "argv": list(hook.entry),
                "stdin": stdin.decode(),
                "cwd": work_dir,
                "env": {k: v for k, v in self._env(hook, event, work_dir).items()
                        if k.startswith("AGENT_HOOKS_")},
                "timeout": hook.timeout / 1000,
                "limits": dataclasses.asdict(hook.limits),
            })
        elif self._tg is None:
            raise RuntimeError("an Engine must be entered (async with engine:) to run async hooks")
        else:
            self._tg.start_soon(self._run_async, hook, stdin, work_dir, event)
        return run

    def _spawn_detached(self, name: str, event: Event, jobs: list[dict[str, Any]]) -> None:
        from mcp_hooks.detached import spawn

        spawn({
            "event": name,
            "session_id": event.session_id,
            "log": str(self.log.path) if self.log is not None else None,
            "jobs": jobs,
        })

    async def _run_async(self, hook: HookSpec, stdin: bytes, work_dir: str, event: Event) -> None:
        # never one-shot: a one-shot engine hands its async hooks to a detached process
        result = await run_hook(hook.entry, stdin, cwd=work_dir,
                                env=self._env(hook, event, work_dir), timeout=hook.timeout / 1000,
                                limits=hook.limits)
        if self.log is not None:
            self.log.append(async_record(
                canonical_event(event.event_type), event.session_id,
                {"name": hook.name, "scope": hook.scope, "priority": hook.priority}, result,
            ))

    # -- the stop loop guard -------------------------------------------------------------

    def _guard_before(self, event: Event, payload: dict[str, Any]) -> tuple[str, int]:
        """The session's count of consecutive blocked stops, told to the hooks."""
        key = event.session_id or ""
        count = self._stop_blocks.get(key, 0) if event.session_id else 0
        given = event.payload.get("stop_block_count")
        if isinstance(given, int) and not isinstance(given, bool):
            count = max(count, given)
        payload["stop_block_count"] = count
        payload["stop_hook_active"] = count > 0 or bool(event.payload.get("stop_hook_active"))
        return key, count

    def _guard_after(self, guard: tuple[str, int], outcome: Outcome) -> Outcome:
        key, count = guard
        if not outcome.continue_working:
            self._stop_blocks.pop(key, None)
            return outcome
        if self.stop_block_cap and count >= self.stop_block_cap:
            self._stop_blocks.pop(key, None)
            note = (
                f"loop guard: the stop was allowed after {count} consecutive blocks "
                f"(cap {self.stop_block_cap}); {outcome.blocked_by} still says: {outcome.reason}"
            )
            return replace(outcome, decision="allow", continue_working=False, reason=None,
                           blocked_by=None, warnings=[*outcome.warnings, note])
        if key:
            self._stop_blocks[key] = count + 1
        return outcome

    # -- the log -------------------------------------------------------------------------

    def _log_event(
        self, event: Event, name: str, work_dir: str, outcome: Outcome,
        outputs: dict[str, RunResult],
    ) -> None:
        assert self.log is not None
        hooks = []
        for run in outcome.hooks:
            result = outputs.get(run.name)
            record = run.as_dict()
            if result is not None:
                if result.stdout:
                    record["stdout"] = _decode(result.stdout)
                if result.stderr:
                    record["stderr"] = _decode(result.stderr)
            hooks.append(record)
        self.log.append({
            "ts": _now(),
            "kind": "event",
            "event": name,
            "event_type": event.event_type,
            "session_id": event.session_id,
            "work_dir": work_dir,
            "tool_name": event.tool_name,
            "decision": outcome.decision,
            "reason": outcome.reason,
            "blocked_by": outcome.blocked_by,
            "continue_working": outcome.continue_working,
            "modified_input": outcome.modified_input is not None,
            "hooks": hooks,
            "warnings": outcome.warnings,
        })


def async_record(
    event: str, session_id: str | None, hook: dict[str, Any], result: RunResult
) -> dict[str, Any]:
    """The log record of one finished async hook."""
    if result.timed_out:
        status: Status = "timeout"
    elif result.exit_code == 0:
        status = "allow"
    else:
        status = "error"
    record: dict[str, Any] = {
        **hook, "mode": "async", "status": status, "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 3), "message": result.spawn_error,
    }
    if result.stdout:
        record["stdout"] = _decode(result.stdout)
    if result.stderr:
        record["stderr"] = _decode(result.stderr)
    return {"ts": _now(), "kind": "async_result", "event": event, "session_id": session_id,
            "hook": record}


_DENY_WORDS = frozenset({"deny", "block"})
_ALLOW_WORDS = frozenset({"allow", "approve"})


def _tail(data: bytes, size: int, limit: int = 500) -> str:
    text = _decode(data).strip()
    if len(text) > limit:
        text = "..." + text[-limit:]
    if size > len(data):
        text += f" [{size - len(data)} bytes beyond the 1 MiB kept were dropped]"
    return text


def _judge(hook: HookSpec, event: str, result: RunResult, on_fault: OnFault = "block",
           replaced: Mapping[str, HookSpec] | None = None) -> _Verdict:
    """Turn one sync run into its effect on the chain (exit codes, stdout JSON, fail policy)."""
    if result.spawn_error is not None:  # a hook that cannot start is our fault, not its own
        return _start_fault(hook, event, result.spawn_error, on_fault)
    verdict = _judge_run(hook, event, result)
    if replaced and hook.name in replaced and hook.scope == "project":
        note = (f"{hook.name}: the trusted project hook ran in place of the user hook of the "
                f"same name ({replaced[hook.name].dir})")
        verdict = _with_warning(verdict, note)
    return verdict


def _with_warning(verdict: _Verdict, note: str) -> _Verdict:
    if verdict is _ALLOW:
        verdict = _Verdict("allow")
    verdict.warning = f"{verdict.warning}; {note}" if verdict.warning else note
    return verdict


def _start_fault(hook: HookSpec, event: str, error: str, on_fault: OnFault) -> _Verdict:
    what = f"hook {hook.name} could not start: {error}; fix its entry script ({hook.dir})"
    outcome = fault_outcome(event, what, on_fault=on_fault)
    verdict = _Verdict("error")
    verdict.message = f"could not start: {error}"
    verdict.warning = outcome.warnings[-1]
    if outcome.denied:
        verdict.deny = True
        verdict.reason = outcome.reason
        verdict.blocked_by = FAULT_SOURCE
    return verdict


def _judge_run(hook: HookSpec, event: str, result: RunResult) -> _Verdict:
    if result.timed_out:
        return _failure(hook, "timeout", f"timed out after {hook.timeout} ms and was killed")
    code = result.exit_code
    if code == 0 and not result.stdout:
        return _ALLOW  # the common case: nothing to parse
    if code == 2:
        verdict = _Verdict("deny")
        verdict.deny = True
        stderr = _decode(result.stderr).strip()
        verdict.reason = stderr or f"blocked by hook {hook.name} (exit 2, no reason given)"
        verdict.message = cap_text(verdict.reason, 500)
        return verdict
    if code != 0:
        how = (f"exit {code}" if code is not None and code >= 0
               else f"killed by signal {-(code or 0)}")
        if result.limit:  # "hit metadata.limits.cpu_seconds (5 s)"
            how = f"{how}, {result.limit}"
        detail = _tail(result.stderr, result.stderr_size)
        return _failure(hook, "error", f"{how}" + (f": {detail}" if detail else ""))
    return _parse_stdout(hook, event, result)


def _failure(hook: HookSpec, status: Status, what: str) -> _Verdict:
    verdict = _Verdict(status)
    verdict.message = what
    if hook.on_error == "block":
        verdict.deny = True
        verdict.reason = (
            f"hook {hook.name} failed and fails closed (metadata.on_error: block): {what}"
        )
        verdict.warning = f"{hook.name}: {what}; blocked because it fails closed"
    else:
        verdict.warning = f"{hook.name}: {what}; allowed (fail open)"
    return verdict


def _parse_stdout(hook: HookSpec, event: str, result: RunResult) -> _Verdict:
    text = _decode(result.stdout).strip()
    if not text:
        return _Verdict("allow")
    if result.stdout_size > len(result.stdout):
        return _failure(hook, "error", "stdout is over 1 MiB, so it cannot be a decision")
    try:
        data = json.loads(text)
    except ValueError:
        return _failure(hook, "error", f"stdout is not JSON: {cap_text(text, 200)!r}")
    if not isinstance(data, dict):
        return _failure(hook, "error", f"stdout must be a JSON object, got {type(data).__name__}")

    notes: list[str] = []
    decision = data.get("decision")
    if decision is None:
        decision = "allow"
    word = decision.strip().lower() if isinstance(decision, str) else None
    unknown = word not in _DENY_WORDS and word not in _ALLOW_WORDS
    if word in _DENY_WORDS or (unknown and hook.on_error == "block"):
        verdict = _Verdict("deny")
        verdict.deny = True
        reason = data.get("reason")
        verdict.reason = str(reason) if reason else f"blocked by hook {hook.name}"
        if unknown:  # a fail-closed hook that says something we cannot read denies
            verdict.reason = (f"hook {hook.name} fails closed and its decision {decision!r} "
                              f"is not allow or deny: {verdict.reason}")
            notes.append(f"decision {decision!r} is not allow or deny; denied (fails closed)")
        verdict.message = cap_text(verdict.reason, 500)
    else:
        verdict = _Verdict("allow")
        if unknown:
            notes.append(f"decision {decision!r} is not allow or deny; treated as allow")

    modified = data.get("modified_input")
    if modified is not None:
        if not isinstance(modified, dict):
            notes.append("modified_input must be a JSON object; ignored")
        elif event != "before_tool":
            notes.append(f"modified_input only applies to before_tool, not {event}; ignored")
        else:
            verdict.modified_input = modified
    if "modified_output" in data and data["modified_output"] is not None:
        if event != "after_tool":
            notes.append(f"modified_output only applies to after_tool, not {event}; ignored")
        else:
            verdict.modified_output = data["modified_output"]
    context = data.get("additional_context")
    if isinstance(context, list):
        context = "\n".join(str(c) for c in context)
    if context:
        verdict.context = str(context)
    log = data.get("log")
    if log and verdict.message is None:
        verdict.message = cap_text(str(log), 500)
    if notes:
        verdict.warning = f"{hook.name}: " + "; ".join(notes)
    return verdict
