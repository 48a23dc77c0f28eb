"""The bundled guards against the obvious rewrites of a dangerous command.

Each row is one real pre-tool-call event fired through the engine at a copy of one guard's
folder made alone (so a guard needs nothing outside its folder), the hook's script running
as a subprocess with the event on stdin. The tables hold commands that must be denied and
look-alikes that must pass. The limits of each guard are in its HOOK.md.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, Outcome, Registry
from tests.helpers.guard_cases import (
    DANGEROUS,
    LOOK_ALIKES,
    PROD_CHANGES,
    PROD_LOOK_ALIKES,
    SECRET_LOOK_ALIKES,
    SECRET_WRITES,
)

pytestmark = pytest.mark.anyio

LIBRARY = Path(__file__).resolve().parents[2] / "hooks"
GUARDS = ("block-dangerous-commands", "protect-secrets", "block-prod-deploy")


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each guard copied alone into its own user hooks folder."""
    folders = {}
    for name in GUARDS:
        user_dir = tmp_path_factory.mktemp(name)
        shutil.copytree(LIBRARY / name, user_dir / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
        folders[name] = user_dir
    return folders


async def fire(user_dir: Path, work_dir: Path, tool_input: dict[str, Any],
               tool: str = "Shell") -> Outcome:
    async with Engine(Registry(user_dir, watch=False)) as engine:
        return await engine.fire(Event.create(
            event_type="before_tool", work_dir=str(work_dir), tool_name=tool,
            tool_input=tool_input))


def run_script(name: str, stdin: str) -> subprocess.CompletedProcess[str]:
    """The guard's script alone, for what the engine would not send (bad JSON)."""
    return subprocess.run([sys.executable, str(LIBRARY / name / "scripts" / "run.py")],
                          input=stdin, capture_output=True, text=True, timeout=60, check=False)


# -- block-dangerous-commands -----------------------------------------------------------------


# Where the shell goes, in every ordinary form: each lands in / (or somewhere the command does
# not show, read as / and ~: fail closed), then deletes everything there.
CD_FORMS = [
    # cd - : OLDPWD, known from an earlier cd, set by the command, or not known at all
    "cd / && cd /tmp/x && cd - && rm -rf *", "cd - && rm -rf *", "cd ~- && rm -rf *",
    "OLDPWD=/ cd - && rm -rf *", "OLDPWD=/; cd -; rm -rf *", "export OLDPWD=/; cd - && rm -rf *",
    "cd \"$OLDPWD\" && rm -rf *", "cd /tmp && unset OLDPWD; cd -; rm -rf *",
    # pushd ... popd, and the stack the command did not build
    "cd / && pushd /tmp/x && popd && rm -rf *", "pushd /; pushd /tmp/x; popd; rm -rf *",
    "cd / && pushd /tmp && pushd && rm -rf *", "popd && rm -rf *", "pushd +1 && rm -rf *",
    # CDPATH, for one command or the rest of it
    "CDPATH=/ cd usr && rm -rf *", "export CDPATH=/; cd usr && rm -rf *",
    "CDPATH=/tmp:/ ; cd etc; find . -delete", "declare -x CDPATH=:/; cd usr && rm -rf ./*",
    # a command run somewhere else
    "env -C / rm -rf *", "env --chdir=/ rm -rf *", "env --chdir / rm -rf *", "env -iC/ rm -rf *",
    "sudo -D / rm -rf *", "sudo --chdir=/ rm -rf *", "sudo -i rm -rf *", "su - -c 'rm -rf *'",
    # home folders by user, and the quoted spellings of /
    "cd ~root && rm -rf *", "cd ~bin && rm -rf *", "cd ~someone && rm -rf ./*",
    "cd $'/' && rm -rf *", "cd $\"/\" && rm -rf *", "rm -rf $'/'",
    # a variable the command set itself
    "d=/; cd $d && rm -rf *", "d=/usr; cd \"${d}\" && rm -rf *",
    # subshells and pipelines: a cd there moves nothing after it (bash), or does (zsh's last)
    "cd / && (cd /tmp/x) && rm -rf *", "cd / && cd /tmp/x | true && rm -rf *",
    "cd / ; cd /tmp/x & rm -rf *", "true | cd / ; rm -rf *", "cd / && echo | cd /tmp/x; rm -rf *",
    # a cd that may fail: what follows without && runs where the command was
    "cd / ; cd no-such-dir ; rm -rf *", "cd /\ncd /tmp/x\nrm -rf *",
    "cd / && cd /tmp/x || rm -rf *",
    "d=$'/'; cd $d && rm -rf *",
]


@pytest.fixture(autouse=True)
def no_cdpath(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook reads CDPATH from its environment: none unless a test sets one."""
    monkeypatch.delenv("CDPATH", raising=False)


@pytest.mark.parametrize("command", DANGEROUS + CD_FORMS)
async def test_block_dangerous_commands_denies(alone: dict[str, Path], project: Path,
                                               command: str) -> None:
    outcome = await fire(alone["block-dangerous-commands"], project, {"command": command})
    assert outcome.denied and outcome.blocked_by == "block-dangerous-commands", outcome
    assert (outcome.reason or "").startswith("Dangerous command blocked:")


async def test_a_cdpath_from_the_environment_is_followed(
    alone: dict[str, Path], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CDPATH", "/")
    user_dir = alone["block-dangerous-commands"]
    outcome = await fire(user_dir, project, {"command": "cd usr && rm -rf *"})
    assert outcome.denied, outcome
    assert "* in /usr, one of the folders the command may be in" in (outcome.reason or "")
    assert not (await fire(user_dir, project, {"command": "cd build && rm -rf *"})).denied


@pytest.mark.parametrize("command", LOOK_ALIKES)
async def test_block_dangerous_commands_lets_look_alikes_pass(
    alone: dict[str, Path], project: Path, command: str
) -> None:
    outcome = await fire(alone["block-dangerous-commands"], project, {"command": command})
    assert not outcome.denied, outcome.reason


async def test_block_dangerous_commands_reads_an_argument_vector(
    alone: dict[str, Path], project: Path
) -> None:
    guard = alone["block-dangerous-commands"]
    assert (await fire(guard, project, {"command": ["bash", "-lc", "rm -rf /"]})).denied
    assert not (await fire(guard, project, {"command": ["echo", "rm -rf /"]})).denied


@pytest.mark.parametrize(("why", "command", "reason"), [
    ("nested past the depth bound", "eval " * 12 + "rm -rf /", "rm -r on /"),
    ("substitutions past it", "echo " + "$(" * 12 + "rm -rf ~" + ")" * 12, "rm -r on ~"),
    ("a padded find", "find / " + "/tmp " * 20000 + "-delete", "find /"),
    ("too long to read", "echo " + "a" * 1_000_001, "too long to check"),
    ("too many calls", "python3 -c '" + "run(\"ls\");" * 300 + "'", "too many calls"),
])
def test_block_dangerous_commands_bounds_its_work(why: str, command: str, reason: str) -> None:
    done = run_script("block-dangerous-commands", json.dumps(
        {"event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": command}}))
    assert done.returncode == 2 and reason in done.stderr, (why, done.stderr[:300])


def test_block_dangerous_commands_fails_closed_on_what_it_cannot_read() -> None:
    assert run_script("block-dangerous-commands", "{not json").returncode == 2
    assert run_script("block-dangerous-commands", json.dumps(
        {"tool_input": {"command": {"not": "text"}}})).returncode == 2
    assert run_script("block-dangerous-commands", json.dumps(
        {"tool_input": {"path": "x"}})).returncode == 0  # nothing to run


def test_the_matcher_lets_quote_split_verbs_reach_the_script() -> None:
    registry = Registry(LIBRARY, watch=False)
    hook = next(h for h in registry.hooks() if h.name == "block-dangerous-commands")
    for command in ("r''m -rf /", "\\rm -rf /", "/bin/r? -rf /", "find / -delete"):
        assert hook.matches("Shell", {"command": command}), command
    assert not hook.matches("Shell", {"command": "ls -la"})


# -- protect-secrets --------------------------------------------------------------------------


@pytest.mark.parametrize("command", SECRET_WRITES)
async def test_protect_secrets_denies(alone: dict[str, Path], project: Path,
                                      command: str) -> None:
    outcome = await fire(alone["protect-secrets"], project, {"command": command})
    assert outcome.denied and outcome.blocked_by == "protect-secrets", outcome


@pytest.mark.parametrize("command", SECRET_LOOK_ALIKES)
async def test_protect_secrets_lets_look_alikes_pass(alone: dict[str, Path], project: Path,
                                                     command: str) -> None:
    outcome = await fire(alone["protect-secrets"], project, {"command": command})
    assert not outcome.denied, outcome.reason


# -- block-prod-deploy ------------------------------------------------------------------------


@pytest.mark.parametrize("command", PROD_CHANGES)
async def test_block_prod_deploy_denies(alone: dict[str, Path], project: Path,
                                        command: str) -> None:
    outcome = await fire(alone["block-prod-deploy"], project, {"command": command})
    assert outcome.denied and outcome.blocked_by == "block-prod-deploy", outcome


@pytest.mark.parametrize("command", PROD_LOOK_ALIKES)
async def test_block_prod_deploy_lets_look_alikes_pass(alone: dict[str, Path], project: Path,
                                                       command: str) -> None:
    outcome = await fire(alone["block-prod-deploy"], project, {"command": command})
    assert not outcome.denied, outcome.reason


@pytest.mark.parametrize(("name", "padding"), [
    ("block-prod-deploy", "deploy " * 100_000),
    ("block-prod-deploy", "kubectl apply --context=" * 40_000),
    ("protect-secrets", "tee " * 200_000),
    ("protect-secrets", "\"type\": \"service_account\" " * 30_000),
])
def test_a_padded_command_still_gets_an_answer(name: str, padding: str) -> None:
    """Linear work: the padding once made these hooks run for minutes (and a slow hook is
    killed at its timeout, which block-prod-deploy's fail-open turns into an allow). The
    answer is checked, not the time (speed is measured in bench/, not asserted)."""
    done = run_script(name, json.dumps({"tool_name": "Shell",
                                        "tool_input": {"command": padding + "; ./deploy.sh prod"
                                                       if name == "block-prod-deploy"
                                                       else padding + " > .env"}}))
    assert done.returncode == 2, done.stderr[:300]
