"""``--metrics``: ``GET /metrics`` in the Prometheus text format, parsed by prometheus-client's
own parser; and ``serve --dashboard`` mounting the dashboard behind the server's token.

Real parts: a real ``Engine`` told of its events by ``metrics.Metrics`` (its observer), and
a real ``mcp-hooks serve --transport http --metrics --dashboard`` subprocess with a token, a
real MCP client firing a denied event, real HTTP requests for ``/metrics`` and the dashboard.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from mcp_hooks import Engine, Registry, Settings
from mcp_hooks.metrics import Metrics, metrics_for
from mcp_hooks.spec.outcome import Event
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.proxied import upstream

TOKEN = "metrics-test-token-41c2"
BLOCKER = """input=$(cat)
case "$input" in
  *"rm -rf"*) echo 'no rm -rf here' >&2; exit 2;;
esac
exit 0
"""


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and sorted labels (prometheus-client's parser)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_observer_counts_events_hooks_and_fail_open_passes(
        project: Path, user_dir: Path) -> None:
    write_hook(user_dir, "no-rm", script=BLOCKER)
    write_hook(user_dir, "flaky", script="cat >/dev/null\nexit 1\n")
    metrics = metrics_for(True, "serve")
    assert isinstance(metrics, Metrics)
    metrics.read_from("mcp_hooks_asks_pending", lambda: 3)
    metrics.read_from("mcp_hooks_store_errors", lambda: 1 / 0)  # a reading that raises
    engine = Engine(Registry(user_dir, project, watch=False), Settings(), one_shot=True,
                    observer=metrics)
    for command in ("rm -rf /", "ls", "ls"):
        engine.fire_blocking(Event(event_type="before_tool", tool_name="Bash",
                                   tool_input={"command": command}, work_dir=str(project)))
    got = samples(metrics.render().decode())
    event = "mcp_hooks_events_total"
    assert got[(event, (("decision", "deny"), ("door", "serve"), ("event", "before_tool")))] == 1
    assert got[(event, (("decision", "allow"), ("door", "serve"),
                        ("event", "before_tool")))] == 2
    runs = "mcp_hooks_hook_runs_total"
    assert got[(runs, (("hook", "no-rm"), ("result", "deny")))] == 1
    assert got[(runs, (("hook", "no-rm"), ("result", "allow")))] == 2
    flaky = {labels: v for (name, labels), v in got.items()
             if name == runs and ("hook", "flaky") in labels}
    assert sum(flaky.values()) in (2, 3)  # the deny may stop the chain before it
    assert got[("mcp_hooks_fail_open_total", (("hook", "flaky"),))] == 2  # allowed anyway
    assert got[("mcp_hooks_hook_duration_seconds_count", (("hook", "no-rm"),))] == 3
    assert got[("mcp_hooks_event_latency_seconds_count", (("event", "before_tool"),))] == 3
    assert got[("mcp_hooks_asks_pending", ())] == 3
    assert got[("mcp_hooks_store_errors", ())] == -1


def test_metrics_off_unless_asked_and_never_over_stdio(project: Path, user_dir: Path) -> None:
    assert metrics_for(False, "serve") is None
    for command in ("serve", "proxy"):
        done = subprocess.run([MCP_HOOKS, command, "--metrics", "--project-dir", str(project),
                               "--user-dir", str(user_dir), "--upstream", "x=true"][
                                   : None if command == "proxy" else -2],
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 64, done.stderr
        assert "--metrics need --transport http or sse" in done.stderr


@pytest.mark.anyio
async def test_serve_metrics_and_dashboard_behind_the_token(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    write_hook(user_dir, "no-rm", script=BLOCKER)
    log = tmp_path / "state" / "events.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS_")}
    argv = [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--project-dir",
            str(project), "--user-dir", str(user_dir), "--log", str(log), "--metrics",
            "--dashboard", "--token", TOKEN]
    with background(argv, env=env, timeout=120) as server:
        base = server.url.rsplit("/mcp", 1)[0]
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(server.url, http_client=http),
                              mode="legacy") as client:
                result = await client.call_tool("fire_hook_event", {
                    "event_type": "before_tool", "tool_name": "Bash",
                    "tool_input": {"command": "rm -rf /"}, "session_id": "s-metrics"})
                assert result.structured_content is not None
                assert result.structured_content["decision"] == "deny"
            scrape = await http.get(f"{base}/metrics")
            rows = (await http.get(f"{base}/dashboard/api/events")).json()["events"]
        async with httpx2.AsyncClient(timeout=60) as anonymous:
            refused = await anonymous.get(f"{base}/metrics")
            page = await anonymous.get(f"{base}/dashboard/activity")
            api = await anonymous.get(f"{base}/dashboard/api/events")
            signed = await anonymous.post(f"{base}/dashboard/login", data={"token": TOKEN})
            after = await anonymous.get(f"{base}/dashboard/api/events")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    got = samples(scrape.text)
    assert got[("mcp_hooks_events_total", (("decision", "deny"), ("door", "serve"),
                                           ("event", "before_tool")))] == 1
    assert [(r["session"], r["decision"], r["blocked_by"]) for r in rows] == [
        ("s-metrics", "deny", "no-rm")]
    assert refused.status_code == 401 and api.status_code == 401
    assert page.status_code == 401 and 'type="password"' in page.text
    assert TOKEN not in page.text
    assert signed.status_code == 303  # to the Activity page, signed in
    assert signed.headers["location"] == "/dashboard/activity"
    assert TOKEN not in signed.headers["set-cookie"] and TOKEN not in signed.text
    assert after.status_code == 200 and after.json()["events"][0]["session"] == "s-metrics"


@pytest.mark.anyio
async def test_proxy_metrics_count_the_gated_calls(project: Path, user_dir: Path) -> None:
    write_hook(user_dir, "no-boom", script="""input=$(cat)
case "$input" in *boom*) echo 'no boom' >&2; exit 2;; esac
exit 0
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS_")}
    argv = [MCP_HOOKS, "proxy", "--transport", "http", "--port", "0", "--metrics",
            "--project-dir", str(project), "--user-dir", str(user_dir), "--no-log",
            "--upstream", upstream("up")]
    with background(argv, env=env, timeout=120) as server:
        async with Client(server.url) as client:
            denied = await client.call_tool("echo", {"text": "boom"})
            allowed = await client.call_tool("echo", {"text": "fine"})
        async with httpx2.AsyncClient(timeout=60) as http:
            scrape = await http.get(server.url.rsplit("/mcp", 1)[0] + "/metrics")
    assert denied.is_error and not allowed.is_error
    got = samples(scrape.text)
    events = {labels: v for (name, labels), v in got.items() if name == "mcp_hooks_events_total"}
    assert events[(("decision", "deny"), ("door", "proxy"), ("event", "before_tool"))] == 1
    assert events[(("decision", "allow"), ("door", "proxy"), ("event", "before_tool"))] == 1
    assert got[("mcp_hooks_hook_runs_total", (("hook", "no-boom"), ("result", "deny")))] == 1
