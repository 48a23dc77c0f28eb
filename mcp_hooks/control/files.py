"""The files of a control layer, read as a stranger's: bounded, never blocking, kept in their
folder; the trust digest of a project's ``.ahp``; and git, asked without running the
repository's configuration.

Contracts:

- ``read_bounded(path, cap, inside=...)`` reads one regular file. It ``stat``s first, so a
  FIFO, a device or a folder is refused without being opened; it opens with ``O_NONBLOCK``
  and checks with ``fstat`` that it holds the very regular file it looked at; it reads at most
  ``cap`` bytes (a file over it is refused, naming the cap). With ``inside``, the path is
  resolved first and must stay inside that folder: a symlink out of ``.ahp`` is refused, never
  followed. Every refusal is a ``LayerFileError`` whose ``reason`` says what and why.
- ``ahp_snapshot(project_dir)`` is what trust covers, listed and hashed without importing or
  blocking: the top-level ``.ahp/hooks*.yaml`` and every ``*.py`` under ``.ahp`` (the walk
  does not follow a link into a folder). Each file has its kind, size and SHA-256. A file
  that is not regular (a FIFO named ``x.py``) is recorded by its kind and never opened; a
  symlink by its target text and, when it resolves to a regular file inside ``.ahp``, that
  file's bytes. ``digest`` is the value the trust store keeps (``TRUST_NAME``); for regular
  files it is the same SHA-256 earlier versions computed. More than ``MAX_ENTRIES`` entries
  under ``.ahp``, more than ``MAX_COVERED`` covered files, one over ``MAX_FILE_BYTES`` or a
  file that changed while it was hashed make it ``UNVERIFIABLE_DIGEST``, which is never
  trusted (``problem`` says why).
- ``git_ignores(project_dir, path)`` says whether git ignores an untracked ``path``. A hostile
  repository carries its own ``.git/config``: git runs with ``core.fsmonitor`` off and
  ``core.hooksPath=/dev/null`` (command-line settings beat the repository's), no system
  config, an environment of only PATH, HOME, XDG_CONFIG_HOME and a few git switches, stdin
  closed and a short timeout. No git, not a repository, an error or a timeout: False.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from mcp_hooks.errors import ConfigError
from mcp_hooks.registry.digest import UnhashableError

MAX_ENTRIES = 20_000  # entries under .ahp walked (archives included) before giving up
MAX_COVERED = 1000  # hooks*.yaml and *.py files trust covers
MAX_FILE_BYTES = 16 * 1024 * 1024  # as a hook folder's files (digest.MAX_FILE_BYTES)
UNVERIFIABLE_DIGEST = "0" * 64  # digest.UNVERIFIABLE_DIGEST: never recorded, never trusted
GIT_TIMEOUT = 3.0
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 16


class LayerFileError(ConfigError):
    """A control-layer file that is not read: ``reason`` says why (not regular, too large,
    a link out of its folder, unreadable)."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}")


def size_words(size: int) -> str:
    """``256 KiB``, ``1 MiB``: a cap as people read it."""
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    if size >= 1 << 10 and size % (1 << 10) == 0:
        return f"{size >> 10} KiB"
    return f"{size} bytes"


def kind_of(mode: int) -> str:
    """``file``, ``folder``, ``symlink``, ``FIFO``, ``socket``, ``device`` or ``other``."""
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "folder"),
                       (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"),
                       (stat.S_ISBLK, "device")):
        if test(mode):
            return name
    return "other"


def contained(path: Path, inside: Path) -> Path:
    """``path`` resolved, when it stays inside ``inside`` (resolved too).

    Raises:
        LayerFileError: it resolves outside (a link out, ``..``) or cannot be resolved.
    """
    try:
        real, root = path.resolve(), inside.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop before 3.13
        raise LayerFileError(path, f"cannot be resolved ({exc})") from None
    if not real.is_relative_to(root):
        raise LayerFileError(path, f"leads out of {inside} (to {real}); not followed")
    return real


def read_bounded(path: Path, cap: int, *, inside: Path | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``cap`` of them (see the module doc).

    Raises:
        LayerFileError: not there, not a regular file, over ``cap``, out of ``inside``, or
            unreadable; never blocks on a FIFO or a device.
    """
    real = contained(path, inside) if inside is not None else path
    try:
        st = os.stat(real)
    except OSError as exc:
        raise LayerFileError(path, f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise LayerFileError(path, f"is a {kind_of(st.st_mode)}, not a regular file; "
                             "not read")
    if st.st_size > cap:
        raise LayerFileError(path, f"is {st.st_size} bytes, over the cap of "
                             f"{size_words(cap)}; not read")
    try:
        fd = os.open(real, _OPEN_FLAGS | (os.O_NOFOLLOW if inside is not None else 0))
    except OSError as exc:
        raise LayerFileError(path, f"cannot be read ({exc.strerror})") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
                st.st_dev, st.st_ino):
            raise LayerFileError(path, "was replaced while being read; not read")
        chunks, total = [], 0
        while total <= cap:
            chunk = os.read(fd, min(_CHUNK, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise LayerFileError(path, f"cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    if total > cap:
        raise LayerFileError(path, f"grew over the cap of {size_words(cap)}; not read")
    return b"".join(chunks)


# -- what trust covers --------------------------------------------------------------------


@dataclass(frozen=True)
class AhpFile:
    """One file trust covers.

    Attributes:
        rel: its path under ``.ahp`` (``oracles/docs.py``).
        path: where it is.
        kind: ``file``, ``symlink``, ``FIFO``, ``folder``, ... (``kind_of``), or ``unreadable``.
        size: bytes of the file (or of the link's target), None when not read.
        sha256: of those bytes, None when not read.
        note: why it was not read, for people.
    """

    rel: str
    path: Path
    kind: str
    size: int | None = None
    sha256: str | None = None
    note: str | None = None
    target: str | None = None  # a symlink's text

    def describe(self) -> str:
        """``hooks.yaml  (812 bytes, sha256 1f2e...)``, as the trust review shows it."""
        what = [] if self.kind == "file" else [f"{self.kind}"
                                                + (f" -> {self.target}" if self.target else "")]
        if self.sha256 is not None:
            what.append(f"{self.size} bytes, sha256 {self.sha256[:16]}")
        if self.note:
            what.append(self.note)
        return f"{self.path}  ({'; '.join(what)})"


@dataclass(frozen=True)
class AhpSnapshot:
    """What trust covers of a project's ``.ahp`` (see the module doc)."""

    root: Path
    files: tuple[AhpFile, ...]
    digest: str
    problem: str | None = None

    def sha_of(self, path: Path) -> str | None:
        """The SHA-256 covered for the file ``path`` (resolved), or None."""
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            return None
        root = self.root.resolve()
        for f in self.files:
            if f.sha256 is not None and (root / f.rel).resolve() == real:
                return f.sha256
        return None


def _covered(rel: str, top: bool) -> bool:
    name = rel.rpartition("/")[2]
    return name.endswith(".py") or (top and fnmatch(name, "hooks*.yaml"))


def _walk(root: Path) -> list[tuple[str, os.stat_result]]:
    """(relative path, lstat) of the covered entries under ``root``; links not followed."""
    found: list[tuple[str, os.stat_result]] = []
    stack, seen = [""], 0
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as it:
                entries = list(it)
        except OSError as exc:  # a folder's files could be imported by name, unlisted
            where = root / rel_dir if rel_dir else root
            raise UnhashableError(f"{where} cannot be listed ({exc.strerror})") from None
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                raise UnhashableError(f"{root} holds more than {MAX_ENTRIES} entries")
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if _covered(rel, not rel_dir):
                found.append((rel, st))
                if len(found) > MAX_COVERED:
                    raise UnhashableError(f"{root} holds more than {MAX_COVERED} .py and "
                                        "hooks*.yaml files")
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
    return found


def _hash_regular(path: Path, st: os.stat_result, frame: hashlib._Hash | None,
                  rel: bytes) -> str:
    """Stream ``path`` into ``frame`` (the old record: lengths, name, bytes); its SHA-256."""
    if st.st_size > MAX_FILE_BYTES:
        raise UnhashableError(f"{path} is over {size_words(MAX_FILE_BYTES)}")
    fd = os.open(path, _OPEN_FLAGS | os.O_NOFOLLOW)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
                st.st_dev, st.st_ino):
            raise UnhashableError(f"{path} was replaced while being hashed")
        if frame is not None:
            frame.update(len(rel).to_bytes(8, "big") + rel + st.st_size.to_bytes(8, "big"))
        own, total = hashlib.sha256(), 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > st.st_size:
                break
            own.update(chunk)
            if frame is not None:
                frame.update(chunk)
    finally:
        os.close(fd)
    if total != st.st_size:
        raise UnhashableError(f"{path} changed while being hashed")
    return own.hexdigest()


def _record(root: Path, real_root: Path, rel: str, st: os.stat_result,
            digest: hashlib._Hash) -> AhpFile:
    path = root / rel
    name = rel.encode("utf-8", "surrogateescape")
    kind = kind_of(st.st_mode)
    try:
        if kind == "file":
            return AhpFile(rel, path, kind, st.st_size, _hash_regular(path, st, digest, name))
        if kind == "symlink":
            target = os.readlink(path)
            data = b"link:" + os.fsencode(target)
            note: str | None = None
            sha: str | None = None
            size: int | None = None
            try:
                real = contained(path, real_root)
                real_st = os.stat(real)
                if stat.S_ISREG(real_st.st_mode):
                    sha, size = _hash_regular(real, real_st, None, b""), real_st.st_size
                    data += b":sha256:" + sha.encode()
                else:
                    note = f"leads to a {kind_of(real_st.st_mode)}; not read"
            except LayerFileError as exc:
                note = exc.reason
            except OSError as exc:
                note = f"leads nowhere ({exc.strerror})"
            _frame(digest, name, data)
            return AhpFile(rel, path, kind, size, sha, note, target)
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, "EUNKNOWN")
        _frame(digest, name, f"unreadable:{exc.errno}".encode())
        return AhpFile(rel, path, "unreadable", note=f"unreadable ({code})")
    _frame(digest, name, f"not-regular:{kind}".encode())
    return AhpFile(rel, path, kind, note="not a regular file; never opened")


def _frame(digest: hashlib._Hash, name: bytes, data: bytes) -> None:
    digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)


def ahp_snapshot(project_dir: Path) -> AhpSnapshot:
    """What trust covers of ``project_dir/.ahp`` (see the module doc); never raises."""
    root = project_dir / ".ahp"
    digest = hashlib.sha256()
    if not root.is_dir():
        return AhpSnapshot(root, (), digest.hexdigest())
    try:
        real_root = root.resolve()
        listed = sorted(_walk(root), key=lambda r: tuple(r[0].split("/")))
        files = tuple(_record(root, real_root, rel, st, digest) for rel, st in listed)
    except UnhashableError as exc:
        return AhpSnapshot(root, (), UNVERIFIABLE_DIGEST, f"{exc}: cannot be trusted")
    except (OSError, RuntimeError) as exc:
        return AhpSnapshot(root, (), UNVERIFIABLE_DIGEST, f"{root}: {exc}: cannot be trusted")
    return AhpSnapshot(root, files, digest.hexdigest())


# -- git --------------------------------------------------------------------------------------


# A repository that arrives with its own .git (an archive, not a clone) carries its own
# config; these keep the settings that name a program to run from running one.
SAFE_GIT_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
                   "-c", "diff.external=", "-c", "core.pager=cat")
SAFE_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
                "GIT_OPTIONAL_LOCKS": "0", "GIT_EXTERNAL_DIFF": "", "LC_ALL": "C"}


def git_ignores(project_dir: Path, path: Path) -> bool:
    """Whether git ignores the untracked file ``path`` of ``project_dir`` (module doc)."""
    env = {k: v for k in ("PATH", "HOME", "XDG_CONFIG_HOME") if (v := os.environ.get(k))}
    env.update(SAFE_GIT_ENV)
    try:
        rel = path.relative_to(project_dir).as_posix()
        done = subprocess.run(
            ["git", *SAFE_GIT_CONFIG, "-C", str(project_dir), "check-ignore", "-q", "--", rel],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, timeout=GIT_TIMEOUT, check=False, start_new_session=True)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


__all__ = ["MAX_FILE_BYTES", "SAFE_GIT_CONFIG", "SAFE_GIT_ENV", "UNVERIFIABLE_DIGEST",
           "AhpFile", "AhpSnapshot", "LayerFileError", "ahp_snapshot", "contained",
           "git_ignores", "kind_of", "read_bounded", "size_words"]
