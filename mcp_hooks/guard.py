"""What a door's guard answers with the fail-closed deny, and what it must let through.

Each door has exactly one guard, at its boundary, that turns an unexpected exception into
the fail-closed answer in that door's form:

==========================  ==========================================================
door                        its one guard
==========================  ==========================================================
MCP ``fire_hook_event``     ``server.tools`` (the tool function)
proxy ``tools/call``        ``proxy.gate.Gate.fire`` (builds and fires every event)
``bridge <host>``           ``hosts.bridge.answer`` (the host's form; never raises)
``fire``                    ``cli.main`` (``GATES``: ``fire``'s deny, exit 2)
``/hooks/bridge/<host>``    ``hosts.forward.answer_payload``
``/hooks/fire``             ``server.forward.fire_route``'s endpoint
``Hooks.fire``/``afire``    ``api.Hooks.fire``/``afire``
each framework adapter      ``adapters._firing.Firing`` (over ``Hooks`` unguarded)
==========================  ==========================================================

The layers under a door (the service, the engine, the runner, the registry) raise; the
engine only records the event in the log as the fault first (``Engine._note_fault``), so
the log holds one record of it. A hook's own failure is not a door fault: a callable's
exception (``callables.CallableHook.call``) or an oracle's is judged as that hook's result.
``tests/test_guard_boundaries.py`` checks both: each door answers a fault injected at the
bottom once, and nothing below the doors catches everything without re-raising but for the
reasons it lists.

Each guard catches ``BaseException``, not ``Exception``: a hook, an oracle or a Python
callable that raises ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``,
``asyncio.CancelledError`` or its own ``BaseException`` subclass gets the same answer as one
that raises ``ValueError``, a deny naming it, and nothing of it reaches the caller as an
exception.

A guard in a coroutine lets two things through (``passes_through``), because they are not
failures but the caller's own control flow: the coroutine being closed (``GeneratorExit``
thrown into it) and the task that awaits it being cancelled (an asyncio ``CancelledError``
while ``Task.cancelling()`` counts a request, Python 3.11+; on 3.10, which keeps no count,
any ``CancelledError`` is taken as the caller's). A callable's own ``CancelledError`` or
``GeneratorExit`` never gets that far: ``callables.CallableHook.call`` tells what the callable
raised from what was thrown into it, exactly, on every version. A guard in a thread lets the
caller's own Ctrl-C through the same way (``callers_own``): one that reached it while it
waited for the thread that runs its hooks, not one a hook raised.
"""

from __future__ import annotations

import sys

__all__ = ["caller_cancelled", "callers_own", "mark_callers_own", "named", "passes_through"]


def caller_cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is the cancellation of the asyncio task running this code."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None or not isinstance(exc, asyncio.CancelledError):
        return False  # no asyncio loaded: no task can be cancelled
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop: nobody awaits this code
        return False
    if task is None:
        return False
    cancelling = getattr(task, "cancelling", None)
    return cancelling is None or cancelling() > 0


def passes_through(exc: BaseException) -> bool:
    """Whether a guard in a coroutine must re-raise ``exc`` (see the module docstring)."""
    return isinstance(exc, GeneratorExit) or caller_cancelled(exc)


def mark_callers_own(exc: BaseException) -> None:
    """Mark ``exc`` as the caller's own interruption: a ``KeyboardInterrupt`` that reached a
    thread while it waited for another to run its hooks (``lanes.Worker.run``)."""
    exc._mcp_hooks_callers_own = True  # type: ignore[attr-defined]


def callers_own(exc: BaseException) -> bool:
    """Whether a synchronous guard must re-raise ``exc``: marked by ``mark_callers_own``."""
    return getattr(exc, "_mcp_hooks_callers_own", False) is True


def named(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` (the type alone when there is no message), capped for an agent."""
    text = str(exc)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
