"""The value walks of docs/development.md, measured (``tests/helpers/walk.py``): ``mcp-hooks
fire``'s arguments enter at most 6 modules and never climb back to one they left;
``Engine.fire``'s event enters at most 5; and the table in docs/development.md says what is
measured here."""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

import pytest

from mcp_hooks.cli import main
from mcp_hooks.engine.engine import Engine
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.settings import VARIABLES, Settings
from mcp_hooks.spec.outcome import Event
from tests.conftest import write_hook
from tests.helpers.walk import PACKAGE, Walk, identity, module_of, walk

DEVELOPMENT = PACKAGE.parent / "docs" / "development.md"
FIRE = "`mcp-hooks fire`'s arguments"
EVENT = "`Engine.fire`'s event"


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A small hook library (one HOOK.md hook that allows a Shell call) and an empty
    project; no ``MCP_HOOKS_*`` variable set."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    user, project = tmp_path / "user", tmp_path / "project"
    write_hook(user, "allow-shell", script="cat >/dev/null; exit 0\n",
               extra="matcher:\n  tool: Shell\n")
    project.mkdir()
    return user, project


def fire_walk(user: Path, project: Path) -> Walk:
    """``mcp-hooks fire`` in this process; its Namespace and the Settings made from it."""
    argv = ["fire", "pre-tool-call", "--tool", "Shell", "--input", '{"command": "ls"}',
            "--user-dir", str(user), "--project-dir", str(project), "--no-log", "--json"]
    codes: list[int] = []
    seen = walk(lambda: codes.append(main(argv)),
                identity(kinds=(argparse.Namespace, Settings)))
    assert codes == [0]
    return seen


def event_walk(user: Path, project: Path) -> Walk:
    """One ``Engine.fire`` of a before_tool event the HOOK.md hook answers."""
    event = Event.create(event_type="before_tool", tool_name="Shell",
                         tool_input={"command": "ls"}, session_id="walk", work_dir=str(project))

    async def fire() -> None:
        async with Engine(Registry(user, project, watch=False), Settings()) as engine:
            outcome = await engine.fire(event)
        assert [h.status for h in outcome.hooks] == ["allow"]

    return walk(lambda: asyncio.run(fire()), identity(event))


def documented() -> dict[str, tuple[int, int, int]]:
    """The walks table of docs/development.md: walk -> (modules, moves, climbs back)."""
    rows = {}
    for line in DEVELOPMENT.read_text(encoding="utf-8").splitlines():
        found = re.fullmatch(r"\| (.+?) \| (\d+) \| (\d+) \| (\d+) \|", line.strip())
        if found and (found[1].startswith(FIRE) or found[1].startswith(EVENT)):
            rows[FIRE if found[1].startswith(FIRE) else EVENT] = (
                int(found[2]), int(found[3]), int(found[4]))
    return rows


def test_fire_arguments_enter_few_modules_and_never_climb_back(
        library: tuple[Path, Path]) -> None:
    seen = fire_walk(*library)
    modules, _, climbs = seen.counts()
    assert modules <= 6, f"{modules} modules: {seen.modules}\n{seen.said()}"
    assert climbs == 0, seen.said()
    assert seen.modules[:2] == ["cli", "cli.fire"], seen.said()  # the door, then its command
    assert sum(1 for m, f in seen.calls if f == "settings") == 1, (
        "options.settings builds the record once per fire:\n" + seen.said())


def test_engine_fire_event_enters_few_modules(library: tuple[Path, Path]) -> None:
    seen = event_walk(*library)
    modules, _, _ = seen.counts()
    assert modules <= 5, f"{modules} modules: {seen.modules}\n{seen.said()}"


def test_the_docs_table_is_what_is_measured(library: tuple[Path, Path]) -> None:
    measured = {FIRE: fire_walk(*library).counts(), EVENT: event_walk(*library).counts()}
    assert documented() == measured, (
        "docs/development.md's walks table (walk | modules | moves | climbs back) must say "
        f"what tests/test_walks.py measures: {measured}")


def test_the_walk_counts_as_its_docstring_says(tmp_path: Path) -> None:
    """Moves and climbs back on a made-up sequence."""
    seen = Walk(calls=[("cli", "main"), ("cli.fire", "a"), ("cli.fire", "b"), ("options", "c"),
                       ("cli.fire", "d"), ("engine.engine", "e"), ("options", "f")])
    assert seen.counts() == (4, 5, 2)
    assert seen.climbs == [("cli.fire", "d"), ("options", "f")]
    assert module_of(str(PACKAGE / "settings" / "__init__.py")) == "settings"
    assert module_of(str(PACKAGE / "cli" / "fire.py")) == "cli.fire"
    assert module_of(str(tmp_path / "x.py")) is None
