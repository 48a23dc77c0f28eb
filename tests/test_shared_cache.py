"""The test cache's install protocol (``tests/helpers/shared_cache.py``), with real processes.

Each installer is a separate Python process calling ``shared_cache.ensure`` on a fake package
whose install writes three files, pausing after the first until a "go" file appears; the
tests kill installers midway with SIGKILL (no cleanup runs) and check that the final folder
is only ever complete or absent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import shared_cache
from tests.helpers.shared_cache import COMPLETE, cache_root, ensure, relocate_scripts

REPO = Path(__file__).resolve().parent.parent
FILES = ("one", "two", "three")
HANG = 60.0  # seconds: only a hang (an installer that never ends) reaches it

INSTALLER = """
import sys, time
from pathlib import Path
from tests.helpers.shared_cache import ensure

root, go, log = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])

def install(tmp):
    (tmp / "one").write_text("1")  # before the log line: a kill seen after it finds "one"
    with open(log, "a") as fh:
        fh.write(f"start {tmp.name}\\n")
    while not go.exists():
        time.sleep(0.01)
    (tmp / "two").write_text("2")
    (tmp / "three").write_text("3")

final, now = ensure("pkg/fake-1.0", install, root=root)
print(final, now)
"""


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def no_installer_left() -> Iterator[None]:
    """An installer still waiting for its "go" file when a test ends (a failed test) is
    killed, so it never polls on after the run."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=HANG)


def installer(root: Path, go: Path, log: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", INSTALLER, str(root), str(go), str(log)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    STARTED.append(proc)
    return proc


def wait_until(predicate: object, what: str) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + HANG
    while not predicate():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def waiting_on_a_lock(pid: int) -> bool:
    """Whether ``pid`` is blocked in ``flock`` (its line in /proc/locks is marked ``->``)."""
    return any(line.split()[1] == "->" and line.split()[5] == str(pid)
               for line in Path("/proc/locks").read_text().splitlines()
               if len(line.split()) > 5)


def starts(log: Path) -> list[str]:
    return log.read_text().split("\n")[:-1] if log.exists() else []


def assert_complete_or_absent(final: Path) -> None:
    if final.exists():
        assert sorted(p.name for p in final.iterdir()) == sorted([*FILES, COMPLETE])


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 0, err
    return out


def test_a_killed_install_leaves_no_final_folder_and_the_next_one_cleans_up(
    tmp_path: Path,
) -> None:
    root, go, log = tmp_path / "cache", tmp_path / "go", tmp_path / "log"
    final = root / "pkg" / "fake-1.0"
    first = installer(root, go, log)
    wait_until(lambda: len(starts(log)) == 1, "the first installer started")
    first.send_signal(signal.SIGKILL)  # midway: one file of three written
    first.communicate(timeout=HANG)  # reaped, pipes closed
    assert not final.exists()
    (partial,) = final.parent.glob(".fake-1.0.partial-*")
    assert (partial / "one").exists() and not (partial / "two").exists()

    go.touch()
    second = installer(root, go, log)
    assert finish(second).split() == [str(final), "True"]
    assert_complete_or_absent(final)
    assert final.exists()
    assert list(final.parent.glob(".fake-1.0.partial-*")) == []  # the dead one's leftovers


def test_concurrent_installers_install_once(tmp_path: Path) -> None:
    root, go, log = tmp_path / "cache", tmp_path / "go", tmp_path / "log"
    final = root / "pkg" / "fake-1.0"
    procs = [installer(root, go, log) for _ in range(3)]
    wait_until(lambda: len(starts(log)) > 1 or (
        len(starts(log)) == 1 and sum(waiting_on_a_lock(p.pid) for p in procs) == 2),
        "one installer started, two wait for it")
    assert len(starts(log)) == 1
    assert_complete_or_absent(final)
    go.touch()
    results = sorted(finish(p).split()[1] for p in procs)
    assert results == ["False", "False", "True"]  # one installed, two found it done
    assert len(starts(log)) == 1
    assert_complete_or_absent(final)
    assert final.exists()


def test_killing_the_lock_holder_lets_a_waiting_installer_finish(tmp_path: Path) -> None:
    root, go, log = tmp_path / "cache", tmp_path / "go", tmp_path / "log"
    final = root / "pkg" / "fake-1.0"
    holder = installer(root, go, log)
    wait_until(lambda: len(starts(log)) == 1, "the first installer holds the lock")
    waiter = installer(root, go, log)
    wait_until(lambda: waiting_on_a_lock(waiter.pid), "the second installer waits")
    assert len(starts(log)) == 1
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=HANG)  # reaped, pipes closed
    # The kernel drops the dead holder's lock: the waiter gets it, removes the dead install's
    # folder and installs afresh.
    wait_until(lambda: len(starts(log)) == 2, "the waiter started its own install")
    assert_complete_or_absent(final)
    go.touch()
    assert finish(waiter).split() == [str(final), "True"]
    assert_complete_or_absent(final)
    assert [p.name for p in final.parent.iterdir()] == ["fake-1.0"]


def test_a_failed_install_leaves_nothing(tmp_path: Path) -> None:
    def install(tmp: Path) -> None:
        (tmp / "one").write_text("1")
        raise RuntimeError("npm said no")

    with pytest.raises(RuntimeError, match="npm said no"):
        ensure("pkg/broken-1.0", install, root=tmp_path)
    assert list((tmp_path / "pkg").iterdir()) == []


def test_a_final_folder_without_the_marker_is_replaced(tmp_path: Path) -> None:
    old = tmp_path / "pkg" / "fake-1.0"
    old.mkdir(parents=True)
    (old / "half").write_text("left by an in-place install")
    calls: list[Path] = []
    final, now = ensure("pkg/fake-1.0", calls.append, root=tmp_path)
    assert (final, now) == (old, True) and len(calls) == 1
    assert sorted(p.name for p in final.iterdir()) == [COMPLETE]
    assert ensure("pkg/fake-1.0", calls.append, root=tmp_path) == (old, False)
    assert len(calls) == 1


def test_a_venv_is_relocated_before_the_rename(tmp_path: Path) -> None:
    def install(tmp: Path) -> None:
        (tmp / "bin").mkdir()
        script = tmp / "bin" / "tool"
        script.write_text(f"#!{tmp}/bin/python\nimport tool\n")
        script.chmod(0o755)
        (tmp / "bin" / "python").symlink_to(sys.executable)

    final, _ = ensure("hosts/venv-1.0", install, root=tmp_path, relocatable=False)
    script = final / "bin" / "tool"
    assert script.read_text() == f"#!{final}/bin/python\nimport tool\n"
    assert os.access(script, os.X_OK)
    relocate_scripts(final, tmp_path / "elsewhere", final)  # nothing to rewrite: unchanged
    assert script.read_text() == f"#!{final}/bin/python\nimport tool\n"


def test_the_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(shared_cache.ENV, str(tmp_path / "new"))
    monkeypatch.setenv(shared_cache.OLD_ENV, str(tmp_path / "old"))
    assert cache_root() == tmp_path / "new"
    monkeypatch.delenv(shared_cache.ENV)
    assert cache_root() == tmp_path / "old"  # the old name, for one release
    monkeypatch.delenv(shared_cache.OLD_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "mcp-hooks-test"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root().parts[-2:] == (".cache", "mcp-hooks-test")  # under the account's home
