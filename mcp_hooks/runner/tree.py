"""A run's processes: marked, and swept at its end, so nothing a hook started survives it.

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
  reaped only afterwards, so the group id cannot be reused), then ``Reaper.sweep`` reads the
  engine's children (``/proc/<pid>/task/<pid>/children``: orphans are re-parented to the main
  thread), SIGKILLs each one whose ``/proc/<pid>/environ`` carries an id of this process for a
  run no longer active, and reaps exactly those pids (``waitpid(pid)``, never ``waitpid(-1)``:
  asyncio and the proxy own other children). A living child whose environ reads empty may be
  inside ``execve`` (a ``setsid`` daemon exec-ing its program): it is read again on the next
  passes, ``EMPTY_LOOKS`` at most. Their children are re-parented in turn, so it
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

The drivers call ``reaper().begin`` before the spawn (the run's number and marked
environment), add the leader to ``Reaper.leaders`` until they have reaped it, call
``Reaper.end`` once it is reaped, then ``sweep`` (or ``sweep_async``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections.abc import Mapping

RUN_ID_VAR = "AGENT_HOOKS_RUN_ID"  # marks every process of a run: see the module docstring
EMPTY_LOOKS = 3  # passes a living child whose environ reads empty is looked at again
SWEEP_LIMIT = 5.0  # seconds a run's end waits for the processes it killed to be reaped
PF_EXITING = 0x4  # /proc/<pid>/stat flags: the process is exiting (linux/sched.h)
CHUNK = 1 << 16


def _set_subreaper() -> bool:
    """Make this process a child subreaper; False where that cannot be done."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux, or no prctl
        return False


def read_proc(path: str) -> bytes | None:
    """A /proc file's content, or None when the process is gone or not ours to read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat_fields(pid: int) -> list[bytes] | None:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, session, ..."""
    data = read_proc(f"/proc/{pid}/stat")
    if not data:
        return None
    return data[data.rfind(b")") + 2:].split()


def children_of(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (empty if it is gone)."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        data = read_proc(f"/proc/{pid}/task/{tid}/children")
        if data:
            found.extend(map(int, data.split()))
    return found


class Reaper:
    """The runs of this process: their numbers, their leaders, and what was killed.

    One per process (a forked child starts afresh, see ``reaper``). ``begin`` numbers a run
    and marks its environment; ``end`` retires it; ``sweep_pass`` kills and reaps what ended
    runs left behind.
    """

    __slots__ = ("active", "children_file", "doomed", "leaders", "lock", "looked", "me",
                 "pid", "runs", "sid", "subreaper")

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.me = str(self.pid).encode()
        self.lock = threading.Lock()
        self.runs = 0
        self.active: set[int] = set()  # numbers of the runs not yet ended
        self.leaders: set[int] = set()  # pids of the runs' own children, not yet reaped
        self.doomed: set[int] = set()  # pids killed or found dead, not yet reaped
        self.looked: dict[int, int] = {}  # living children whose environ read empty: looks
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
            data = read_proc(self.children_file)
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
        with self.lock:
            marked = self._mark(killed)
            reaped = self._reap(killed)
        return marked or reaped or bool(killed)

    def _mark(self, killed: set[int]) -> bool:
        """Kill and doom our children of ended runs, doom the orphaned zombies; True when one
        was killed or is still exiting."""
        acted = False
        children = self._children()
        for pid in children:
            if pid in self.leaders or pid in self.doomed:
                continue
            acted = self._mark_one(pid, killed) or acted
        if self.looked:  # forget the pids that are no longer our children
            self.looked = {pid: n for pid, n in self.looked.items() if pid in children}
        return acted

    def _mark_one(self, pid: int, killed: set[int]) -> bool:
        environ = read_proc(f"/proc/{pid}/environ")
        if environ:
            if not self._ended_run(environ):
                return False
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # our child: its pid is still its own
            self.doomed.add(pid)
            killed.add(pid)
            return True
        fields = _stat_fields(pid)  # no environ: dying, a zombie, inside execve, or not ours
        if fields is None or len(fields) <= 6:
            return False
        if int(fields[3]) in (self.sid, pid):  # someone's direct child, or the program's own
            return fields[0] != b"Z" and self._look_again(pid)
        if fields[0] == b"Z":
            self.doomed.add(pid)  # nobody's direct child: nobody else waits for it
            return False
        # killed, its environ already gone: look again once it is Z
        return bool(int(fields[6]) & PF_EXITING)

    def _look_again(self, pid: int) -> bool:
        """Whether to read a living child's empty environ again on the next pass: inside
        ``execve`` (a hook's ``setsid`` daemon exec-ing its program) it reads empty for a
        moment, and its mark is back after it; ``EMPTY_LOOKS`` passes per child at most (one
        whose environ we may not read, a setuid program, costs that once)."""
        looks = self.looked.get(pid, 0)
        if looks >= EMPTY_LOOKS:
            return False
        self.looked[pid] = looks + 1
        return True

    def _reap(self, killed: set[int]) -> bool:
        """Wait for the doomed that are dead; True when one was reaped."""
        acted = False
        for pid in list(self.doomed):
            try:
                done = os.waitpid(pid, os.WNOHANG)[0]
            except ChildProcessError:
                done = pid
            if done:
                self.doomed.discard(pid)
                killed.discard(pid)
                acted = True
        return acted

    def sweep(self, limit: float = SWEEP_LIMIT) -> None:
        """Sweep until nothing is left, waiting up to ``limit`` for killed processes."""
        killed: set[int] = set()
        deadline = time.monotonic() + limit
        while self.sweep_pass(killed) and time.monotonic() < deadline:
            time.sleep(0.001)

    async def sweep_async(self, limit: float = SWEEP_LIMIT) -> None:
        """``sweep`` for an event loop: the waits between passes yield to it."""
        # lazy: 54 ms of cold `fire` (asyncio): one-shot processes sweep without it
        import asyncio  # here: one-shot processes sweep without importing it

        killed: set[int] = set()
        deadline = time.monotonic() + limit
        while self.sweep_pass(killed) and time.monotonic() < deadline:
            await asyncio.sleep(0.001)


_the_reaper: Reaper | None = None


def reaper() -> Reaper:
    """This process's reaper, made on its first run (and again in a forked child)."""
    global _the_reaper
    reaper = _the_reaper
    if reaper is None or reaper.pid != os.getpid():
        reaper = _the_reaper = Reaper()
    return reaper
