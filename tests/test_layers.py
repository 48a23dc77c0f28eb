"""The package's shape, checked: rooms import only downward, no import cycle, small modules.

The rooms (docs/development.md draws them), lowest first; a module may import its own room or
a lower one, at module level or inside a function (``TYPE_CHECKING`` imports count too)::

    base      errors, paths, guard, ownstdout, settings: what every room may use
    spec      the words: events, HOOK.md, matchers, limits, vocabulary, signals, records
    registry  the hooks a project has        state   per-session state (no import between them)
    runner    one hook as a process
    control   hooks.yaml config, context, oracles
    engine    one event -> one Outcome (the chain, judge, launch, stop guard, entries)
    api       service, api, registrar, lanes, hookkit, options, tracing, metrics: projects ->
              engines, the Python API, the options every command shares
    doors     hosts/, adapters/ and dashboard/, then server/ (it mounts the bridges' forward
              endpoint), then proxy/ (a server in front of servers), then cli/
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.rooms import ROOMS

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_hooks"
MAX_LINES = 500  # issue 33: no module over 500 lines (the bundled hooks too: test_shape)
SIBLINGS = {("registry", "state"), ("state", "registry")}  # same floor, never each other


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(module: str) -> int:
    room = _room(module)
    if room in ("", "__main__"):
        return ROOMS["cli"]  # the package's lazy public API re-exports; `python -m mcp_hooks`
    return ROOMS[room]  # a KeyError names a module in no room: give it one above


def _modules() -> dict[str, Path]:
    """The package's modules; the bundled hooks (``library/``) are standalone scripts."""
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))
            if "library" not in p.relative_to(PACKAGE).parts[:1]}


def _imports(path: Path, module: str, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("mcp_hooks"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name.startswith("mcp_hooks"):
                found.add(name)
                found.update(f"{name}.{a.name}" for a in node.names)
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def test_every_module_is_small() -> None:
    big = {
        name: n for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not big, f"modules over {MAX_LINES} lines (split them by concern): {big}"


def test_layers_import_only_downward() -> None:
    modules = _modules()
    upward = []
    for name, path in modules.items():
        for imported in _imports(path, name, top_level_only=False):
            target = _resolve(imported, modules)
            if not target or target == "mcp_hooks":
                continue
            if _layer(target) > _layer(name) or (_room(name), _room(target)) in SIBLINGS:
                upward.append(f"{name} -> {target}")
    assert not upward, "imports to a higher room (or a sibling): " + ", ".join(sorted(set(upward)))


@pytest.mark.parametrize("top_level_only", [True, False], ids=["module-level", "any-import"])
def test_no_import_cycle(top_level_only: bool) -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _imports(path, name, top_level_only=top_level_only)
        targets = {_resolve(i, modules) for i in imported}
        graph[name] = {
            t for t in targets
            if t and t != name and t != "mcp_hooks" and not name.startswith(t + ".")
        }
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt):], nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_checks_see_the_package() -> None:
    modules = _modules()
    assert {"mcp_hooks.engine.engine", "mcp_hooks.errors", "mcp_hooks.cli"} <= set(modules)
    assert _layer("mcp_hooks.cli.hooks") > _layer("mcp_hooks.proxy.gate") > _layer(
        "mcp_hooks.server.app") > _layer("mcp_hooks.hosts.bridge") > _layer(
        "mcp_hooks.service") > _layer("mcp_hooks.engine.engine")
    assert _layer("mcp_hooks.engine.chain") > _layer("mcp_hooks.control.config") > _layer(
        "mcp_hooks.runner.core") > _layer("mcp_hooks.state.inbox") > _layer(
        "mcp_hooks.spec.events") > _layer("mcp_hooks.errors")


def test_every_module_is_in_a_room() -> None:
    homeless = sorted(name for name in _modules()
                      if name != "mcp_hooks" and _room(name) not in ROOMS | {"__main__": 0})
    assert not homeless, f"modules in no room (add them to ROOMS): {homeless}"


def _test_module_imports(path: Path) -> list[str]:
    """The test modules (``tests...test_*``) that ``path`` imports, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:  # from .test_x / from . import
            names = [("." * node.level) + (node.module or a.name) for a in node.names]
            found += [n for n in names if n.lstrip(".").rsplit(".", 1)[-1].startswith("test_")]
            continue
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        found += [n for n in names
                  if n.startswith("tests.") and n.rsplit(".", 1)[-1].startswith("test_")]
    return found


def test_the_sharing_check_sees_relative_imports(tmp_path: Path) -> None:
    path = tmp_path / "test_x.py"
    path.write_text("from .test_real_hosts import run\nfrom . import test_more\n"
                    "from ..helpers import bridges\nfrom tests.e2e.test_a import b\n",
                    encoding="utf-8")
    assert _test_module_imports(path) == [".test_real_hosts", ".test_more", "tests.e2e.test_a"]


def test_tests_share_only_through_helpers() -> None:
    """A test module never imports another: what several share lives in tests/helpers/
    (or is a fixture in a conftest.py), so a test file can be read, moved or deleted alone."""
    tests = Path(__file__).resolve().parent
    offenders = {str(p.relative_to(tests)): mods for p in sorted(tests.rglob("*.py"))
                 if (mods := _test_module_imports(p))}
    assert len(list(tests.rglob("test_*.py"))) > 100  # the check sees the suite
    assert not offenders, ("move what these import into tests/helpers/ and import it from "
                           f"there: {offenders}")
