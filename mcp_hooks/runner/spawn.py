"""Starting a hook's process, and the strategy that picks how (``MCP_HOOKS_RUNNER``).

``spawn`` starts ``argv`` in a session (and so a process group) of its own, with three fresh
pipes, never through a shell, and returns a ``Child``: its pid and our ends of the pipes.
It raises ``OSError`` or ``ValueError`` (a NUL byte, an unencodable character) when the
process cannot be started; ``spawn_error`` words that for the run's result.

Two ways to spawn, and the one chosen per run:

- ``posix_spawn`` (a vfork-style spawn, the cheapest Python offers) when the child's working
  folder can be set safely: when it is already the process's own, or when this is the only
  thread (the folder is switched around the spawn). It can start the child with a lowered
  soft RLIMIT_NOFILE (see ``mcp_hooks.runner.rlimits``).
- ``subprocess.Popen`` with ``cwd`` otherwise, and always when posix_spawn is switched off
  (it starts the child with the lowered soft RLIMIT_NOFILE too).

How a run starts and how its exit is told are chosen by one ``Strategy`` per process, which the
door's ``Settings.runner`` (``MCP_HOOKS_RUNNER``: comma-separated words, empty for the default)
names: the engine hands it to ``adopt`` when it is built. The words:

``library``
    the event-loop driver hands spawning, exit-watching and reaping to asyncio's subprocess
    support (``mcp_hooks.runner.library``): the switch back to the library path, kept so the
    bench can show what the hand-written path still saves;
``no-pidfd``
    tell a child's exit without a pidfd (``waitid`` polls), as on kernels before 5.3;
``no-posix-spawn``
    spawn every run through ``subprocess.Popen``.

Words this machine cannot honour (a pidfd on an old kernel) are dropped, never faked; an unknown
word leaves the default (a typo must not stop hooks from running). Tests and benches set the
strategy for a block of code with ``using(Strategy(...))``, which ``adopt`` does not undo.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import select
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

HAS_PIDFD = hasattr(os, "pidfd_open")
HAS_POSIX_SPAWN = hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_DUP2")
STRATEGY_VAR = "MCP_HOOKS_RUNNER"
_WORDS = ("library", "no-pidfd", "no-posix-spawn")


@dataclass(frozen=True)
class Strategy:
    """How runs are started and watched.

    Attributes:
        posix_spawn: spawn with ``posix_spawn`` where that is safe (else always Popen).
        pidfd: tell a child's exit through a pidfd (else ``waitid`` polls).
        library: the event-loop driver uses asyncio's subprocess support instead of the
            hand-written path (the blocking driver has no library counterpart that keeps
            its promises, and ignores it).
    """

    posix_spawn: bool = HAS_POSIX_SPAWN
    pidfd: bool = HAS_PIDFD
    library: bool = False

    @classmethod
    def parse(cls, text: str) -> Strategy:
        """The strategy a ``MCP_HOOKS_RUNNER`` value names; raises ValueError for a word
        that is not one of ``library``, ``no-pidfd``, ``no-posix-spawn``."""
        words = {word.strip() for word in text.split(",") if word.strip()}
        unknown = words.difference(_WORDS)
        if unknown:
            raise ValueError(f"{STRATEGY_VAR}: unknown word(s) {', '.join(sorted(unknown))}; "
                             f"use any of: {', '.join(_WORDS)}")
        return cls(posix_spawn=HAS_POSIX_SPAWN and "no-posix-spawn" not in words,
                   pidfd=HAS_PIDFD and "no-pidfd" not in words,
                   library="library" in words)

    @property
    def words(self) -> str:
        """The words that give this strategy (``MCP_HOOKS_RUNNER``'s form; "" for the
        default)."""
        return ",".join(word for word, on in (
            ("library", self.library), ("no-pidfd", HAS_PIDFD and not self.pidfd),
            ("no-posix-spawn", HAS_POSIX_SPAWN and not self.posix_spawn)) if on)

    @property
    def name(self) -> str:
        """The words that give this strategy (``"default"`` when none)."""
        return self.words or "default"


# Read by every run (one attribute lookup); set by ``adopt`` and, for a block, ``using``.
current = Strategy()
_using = 0  # ``using`` blocks open: ``adopt`` leaves their strategy alone


def adopt(words: str) -> Strategy:
    """Make the strategy ``words`` names (``Settings.runner``) the process's, unless a
    ``using`` block has set one; the strategy in force. Empty words change nothing (the
    default, or what an earlier record named, stays); an unknown word is ignored, leaving
    the default, as documented (a typo must not stop hooks from running)."""
    global current
    if words.strip() and not _using:
        try:
            current = Strategy.parse(words)
        except ValueError:
            current = Strategy()
    return current


@contextlib.contextmanager
def using(strategy: Strategy) -> Iterator[Strategy]:
    """Run the block's hooks with ``strategy`` (for tests and benches; not thread-safe)."""
    global current, _using
    before = current
    current = Strategy(posix_spawn=strategy.posix_spawn and HAS_POSIX_SPAWN,
                       pidfd=strategy.pidfd and HAS_PIDFD, library=strategy.library)
    _using += 1
    try:
        yield current
    finally:
        _using -= 1
        current = before


class Child:
    """A spawned child: its pid and our ends of its three pipes.

    Attributes:
        returncode: set once it is reaped (negative for a signal).
        cpu: CPU seconds the leader used, known once it is reaped by ``wait``.
        nofile_set: it started with the run's RLIMIT_NOFILE (set before exec).
        limits_set: it started with all of the run's limits (set before exec).
    """

    __slots__ = ("cpu", "err_fd", "in_fd", "limits_set", "nofile_set", "out_fd", "pid", "popen",
                 "returncode")

    def __init__(self, pid: int, in_fd: int, out_fd: int, err_fd: int,
                 popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.popen = popen
        self.returncode: int | None = None
        self.cpu = 0.0
        self.nofile_set = False
        self.limits_set = False

    def wait(self) -> int:
        """Reap the child (blocking), recording its status and CPU time."""
        while self.returncode is None:
            try:
                _, status, usage = os.wait4(self.pid, 0)
            except ChildProcessError:  # reaped elsewhere
                self.set_returncode(-1)
                break
            except InterruptedError:
                continue
            self.cpu = usage.ru_utime + usage.ru_stime
            self.set_returncode(os.waitstatus_to_exitcode(status))
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

    def set_returncode(self, code: int) -> None:
        self.returncode = code
        if self.popen is not None:
            self.popen.returncode = code  # it must not wait for it again


def has_exited(pid: int, pidfd: int) -> bool:
    """Whether a child has exited, leaving it unreaped (its group id stays reserved)."""
    if pidfd >= 0:
        return bool(select.select([pidfd], [], [], 0)[0])
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def open_pidfd(pid: int) -> int:
    """A pidfd for ``pid`` under the current strategy, or -1 (switched off, or refused)."""
    if not current.pidfd:
        return -1
    try:
        return os.pidfd_open(pid)
    except OSError:
        return -1


def spawn(argv: Sequence[str], cwd: str, env: Mapping[str, str],
          nofile: int | None = None) -> Child:
    """Start ``argv`` in a new session with three pipes; raises OSError or ValueError.

    ``nofile``: a soft RLIMIT_NOFILE the child starts with (posix_spawn only: the caller
    sets it, and the rest, with prlimit afterwards too; ``Child.nofile_set`` says which).
    """
    if current.posix_spawn:
        here = _cwd_or_none()
        if here == cwd:
            return _posix_spawn(argv, env, nofile)
        if threading.active_count() == 1 and here is not None:
            os.chdir(cwd)  # no other thread can see the switch
            try:
                return _posix_spawn(argv, env, nofile)
            finally:
                os.chdir(here)
    return _popen(argv, cwd, env, nofile)


def _popen(argv: Sequence[str], cwd: str, env: Mapping[str, str], nofile: int | None) -> Child:
    # posix_spawn starts most runs, so subprocess (and selectors, locale) waits until here:
    # lazy: 4 ms of every bridge and fire start (python -X importtime)
    import subprocess

    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, stdin=in_r, stdout=out_w, stderr=err_w, cwd=cwd, env=env,
                                start_new_session=True)

    # Popen opens one more pipe (its exec-error pipe): it too must fit under a lowered limit,
    # else a shell lowers it before the hook's exec, as for posix_spawn
    lower = nofile is not None and max(in_w, out_r, err_r) + 2 < nofile
    try:
        if nofile is not None and lower:
            try:
                with lowered_nofile(nofile):
                    proc = start()
            except OSError as exc:  # an fd Popen opened itself fell past the lowered limit
                if exc.errno != errno.EMFILE:
                    raise
                argv = under_nofile(argv, nofile)  # the limit is still set before the exec
                proc = start()
        else:
            if nofile is not None:  # the pipes are past the limit: a shell sets it before exec
                argv = under_nofile(argv, nofile)
            proc = start()
    except BaseException:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    child = Child(proc.pid, in_w, out_r, err_r, popen=proc)
    child.nofile_set = nofile is not None
    return child


def under_nofile(argv: Sequence[str], nofile: int) -> list[str]:
    """``argv`` behind a shell that lowers its soft RLIMIT_NOFILE to ``nofile`` and execs it:
    for a spawn that cannot take place under the lowered limit in this process (EMFILE: an fd
    the spawn opens for itself falls past it), so the hook still starts with its limit."""
    return ["/bin/sh", "-c", 'ulimit -S -n "$0" && exec "$@"', str(nofile), *argv]


@contextlib.contextmanager
def lowered_nofile(nofile: int) -> Iterator[None]:
    """This process's soft RLIMIT_NOFILE lowered to ``nofile`` for the block, under a lock,
    so a child spawned in it starts with that limit (see mcp_hooks.runner.rlimits): the soft
    limit only (a hard one could not be raised back), and the fds already open stay valid."""
    with _nofile_lock:
        own = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, own[1]))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, own)


def _cwd_or_none() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


_nofile_lock = threading.Lock()


def _posix_spawn(argv: Sequence[str], env: Mapping[str, str], nofile: int | None) -> Child:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
               (os.POSIX_SPAWN_DUP2, err_w, 2)]
    lowered = False
    try:
        # glibc refuses a dup2 file action whose fd is not below the soft limit (EBADF): with
        # more fds open than the hook may have, a shell lowers the limit before the hook's exec
        # (prlimit after the spawn would race a hook that opens files at once)
        if nofile is None:
            pid = os.posix_spawn(argv[0], list(argv), env, file_actions=actions, setsid=True)
        elif max(in_r, out_w, err_w) >= nofile:
            lowered = True
            argl = under_nofile(argv, nofile)
            pid = os.posix_spawn(argl[0], argl, env, file_actions=actions, setsid=True)
        else:
            lowered = True
            argl = list(argv)
            try:
                with lowered_nofile(nofile):  # the one limit safe to lower here around a spawn
                    pid = os.posix_spawn(argv[0], argl, env, file_actions=actions, setsid=True)
            except OSError as exc:  # the exec could not take this process's fd table under
                if exc.errno != errno.EMFILE:  # the lowered limit: set by the shell instead
                    raise
                argl = under_nofile(argv, nofile)
                pid = os.posix_spawn(argl[0], argl, env, file_actions=actions, setsid=True)
    except BaseException:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    child = Child(pid, in_w, out_r, err_r)
    child.nofile_set = lowered
    return child
