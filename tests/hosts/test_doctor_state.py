"""``mcp-hooks doctor --state URL`` through the real console script, against the real Redis
and PostgreSQL of ``tests/helpers/servers.py``, and a closed port."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from mcp_hooks.state.remote import redact
from mcp_hooks.state.url import open_store
from tests.conftest import write_hook
from tests.helpers.doctor_runs import doctor, home_env, run
from tests.helpers.servers import (  # noqa: F401 - fixtures
    free_port,
    postgres_service,
    postgres_url,
    redis_service,
    redis_url,
)

PASSWORD = "not-for-the-report"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return home_env(tmp_path)


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_doctor_round_trips_a_shared_store_and_says_how_fast(
        kind: str, request: pytest.FixtureRequest, env: dict[str, str],
        project: Path, user_dir: Path) -> None:
    url = request.getfixturevalue(f"{kind}_url")
    code, report = doctor(env, project, user_dir, "--state", url)
    assert code == 0, report["problems"]
    state = report["files"]["state_store"]
    password = url.split("@")[0].rsplit(":", 1)[-1]
    assert password not in str(report)
    assert "***@127.0.0.1" in state["path"]
    assert state["status"].startswith("serves: ")
    assert state["server"].startswith("Redis " if kind == "redis" else "PostgreSQL ")
    assert set(state["latency_ms"]) == {"increment", "append", "answer_once"}
    assert all(v > 0 for v in state["latency_ms"].values())
    assert state["replica"].endswith(tuple("0123456789")) and ":" in state["replica"]
    assert state["spooled"] == 0
    # the probe's record is in the store's log, under the doctor's own session, which no
    # reader shows: not `log`, not `signals` (the audit trail holds only agents' events)
    probes = [r for r in open_store(url).read("events") if r.get("kind") == "doctor"]
    assert len(probes) == 1 and probes[0]["session_id"].startswith("mcp-hooks-doctor-")
    for command in (("log", "--json", "-n", "0"), ("signals", "--json")):
        shown = run(env, project, *command, "--state", url)
        assert shown.returncode == 0, shown.stderr
        assert "mcp-hooks-doctor-" not in shown.stdout, shown.stdout
    asked = run(env, project, "log", "--json", "--state", url, "--session",
                probes[0]["session_id"])
    assert '"kind": "doctor"' in asked.stdout  # there when that session is asked for
    # the trust store named is the shared store, not this machine's trust.json
    assert report["files"]["trust_store"]["path"] == state["path"]
    # and the text report has one line for it
    text = run(env, project, "doctor", "--user-dir", str(user_dir), "--state", url)
    line = next(x for x in text.stdout.splitlines() if x.startswith("state store: "))
    assert "answer_once" in line and "replica " in line and password not in text.stdout


@pytest.mark.parametrize("url", [
    f"redis://:{PASSWORD}@127.0.0.1:{{port}}/0",
    f"postgresql://hooks:{PASSWORD}@127.0.0.1:{{port}}/hooks",
])
def test_doctor_names_a_store_it_cannot_reach_and_exits_1(
        url: str, env: dict[str, str], project: Path, user_dir: Path) -> None:
    given = url.format(port=free_port())  # the kernel's pick, closed again: nothing there
    code, report = doctor(env, project, user_dir, "--state", given)
    assert code == 1
    assert report["files"]["state_store"]["status"] == "NOT reachable"
    (problem,) = [p for p in report["problems"] if "state store" in p["what"]]
    assert given.replace(PASSWORD, "***") in problem["what"]
    assert "Start it, or point --state (MCP_HOOKS_STATE)" in problem["what"]
    assert PASSWORD not in str(report)
    # one problem, the store's: no false "fix the folder permissions" for the hooks
    assert [p["what"] for p in report["problems"]] == [problem["what"]]
    assert "trust.json" not in str(report["files"]["trust_store"])


@pytest.mark.parametrize("from_env", [False, True], ids=["flag", "environment"])
def test_the_fix_for_an_untrusted_hook_keeps_the_store(
        from_env: bool, redis_url: str, env: dict[str, str], project: Path,  # noqa: F811
        user_dir: Path) -> None:
    """On a replica, the printed `trust` command writes to the store the replicas read."""
    write_hook(project / ".agents" / "hooks", "gate")
    env = {k: v for k, v in env.items() if k != "MCP_HOOKS_TRUST_PROJECT_HOOKS"}
    args: tuple[str, ...] = () if from_env else ("--state", redis_url)
    code, report = doctor({**env, "MCP_HOOKS_STATE": redis_url} if from_env else env,
                          project, user_dir, *args)
    (problem,) = [p for p in report["problems"] if "'gate'" in p["what"]]
    given = '"$MCP_HOOKS_STATE"' if from_env else shlex.quote(redact(redis_url))  # no password
    assert f"mcp-hooks trust --state {given} " in problem["fix"], problem
    assert code == 1


def test_doctor_reads_the_store_from_the_environment_too(
        redis_url: str, env: dict[str, str], project: Path,  # noqa: F811
        user_dir: Path) -> None:
    code, report = doctor({**env, "MCP_HOOKS_STATE": redis_url}, project, user_dir)
    assert code == 0, report["problems"]
    assert report["files"]["state_store"]["status"].startswith("serves: ")


def test_doctor_without_a_shared_store_checks_none(env: dict[str, str],
                                                   project: Path,
                                                   user_dir: Path) -> None:
    _, report = doctor({k: v for k, v in env.items() if k != "MCP_HOOKS_STATE"},
                          project, user_dir)
    assert "state_store" not in report["files"]
