"""Wire once (issue 33 item 1): one factory, ``engine/wiring.py``'s ``wire``, builds what an
engine works with from one ``Settings`` and the door's few choices; every door builds its
engine through it, and the engine's constructor takes the record it makes."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, EventLog, Registry
from mcp_hooks.engine.wiring import EngineParts, wire
from mcp_hooks.runner import RunResult
from mcp_hooks.settings import Settings
from mcp_hooks.state.files import FileStore
from tests.conftest import write_hook

PACKAGE = Path(__file__).resolve().parents[2] / "mcp_hooks"

# Calls still choosing parts by keyword, each with why. Key: (room, the call's source text).
PENDING: dict[tuple[str, str], str] = {}


def _engine_calls() -> list[tuple[str, int, str, ast.Call]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else None)
            if name == "Engine":
                rel = path.relative_to(PACKAGE).as_posix()
                source = " ".join((ast.get_source_segment(text, node) or "").split())
                found.append((rel, node.lineno, source, node))
    return found


def test_every_door_builds_its_engine_through_the_factory() -> None:
    """No module of the package chooses an engine's parts in the ``Engine(...)`` call: it
    passes what ``wire`` made (``Engine(registry, settings, parts)``), so the defaults live
    in one place and a door states its choices to the factory."""
    calls = _engine_calls()
    assert len(calls) >= 5, "the doors' Engine(...) calls were not found: is the scan right?"
    wrong = []
    for rel, line, source, call in calls:
        choices = [k.arg for k in call.keywords if k.arg not in ("settings", "parts")]
        if not choices and len(call.args) <= 3:
            continue
        if (rel.split("/")[0], source) in PENDING:
            continue
        wrong.append(f"mcp_hooks/{rel}:{line}: Engine(...) chooses {choices or 'parts'} "
                     "itself; pass them to engine/wiring.py's wire(registry, settings, ...) "
                     "and give the engine its parts: Engine(registry, settings, parts)")
    assert not wrong, "\n".join(wrong)
    seen = {(rel.split("/")[0], source) for rel, _, source, _ in calls}
    stale = sorted(set(PENDING) - seen)
    assert not stale, f"PENDING lists calls no longer there, remove them: {stale}"


def test_parts_or_choices_not_both(user_dir: Path) -> None:
    registry = Registry(user_dir, watch=False)
    parts = wire(registry, Settings(), one_shot=True)
    with pytest.raises(TypeError, match=r"give parts or one_shot, not both .*wiring\.wire"):
        Engine(registry, Settings(), parts, one_shot=True)


def test_one_store_behind_every_part_that_keeps_state(user_dir: Path, project: Path,
                                                     tmp_path: Path) -> None:
    """A door's store is the one every stateful part keeps its state in (and stays the
    door's to close); without one, the factory opens the settings' and the engine owns it."""
    registry = Registry(user_dir, project, watch=False)
    store = FileStore(tmp_path / "state", log=None)
    parts = wire(registry, Settings(), store=store, one_shot=True)
    assert not parts.owns_store and parts.logs
    assert parts.store is parts.stop_guard.store is parts.inbox.store is parts.asker.store \
        is store
    assert parts.control is not None and parts.control._ladder is not None
    assert parts.control._ladder.store is store
    own = wire(registry, Settings(log=tmp_path / "events.jsonl"))
    assert own.owns_store and own.log is not None and own.log.path == tmp_path / "events.jsonl"
    assert wire(registry, Settings(), control=False).control is None


def test_an_engine_from_parts_decides_as_one_wired_by_keywords(
        user_dir: Path, project: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "no-rm", script='echo "no rm here" >&2\nexit 2\n')
    registry = Registry(user_dir, project, watch=False)
    settings = Settings()
    event = Event.create(event_type="before_tool", tool_name="Shell",
                         tool_input={"command": "rm -rf x"}, work_dir=str(project))
    by_parts = Engine(registry, settings, wire(
        registry, settings, one_shot=True, log=EventLog(tmp_path / "a.jsonl")))
    by_keywords = Engine(registry, settings, one_shot=True, log=EventLog(tmp_path / "b.jsonl"))
    first, second = by_parts.fire_blocking(event), by_keywords.fire_blocking(event)
    assert first.decision == second.decision == "deny"
    assert first.reason == second.reason and "no rm here" in first.reason


def test_a_part_with_no_dependents_is_swapped_with_replace(user_dir: Path) -> None:
    registry = Registry(user_dir, watch=False)

    async def runner(argv: tuple[str, ...], stdin: bytes, **options: Any) -> RunResult:
        return RunResult(0)

    parts = dataclasses.replace(wire(registry, Settings()), runner=runner)
    assert isinstance(parts, EngineParts)
    assert Engine(registry, Settings(), parts)._runner is runner
