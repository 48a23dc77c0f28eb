"""protect-hooks in front of the real ``mcp-server-git`` (docs/proxy.md's main example), behind
``mcp-hooks proxy``, in a git repository that has ``.agents/hooks``: the bundled hook copied
into the user hooks folder by ``mcp-hooks add``, as ``init`` does.

Reading the repository passes; staging, committing or checking out a change to the hooks
folder is refused; a tool the guard does not know is refused only where it names a protected
path, with a reason that says where the user declares it a reader, and passes once declared.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MCP_HOOKS
from tests.helpers.proxied import UPSTREAM, proxied, text_of

pytestmark = pytest.mark.anyio

PREFIX = "Blocked by hook protect-hooks: Hook configuration protected:"
UNKNOWN = "unknown tool treated as a write: declare it a reader in"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, check=True, timeout=60)
    return done.stdout


@pytest.fixture
def repo(project: Path) -> Path:
    """The project (with .agents/hooks) as a git repository: one commit, a second branch
    whose hooks folder differs."""
    if shutil.which("git") is None:
        pytest.skip("git is needed for the mcp-server-git upstream")
    if importlib.util.find_spec("mcp_server_git") is None:
        pytest.skip("mcp-server-git is not installed (pip install mcp-server-git)")
    git(project, "init", "-q", "-b", "main")
    (project / "README.md").write_text("hello\n")
    (project / ".agents" / "hooks" / "README.md").write_text("the project's hooks\n")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "first commit")
    git(project, "checkout", "-q", "-b", "other")
    (project / ".agents" / "hooks" / "README.md").write_text("changed on another branch\n")
    git(project, "commit", "-q", "-am", "hooks changed")
    git(project, "checkout", "-q", "main")
    return project


@pytest.fixture
def guard(user_dir: Path) -> Path:
    """protect-hooks copied into the user hooks folder by the real ``mcp-hooks add``."""
    subprocess.run([MCP_HOOKS, "add", "protect-hooks", "--user-dir", str(user_dir)],
                   check=True, capture_output=True, timeout=120)
    return user_dir / "protect-hooks"


def upstreams(repo: Path) -> list[str]:
    server_git = shlex.join([sys.executable, "-m", "mcp_server_git", "--repository", str(repo)])
    # the test server's `rendezvous(folder, count)`: a tool protect-hooks does not know, which
    # writes a file into `folder`
    other = shlex.join([sys.executable, UPSTREAM, "--name", "t", "--tools", "echo,rendezvous"])
    return ["--upstream", f"git={server_git}", "--upstream", f"t={other}"]


async def test_readers_pass_and_changes_to_the_hooks_folder_are_refused(
        repo: Path, guard: Path, tmp_path: Path, user_dir: Path) -> None:
    (repo / "README.md").write_text("hello again\n")
    (repo / ".agents" / "hooks" / "NOTES.md").write_text("an agent's note\n")
    at = {"repo_path": str(repo)}
    async with proxied(tmp_path, repo, user_dir, *upstreams(repo), env=GIT_ENV) as client:
        status = await client.call_tool("git_status", at)
        assert not status.is_error, text_of(status)
        assert "README.md" in text_of(status) and ".agents/" in text_of(status)
        log = await client.call_tool("git_log", at)
        assert not log.is_error and "first commit" in text_of(log)
        for tool, extra in [("git_diff", {"target": "other"}), ("git_diff_unstaged", {}),
                            ("git_diff_staged", {}), ("git_show", {"revision": "HEAD"}),
                            ("git_branch", {"branch_type": "local"})]:
            result = await client.call_tool(tool, {**at, **extra})
            assert not result.is_error, (tool, text_of(result))
        assert "hello again" in text_of(await client.call_tool("git_diff_unstaged", at))

        # staging and committing an ordinary file pass
        added = await client.call_tool("git_add", {**at, "files": ["README.md"]})
        assert not added.is_error, text_of(added)
        committed = await client.call_tool("git_commit", {**at, "message": "readme"})
        assert not committed.is_error, text_of(committed)

        # staging a file of the hooks folder is refused
        refused = await client.call_tool("git_add",
                                         {**at, "files": [".agents/hooks/NOTES.md"]})
        assert refused.is_error and text_of(refused).startswith(PREFIX), text_of(refused)
        assert "git_add of .agents/hooks/NOTES.md" in text_of(refused)
        assert "NOTES.md" not in git(repo, "diff", "--cached", "--name-only")

        # the user staged it: committing it is still refused, and nothing is recorded
        git(repo, "add", ".agents/hooks/NOTES.md")
        refused = await client.call_tool("git_commit", {**at, "message": "sneaky"})
        assert refused.is_error, text_of(refused)
        assert "records the staged change to .agents/hooks/NOTES.md" in text_of(refused)
        git(repo, "reset", "-q")

        # switching to a branch whose hooks folder differs is refused
        refused = await client.call_tool("git_checkout", {**at, "branch_name": "other"})
        assert refused.is_error and "which changes .agents/hooks/README.md" in text_of(refused)
        git(repo, "branch", "same")
        switched = await client.call_tool("git_checkout", {**at, "branch_name": "same"})
        assert not switched.is_error, text_of(switched)

    assert git(repo, "log", "--format=%s").split() == ["readme", "first", "commit"]
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "same"
    assert (repo / ".agents" / "hooks" / "README.md").read_text() == "the project's hooks\n"


async def test_an_unknown_tool_is_a_write_only_where_it_names_a_protected_path(
        repo: Path, guard: Path, tmp_path: Path, user_dir: Path) -> None:
    hooks = repo / ".agents" / "hooks"
    elsewhere = repo / "scratch"
    elsewhere.mkdir()
    before = sorted(hooks.iterdir())
    async with proxied(tmp_path, repo, user_dir, *upstreams(repo)) as client:
        met = await client.call_tool("rendezvous", {"folder": str(elsewhere), "count": 1})
        assert not met.is_error and text_of(met) == "met 1"
        met = await client.call_tool("rendezvous", {"folder": str(repo), "count": 1})
        assert not met.is_error, text_of(met)  # the repository holds hooks; it is not one

        refused = await client.call_tool("rendezvous", {"folder": ".agents/hooks", "count": 1})
        reason = text_of(refused)
        assert refused.is_error and reason.startswith(PREFIX), reason
        assert f"rendezvous is an {UNKNOWN} {guard / 'HOOK.md'}" in reason
        assert "metadata.readers" in reason and "`readers: [rendezvous]`" in reason
        assert sorted(hooks.iterdir()) == before  # it never ran

        # the user declares it a reader in their copy: it passes (and runs)
        text = (guard / "HOOK.md").read_text()
        assert "\nmetadata:\n" in text
        (guard / "HOOK.md").write_text(
            text.replace("\nmetadata:\n", "\nmetadata:\n  readers: [rendezvous]\n", 1))
        met = await client.call_tool("rendezvous", {"folder": ".agents/hooks", "count": 1})
        assert not met.is_error, text_of(met)
    assert len(sorted(hooks.iterdir())) == len(before) + 1


async def test_a_broken_readers_list_is_named_in_the_refusal(
        repo: Path, guard: Path, tmp_path: Path, user_dir: Path) -> None:
    text = (guard / "HOOK.md").read_text()
    (guard / "HOOK.md").write_text(
        text.replace("\nmetadata:\n", "\nmetadata:\n  readers: {rendezvous: yes}\n", 1))
    async with proxied(tmp_path, repo, user_dir, *upstreams(repo)) as client:
        refused = await client.call_tool("rendezvous", {"folder": ".agents/hooks", "count": 1})
    reason = text_of(refused)
    assert refused.is_error and UNKNOWN in reason, reason
    assert f"metadata.readers in {guard / 'HOOK.md'} is ignored" in reason
    assert "must be a list of tool names" in reason
