"""Progressive intervention: prompt, then control, then block; a pass resets; on disk."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from mcp_hooks.control.ladder import Ladder, convert
from mcp_hooks.spec.signals import Signal


def warning() -> Signal:
    return Signal.prompt("25 files changed", suggestions=["split"], source="limiter")


def split() -> Signal:
    return Signal.control([{"action": "split_batch", "batches": [["a"], ["b"]]}])


def test_the_ladder_climbs_and_stays_on_top(tmp_path: Path) -> None:
    ladder = Ladder(tmp_path / "ladder.json")
    seen = [ladder.apply("s", "before_issue_submit", "limiter", split()) for _ in range(4)]
    assert [s.intensity for s in seen if s] == ["prompt", "control", "block", "block"]
    assert seen[2] is not None and seen[2].payload["resolvable"] is True


def test_a_pass_resets_and_sessions_are_apart(tmp_path: Path) -> None:
    ladder = Ladder(tmp_path / "ladder.json")
    ladder.apply("s1", "t", "e", warning())
    assert ladder.count("s1", "t", "e") == 1
    assert ladder.apply("s1", "t", "e", None) is None
    assert ladder.count("s1", "t", "e") == 0
    ladder.apply("s1", "t", "e", warning())
    assert ladder.count("s2", "t", "e") == 0
    assert ladder.apply("s2", "t", "e", warning()).intensity == "prompt"  # type: ignore[union-attr]


def test_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "state" / "ladder.json"
    Ladder(path).apply("s", "t", "e", warning())
    Ladder(path).apply("s", "t", "e", warning())
    again = Ladder(path).apply("s", "t", "e", warning())
    assert again is not None and again.intensity == "block"  # control passed over: no change
    assert "25 files changed" in again.payload["reason"]
    assert again.payload["resolution_path"] == ["split"]


def test_aid_is_never_a_violation(tmp_path: Path) -> None:
    ladder = Ladder(tmp_path / "ladder.json")
    aid = Signal.aid("fyi")
    assert ladder.apply("s", "t", "e", aid) is aid
    assert ladder.count("s", "t", "e") == 0


def test_a_custom_ladder_and_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "ladder.json"
    path.write_text("{not json")
    ladder = Ladder(path)
    steps = ("prompt", "block")
    assert [ladder.apply("s", "t", "e", warning(), steps).intensity  # type: ignore[union-attr]
            for _ in range(3)] == ["prompt", "block", "block"]


def test_convert_keeps_the_finding() -> None:
    block = Signal.block("checklist incomplete", resolution_path=["finish docs"], source="c")
    prompt = convert(block, "prompt")
    assert prompt.payload["message"] == "checklist incomplete"
    assert prompt.payload["suggestions"] == ["finish docs"]
    assert prompt.source == "c" and prompt.id != block.id


def _bump(path: str) -> None:
    ladder = Ladder(Path(path))
    for _ in range(20):
        ladder.apply("s", "t", "e", warning())


def test_concurrent_processes_lose_no_step(tmp_path: Path) -> None:
    path = tmp_path / "ladder.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_bump, args=(str(path),)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert Ladder(path).count("s", "t", "e") == 60


def test_a_folder_where_ladder_json_belongs_is_named_and_the_ladder_still_climbs(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A folder at ladder.json kept the ladder at its first step forever, silently, and left
    a temporary file behind per violation."""
    path = tmp_path / "ladder.json"
    path.mkdir()
    ladder = Ladder(path)
    seen = [ladder.apply("s", "t", "e", split()) for _ in range(4)]
    assert [s.intensity for s in seen if s] == ["prompt", "control", "block", "block"]
    assert ladder.count("s", "t", "e") == 4
    assert ladder.apply("s", "t", "e", None) is None and ladder.count("s", "t", "e") == 0
    assert ladder.apply("s", "t", "e", warning()).intensity == "prompt"  # type: ignore[union-attr]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ladder.json", "ladder.json.lock"]
    err = capfd.readouterr().err
    assert err.count("escalation ladder's counts cannot be written") == 1
    assert f"{path} (a folder)" in err and "move it away" in err
