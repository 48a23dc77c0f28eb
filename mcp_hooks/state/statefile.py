"""One state file, opened and read safely: what every file of the file backend shares.

A state file is opened without following a final symlink and without blocking
(``open_regular``: a FIFO never hangs a reader, a device is never opened), must be a regular
file, and is read bounded (``read_fd``); ``write_all`` writes every byte or raises (a full
disk is an ``OSError``, never a silent short write). A file's name under a state folder is a
digest of what it stands for (``name_digest``): a session id or a key never becomes a path.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def name_digest(*parts: str) -> str:
    """32 hex digits of ``parts`` (a file name that stands for them)."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def open_regular(path: Path, flags: int) -> int:
    """``path`` opened without following a final symlink or blocking; ``OSError`` (ELOOP,
    EISDIR, ENXIO...) when it is not a regular file."""
    fd = os.open(path, flags | FLAGS, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    return fd


def read_fd(fd: int, cap: int) -> bytes:
    """At most ``cap`` bytes of ``fd`` from its start."""
    out = bytearray()
    while len(out) < cap:
        chunk = os.pread(fd, min(1 << 16, cap - len(out)), len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` written to ``fd``; ``OSError`` when the file takes none."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if not written:
            raise OSError(errno.ENOSPC, "the file took no bytes")
        view = view[written:]
