"""Discovery: roots, project over user, invalid hooks kept apart, hot reload."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mcp_hooks import Registry
from mcp_hooks.discovery import default_user_dir, find_project_dir
from mcp_hooks.hookfile import HookSpec
from tests.conftest import RealHomeTouched, write_hook


def names(hooks: list[HookSpec]) -> list[str]:
    return [h.name for h in hooks]


def test_default_user_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert default_user_dir() == tmp_path / "cfg" / "agents" / "hooks"


def test_home_guard_catches_the_real_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    with pytest.raises(RealHomeTouched):
        default_user_dir()


def test_user_and_project_roots(user_dir: Path, project: Path, project_hooks: Path) -> None:
    write_hook(user_dir, "from-user")
    write_hook(project_hooks, "from-project")
    write_hook(user_dir, "shared", description="user version")
    write_hook(project_hooks, "shared", description="project version")
    registry = Registry(user_dir, project)
    hooks = {h.name: h for h in registry.hooks()}
    assert set(hooks) == {"from-user", "from-project", "shared"}
    assert hooks["shared"].scope == "project"
    assert hooks["shared"].description == "project version"
    assert registry.get("from-user") is not None and registry.get("nope") is None


def test_missing_roots_are_fine(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "no-user", tmp_path / "no-project")
    assert registry.hooks() == [] and registry.invalid == []


def test_invalid_hooks_are_listed_and_the_rest_keep_working(user_dir: Path) -> None:
    write_hook(user_dir, "good")
    bad = write_hook(user_dir, "bad", extra="priority: 5000\n")
    (user_dir / "no-md").mkdir()
    (user_dir / ".hidden").mkdir()
    (user_dir / "README.md").write_text("not a hook folder")
    registry = Registry(user_dir)
    assert names(registry.hooks()) == ["good"]
    assert {i.name for i in registry.invalid} == {"bad", "no-md"}
    bad_entry = next(i for i in registry.invalid if i.name == "bad")
    assert bad_entry.file == bad / "HOOK.md" and bad_entry.field == "priority"
    assert str(bad_entry).startswith(f"{bad / 'HOOK.md'}: priority: ")
    assert bad_entry.as_dict()["reason"]


def test_select_uses_the_tool_index_and_keeps_run_order(user_dir: Path) -> None:
    write_hook(user_dir, "literal", extra="priority: 50\nmatcher:\n  tool: 'Shell|Bash'\n")
    write_hook(user_dir, "regex", extra="priority: 70\nmatcher:\n  tool: 'Sh.*'\n")
    write_hook(user_dir, "any", extra="priority: 60\n")
    write_hook(user_dir, "other", extra="priority: 90\nmatcher:\n  tool: Write\n")
    registry = Registry(user_dir)
    assert names(registry.select("before_tool", "Shell", {})) == ["regex", "any", "literal"]
    assert names(registry.select("before_tool", "Bash", {})) == ["any", "literal"]
    assert names(registry.select("before_tool", "Read", {})) == ["any"]
    assert names(registry.select("after_tool", "Shell", {})) == []


def test_names_only_matchers_match_whole_names(user_dir: Path) -> None:
    """``Shell|Bash`` is looked up in a set rather than compiled: it must still mean what
    the regex means, whole names only, and the hook still offers the regex."""
    write_hook(user_dir, "names", extra="matcher:\n  tool: 'Shell|my-tool|Shell'\n")
    registry = Registry(user_dir)
    hook = registry.hooks()[0]
    for tool in ("Shell", "my-tool"):
        assert names(registry.select("before_tool", tool, {})) == ["names"]
        assert hook.matches(tool, {}) and hook.tool_re and hook.tool_re.fullmatch(tool)
    for tool in ("PowerShell", "Shel", "Shell|Bash", "my", None):
        assert names(registry.select("before_tool", tool, {})) == []
        assert not hook.matches(tool, {})


def test_find_project_dir_walks_up(project: Path) -> None:
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_project_dir(deep) == project
    assert find_project_dir(deep, stop=deep) == deep


# -- hot reload --------------------------------------------------------------------------


def test_a_hook_added_edited_and_removed_is_seen_by_the_next_refresh(user_dir: Path) -> None:
    registry = Registry(user_dir)
    generation = registry.generation
    assert not registry.refresh()

    write_hook(user_dir, "new-hook")
    assert registry.refresh()
    assert names(registry.hooks()) == ["new-hook"]
    assert registry.generation > generation

    hook_md = user_dir / "new-hook" / "HOOK.md"
    hook_md.write_text(hook_md.read_text().replace("priority", "x").replace(
        "trigger: before_tool", "trigger: before_stop"))
    assert registry.refresh()
    assert registry.get("new-hook") is not None
    assert registry.get("new-hook").event == "before_stop"  # type: ignore[union-attr]

    hook_md.write_text(hook_md.read_text().replace("trigger: before_stop", "trigger: bogus"))
    registry.refresh()
    assert registry.hooks() == [] and [i.name for i in registry.invalid] == ["new-hook"]

    shutil.rmtree(user_dir / "new-hook")
    assert registry.refresh()
    assert registry.hooks() == [] and registry.invalid == []


def test_chmod_of_a_script_is_seen(user_dir: Path) -> None:
    hook = write_hook(user_dir, "later", executable=False)
    registry = Registry(user_dir)
    assert registry.hooks() == [] and registry.invalid[0].field == "scripts/run"
    (hook / "scripts" / "run").chmod(0o755)
    assert registry.refresh()
    assert names(registry.hooks()) == ["later"]


def test_a_root_created_later_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "late-root"
    registry = Registry(root)
    assert registry.hooks() == []
    write_hook(root, "arrives")
    assert registry.refresh()
    assert names(registry.hooks()) == ["arrives"]


def test_one_shot_registry_does_not_watch(user_dir: Path) -> None:
    registry = Registry(user_dir, watch=False)
    write_hook(user_dir, "later")
    assert not registry.refresh() and registry.hooks() == []
    assert registry.rescan() and [h.name for h in registry.hooks()] == ["later"]


def test_unchanged_files_are_not_parsed_again(user_dir: Path) -> None:
    for i in range(5):
        write_hook(user_dir, f"h{i}")
    registry = Registry(user_dir)
    before = {h.name: h for h in registry.hooks()}
    write_hook(user_dir, "h5")
    registry.refresh()
    after = {h.name: h for h in registry.hooks()}
    assert all(after[name] is before[name] for name in before)  # same objects: not re-read


def test_polling_fallback_sees_changes(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = Registry(user_dir)
    assert registry._watcher is not None
    registry._watcher.close()  # as on a system without inotify
    registry._watcher.poll_interval = 0.0
    write_hook(user_dir, "polled")
    assert registry.refresh()
    assert names(registry.hooks()) == ["polled"]
    assert os.path.isdir(user_dir)
