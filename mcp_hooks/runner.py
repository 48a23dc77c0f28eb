"""One hook as a subprocess: payload on stdin, capped output, timeout, process-group kill.

The child runs in a session (and so a process group) of its own, with the payload on stdin
and stdout/stderr on separate pipes, never through a shell. Pipes are pumped by event-loop
callbacks rather than tasks, and the child's exit is watched through a pidfd that joins an
epoll set the loop's running hooks share (``_ExitWatcher``), so a run costs little more than
the spawn itself, and a child that exits while a grandchild still holds its stdout does not
hang the event. On timeout the whole group gets SIGTERM, a short grace, then
SIGKILL; the leader is reaped only after the group is killed, so its pid (the group's id)
cannot be reused in between.

Spawning uses ``posix_spawn`` (a vfork-style spawn, the cheapest Python offers) when the
child's working folder can be set safely: when it is already the process's own, or when this
is the only thread (the folder is switched around the spawn). Otherwise ``subprocess.Popen``
with ``cwd``.

Nothing here raises for a hook's failure: a spawn error (a missing script, an environment
too big for exec, a NUL byte in it, ...), a timeout or a crash is a ``RunResult`` with the
matching fields set.

A hook's processes end with its run (Linux)
-------------------------------------------
When a run ends, normally or by its timeout, nothing the hook started survives it: background
children, children that left the hook's session (``setsid``) and double forks included.

- On the first run the engine's process makes itself a child subreaper
  (``prctl(PR_SET_CHILD_SUBREAPER)``), so a hook process whose parent dies is re-parented to
  the engine instead of to init.
- Every run's environment carries ``AGENT_HOOKS_RUN_ID``: ``<engine pid>.<run number>``,
  appended with ``/`` to an id the caller's environment already had (a hook that runs
  mcp-hooks itself). The caller's mapping is copied, never changed.
- When the leader has exited (or been killed on timeout), its group gets SIGKILL (it is
  reaped only afterwards, so the group id cannot be reused), then ``_Reaper.sweep`` reads the
  engine's children (``/proc/<pid>/task/<pid>/children``: orphans are re-parented to the main
  thread), SIGKILLs each one whose ``/proc/<pid>/environ`` carries an id of this process for a
  run no longer active, and reaps exactly those pids (``waitpid(pid)``, never ``waitpid(-1)``:
  asyncio and the proxy own other children). Their children are re-parented in turn, so it
  repeats until a pass finds nothing (bounded: what is still dying then is reaped by a later
  sweep). Orphans marked with a run still going are left to that run.
- Zombies re-parented to the engine are reaped when their session is neither the engine's nor
  their own: such a process cannot be anybody's direct child, so no one else will wait for it
  (a dead double-forked daemon, a dead member of a hook's session).
- Unmarked living children are never touched: the proxy's upstream servers, their own
  children, anything else the embedding program spawned.

Where it does not reach:

- a process that scrubs or rewrites its environment (``env -i``, a daemon that resets it)
  and then outlives its parent: nothing marks it as the hook's any more. A process it starts
  while its parent is alive is still found once the parent dies, if the marker survived.
- a process whose environ the engine may not read (a setuid program, when not root);
- a process that left the hook's session with ``setsid`` and exited on its own before the
  sweep saw it stays a zombie of the engine until the engine exits (its session is its own
  pid, like a direct child started with ``start_new_session``, which must be left to its
  owner's ``wait``). So do dead orphans of the embedding program's own children that stayed
  in the engine's session: the subreaper makes them the engine's, as they would have been
  init's.
- a process that escaped to another subreaper or PID namespace, or is stuck in the kernel
  (D state) past the sweep's bound (it got SIGKILL and is reaped by a later run's sweep).
- non-Linux systems (no ``prctl``, no ``/proc``): only the process group is killed; and a
  kernel without ``CONFIG_PROC_CHILDREN`` makes each sweep scan ``/proc/*/stat`` (slower).

A cgroup per run would also catch the first case, but is not used: moving a process into a
cgroup costs about 200 µs here (mkdir and rmdir another 50 µs), a quarter of a whole ``sh``
hook's run, and it needs a writable, delegated cgroup v2 subtree, which a user's CLI or an
agent's MCP server does not have (this machine mounts v2 beside v1, at
``/sys/fs/cgroup/unified``).

Resource limits (``mcp_hooks.limits``)
--------------------------------------
``posix_spawn`` cannot set rlimits. ``open_files`` (the one limit set by default) is set
before exec: the engine lowers its own soft RLIMIT_NOFILE around the spawn, under a lock, so
the child starts with it (fds already open stay valid; another thread of the engine that
opens a file in that moment, with as many fds open as the limit, would get EMFILE). The other
limits are not safe to set that way: a ``cpu_seconds`` below the CPU time the engine has used
sends the engine SIGXCPU; an ``address_space_mb`` below the engine's own size fails glibc's
own stack ``mmap`` in ``posix_spawn`` (and other threads' allocations); ``processes``
(RLIMIT_NPROC, counted per user) below the user's count fails the engine's own fork. An exec
wrapper (``prlimit(1)``, ``sh -c 'ulimit ...; exec'``) costs 1.8-2.1x a whole ``sh`` hook
here. So all limits (``open_files``' hard one too, and all of them after a Popen spawn) are
set with ``prlimit(2)`` on the child as soon as the spawn returns, which is just after its
exec: normally microseconds, but longer if the engine is preempted, in which the hook runs
under the engine's limits. CPU time is counted from the start anyway; an allocation or open
in that moment stands; a process the hook forked in that moment is found (the child's
children are read right after) and limited too, with its own.

Soft and hard limits are both set (the hook cannot raise them back), except ``cpu_seconds``:
soft N, hard N+1, so a hook gets SIGXCPU at N seconds and SIGKILL at N+1. What a run can tell
(``RunResult.limit``): certainly a CPU hit (the leader killed by SIGXCPU, exit 152 from a
shell whose child was, or SIGKILL after N seconds of CPU); for the others, only a hint from
the hook's stderr (``MemoryError``, "Cannot allocate memory", "Too many open files",
"Cannot fork", ...) when it failed, reported as "probably". RLIMIT_NPROC is not enforced for
root at all, and for others counts all the user's processes.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import select
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from mcp_hooks.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    import asyncio

OUTPUT_CAP = 1 << 20  # bytes kept per stream; the rest is drained and counted
KILL_GRACE = 0.2  # seconds between SIGTERM and SIGKILL
_CHUNK = 1 << 16
_PIPE_ROOM = 1 << 16  # a payload this small fits an empty pipe: write it in one go
# With a pidfd to tell us the child exited, its output waits in the pipes (64 KiB each) and is
# read once at exit: no wake-up per pipe for a quick hook. A hook still running after this
# long gets readers, so one that writes more than a pipe holds is drained, never stuck.
_READ_DELAY = 0.005
_HAS_PIDFD = hasattr(os, "pidfd_open")
_HAS_SPAWN = hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_DUP2")
RUN_ID_VAR = "AGENT_HOOKS_RUN_ID"  # marks every process of a run: see the module docstring
SWEEP_LIMIT = 5.0  # seconds a run's end waits for the processes it killed to be reaped


class RunResult(NamedTuple):
    """What one run of a hook produced (a tuple: it costs a hook's run the least).

    Attributes:
        exit_code: the exit status; negative for a signal; None if it never ran or timed out.
        stdout, stderr: the first ``OUTPUT_CAP`` bytes of each stream.
        stdout_size, stderr_size: how many bytes each stream carried in all.
        duration_ms: wall time from spawn to reaping.
        timed_out: the run hit its timeout and its process group was killed.
        spawn_error: why the script could not be started (missing, not executable, ...).
        limit: which ``metadata.limits`` the hook hit, when that can be told, e.g.
            "hit metadata.limits.cpu_seconds (5 s)"; None otherwise.
    """

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_size: int = 0
    stderr_size: int = 0
    duration_ms: float = 0.0
    timed_out: bool = False
    spawn_error: str | None = None
    limit: str | None = None


class _Child:
    """A spawned child: its pid and our ends of its three pipes."""

    __slots__ = ("cpu", "err_fd", "in_fd", "nofile_set", "out_fd", "pid", "popen", "returncode")

    def __init__(self, pid: int, in_fd: int, out_fd: int, err_fd: int,
                 popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.popen = popen
        self.returncode: int | None = None
        self.cpu = 0.0  # CPU seconds the leader used, known once it is reaped
        self.nofile_set = False  # it started with the run's RLIMIT_NOFILE (set before exec)

    def wait(self) -> int:
        while self.returncode is None:
            try:
                _, status, usage = os.wait4(self.pid, 0)
            except ChildProcessError:  # reaped elsewhere
                self.returncode = -1
                break
            except InterruptedError:
                continue
            self.cpu = usage.ru_utime + usage.ru_stime
            self._set(status)
        assert self.returncode is not None
        return self.returncode

    def wait_exit(self) -> None:
        """Block until the child has exited, leaving it unreaped (its group id stays ours)."""
        while self.returncode is None:
            try:
                os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            except InterruptedError:
                continue
            except ChildProcessError:
                pass
            return

    def _set(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        if self.popen is not None:
            self.popen.returncode = self.returncode  # it must not wait for it again


def _spawn(argv: Sequence[str], cwd: str, env: Mapping[str, str],
           nofile: int | None = None) -> _Child:
    """Start ``argv`` in a new session with three pipes; raises OSError.

    ``nofile``: a soft RLIMIT_NOFILE the child starts with (posix_spawn only: the caller
    sets it, and the rest, with prlimit afterwards too).
    """
    if _HAS_SPAWN:
        here = _cwd_or_none()
        if here == cwd:
            return _posix_spawn(argv, env, nofile)
        if threading.active_count() == 1 and here is not None:
            os.chdir(cwd)  # no other thread can see the switch
            try:
                return _posix_spawn(argv, env, nofile)
            finally:
                os.chdir(here)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True,
                            bufsize=0)
    assert proc.stdin and proc.stdout and proc.stderr
    fds = (os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno()),
           os.dup(proc.stderr.fileno()))
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    return _Child(proc.pid, *fds, popen=proc)


def _cwd_or_none() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


_nofile_lock = threading.Lock()


def _posix_spawn(argv: Sequence[str], env: Mapping[str, str], nofile: int | None) -> _Child:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
               (os.POSIX_SPAWN_DUP2, err_w, 2)]
    lowered = False
    try:
        # glibc refuses a dup2 file action whose fd is not below the soft limit (EBADF): with
        # more fds open than the hook may have, the limit is left to prlimit after the spawn
        if nofile is None or max(in_r, out_w, err_w) >= nofile:
            pid = os.posix_spawn(argv[0], list(argv), env, file_actions=actions, setsid=True)
        else:
            lowered = True
            # The one limit that is safe to lower in this process around the spawn, so the
            # child starts with it (see the module docstring): the soft limit only (a hard one
            # could not be raised back), and the fds already open stay valid.
            import resource

            argl = list(argv)
            with _nofile_lock:
                own = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, own[1]))
                try:
                    pid = os.posix_spawn(argv[0], argl, env, file_actions=actions, setsid=True)
                finally:
                    resource.setrlimit(resource.RLIMIT_NOFILE, own)
    except BaseException:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    child = _Child(pid, in_w, out_r, err_r)
    child.nofile_set = lowered
    return child


# -- a run's processes: marked, limited, and swept at its end (see the module docstring) ---


def _set_subreaper() -> bool:
    """Make this process a child subreaper; False where that cannot be done."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux, or no prctl
        return False


def _read_proc(path: str) -> bytes | None:
    """A /proc file's content, or None when the process is gone or not ours to read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat_fields(pid: int) -> list[bytes] | None:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, session, ..."""
    data = _read_proc(f"/proc/{pid}/stat")
    if not data:
        return None
    return data[data.rfind(b")") + 2:].split()


def _children_of(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (empty if it is gone)."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        data = _read_proc(f"/proc/{pid}/task/{tid}/children")
        if data:
            found.extend(map(int, data.split()))
    return found


class _Reaper:
    """The runs of this process: their numbers, their leaders, and what was killed.

    One per process (a forked child starts afresh, see ``_reaper``). ``begin`` numbers a run
    and marks its environment; ``end`` retires it; ``sweep_pass`` kills and reaps what ended
    runs left behind.
    """

    __slots__ = ("active", "children_file", "doomed", "leaders", "lock", "me", "pid",
                 "runs", "sid", "subreaper")

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.me = str(self.pid).encode()
        self.lock = threading.Lock()
        self.runs = 0
        self.active: set[int] = set()  # numbers of the runs not yet ended
        self.leaders: set[int] = set()  # pids of the runs' own children, not yet reaped
        self.doomed: set[int] = set()  # pids killed or found dead, not yet reaped
        self.sid = os.getsid(0)
        self.subreaper = _set_subreaper()
        # orphans are re-parented to the first living thread: the main one
        path = f"/proc/{self.pid}/task/{self.pid}/children"
        self.children_file: str | None = path if os.path.exists(path) else None

    def begin(self, env: Mapping[str, str]) -> tuple[int, dict[str, str]]:
        """A new run's number and its environment: a copy of ``env`` with its mark."""
        with self.lock:
            self.runs += 1
            run = self.runs
            self.active.add(run)
        token = f"{self.pid}.{run}"
        outer = env.get(RUN_ID_VAR)
        marked = dict(env)
        marked[RUN_ID_VAR] = f"{outer}/{token}" if outer else token
        return run, marked

    def end(self, run: int) -> None:
        self.active.discard(run)

    def _children(self) -> list[int]:
        if self.children_file is not None:
            data = _read_proc(self.children_file)
            return list(map(int, data.split())) if data else []
        if not self.subreaper:
            return []  # nothing is re-parented to us: nothing to find
        found = []  # no CONFIG_PROC_CHILDREN: every process's parent, the slow way
        me = str(self.pid).encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                fields = _stat_fields(int(entry))
                if fields is not None and len(fields) > 1 and fields[1] == me:
                    found.append(int(entry))
        return found

    def _ended_run(self, environ: bytes) -> bool:
        """Whether an environ carries the mark of one of our runs that has ended."""
        at = environ.find(b"\0" + RUN_ID_VAR.encode() + b"=")
        if at < 0:
            if not environ.startswith(RUN_ID_VAR.encode() + b"="):
                return False
            at = -1
        start = at + len(RUN_ID_VAR) + 2
        end = environ.find(b"\0", start)
        value = environ[start:] if end < 0 else environ[start:end]
        for token in value.split(b"/"):
            pid, _, run = token.partition(b".")
            if pid == self.me and run.isdigit() and int(run) not in self.active:
                return True
        return False

    def sweep_pass(self, killed: set[int]) -> bool:
        """Kill our children marked by ended runs and reap what is dead; True while there may
        be more (something was killed or reaped, so its children may just have become ours,
        or something in ``killed`` is still dying)."""
        if not self.subreaper and self.children_file is None:
            return False
        acted = False
        with self.lock:
            for pid in self._children():
                if pid in self.leaders or pid in self.doomed:
                    continue
                environ = _read_proc(f"/proc/{pid}/environ")
                if environ:
                    if self._ended_run(environ):
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)  # our child: its pid is still its own
                        self.doomed.add(pid)
                        killed.add(pid)
                        acted = True
                    continue
                fields = _stat_fields(pid)  # no environ: a zombie, or not ours to read
                if (fields is not None and len(fields) > 3 and fields[0] == b"Z"
                        and int(fields[3]) not in (self.sid, pid)):
                    self.doomed.add(pid)  # nobody's direct child: nobody else waits for it
            for pid in list(self.doomed):
                try:
                    done = os.waitpid(pid, os.WNOHANG)[0]
                except ChildProcessError:
                    done = pid
                if done:
                    self.doomed.discard(pid)
                    killed.discard(pid)
                    acted = True
        return acted or bool(killed)

    def sweep(self, limit: float = SWEEP_LIMIT) -> None:
        """Sweep until nothing is left, waiting up to ``limit`` for killed processes."""
        killed: set[int] = set()
        deadline = time.monotonic() + limit
        while self.sweep_pass(killed) and time.monotonic() < deadline:
            time.sleep(0.001)

    async def sweep_async(self, limit: float = SWEEP_LIMIT) -> None:
        """``sweep`` for an event loop: the waits between passes yield to it."""
        killed: set[int] = set()
        deadline = time.monotonic() + limit
        while self.sweep_pass(killed) and time.monotonic() < deadline:
            await _sleep(0.001)


_the_reaper: _Reaper | None = None


def _reaper() -> _Reaper:
    """This process's reaper, made on its first run (and again in a forked child)."""
    global _the_reaper
    reaper = _the_reaper
    if reaper is None or reaper.pid != os.getpid():
        reaper = _the_reaper = _Reaper()
    return reaper


_MIB = 1 << 20
# (Limits field, resource name, unit in messages)
_RLIMITS = (("address_space_mb", "RLIMIT_AS", "MiB"), ("cpu_seconds", "RLIMIT_CPU", "s"),
            ("processes", "RLIMIT_NPROC", ""), ("open_files", "RLIMIT_NOFILE", ""))
_plans: dict[Limits, tuple[tuple[int, int, int], ...]] = {}


def _plan(limits: Limits) -> tuple[tuple[int, int, int], ...]:
    """(resource, soft, hard) to set for ``limits``, within this process's hard limits."""
    plan = _plans.get(limits)
    if plan is None:
        import resource

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
        plan = _plans[limits] = tuple(steps)
    return plan


def _apply_limits(pid: int, plan: tuple[tuple[int, int, int], ...], before: int | None) -> None:
    """Set ``plan`` on ``pid``, and on anything it forked before that unless the only limit is
    the one the child already started with (``before``: RLIMIT_NOFILE); raises OSError.

    (Reading the child's /proc entries waits for the end of its exec: about 40 µs here, which
    only a hook with opt-in limits pays.)
    """
    import resource

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
            todo.extend(_children_of(target))


def _limit_hit(limits: Limits, child: _Child, stderr: bytes) -> str | None:
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


class _Stream:
    __slots__ = ("cap", "chunks", "eof", "fd", "kept", "size")

    def __init__(self, fd: int, cap: int) -> None:
        os.set_blocking(fd, False)  # drained at exit without waiting on a grandchild
        self.fd = fd
        self.eof = False
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.size = 0

    def read_once(self) -> bool | None:
        """One read of our (non-blocking) end of the pipe.

        Returns True at end of file (or on an error), False after reading data, None when
        the pipe is empty for now (a grandchild may still hold its other end).
        """
        try:
            data = os.read(self.fd, _CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return True
        if not data:
            return True
        self.size += len(data)
        room = self.cap - self.kept
        if room > 0:
            kept = data[:room]
            self.chunks.append(kept)
            self.kept += len(kept)
        return False

    def drain(self) -> None:
        """Read what is in the pipe now, without waiting for more."""
        while self.read_once() is False:
            pass

    def value(self) -> bytes:
        return b"".join(self.chunks)


class _ExitWatcher:
    """What the running hooks of one event loop share: an epoll set for their pidfds, and
    one timer for starting their readers.

    The loop watches the set's one descriptor; a hook's pidfd joins and leaves the set with
    a C call each, where ``loop.add_reader`` would cost a handle, a selector key and an
    ``epoll_ctl`` through Python per run. Every hook starts its readers ``_READ_DELAY``
    after its spawn, so those moments come in order: one queue and one loop timer serve
    them all, where a timer per run would cost a handle and a cancel each. (The watcher
    keeps no reference to the loop, so the loop can be collected; see ``_watchers``.)
    """

    __slots__ = ("armed", "epoll", "pumps", "runs", "soon")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.epoll = select.epoll()
        self.pumps: dict[int, _Pump] = {}
        # (when, pidfd, run number) of the runs whose readers are due then: the pidfd alone
        # may have been closed and reused by a later run since
        self.soon: collections.deque[tuple[float, int, int]] = collections.deque()
        self.runs = 0
        self.armed = False
        loop.add_reader(self.epoll.fileno(), self._on_exit)

    def watch(self, loop: asyncio.AbstractEventLoop, pidfd: int, pump: _Pump) -> None:
        self.epoll.register(pidfd, select.EPOLLIN)
        self.pumps[pidfd] = pump
        self.runs += 1
        pump.run = self.runs
        when = loop.time() + _READ_DELAY
        self.soon.append((when, pidfd, self.runs))
        if not self.armed:
            loop.call_at(when, self._on_due, loop)
            self.armed = True

    def forget(self, pidfd: int) -> None:
        if self.pumps.pop(pidfd, None) is not None:
            self.epoll.unregister(pidfd)

    def _on_exit(self) -> None:
        for pidfd, _ in self.epoll.poll(0):
            pump = self.pumps.pop(pidfd, None)
            if pump is not None:
                self.epoll.unregister(pidfd)
                pump.on_exit()

    def _on_due(self, loop: asyncio.AbstractEventLoop) -> None:
        soon = self.soon
        now = loop.time() + 0.001  # the loop runs a timer up to its clock resolution early
        try:
            while soon and soon[0][0] <= now:
                _, pidfd, run = soon.popleft()
                pump = self.pumps.get(pidfd)
                if pump is not None and pump.run == run:
                    pump.start_reading()
        finally:  # whatever happened, the runs still queued keep their timer
            if soon:
                loop.call_at(soon[0][0], self._on_due, loop)
            else:
                self.armed = False


# One watcher per loop, dropped with its loop.
_watchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _ExitWatcher] = (
    weakref.WeakKeyDictionary())


def _exit_watcher(loop: asyncio.AbstractEventLoop) -> _ExitWatcher:
    watcher = _watchers.get(loop)
    if watcher is None:
        watcher = _watchers[loop] = _ExitWatcher(loop)
    return watcher


class _Pump:
    """Feeds stdin and drains stdout/stderr from loop callbacks until the child exits.

    ``done`` resolves when the child has exited (not yet reaped), or when the timeout fires
    first (``timed_out`` set). With a pidfd, the child's output waits in its pipes and is
    read once, at exit; readers are added only for a child still running after
    ``_READ_DELAY``, so one that writes more than a pipe holds is drained, never stuck.
    """

    __slots__ = ("child", "deadline", "done", "err", "exited", "loop", "out", "payload",
                 "pidfd", "reading", "run", "stdin_fd", "timed_out", "timer", "watcher",
                 "writing")

    def __init__(self, loop: asyncio.AbstractEventLoop, child: _Child, payload: bytes,
                 cap: int, timeout: float) -> None:
        self.loop = loop
        self.child = child
        self.done: asyncio.Future[None] = loop.create_future()
        self.exited = False
        self.timed_out = False
        self.deadline = loop.time() + timeout
        self.timer: asyncio.TimerHandle | None = None  # armed when the readers start
        self.reading = False  # readers registered on the two pipes
        self.writing = False  # a writer registered on stdin
        self.stdin_fd: int | None = child.in_fd
        if len(payload) <= _PIPE_ROOM:  # fits the empty pipe: one write that cannot block
            self.payload = memoryview(b"")
            try:  # noqa: SIM105 (contextlib.suppress costs a run more than this does)
                os.write(child.in_fd, payload)
            except OSError:  # the child closed stdin or exited: not an error
                pass
            os.close(child.in_fd)
            self.stdin_fd = None
        else:
            self.payload = memoryview(payload)
            self._feed()
        self.out = _Stream(child.out_fd, cap)
        self.err = _Stream(child.err_fd, cap)
        self.pidfd = -1
        self.run = 0  # its number at the watcher
        self.watcher: _ExitWatcher | None = None
        if _HAS_PIDFD:
            try:
                self.pidfd = os.pidfd_open(child.pid)
            except OSError:
                self.pidfd = -1
        if self.pidfd >= 0:
            self.watcher = _exit_watcher(loop)
            self.watcher.watch(loop, self.pidfd, self)  # it starts the readers after a delay
        if self.pidfd < 0 or timeout <= _READ_DELAY:
            self.start_reading()  # at once: nothing else tells us of the exit, or of time up

    def start_reading(self) -> None:
        """Register readers on both pipes, and arm the timeout."""
        if self.timer is not None or self.done.done():
            return
        self.timer = self.loop.call_at(self.deadline, self._on_timeout)
        if not self.exited:
            for stream in (self.out, self.err):
                self.loop.add_reader(stream.fd, self._on_readable, stream)
            self.reading = True

    def _feed(self) -> None:
        fd = self.stdin_fd
        if fd is None:
            return
        if len(self.payload) > _PIPE_ROOM and os.get_blocking(fd):
            os.set_blocking(fd, False)  # a large payload goes in as the child reads it
        while self.payload:
            try:
                n = os.write(fd, self.payload)
            except BlockingIOError:
                if not self.writing:
                    self.loop.add_writer(fd, self._feed)
                    self.writing = True
                return
            except OSError:  # the child closed stdin or exited: not an error
                break
            self.payload = self.payload[n:]
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self.stdin_fd is not None:
            if self.writing:
                self.loop.remove_writer(self.stdin_fd)
                self.writing = False
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def _on_readable(self, stream: _Stream) -> None:
        if stream.read_once():
            self.loop.remove_reader(stream.fd)
            stream.eof = True
            if self.pidfd == -1 and self.out.eof and self.err.eof:
                self._finish()  # no pidfd: end of both pipes stands for the child's exit

    def on_exit(self) -> None:
        """The child exited (its pidfd is readable, and the watcher let it go)."""
        os.close(self.pidfd)
        self.pidfd = -2  # watched, and done with (-1: never watched)
        self.exited = True
        self._stop_reading()
        # What the child wrote before exiting is in the pipes now; take it and stop
        # listening, so a grandchild holding the pipes open cannot hang the event.
        self.out.drain()
        self.err.drain()
        self._finish()

    def _on_timeout(self) -> None:
        self.timed_out = True
        self._finish()

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    async def wait_exit(self, limit: float) -> None:
        """Wait up to ``limit`` seconds for the child to exit (without reaping it)."""
        deadline = self.loop.time() + limit
        while not self.exited and self.loop.time() < deadline:
            if _has_exited(self.child.pid, self.pidfd):
                return
            await _sleep(0.01)

    def _stop_reading(self) -> None:
        if self.reading:
            for stream in (self.out, self.err):
                if not stream.eof:
                    self.loop.remove_reader(stream.fd)
            self.reading = False

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self._close_stdin()
        self._stop_reading()
        os.close(self.out.fd)
        os.close(self.err.fd)
        if self.pidfd >= 0:
            if self.watcher is not None:
                self.watcher.forget(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def _has_exited(pid: int, pidfd: int) -> bool:
    """Whether a child has exited, leaving it unreaped (its group id stays reserved)."""
    if pidfd >= 0:
        return bool(select.select([pidfd], [], [], 0)[0])
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError as exc:
        if exc.errno not in (errno.ESRCH, errno.EPERM):
            raise


def _spawn_error(argv: Sequence[str], exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):  # a NUL byte or an unencodable character in argv or env
        return f"{argv[0] if argv else '(no command)'}: cannot be started: {exc}"
    target = exc.filename or argv[0]
    if exc.errno == errno.ENOENT:
        return f"{target}: not found (a missing script, or a missing interpreter in its #! line)"
    if exc.errno == errno.EACCES:
        return f"{target}: permission denied (chmod +x it)"
    if exc.errno == errno.ENOEXEC:
        return f"{target}: not an executable format (add a #! line)"
    if exc.errno == errno.E2BIG:
        return f"{target}: its arguments and environment are too big for exec (E2BIG)"
    return f"{target}: {exc.strerror or exc}"


def _not_started(start: float, error: str) -> RunResult:
    return RunResult(exit_code=None, duration_ms=(time.perf_counter() - start) * 1000,
                     spawn_error=error)


def _start(argv: Sequence[str], cwd: str, env: Mapping[str, str], limits: Limits | None,
           start: float) -> tuple[_Reaper, int, _Child] | RunResult:
    """Spawn a run's child, marked and limited; a RunResult when it could not be."""
    reaper = _reaper()
    run, marked = reaper.begin(env)
    if limits is None:
        limits = DEFAULT_LIMITS
    plan = _plan(limits)
    nofile = limits.open_files
    before = None  # the limit set before exec (see _posix_spawn)
    if nofile is not None:  # within this process's hard limit, as the plan has it
        import resource

        before = resource.RLIMIT_NOFILE
        nofile = next((soft for res, soft, _ in plan if res == before), None)
    try:
        child = _spawn(argv, cwd, marked, nofile)
    except (OSError, ValueError) as exc:
        reaper.end(run)
        return _not_started(start, _spawn_error(argv, exc))
    reaper.leaders.add(child.pid)
    # Only the open-files limit, and it was set before exec: the hook started with it. Its
    # hard limit is left as the engine's (the default is a sane start, not a boundary), so
    # the common run pays no prlimit.
    pre_exec_only = len(plan) == 1 and plan[0][0] == before and child.nofile_set
    if plan and not pre_exec_only:
        try:
            _apply_limits(child.pid, plan, before if child.nofile_set else None)
        except OSError as exc:  # EPERM: a setuid program; the run must not go on unlimited
            _killpg(child.pid, signal.SIGKILL)
            child.wait()
            for fd in (child.in_fd, child.out_fd, child.err_fd):
                os.close(fd)
            _retire(reaper, run, child)
            reaper.sweep()
            return _not_started(start, f"{argv[0]}: could not apply metadata.limits: "
                                       f"{exc.strerror or exc}")
    return reaper, run, child


def _end(reaper: _Reaper, run: int, child: _Child, timed_out: bool) -> None:
    """Kill what is left of the run's group and reap its leader (not yet the sweep)."""
    if timed_out:
        _killpg(child.pid, signal.SIGKILL)
    child.wait_exit()  # its orphans are ours once it has exited
    _killpg(child.pid, signal.SIGKILL)  # still unreaped: the group id cannot be reused
    child.wait()
    _retire(reaper, run, child)


def _retire(reaper: _Reaper, run: int, child: _Child) -> None:
    reaper.leaders.discard(child.pid)
    reaper.end(run)


def _abandon(reaper: _Reaper, run: int, child: _Child) -> None:
    """A run interrupted from outside leaves nothing behind: its group is killed, the
    leader reaped, and one sweep made (a later run's sweep reaps what is still dying)."""
    _killpg(child.pid, signal.SIGKILL)
    child.wait()
    _retire(reaper, run, child)
    reaper.sweep_pass(set())


def _finished(child: _Child, out: _Stream, err: _Stream, start: float,
              timed_out: bool, limits: Limits | None) -> RunResult:
    stderr = err.value()
    return RunResult(
        exit_code=None if timed_out else child.returncode,
        stdout=out.value(), stderr=stderr, stdout_size=out.size, stderr_size=err.size,
        duration_ms=(time.perf_counter() - start) * 1000, timed_out=timed_out,
        limit=None if timed_out else _limit_hit(
            DEFAULT_LIMITS if limits is None else limits, child, stderr),
    )


async def run_hook(
    argv: Sequence[str],
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int = OUTPUT_CAP,
    kill_grace: float = KILL_GRACE,
    limits: Limits | None = None,
) -> RunResult:
    """Run one hook to completion or timeout.

    Args:
        argv: the command, an absolute path first (never run through a shell).
        payload: bytes for stdin; a child that never reads them is fine.
        cwd: the working directory.
        env: the whole environment of the child (copied, with ``AGENT_HOOKS_RUN_ID`` added).
        timeout: seconds before the process group is terminated.
        output_cap: bytes kept of each of stdout and stderr.
        kill_grace: seconds between SIGTERM and SIGKILL on timeout.
        limits: the hook's resource limits; None for ``DEFAULT_LIMITS``.

    Returns:
        The result; never raises for anything the hook does. Whatever the hook started is
        killed and reaped before it returns (see the module docstring). Cancelled from
        outside, it kills the process group and reaps the child before the cancellation goes
        on; a later run's sweep reaps what was still dying.
    """
    start = time.perf_counter()
    started = _start(argv, cwd, env, limits, start)
    if isinstance(started, RunResult):
        return started
    reaper, run, child = started
    import asyncio  # here, not at the top: one-shot callers run hooks without a loop

    pump = _Pump(asyncio.get_running_loop(), child, payload, output_cap, timeout)
    try:
        await pump.done
        if pump.timed_out and not pump.exited:
            _killpg(child.pid, signal.SIGTERM)
            await pump.wait_exit(kill_grace)
        else:
            pump.timed_out = False
        _end(reaper, run, child, pump.timed_out)
    finally:
        if child.returncode is None:  # cancelled from outside
            _abandon(reaper, run, child)
        pump.close()
    await reaper.sweep_async()
    return _finished(child, pump.out, pump.err, start, pump.timed_out, limits)


def run_hook_blocking(
    argv: Sequence[str],
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int = OUTPUT_CAP,
    kill_grace: float = KILL_GRACE,
    limits: Limits | None = None,
) -> RunResult:
    """``run_hook`` without an event loop, for one-shot processes (``mcp-hooks fire``, the
    host bridges): the same spawn, caps, timeout, limits and process cleanup, waiting in
    ``poll``. Importing asyncio alone costs such a process 15-45 ms here.
    """
    start = time.perf_counter()
    started = _start(argv, cwd, env, limits, start)
    if isinstance(started, RunResult):
        return started
    reaper, run, child = started
    out, err = _Stream(child.out_fd, output_cap), _Stream(child.err_fd, output_cap)
    poller = select.poll()
    view = memoryview(payload)
    in_fd: int | None = child.in_fd
    if len(view) > _PIPE_ROOM:
        os.set_blocking(child.in_fd, False)  # fed as the child reads, never stuck
        poller.register(child.in_fd, select.POLLOUT)
    else:
        with contextlib.suppress(OSError):  # a child that never reads stdin is fine
            os.write(child.in_fd, view)
        os.close(child.in_fd)
        in_fd = None
    streams = {out.fd: out, err.fd: err}
    for fd in streams:
        poller.register(fd, select.POLLIN)
    pidfd = -1
    if _HAS_PIDFD:
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(child.pid)
            poller.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            exited = False
            for fd, _ in poller.poll(left * 1000):
                if fd == pidfd:
                    exited = True
                elif fd == in_fd:
                    try:
                        view = view[os.write(fd, view):]
                    except BlockingIOError:
                        continue
                    except OSError:
                        view = view[:0]
                    if not view:
                        poller.unregister(fd)
                        os.close(fd)
                        in_fd = None
                elif fd in streams and streams[fd].read_once():
                    poller.unregister(fd)
                    del streams[fd]
            if exited or (pidfd < 0 and not streams):
                out.drain()  # what the child wrote is here; a grandchild cannot hang us
                err.drain()
                break
        if timed_out:
            _killpg(child.pid, signal.SIGTERM)
            _wait_exit_unreaped(child.pid, pidfd, kill_grace)
        _end(reaper, run, child, timed_out)
    finally:
        if child.returncode is None:  # interrupted
            _abandon(reaper, run, child)
        for fd in (out.fd, err.fd, pidfd, -1 if in_fd is None else in_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
    reaper.sweep()
    return _finished(child, out, err, start, timed_out, limits)


def _wait_exit_unreaped(pid: int, pidfd: int, limit: float) -> None:
    """Wait up to ``limit`` seconds for a child to exit, leaving it to be reaped later."""
    if pidfd >= 0:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(limit * 1000)
        return
    end = time.monotonic() + limit
    while time.monotonic() < end and not _has_exited(pid, -1):
        time.sleep(0.01)
