"""Faults in a chain decided by one rule each: a broken hooks.yaml under ``--on-fault warn``
and in a never-trusted project, a hook whose script does not load, through the engine and
through ``mcp-hooks fire``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mcp_hooks.control.config import trust_config
from mcp_hooks.engine.engine import Engine
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.registry.discovery import Registry
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import Settings
from mcp_hooks.spec.outcome import Event, Outcome
from tests.conftest import MCP_HOOKS
from tests.helpers.control_helpers import make_repo, write

pytestmark = pytest.mark.anyio

BROKEN = "hooks:\n  pre-tool-use:\n    - {oracle: NoSuchOracle}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def engine_for(repo: Path, tmp_path: Path, on_fault: str = "block") -> Engine:
    registry = Registry(tmp_path / "user-hooks", repo, watch=False)
    control = ControlLayer(repo, user_file=tmp_path / "home" / ".ahp" / "hooks.yaml",
                           watch=False)
    return Engine(registry, Settings(on_fault=on_fault),  # type: ignore[arg-type]
                  control=control, one_shot=True)


def shell(repo: Path, command: str = "ls") -> Event:
    return Event("before_tool", session_id="s", work_dir=str(repo), tool_name="Shell",
                 tool_input={"command": command})


def fire(engine: Engine, event: Event) -> Outcome:
    return engine.fire_blocking(event)


def run_fire(repo: Path, *args: str, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Shell", "--input", '{"command": "ls"}',
         "--project-dir", str(repo), "--user-dir", str(repo / "no-user-hooks"), *args],
        cwd=repo, capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


# -- item: a broken hooks.yaml under --on-fault warn says one thing --------------------------

def test_a_broken_hooks_yaml_let_through_under_warn_carries_no_block_signal(
        repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", BROKEN)
    outcome = fire(engine_for(repo, tmp_path, "warn"), shell(repo))
    assert not outcome.denied
    assert any("NoSuchOracle" in w for w in outcome.warnings)
    assert [(s.intensity, s.header.type) for s in outcome.signals] == [("prompt", "config_error")]


def test_fire_under_warn_says_allowed_and_never_block(repo: Path) -> None:
    write(repo, ".ahp/hooks.yaml", BROKEN)
    done = run_fire(repo, "--on-fault", "warn")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ALLOWED  before_tool"), done.stdout
    assert "hooks.yaml has problems, let through with the warning below" in done.stdout
    assert "block" not in done.stdout.replace("NoSuchOracle", ""), done.stdout
    denied = run_fire(repo)  # the default, --on-fault block: a deny, as the doc says
    assert denied.returncode == 2, denied.stdout + denied.stderr
    assert denied.stdout.startswith("DENIED  before_tool  by hooks.yaml"), denied.stdout


# -- item: a never-trusted project's broken hooks.yaml denies nothing -------------------------

def test_a_broken_untrusted_hooks_yaml_is_skipped_with_a_warning(
        repo: Path, tmp_path: Path, untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks: [not, a, mapping\n")
    outcome = fire(engine_for(repo, tmp_path), shell(repo))
    assert not outcome.denied, outcome.reason
    assert not outcome.signals
    assert any("not trusted and has problems" in w and "mcp-hooks trust" in w
               and "malformed YAML" in w for w in outcome.warnings), outcome.warnings


def test_a_broken_entry_of_an_untrusted_layer_leaves_its_valid_entries_applying(
        repo: Path, tmp_path: Path, untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml",
          "hooks:\n  pre-tool-use:\n    - {oracle: NoSuchOracle}\n"
          "    - oracle: PermissionChecker\n")
    engine = engine_for(repo, tmp_path)
    safe = fire(engine, shell(repo))
    risky = fire(engine, shell(repo, "rm -rf /"))
    assert not safe.denied and any("NoSuchOracle" in w for w in safe.warnings)
    assert [s.source for s in risky.signals] == ["permission-checker"], risky  # it ran


def test_a_trusted_layer_broken_since_still_fails_closed(
        repo: Path, tmp_path: Path, untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n    - oracle: PermissionChecker\n")
    trust_config(repo, TrustStore())
    write(repo, ".ahp/hooks.yaml", BROKEN)
    outcome = fire(engine_for(repo, tmp_path), shell(repo))
    assert outcome.denied and "NoSuchOracle" in (outcome.reason or "")


def test_fire_in_an_untrusted_clone_with_a_broken_hooks_yaml_allows(
        repo: Path, untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml", BROKEN)
    done = run_fire(repo, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["decision"] == "allow"
    assert any("not trusted and has problems" in w for w in outcome["warnings"])


# -- item: a hook whose script does not load counts only on the calls its matcher admits ------

def write_scriptless(root: Path, name: str, matcher: str) -> Path:
    """A HOOK.md that parses, with a matcher, and no entry script at all."""
    return write(root, f"{name}/HOOK.md", f"---\nname: {name}\ndescription: guards git\n"
                 f"trigger: before_tool\n{matcher}---\n\n# {name}\n")


@pytest.mark.parametrize("matcher", ["matcher:\n  tool: Shell\n  pattern: '^git push'\n",
                                     "matcher:\n  tool: WriteFile\n"])
def test_a_scriptless_hook_denies_only_what_its_matcher_admits(
        repo: Path, tmp_path: Path, matcher: str) -> None:
    write_scriptless(tmp_path / "user-hooks", "git-guard", matcher)
    engine = engine_for(repo, tmp_path)
    unrelated = fire(engine, shell(repo, "ls"))
    assert not unrelated.denied, unrelated.reason
    assert not unrelated.warnings, unrelated.warnings
    guarded = (shell(repo, "git push origin main") if "Shell" in matcher else
               Event("before_tool", session_id="s", work_dir=str(repo), tool_name="WriteFile",
                     tool_input={"path": "a.txt", "content": "x"}))
    outcome = fire(engine, guarded)
    assert outcome.denied and outcome.blocked_by == "mcp-hooks", outcome
    assert "git-guard" in (outcome.reason or "") and "no entry script" in (outcome.reason or "")


def test_a_broken_hook_whose_matcher_cannot_be_read_still_counts_on_every_call(
        repo: Path, tmp_path: Path) -> None:
    write_scriptless(tmp_path / "user-hooks", "git-guard", "matcher:\n  tool: '('\n")
    outcome = fire(engine_for(repo, tmp_path), shell(repo, "ls"))
    assert outcome.denied and "git-guard" in (outcome.reason or "")


def test_fire_lets_an_unmatched_call_past_a_scriptless_hook(repo: Path, tmp_path: Path) -> None:
    write_scriptless(repo / "no-user-hooks", "git-guard",
                     "matcher:\n  tool: Shell\n  pattern: '^git push'\n")
    done = run_fire(repo)  # {"command": "ls"}
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ALLOWED  before_tool"), done.stdout
    pushed = subprocess.run(
        [MCP_HOOKS, "fire", "before_tool", "--tool", "Bash", "--input",
         '{"command": "git push"}', "--project-dir", str(repo), "--user-dir",
         str(repo / "no-user-hooks")], cwd=repo, capture_output=True, text=True, timeout=60)
    assert pushed.returncode == 2, pushed.stdout + pushed.stderr
    assert "git-guard" in pushed.stdout and "no entry script" in pushed.stdout


def test_list_shows_the_calls_a_scriptless_hook_guards(repo: Path) -> None:
    write_scriptless(repo / "no-user-hooks", "git-guard",
                     "matcher:\n  tool: Shell\n  pattern: '^git push'\n")
    done = subprocess.run([MCP_HOOKS, "list", "--user-dir", str(repo / "no-user-hooks"),
                           "--project-dir", str(repo)], capture_output=True, text=True,
                          timeout=60)
    assert "[before_tool matching tool Shell, pattern ^git push]" in done.stdout, done.stdout
