"""Resource limits on a run's processes (``metadata.limits``, parsed by ``mcp_hooks.spec.limits``).

``posix_spawn`` cannot set rlimits. ``open_files`` (the one limit set by default) is set before
exec: the engine lowers its own soft RLIMIT_NOFILE around the spawn (``posix_spawn`` or Popen
alike), under a lock, so the child starts with it (fds already open stay valid; another thread
of the engine that opens a file in that moment, with as many fds open as the limit, would get
EMFILE). When the engine holds more fds than the limit, the spawn's pipes cannot be handed over
under it: then ``sh -c 'ulimit -S -n N; exec ...'`` lowers it before the hook's exec (one more
exec, only in that case). The other limits are not safe to set that way: a ``cpu_seconds`` below
the CPU time the engine has used sends the engine SIGXCPU; an ``address_space_mb`` below the
engine's own size fails glibc's own stack ``mmap`` in ``posix_spawn`` (and other threads'
allocations); ``processes`` (RLIMIT_NPROC, counted per user) below the user's count fails the
engine's own fork. An exec wrapper (``prlimit(1)``, ``sh -c 'ulimit ...; exec'``) costs 1.8-2.1x
a whole ``sh`` hook here. So all limits (``open_files``' hard one too) are set with
``prlimit(2)`` on the child as soon as the spawn returns, which is just after its exec: normally
microseconds, but longer if the engine is preempted, in which the hook runs under the engine's
limits. CPU time is counted from the start anyway; an allocation or open in that moment stands;
a process the hook forked in that moment is found (the child's children are read right after)
and limited too, with its own (a fork still under way in the kernel then can be missed). The
library path (``MCP_HOOKS_RUNNER=library``) sets every limit in the child before its exec
instead (``preexec_fn``, the standard library's way, which costs a fork).

Soft and hard limits are both set (the hook cannot raise them back), except ``cpu_seconds``:
soft N, hard N+1, so a hook gets SIGXCPU at N seconds and SIGKILL at N+1. What a run can tell
(``RunResult.limit``): certainly a CPU hit (the leader killed by SIGXCPU, exit 152 from a
shell whose child was, or SIGKILL after N seconds of CPU); for the others, only a hint from
the hook's stderr (``MemoryError``, "Cannot allocate memory", "Too many open files",
"Cannot fork", ...) when it failed, reported as "probably". RLIMIT_NPROC is not enforced for
root at all, and for others counts all the user's processes.

``plan_limits`` turns ``Limits`` into the (resource, soft, hard) steps to set, ``apply_limits`` sets
them on a child and what it forked, and ``limit_hit`` tells from a finished run which limit it
probably hit.
"""

from __future__ import annotations

import resource
import signal

from mcp_hooks.runner.spawn import Child
from mcp_hooks.runner.tree import children_of
from mcp_hooks.spec.limits import Limits

_MIB = 1 << 20
# (Limits field, resource name, unit in messages)
_RLIMITS = (("address_space_mb", "RLIMIT_AS", "MiB"), ("cpu_seconds", "RLIMIT_CPU", "s"),
            ("processes", "RLIMIT_NPROC", ""), ("open_files", "RLIMIT_NOFILE", ""))
_plans: dict[Limits, tuple[tuple[int, int, int], ...]] = {}


def plan_limits(limits: Limits) -> tuple[tuple[int, int, int], ...]:
    """(resource, soft, hard) to set for ``limits``, within this process's hard limits."""
    cached = _plans.get(limits)
    if cached is None:
        steps = []
        for field, name, _ in _RLIMITS:
            value = getattr(limits, field)
            if value is None or not hasattr(resource, name):
                continue
            res = getattr(resource, name)
            soft = value * _MIB if field == "address_space_mb" else value
            hard = soft + 1 if field == "cpu_seconds" else soft  # SIGXCPU first, then SIGKILL
            ceiling = resource.getrlimit(res)[1]
            if ceiling != resource.RLIM_INFINITY:  # only root could raise a hard limit
                soft, hard = min(soft, ceiling), min(hard, ceiling)
            steps.append((res, soft, hard))
        cached = _plans[limits] = tuple(steps)
    return cached


def apply_limits(pid: int, plan: tuple[tuple[int, int, int], ...], before: int | None) -> None:
    """Set ``plan`` on ``pid``, and on anything it forked before that unless the only limit is
    the one the child already started with (``before``: RLIMIT_NOFILE); raises OSError.

    (Reading the child's /proc entries waits for the end of its exec: about 40 µs here, which
    only a hook with opt-in limits pays.)
    """
    follow = any(res != before for res, _, _ in plan)
    todo = [pid]
    while todo:
        target = todo.pop()
        for res, soft, hard in plan:
            try:
                resource.prlimit(target, res, (soft, hard))
            except ProcessLookupError:
                break
        if follow:
            todo.extend(children_of(target))


def limit_hit(limits: Limits, child: Child, stderr: bytes) -> str | None:
    """Which limit a finished hook hit, when that can be told (see the module docstring)."""
    code = child.returncode
    if not code:
        return None
    cpu = limits.cpu_seconds
    if cpu is not None and (code in (-signal.SIGXCPU, 128 + signal.SIGXCPU)
                            or (code == -signal.SIGKILL and child.cpu >= cpu)):
        return f"hit metadata.limits.cpu_seconds ({cpu} s)"
    for field, words in _LIMIT_WORDS:
        value = getattr(limits, field)
        if value is None:
            continue
        for word in words:
            if word in stderr:
                unit = " MiB" if field == "address_space_mb" else ""
                return (f"probably hit metadata.limits.{field} ({value}{unit}): its stderr "
                        f"says {word.decode()!r}")
    return None


_LIMIT_WORDS = (
    ("address_space_mb", (b"MemoryError", b"Cannot allocate memory", b"out of memory",
                          b"Out of memory", b"bad_alloc")),
    ("open_files", (b"Too many open files",)),
    ("processes", (b"Cannot fork", b"can't fork", b"fork: Resource temporarily unavailable",
                   b"fork: retry")),
)
