"""The bounds of one oracle's evaluation: its deadline, its environment, its processes, its
files.

Contracts the oracles and ``evaluation`` rely on:

- ``Scope``: what ``evaluation`` opens around one ``Oracle.evaluate`` call, in the worker
  thread that runs it (``entered``): the deadline (``config.timeout``), and the environment
  its commands get. ``current()`` is the scope of the calling thread, or None (an oracle
  asked directly, as the tests do: then the defaults apply).
- ``run(argv, cwd)``: every process an oracle starts (its commands, git) runs through the
  runner's blocking driver (``runner.blocking``): a session and process group of its own,
  the payload on stdin (or an empty one), stdout and stderr capped, and at its timeout, cut
  to what is left of the scope's deadline, SIGTERM, a grace, then SIGKILL to the group. Once
  the direct child has exited, what it wrote is taken without waiting for a descendant that
  still holds the pipes, and what the run left behind (a ``setsid`` daemon included) is
  killed by the sweep (``runner.tree``). Its environment is a hook's (``hookenv``): the
  caller's, less ``MCP_HOOKS_TOKEN`` and the configured secrets.
- Files named by a config or by state are reached only through ``read_inside``,
  ``append_inside``, ``replace_inside`` (below a root: the project, the state folder) and
  ``read_regular`` (a state file of ours). A path is relative to its root, or absolute and
  lexically inside it; ``~``, ``..`` and anything else are refused (``FileRefused``). Each
  folder on the way and the file itself are opened with ``O_NOFOLLOW`` relative to the one
  before, so no symlink below the root is followed: nothing is read from or written to
  outside it, whatever the repository committed. A read opens with ``O_NONBLOCK`` (a FIFO
  cannot hang it), refuses anything but a regular file, and reads at most its cap; a write
  goes to a regular file only (an append in one ``O_APPEND`` write, a replacement through a
  temporary file renamed over it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

from mcp_hooks.errors import ConfigError
from mcp_hooks.runner.blocking import run_hook_blocking
from mcp_hooks.runner.core import RunResult
from mcp_hooks.runner.hookenv import hook_environment

MAX_TIMEOUT = 600.0  # = hosts.base.HOOK_TIMEOUT_S: what a host gives a whole event
OUTPUT_CAP = 256 * 1024  # bytes of a command's stdout and of its stderr kept
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class FileRefused(ConfigError):
    """A file an oracle or the ladder was asked to read or write, refused: outside its root,
    through a symlink, not a regular file, or larger than its cap (the message says which
    file, why, and what to do)."""


# -- the scope of one evaluation -----------------------------------------------------------

class Scope:
    """One oracle evaluation's deadline and environment (see the module docstring).

    Args:
        timeout: seconds the evaluation may take.
        secrets: values no command may see in its environment (beside ``MCP_HOOKS_TOKEN``).
    """

    def __init__(self, timeout: float, secrets: Collection[str] = ()) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.secrets = tuple(secrets)
        self.commands = 0  # processes of this evaluation running now
        self.lock = threading.Lock()

    def left(self) -> float:
        """Seconds left before the deadline (0 once it passed)."""
        return max(0.0, self.deadline - time.monotonic())


_local = threading.local()


def current() -> Scope | None:
    """The scope of the calling thread's evaluation, or None."""
    scope: Scope | None = getattr(_local, "scope", None)
    return scope


@contextlib.contextmanager
def entered(scope: Scope) -> Iterator[Scope]:
    """Make ``scope`` the calling thread's for the block."""
    before = current()
    _local.scope = scope
    try:
        yield scope
    finally:
        _local.scope = before


def environment(scope: Scope | None = None) -> dict[str, str]:
    """The environment an oracle's command starts from: a hook's (``hookenv``)."""
    return hook_environment(os.environ, scope.secrets if scope is not None else ())


def run(argv: Sequence[str], cwd: Path | str, *, timeout: float, stdin: bytes = b"",
        env: Mapping[str, str] | None = None, output_cap: int = OUTPUT_CAP) -> RunResult:
    """Run ``argv`` in ``cwd`` under the calling thread's scope (see the module docstring);
    ``env`` adds variables to a hook's environment. Never raises for the command's failure:
    a spawn error or a timeout is in the ``RunResult``."""
    scope = current()
    if scope is not None:
        timeout = min(timeout, scope.left())
        if timeout <= 0:
            return RunResult(exit_code=None, timed_out=True)
    full = environment(scope)
    full.update(env or {})
    argv = list(argv)
    if argv and "/" not in argv[0]:  # the runner execs a path: look the name up as a shell would

        argv[0] = shutil.which(argv[0], path=full.get("PATH", os.defpath)) or argv[0]
    if scope is not None:
        with scope.lock:
            scope.commands += 1
    try:
        return run_hook_blocking(argv, stdin, cwd=str(cwd), env=full, timeout=timeout,
                                 output_cap=output_cap)
    finally:
        if scope is not None:
            with scope.lock:
                scope.commands -= 1


# -- paths ---------------------------------------------------------------------------------

def relative_parts(value: str, what: str) -> tuple[str, ...]:
    """The components of a path written relative to its root.

    Raises:
        FileRefused: empty, ``~``, absolute, holding ``..`` or a NUL byte.
    """
    if not value or "\0" in value:
        raise FileRefused(f"{what}: {value!r} is not a path")
    if value.startswith("~"):
        raise FileRefused(f"{what}: {value!r}: '~' is not expanded; write a path relative "
                          "to the project")
    path = PurePosixPath(value)
    if path.is_absolute():
        raise FileRefused(f"{what}: {value!r} is absolute; write a path relative to the "
                          "project")
    if ".." in path.parts:
        raise FileRefused(f"{what}: {value!r} leaves its folder ('..'); write a path inside "
                          "the project")
    parts = tuple(p for p in path.parts if p != ".")
    if not parts:
        raise FileRefused(f"{what}: {value!r} names no file")
    return parts


def locate(value: str, roots: Sequence[Path], what: str) -> tuple[Path, tuple[str, ...]]:
    """The root and the components of ``value``: relative to the first root, or absolute
    and lexically inside one of them.

    Raises:
        FileRefused: see ``relative_parts``; an absolute path inside none of the roots.
    """
    if not value.startswith("/"):
        return roots[0], relative_parts(value, what)
    if "\0" in value:
        raise FileRefused(f"{what}: {value!r} is not a path")
    target = os.path.normpath(value)
    for root in roots:
        for base in {os.path.abspath(root), os.path.realpath(root)}:
            if target != base and os.path.commonpath([target, base]) == base:
                return root, relative_parts(os.path.relpath(target, base), what)
    where = " or ".join(str(r) for r in roots)
    raise FileRefused(f"{what}: {value!r} is outside {where}; write a path inside the project")


def _refused(exc: OSError, shown: str, what: str) -> FileRefused | OSError:
    if exc.errno == errno.ENXIO:  # a FIFO opened to write, without a reader
        return FileRefused(f"{what} {shown} is not a regular file; point it at a plain file")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return FileRefused(f"{what} {shown}: a symlink (or a file where a folder belongs) on "
                           "the way; mcp-hooks reads and writes only through real folders "
                           "inside the project")
    return exc


def _walk(root: Path, folders: Sequence[str], *, create: bool, shown: str, what: str) -> int:
    """An fd of the folder ``root/folders``, each step opened without following a symlink."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in folders:
            try:
                step = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                step = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = step
    except OSError as exc:
        os.close(fd)
        raise _refused(exc, shown, what) from None
    return fd


def _read_fd(fd: int, cap: int, shown: str, what: str) -> bytes:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{what} {shown} is not a regular file (a FIFO, a device or a "
                          "folder); point it at a plain file")
    if st.st_size > cap:
        raise FileRefused(f"{what} {shown} is larger than {cap} bytes (the cap); make it "
                          "smaller")
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = os.read(fd, min(1 << 16, cap + 1 - size))
        except BlockingIOError:  # a regular file never blocks; be safe anyway
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            raise FileRefused(f"{what} {shown} is larger than {cap} bytes (the cap); make it "
                              "smaller")
    return b"".join(chunks)


def read_inside(root: Path, parts: Sequence[str], cap: int, *, what: str) -> bytes:
    """The bytes of the regular file ``root/parts`` (see the module docstring).

    Raises:
        FileRefused: a symlink on the way, not a regular file, larger than ``cap``.
        OSError: it cannot be opened (FileNotFoundError when it is not there).
    """
    shown = "/".join(parts)
    fd_dir = _walk(root, parts[:-1], create=False, shown=shown, what=what)
    try:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | _NONBLOCK,
                         dir_fd=fd_dir)
        except OSError as exc:
            raise _refused(exc, shown, what) from None
    finally:
        os.close(fd_dir)
    try:
        return _read_fd(fd, cap, shown, what)
    finally:
        os.close(fd)


def read_regular(path: Path, cap: int, *, what: str) -> bytes:
    """The bytes of a regular file of our own (a state file): not through a final symlink,
    never blocking on a FIFO, at most ``cap`` bytes.

    Raises:
        FileRefused, OSError: as ``read_inside``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | _NONBLOCK)
    except OSError as exc:
        raise _refused(exc, str(path), what) from None
    try:
        return _read_fd(fd, cap, str(path), what)
    finally:
        os.close(fd)


def append_inside(root: Path, parts: Sequence[str], data: bytes, *, what: str) -> None:
    """Append ``data`` to the regular file ``root/parts`` in one ``O_APPEND`` write, making
    the folders on the way (inside ``root``) as needed.

    Raises:
        FileRefused, OSError: as ``read_inside``.
    """
    shown = "/".join(parts)
    fd_dir = _walk(root, parts[:-1], create=True, shown=shown, what=what)
    try:
        try:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                         | _NOFOLLOW | _NONBLOCK, 0o600, dir_fd=fd_dir)
        except OSError as exc:
            raise _refused(exc, shown, what) from None
    finally:
        os.close(fd_dir)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused(f"{what} {shown} is not a regular file; point it at a plain file")
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_inside(root: Path, parts: Sequence[str], data: bytes, *, what: str) -> None:
    """Write ``data`` as the file ``root/parts``: a temporary file in the same folder renamed
    over it (a symlink there is replaced, never followed).

    Raises:
        FileRefused, OSError: as ``read_inside``.
    """
    shown = "/".join(parts)
    fd_dir = _walk(root, parts[:-1], create=True, shown=shown, what=what)
    try:
        tmp = f".{parts[-1]}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | _NOFOLLOW,
                     0o644, dir_fd=fd_dir)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, parts[-1], src_dir_fd=fd_dir, dst_dir_fd=fd_dir)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd_dir)
            raise
    finally:
        os.close(fd_dir)
