"""``paths.read_plain``: the one way a file the user or a repository may have swapped is read
(the trust store, a HOOK.md): never waited on, never past its cap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_hooks.paths import read_plain


def test_a_plain_file_is_read_whole_up_to_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_plain(path, 10) == b"x" * 10
    with pytest.raises(ValueError, match="larger than 9 bytes"):
        read_plain(path, 9)
    path.write_bytes(b"")
    assert read_plain(path, 0) == b""


def test_a_device_that_never_ends_is_refused_not_read_on(tmp_path: Path) -> None:
    """A link to /dev/zero where a file belongs: refused before a byte is read."""
    link = tmp_path / "endless"
    link.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="not a regular file"):
        read_plain(link, 1 << 20)


@pytest.mark.parametrize("odd", ["fifo", "folder", "missing"])
def test_what_is_not_a_plain_file_is_said_at_once(tmp_path: Path, odd: str) -> None:
    path = tmp_path / odd
    if odd == "fifo":
        os.mkfifo(path)  # no writer: a blocking open would wait forever
    elif odd == "folder":
        path.mkdir()
    if odd == "missing":
        with pytest.raises(FileNotFoundError):
            read_plain(path, 100)
    else:
        with pytest.raises(ValueError, match=r"not a regular file \(a FIFO, a device or a"):
            read_plain(path, 100)
