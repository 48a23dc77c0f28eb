"""The process that runs a one-shot event's hooks.yaml ``async: true`` entries trusts the
project exactly as the engine that handed them over did: whatever flag or trust store the
door named, never the environment's default, and never a ``.ahp`` edited since."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from mcp_hooks.control.config import load_config
from mcp_hooks.control.trust import TrustedDigest, config_digest
from mcp_hooks.state.signallog import SignalLog
from tests.helpers.control_helpers import make_repo, write

ADVICE = """
from mcp_hooks.spec.signals import Signal

class Advice:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        return Signal.aid("remember the changelog", follow_ups=["update CHANGELOG.md"])
"""
ASYNC_YAML = "hooks:\n  post-tool-use:\n    - {oracle: 'oracles.py:Advice', async: true}\n"


def _fire(repo: Path, log: Path, event: str, *more: str) -> dict[str, object]:
    """``mcp-hooks fire`` as a user runs it: a process of its own, trust given by flag."""
    argv = ["mcp-hooks", "fire", event, "--session", "s1", "--project-dir", str(repo),
            "--work-dir", str(repo), "--log", str(log), "--no-server", "--json",
            "--trust-project-hooks", *more]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "MCP_HOOKS_SERVER": ""})
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.usefixtures("untrusted")
def test_the_background_process_trusts_what_the_flag_trusted(tmp_path: Path) -> None:
    """``--trust-project-hooks`` is a flag, not in the environment: the detached process
    that runs the ``async: true`` entry used to read the environment again, found the
    project untrusted and held the entry back; its aid never came."""
    repo = make_repo(tmp_path / "repo")
    write(repo, ".ahp/oracles.py", ADVICE)
    write(repo, ".ahp/hooks.yaml", ASYNC_YAML)
    log = tmp_path / "events.jsonl"
    _fire(repo, log, "after_tool", "--tool", "Shell", "--input", "{}", "--output", '"ok"')
    signals = SignalLog.beside(log)
    for _ in range(2400):  # up to 120 s: the detached process goes at its own pace
        if any(r.get("intensity") == "aid" for r in signals.read()):
            break
        time.sleep(0.05)
    said = _fire(repo, log, "before_agent")
    assert "remember the changelog" in json.dumps(said), said


def test_a_trusted_digest_trusts_that_content_only(tmp_path: Path) -> None:
    """What the engine found trusted is what the background process trusts: the same
    ``.ahp`` runs; one edited since is ``changed`` and its entry that runs code is held."""
    repo = make_repo(tmp_path / "repo")
    write(repo, ".ahp/oracles.py", ADVICE)
    write(repo, ".ahp/hooks.yaml", ASYNC_YAML)
    found = TrustedDigest(config_digest(repo))
    user = tmp_path / "home" / ".ahp" / "hooks.yaml"
    same = load_config(repo, user_file=user, trust_project=False, trust_store=found)
    assert same.trust == "trusted" and [e.oracle_name for e in same.entries] == [
        "oracles.py:Advice"]
    write(repo, ".ahp/oracles.py", ADVICE + "\nimport os\nos.system('echo pwned')\n")
    edited = load_config(repo, user_file=user, trust_project=False, trust_store=found)
    assert edited.trust == "changed" and not edited.entries
    assert [e.oracle_name for e in edited.untrusted] == ["oracles.py:Advice"]
    never = load_config(repo, user_file=user, trust_project=False,
                        trust_store=TrustedDigest(None))
    assert never.trust == "untrusted" and not never.entries


def test_what_is_handed_over_is_all_or_the_digest(tmp_path: Path) -> None:
    """The trust handed to the background process is ``all`` (trusted by flag) or the digest
    found trusted: no trust key, no store path, nothing it could widen."""
    from mcp_hooks.control.trust import TRUSTED_ALL, trust_found

    repo = make_repo(tmp_path / "repo")
    write(repo, ".ahp/hooks.yaml", ASYNC_YAML)
    user = tmp_path / "home" / ".ahp" / "hooks.yaml"
    assert trust_found(load_config(repo, user_file=user, trust_project=True,
                                   resolve=False)) == TRUSTED_ALL
    digest = config_digest(repo)
    config = load_config(repo, user_file=user, trust_project=False,
                         trust_store=TrustedDigest(digest), resolve=False)
    assert trust_found(config) == digest and len(digest) == 64
    assert trust_found(load_config(repo, user_file=user, trust_project=False,
                                   trust_store=TrustedDigest(None), resolve=False)) is None
