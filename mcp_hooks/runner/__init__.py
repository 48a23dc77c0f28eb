"""One hook as a subprocess: payload on stdin, capped output, timeout, process-group kill.

The child runs in a session (and so a process group) of its own, with the payload on stdin
and stdout/stderr on separate pipes, never through a shell. A child that exits while a
grandchild still holds its stdout does not hang the event. On timeout the whole group gets
SIGTERM, a short grace, then SIGKILL; the leader is reaped only after the group is killed,
so its pid (the group's id) cannot be reused in between. When a run ends, nothing the hook
started survives it (Linux), and its ``metadata.limits`` applied to every process of it.

Nothing here raises for a hook's failure: a spawn error (a missing script, an environment
too big for exec, a NUL byte in it, ...), a timeout or a crash is a ``RunResult`` with the
matching fields set.

One core of rules, and drivers that only decide how to wait:

- ``core``: the rules of a run (``Run``: spawn marked and limited, stdin, caps, deadline,
  TERM -> grace -> KILL, group kill, reap) and ``RunResult``;
- ``spawn``: ``posix_spawn`` or ``subprocess.Popen``, pidfd or ``waitid``, chosen by the
  ``Strategy`` in ``MCP_HOOKS_RUNNER`` (``library``, ``no-pidfd``, ``no-posix-spawn``);
- ``tree``: the run id in every process's environment, the subreaper and the sweep;
- ``rlimits``: how the limits are set, and what a run can tell of a hit;
- ``blocking``: ``run_hook_blocking``, waiting in ``poll`` (one-shot processes: no asyncio);
- ``eventloop``: ``run_hook``, the hand-written fast path on loop callbacks and a shared
  pidfd epoll set (a server's engine; it needs asyncio);
- ``library``: ``run_hook`` on asyncio's subprocess support, behind ``MCP_HOOKS_RUNNER=library``,
  for comparison in the bench.

Every driver keeps every promise above under every strategy this machine can honour;
``tests/runner/test_runner.py`` and ``tests/runner/test_process_tree.py`` run each behaviour over
each
combination.
"""

from __future__ import annotations

from mcp_hooks.runner.blocking import run_hook_blocking
from mcp_hooks.runner.core import KILL_GRACE, OUTPUT_CAP, RunResult
from mcp_hooks.runner.eventloop import run_hook
from mcp_hooks.runner.spawn import STRATEGY_VAR, Strategy, adopt, using
from mcp_hooks.runner.tree import RUN_ID_VAR, SWEEP_LIMIT

__all__ = [
    "KILL_GRACE",
    "OUTPUT_CAP",
    "RUN_ID_VAR",
    "STRATEGY_VAR",
    "SWEEP_LIMIT",
    "RunResult",
    "Strategy",
    "adopt",
    "run_hook",
    "run_hook_blocking",
    "using",
]
