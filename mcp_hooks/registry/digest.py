"""A hook folder's content digest: what trust is recorded against.

``hook_digest`` is the SHA-256 of a whole hook folder: every entry's relative path, its mode
and its content (a file's bytes, a symlink's target text, never followed), so any change to
HOOK.md, a script, a mode bit or the set of files gives another digest. ``set_digest`` folds
a set of hooks' digests into one short digest (a layer's, the registry's).

A hostile folder must not stall a tool call: past ``MAX_ENTRIES`` entries or a file over
``MAX_FILE_BYTES`` (or a folder that cannot be listed, a file replaced while read) a folder
is not hashed and gets ``UNVERIFIABLE_DIGEST``, which the trust store (``trust.py``) never
records and never reports as trusted; ``digest_report`` says why.

Standard library only, and cheap to import: the host bridges import it on every tool call.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from mcp_hooks.errors import RunError

# A hostile folder must not stall a tool call: past these bounds a folder is not hashed and
# gets UNVERIFIABLE_DIGEST, which the store never records and never reports as trusted.
MAX_ENTRIES = 1000
MAX_FILE_BYTES = 16 * 1024 * 1024
UNVERIFIABLE_DIGEST = "0" * 64
_DIGEST_CHARS = frozenset("0123456789abcdef")


class TrustError(RunError):
    """Trust could not be recorded: a hook that cannot be hashed, or a bad argument."""


class UnhashableError(TrustError):
    """A hook folder that cannot be hashed in full: too many entries, a file too large, a
    folder that cannot be listed, or a file replaced while being read. ``digest_report``
    answers it with ``UNVERIFIABLE_DIGEST``."""


def _frame(*parts: bytes) -> bytes:
    """Length-prefixed fields: no two different records hash the same bytes."""
    return b"".join(b"%d:%s," % (len(p), p) for p in parts)


def _errname(exc: OSError) -> bytes:
    return (errno.errorcode.get(exc.errno or 0) or "EUNKNOWN").encode()


def _file_payload(path: bytes, st: os.stat_result, rel: str, notes: list[str]) -> bytes:
    if st.st_size > MAX_FILE_BYTES:
        raise UnhashableError(f"{rel}: larger than {MAX_FILE_BYTES >> 20} MiB, not hashed")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        notes.append(f"{rel}: unreadable ({exc.strerror})")
        return b"unreadable:" + _errname(exc)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
            st.st_dev, st.st_ino
        ):
            raise UnhashableError(f"{rel}: replaced while being hashed")

        h = hashlib.sha256()
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise UnhashableError(f"{rel}: larger than {MAX_FILE_BYTES >> 20} MiB, not hashed")
            h.update(chunk)
        return b"sha256:" + h.hexdigest().encode()
    except OSError as exc:
        notes.append(f"{rel}: unreadable ({exc.strerror})")
        return b"unreadable:" + _errname(exc)
    finally:
        os.close(fd)


def _payload(path: bytes, st: os.stat_result, rel: str, notes: list[str]) -> bytes:
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return _file_payload(path, st, rel, notes)
    if stat.S_ISDIR(mode):
        return b"dir"
    if stat.S_ISLNK(mode):
        try:
            return b"link:" + os.readlink(path)
        except OSError as exc:
            notes.append(f"{rel}: symlink unreadable ({exc.strerror})")
            return b"unreadable-link:" + _errname(exc)
    if stat.S_ISFIFO(mode):
        return b"fifo"
    if stat.S_ISSOCK(mode):
        return b"socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return b"device:%d" % st.st_rdev
    return b"other"


def _records(root: bytes, notes: list[str]) -> list[tuple[bytes, bytes]]:
    """(relative path, framed record) of every entry under ``root``, unsorted."""
    listed: list[tuple[bytes, os.stat_result | OSError]] = []
    stack: list[bytes] = [b""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(root + b"/" + rel_dir if rel_dir else root) as it:
                for entry in it:
                    rel = rel_dir + b"/" + entry.name if rel_dir else entry.name
                    found: os.stat_result | OSError
                    try:
                        found = entry.stat(follow_symlinks=False)
                    except OSError as exc:
                        found = exc
                    listed.append((rel, found))
                    if len(listed) > MAX_ENTRIES:
                        raise UnhashableError(f"more than {MAX_ENTRIES} entries, not hashed")
                    if isinstance(found, os.stat_result) and stat.S_ISDIR(found.st_mode):
                        stack.append(rel)
        except OSError as exc:
            if not rel_dir:
                raise UnhashableError(f"cannot list the folder ({exc.strerror})") from None
            # The directory's own record is already listed; its unlisted content is marked.
            notes.append(f"{os.fsdecode(rel_dir)}: cannot be listed ({exc.strerror})")
            listed.append((rel_dir + b"/", exc))
    records: list[tuple[bytes, bytes]] = []
    for rel, found in listed:
        shown = os.fsdecode(rel)
        if isinstance(found, OSError):
            records.append((rel, _frame(rel, b"?", b"unlisted:" + _errname(found))))
            continue
        payload = _payload(root + b"/" + rel, found, shown, notes)
        records.append((rel, _frame(rel, b"%o" % found.st_mode, payload)))
    return records


def digest_report(hook_dir: Path) -> tuple[str, list[str]]:
    """``hook_digest`` and notes on what it could not read (for people; never raises).

    The digest is ``UNVERIFIABLE_DIGEST`` when the folder cannot be hashed in full: more than
    ``MAX_ENTRIES`` entries, a file over ``MAX_FILE_BYTES``, a folder that cannot be listed,
    or a file replaced while being read. The notes then say why.
    """
    notes: list[str] = []
    try:
        records = _records(os.fsencode(hook_dir), notes)
    except UnhashableError as exc:
        return UNVERIFIABLE_DIGEST, [*notes, str(exc)]
    records.sort(key=lambda r: r[0])

    h = hashlib.sha256(b"mcp-hooks hook digest v1\n")
    for _, record in records:
        h.update(record)
    return h.hexdigest(), notes


def hook_digest(hook_dir: Path) -> str:
    """Hex SHA-256 over a hook folder's content; never raises.

    Every entry under the folder (HOOK.md included), sorted by relative path, contributes
    its relative path, its mode (type and permission bits) and its content: a file's bytes,
    a symlink's target text (not followed), a device's number; directories, FIFOs and
    sockets their type only (never opened). An unreadable file contributes a marker naming
    the error. A folder that cannot be hashed in full gets ``UNVERIFIABLE_DIGEST``, which
    is never trusted (see ``digest_report`` for why).
    """
    return digest_report(hook_dir)[0]


def set_digest(hooks: Iterable[tuple[str, str, str]], *more: str) -> str:
    """A short (16 hex) digest of a set of hooks: each one's scope, name and
    ``hook_digest``, in any order, and ``more`` (the hooks.yaml files' digests), in order.
    The same files give the same digest on every machine (no path, no time in it)."""
    h = hashlib.sha256(b"mcp-hooks hook set v1\n")
    for scope, name, digest in sorted(hooks):
        h.update(_frame(scope.encode(), name.encode(), digest.encode()))
    for part in more:
        h.update(_frame(b"yaml", part.encode()))
    return h.hexdigest()[:16]


def is_digest(text: object) -> bool:
    return isinstance(text, str) and len(text) == 64 and _DIGEST_CHARS.issuperset(text)
