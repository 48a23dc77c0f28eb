"""The event log's ``hooks_digest``: which version of the hooks decided an event.

Real folders, real engines and their logs: the digest names the hook folders' content (HOOK.md,
scripts) and the hooks.yaml files, not where they are or when they were touched; it is made
once per load of the hooks, and stays right under threads that read it while the hooks are
loaded again.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Event
from mcp_hooks.state.eventlog import EventLog
from tests.conftest import write_hook
from tests.helpers.control_helpers import make_repo, write

YAML = """
hooks:
  pre-issue-submit:
    - oracle: ChecklistValidator
      config: {min_completion_rate: 1.0}
"""
ISSUE = {"id": "FEAT-1", "checklist": [{"text": "code", "done": True}], "files_changed": []}


def hooks_in(folder: Path) -> Path:
    write_hook(folder, "gate", script="cat >/dev/null\nexit 0\n")
    write_hook(folder, "stop-check", trigger="before_stop", script="exit 0\n")
    return folder


def digest_of(user_dir: Path, project: Path | None = None) -> str:
    registry = Registry(user_dir, project, watch=False)
    try:
        return registry.hooks_digest()
    finally:
        registry.close()


def test_the_same_hooks_elsewhere_have_the_same_digest(tmp_path: Path) -> None:
    first = hooks_in(tmp_path / "a")
    shutil.copytree(first, tmp_path / "b" / "deep")
    os.utime(tmp_path / "b" / "deep" / "gate" / "scripts" / "run", (0, 0))  # time is no part
    assert digest_of(first) == digest_of(tmp_path / "b" / "deep")
    assert len(digest_of(first)) == 16


def test_any_change_of_a_hook_is_another_digest(tmp_path: Path) -> None:
    folder = hooks_in(tmp_path / "hooks")
    seen = {digest_of(folder)}
    (folder / "gate" / "scripts" / "run").write_text("#!/bin/sh\ncat >/dev/null\nexit 0 #\n")
    seen.add(digest_of(folder))
    (folder / "gate" / "scripts" / "helper.txt").write_text("data the script reads\n")
    seen.add(digest_of(folder))
    md = folder / "gate" / "HOOK.md"
    md.write_text(md.read_text().replace("test hook gate", "the gate"))
    seen.add(digest_of(folder))
    write_hook(folder, "third", script="exit 0\n")
    seen.add(digest_of(folder))
    shutil.rmtree(folder / "third")
    shutil.rmtree(folder / "stop-check")
    seen.add(digest_of(folder))
    assert len(seen) == 6


def test_it_is_made_once_per_load(tmp_path: Path) -> None:
    """A registry that read the folder once keeps the digest of what it loaded until it
    loads again (``--no-watch``: never)."""
    folder = hooks_in(tmp_path / "hooks")
    registry = Registry(folder, None, watch=False)
    before = registry.hooks_digest()
    (folder / "gate" / "scripts" / "run").write_text("#!/bin/sh\nexit 0 # v2\n")
    assert registry.refresh() is False  # not watching: nothing is read again
    assert registry.hooks_digest() == before
    registry.rescan()
    assert registry.hooks_digest() != before
    assert registry.hooks_digest() == digest_of(folder)


def test_sixteen_threads_reading_it_while_the_hooks_load_again(tmp_path: Path) -> None:
    folder = hooks_in(tmp_path / "hooks")
    registry = Registry(folder, None, watch=False)
    script = folder / "gate" / "scripts" / "run"
    stop = threading.Event()
    seen: set[str] = set()
    failures: list[BaseException] = []

    def read() -> None:
        try:
            while not stop.is_set():
                seen.add(registry.hooks_digest())
                stop.wait(0.001)  # let the loader run too
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(16)]
    for thread in threads:
        thread.start()
    try:
        for n in range(10):
            script.write_text(f"#!/bin/sh\nexit 0 # {n}\n")
            registry.rescan()
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert not failures
    assert all(len(d) == 16 for d in seen)
    # the last load's digest, not one cached from an earlier one
    assert registry.hooks_digest() == digest_of(folder)


def fired_digest(repo: Path, user_dir: Path, tmp_path: Path, log_name: str) -> str:
    log = tmp_path / log_name
    registry = Registry(user_dir, repo, watch=False)
    control = ControlLayer(repo, user_file=tmp_path / "home" / ".ahp" / "hooks.yaml",
                           watch=False)
    engine = Engine(registry, Settings(), log=EventLog(log), control=control, one_shot=True)
    engine.fire_blocking(Event("pre-issue-submit", session_id="s", work_dir=str(repo),
                               payload={"issue": ISSUE}))
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    registry.close()
    return str(record["hooks_digest"])


def test_the_hooks_yaml_files_are_part_of_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    user_dir = hooks_in(tmp_path / "user-hooks")
    without = fired_digest(repo, user_dir, tmp_path, "0.jsonl")
    assert without == digest_of(user_dir, repo)  # no hooks.yaml: the folders' digest
    write(repo, ".ahp/hooks.yaml", YAML)
    first = fired_digest(repo, user_dir, tmp_path, "1.jsonl")
    write(repo, ".ahp/hooks.yaml", YAML.replace("1.0", "0.5"))
    second = fired_digest(repo, user_dir, tmp_path, "2.jsonl")
    write(repo, ".ahp/hooks.yaml", YAML)
    again = fired_digest(repo, user_dir, tmp_path, "3.jsonl")
    assert len({without, first, second}) == 3
    assert again == first
