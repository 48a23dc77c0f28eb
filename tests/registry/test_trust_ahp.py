"""Project trust of the control layer (``.ahp``) through the real command line, and the
control layer's places on disk (``paths.py``) under a temporary HOME.

A project's hooks.yaml entry that runs a command (here TestGate with a test command that
leaves a file behind) must not run until ``mcp-hooks trust`` trusted the project's ``.ahp``;
after any change to ``.ahp/hooks.yaml`` it is untrusted again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_hooks.control.config import TRUST_NAME, config_digest
from mcp_hooks.registry.trust import TrustStore
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.control_helpers import make_repo, write

GATE = """\
hooks:
  pre-issue-submit:
    - oracle: TestGate
      config:
        command: [{python}, -c, "open('gate-ran.txt', 'a').write('ran\\\\n')"]
    - oracle: FileChangeLimiter
      config:
        max_files: 20
        action: prompt
"""
ISSUE = {"id": "FEAT-1", "type": "feature", "title": "t", "status": "in_progress",
         "checklist": [{"text": "done", "done": True}], "files_changed": ["a.py"]}


@pytest.fixture
def repo(tmp_path: Path, untrusted: None) -> Path:
    """A git project with a hooks.yaml whose TestGate leaves gate-ran.txt when it runs."""
    path = make_repo(tmp_path / "proj")
    write(path, ".ahp/hooks.yaml", GATE.format(python=json.dumps(sys.executable)))
    return path


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, cwd=cwd,
                          env=env or dict(os.environ), timeout=120, stdin=subprocess.DEVNULL)


def submit(project: Path) -> subprocess.CompletedProcess[str]:
    return cli("fire", "pre-issue-submit", "--project-dir", str(project), "--json",
               "--payload", json.dumps({"issue": ISSUE}))


def store() -> TrustStore:
    return TrustStore()  # the default store under the test's XDG_STATE_HOME


def test_an_untrusted_gate_does_not_run_until_trusted_and_again_after_a_change(
        repo: Path) -> None:
    ran = repo / "gate-ran.txt"
    before = submit(repo)
    assert before.returncode == 0, before.stderr
    assert not ran.exists()  # the stranger's command did not run
    assert f"trust it with: mcp-hooks trust {repo}" in before.stdout  # the warning's fix

    shown = cli("trust", str(repo), "--yes")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert f"Project control layer in {repo / '.ahp'}" in out
    assert ".ahp  [untrusted]  the control layer (hooks.yaml and its Python files)" in out
    size = (repo / ".ahp" / "hooks.yaml").stat().st_size
    assert f"files:    {repo / '.ahp' / 'hooks.yaml'}  ({size} bytes, sha256 " in out
    assert "runs:     pre-issue-submit[0] (TestGate): [" in out  # the command it runs
    assert "reads:    pre-issue-submit[1] (FileChangeLimiter) (applies untrusted too)" in out
    digest = config_digest(repo)
    assert f"sha256:   {digest}" in out and f"trusted .ahp  sha256 {digest[:16]}" in out
    assert store().status(repo, TRUST_NAME, digest) == "trusted"

    after = submit(repo)
    assert after.returncode == 0, after.stderr
    assert ran.read_text() == "ran\n"  # trusted: the gate ran, once

    listed = cli("trust", "--list", str(repo))
    assert f"Control layer {repo / '.ahp'}: .ahp  trusted" in listed.stdout

    hooks_yaml = repo / ".ahp" / "hooks.yaml"
    hooks_yaml.write_text(hooks_yaml.read_text() + "# changed\n")
    listed = cli("trust", "--list", str(repo))
    assert f"Control layer {repo / '.ahp'}: .ahp  changed" in listed.stdout
    again = submit(repo)
    assert again.returncode == 0, again.stderr
    assert ran.read_text() == "ran\n"  # changed: untrusted again, not run
    shown = cli("trust", str(repo), "--yes")
    assert ".ahp  [changed]" in shown.stdout and "trusted .ahp" in shown.stdout
    assert submit(repo).returncode == 0
    assert ran.read_text() == "ran\nran\n"


def test_hooks_and_hooks_yaml_are_trusted_together_and_picked_by_name(repo: Path) -> None:
    write_hook(repo / ".agents" / "hooks", "lint")
    shown = cli("trust", str(repo))  # no terminal, no --yes: nothing trusted
    assert shown.returncode == 1
    assert "review the 1 hook(s) and the hooks.yaml (.ahp) above" in shown.stderr
    assert store().entries() == {}

    only = cli("trust", str(repo), "--hook", ".ahp", "--yes")
    assert only.returncode == 0, only.stderr
    assert "lint" not in only.stdout and "trusted .ahp" in only.stdout
    assert set(store().entries()[str(repo.resolve())]) == {TRUST_NAME}

    both = cli("trust", str(repo), "--yes")
    assert "trusted lint" in both.stdout and "[trusted]" in both.stdout
    revoked = cli("trust", str(repo), "--revoke", "--hook", ".ahp")
    assert revoked.returncode == 0 and f"revoked .ahp in {repo.resolve()}" in revoked.stdout
    assert set(store().entries()[str(repo.resolve())]) == {"lint"}


def test_a_broken_hooks_yaml_is_shown_with_its_problem_and_not_trusted(repo: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n"
          "      config:\n        coverage_threshold: 180\n")
    shown = cli("trust", str(repo), "--yes")
    assert shown.returncode == 1
    assert "INVALID, will not be trusted:" in shown.stdout
    assert "coverage_threshold" in shown.stdout
    assert "not trustable: .ahp" in shown.stderr
    assert store().entries() == {}


def test_without_hooks_yaml_or_hooks_there_is_nothing_to_trust(tmp_path: Path,
                                                               untrusted: None) -> None:
    done = cli("trust", str(tmp_path))
    assert done.returncode == 1
    assert "does not exist, nor" in done.stderr and ".ahp/hooks.yaml" in done.stderr


# -- paths: every place on disk from paths.py, honouring HOME and XDG_STATE_HOME ----------


PLACES = """\
import json
from mcp_hooks import paths
from mcp_hooks.control import config, ladder
print(json.dumps({"user": str(config.user_config_path()), "ahp": str(paths.ahp_user_file()),
                  "ladder": str(ladder.Ladder().path), "ladder_path": str(paths.ladder_path())}))
"""


def test_the_user_layer_and_the_ladder_follow_home_and_xdg(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(state)}
    done = subprocess.run([sys.executable, "-c", PLACES], capture_output=True, text=True,
                          env=env, timeout=60, check=True)
    places = json.loads(done.stdout)
    assert places["user"] == places["ahp"] == str(home / ".ahp" / "hooks.yaml")
    assert places["ladder"] == places["ladder_path"] == str(state / "mcp-hooks" / "ladder.json")


def test_validate_reads_the_user_layer_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: NoSuchOracle\n")
    project = make_repo(tmp_path / "proj")
    env = {**os.environ, "HOME": str(home)}
    done = cli("validate", "--project-dir", str(project), env=env)
    assert done.returncode != 0
    assert str(home / ".ahp" / "hooks.yaml") in done.stdout + done.stderr
    assert "NoSuchOracle" in done.stdout + done.stderr


def test_the_review_names_every_python_file_and_parses_oracles_without_importing(
        repo: Path) -> None:
    write(repo, ".ahp/helpers/util.py", "raise SystemExit('imported!')\n")
    write(repo, ".ahp/broken.py", "class Broken(:\n")
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - oracle: broken.py:Broken\n")
    shown = cli("trust", str(repo), "--yes")
    assert shown.returncode == 1  # an oracle file that does not parse is not trusted
    out = shown.stdout
    util = repo / ".ahp" / "helpers" / "util.py"
    assert f"{util}  ({util.stat().st_size} bytes, sha256 " in out  # listed, not imported
    assert "imported!" not in out + shown.stderr
    assert "INVALID, will not be trusted:" in out and "does not parse as Python" in out
    assert store().entries() == {}
