"""Each door whose stdout is a protocol owns it: ``owned_stdout``.

``mcp-hooks bridge <host>`` answers a host in one JSON document on stdout, ``mcp-hooks fire``
prints its outcome there (``--json``: the ``Outcome``), and ``serve``/``proxy`` over stdio
speak JSON-RPC on it. Anything else printed there (a module that prints when imported: a
trusted custom oracle, a library; an oracle or a Python callable that prints when called; a
child process or C code writing to fd 1) would land before or inside the answer, and the
host could not read the user's own deny.

So each of these doors takes fd 1 for itself as it starts: ``owned_stdout()`` duplicates fd 1
onto a private descriptor (close-on-exec, above 2) for the door's own output, then points fd 1
at stderr and ``sys.stdout`` at ``sys.stderr``, so whatever anything else prints goes to
stderr. Output still buffered in ``sys.stdout`` when the claim starts (printed before it)
goes to stderr too, as does what a library wrote to the old ``sys.stdout`` object it kept.
Leaving the block flushes the answer and restores fd 1 and ``sys.stdout``.

Claims nest: a door inside another's claim (the stdio transport inside ``serve``, the bridge
inside the command line's ``main``) gets the same stream. When ``sys.stdout`` is not backed
by fd 1 (a program that replaced it, pytest's capture), the door answers on ``sys.stdout``'s
own buffer and only ``sys.stdout`` is pointed at stderr.
"""

from __future__ import annotations

import fcntl
import io
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import BinaryIO, TextIO, cast

__all__ = ["owned_stdout", "text_stream"]

_CLAIMS: list[BinaryIO] = []  # the stream of the claim in force; nested claims share it
_LOCK = threading.Lock()


def _backed_by_fd1(stream: TextIO) -> bool:
    try:
        return stream.fileno() == 1
    except (AttributeError, OSError, ValueError):
        return False


def _private_copy_of_fd1() -> int | None:
    """A private duplicate of fd 1, after pointing fd 1 at stderr; None when impossible."""
    try:
        private = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: stray output is dropped instead
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    return private


@contextmanager
def owned_stdout() -> Iterator[BinaryIO]:
    """Take stdout for a door's answer (see the module docstring).

    Yields:
        The binary stream the door writes its answer or protocol to (flushed on exit).
    """
    with _LOCK:
        if _CLAIMS:
            outer: BinaryIO | None = _CLAIMS[0]
        else:
            outer = None
            saved = sys.stdout
            private = _private_copy_of_fd1() if _backed_by_fd1(saved) else None
            if private is not None:
                out: BinaryIO = os.fdopen(private, "wb")
            else:  # not fd 1, or it cannot be duplicated: the stream itself answers
                out = getattr(saved, "buffer", None) or cast(BinaryIO, _TextAsBinary(saved))
            sys.stdout = sys.stderr
            with suppress(Exception):
                saved.flush()  # what was printed before the claim: to stderr now
            _CLAIMS.append(out)
    if outer is not None:
        yield outer
        return
    try:
        yield out
    finally:
        with _LOCK:
            _CLAIMS.clear()
            with suppress(Exception):
                out.flush()  # a reader that has gone away must not hide the first error
            with suppress(Exception):
                saved.flush()  # stray output a library kept in the old stream: stderr too
            if private is not None:
                with suppress(OSError):
                    os.dup2(private, 1)
                with suppress(Exception):  # closes ``private``, even when the flush fails
                    out.close()
            sys.stdout = saved


def text_stream(out: BinaryIO) -> TextIO:
    """A UTF-8 text stream over ``out`` that never closes it (for the SDK's stdio)."""
    return _Unowned(out, encoding="utf-8", write_through=True)


class _Unowned(io.TextIOWrapper):
    """A text layer whose ``close`` leaves the binary stream below open."""

    def close(self) -> None:
        with suppress(ValueError):
            self.detach()


class _TextAsBinary(io.RawIOBase):
    """A stdout with no ``buffer`` (an embedding program's): bytes written as UTF-8 text."""

    def __init__(self, text: TextIO) -> None:
        super().__init__()
        self._text = text

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self._text.write(bytes(data).decode("utf-8", "replace"))
        return len(data)

    def flush(self) -> None:
        self._text.flush()
