"""docs/deploy.md, run: its two ``serve`` replicas on a real Redis behind a real nginx started
from its config block, and events fired through nginx: over MCP (``/mcp``), over the forward
path (``/hooks/fire``) by ``mcp-hooks fire --server`` and by the Java adapter's client
(``tests/helpers/java_client.py``), and the page's health probes, without the token.

nginx is Debian's (``nginx`` or ``nginx-light``; ``.ci/run`` installs it): started as
``nginx -p DIR -c nginx.conf`` with ``daemon off;``, its pid file, logs and temporary folders
inside the test's folder, on free loopback ports; missing, the test skips saying why, or
fails under ``CI=true`` (as the Redis and PostgreSQL of ``tests/helpers/servers.py``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_hooks.state.url import close_store, open_store
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.forward_served import install_forward, payload
from tests.helpers.java_client import compiled, java_fire
from tests.helpers.mcp_calls import fire
from tests.helpers.replicas import serving
from tests.helpers.restartable import restartable
from tests.helpers.servers import _missing, free_port

pytestmark = pytest.mark.anyio

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
HANG = 120.0  # seconds: only to stop a hang
INSTALL = "apt-get install -y nginx-light"
DOC_PORTS = ("8000", "8001", "8002")  # nginx, web-1, web-2 in the page
DOC_STATE = "redis://:$REDIS_PASSWORD@127.0.0.1:6379/0"
HOST_SESSION = "3f1c9a52-7b8e-4d21-9f0a-2c6e8b1d4a77"  # tests/fixtures' Claude Code payloads


def block(lang: str, marker: str) -> str:
    """The page's fenced ``lang`` block that contains ``marker``."""
    found = [m.group(1) for m in re.finditer(rf"^```{lang}\n(.*?)^```$",
                                             DOC.read_text(encoding="utf-8"), re.S | re.M)
             if marker in m.group(1)]
    assert len(found) == 1, f"docs/deploy.md: one ```{lang} block with {marker!r}"
    return found[0]


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/bin/nginx") if os.access(p, os.X_OK)), None)
    if found is None:
        _missing(f"nginx is not installed ({INSTALL})")
    assert found is not None
    return found


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def nginx(site: str, folder: Path, port: int) -> Iterator[None]:
    """nginx serving ``site`` (the page's conf.d file) until the block ends, listening on
    ``port`` when the block starts."""
    binary = nginx_binary()
    folder.mkdir()
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers may enter the test's folder
    temps = "".join(f"    {kind}_temp_path {folder}/{kind};\n"
                    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (folder / "nginx.conf").write_text(
        f"{user}daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\n"
        f"error_log {folder}/error.log info;\nevents {{ worker_connections 256; }}\n"
        f"http {{\n    access_log {folder}/access.log;\n{temps}{site}\n}}\n")
    proc = subprocess.Popen([binary, "-p", str(folder), "-c", str(folder / "nginx.conf")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + HANG
        while not listening(port):
            assert proc.poll() is None and time.monotonic() < deadline, (
                f"nginx did not start: {proc.communicate()[0] if proc.poll() is not None else ''}"
                f"{(folder / 'error.log').read_text() if (folder / 'error.log').exists() else ''}")
            time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def replica_argvs(state: str, srv: Path, ports: dict[str, int]) -> list[list[str]]:
    """The page's ``serve`` lines as argv, with its ports, store and folder replaced."""
    text = block("sh", "mcp-hooks serve").replace("\\\n", " ")
    argvs = []
    for line in text.splitlines():
        if not line.startswith("mcp-hooks serve"):
            continue
        line = line.replace(DOC_STATE, state).replace("/srv/mcp-hooks", str(srv))
        for port in DOC_PORTS:
            line = line.replace(f" {port} ", f" {ports[port]} ")
        argv = shlex.split(line)
        assert argv[-1] == "&"  # each runs in the background
        argvs.append([MCP_HOOKS, *argv[1:-1]])
    return argvs


def probes(ports: dict[str, int]) -> list[tuple[str, str]]:
    """The page's ``curl`` probe lines as (URL, the word the comment says), its ports
    replaced."""
    found = re.findall(r"^curl -fsS (http://\S+)\s+# (\w+)$", block("sh", "curl -fsS"), re.M)
    assert found, "docs/deploy.md: the probe block"
    return [(re.sub(r":(\d+)/", lambda m: f":{ports[m.group(1)]}/", url), word)
            for url, word in found]


def fire_cli(url: str, token: str, srv: Path, event: str, session: str,
             *options: str) -> subprocess.CompletedProcess[str]:
    """``mcp-hooks fire EVENT --server URL`` as a person on an agent's machine runs it, with
    the deploy's hooks folders (the server answers only for the folders it loads)."""
    return subprocess.run(
        [MCP_HOOKS, "fire", event, "--server", url, "--token", token, "--user-dir",
         str(srv / "hooks"), "--project-dir", str(srv), "--session", session, "--no-log",
         "--json", *options], capture_output=True, text=True, timeout=HANG, cwd=srv)


@dataclass
class Fleet:
    """The page's deploy, running: its replicas, nginx's URL, the token, the folders."""

    servers: list[Any]
    base: str
    token: str
    srv: Path
    hooks: Path
    env: dict[str, str]
    client: Client
    ports: dict[str, int]


@asynccontextmanager
async def fleet(state: str, tmp_path: Path) -> AsyncIterator[Fleet]:
    """Two replicas as the page starts them on the store at ``state``, nginx as the page
    configures it, and an MCP client through nginx."""
    token = secrets.token_hex(16)
    srv = tmp_path / "srv"
    hooks = srv / "hooks"
    write_hook(hooks, "never-done", trigger="before_stop",
               script="cat >/dev/null\necho 'not done yet' >&2\nexit 2\n")
    write_hook(hooks, "no-rm", script="cat >/dev/null\nexit 0\n")
    ports = {port: free_port() for port in DOC_PORTS}
    site = block("nginx", "upstream mcp_hooks")
    for port in DOC_PORTS:
        site = re.sub(rf"\b{port}\b", str(ports[port]), site)
    env = {**os.environ, "MCP_HOOKS_TOKEN": token, "MCP_HOOKS_STATE": state,
           "MCP_HOOKS_TRUST_KEY": secrets.token_hex(16)}
    argvs = replica_argvs(state, srv, ports)
    assert [a[a.index("--replica-id") + 1] for a in argvs] == ["web-1", "web-2"]
    async with AsyncExitStack() as stack:
        servers = [stack.enter_context(serving(argv, env))[0] for argv in argvs]
        stack.enter_context(nginx(site, tmp_path / "nginx", ports["8000"]))
        http = await stack.enter_async_context(httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=HANG))
        base = f"http://127.0.0.1:{ports['8000']}"
        client = await stack.enter_async_context(Client(
            streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy"))
        yield Fleet(servers, base, token, srv, hooks, env, client, ports)


async def test_the_deploy_page_runs_behind_nginx(redis_url: str, tmp_path: Path) -> None:
    """Two replicas as the page starts them, nginx as the page configures it: events fired
    through nginx reach both replicas in turn, the shared loop guard holds across them, the
    records say which replica answered with which hooks; one replica stopped, nginx sends
    everything to the other."""
    sh = block("sh", "mcp-hooks serve")
    assert 'export MCP_HOOKS_TOKEN="$(cat /etc/mcp-hooks/token)"' in sh
    assert 'export MCP_HOOKS_STATE="redis://:$(cat /etc/mcp-hooks/redis-password)@' in sh
    assert "--state " not in sh  # a password on a command line is public (ps)
    classes = compiled(tmp_path / "java")  # the Java adapter's forward client

    async with AsyncExitStack() as stack:
        deployed = await stack.enter_async_context(fleet(redis_url, tmp_path))
        servers, base, token = deployed.servers, deployed.base, deployed.token
        srv, hooks, env, client = deployed.srv, deployed.hooks, deployed.env, deployed.client
        ports = deployed.ports
        bare = await stack.enter_async_context(httpx2.AsyncClient(timeout=HANG))

        blocked = []
        for _ in range(9):  # the cap is 8 across both replicas, not 8 each
            outcome = await fire(client, event_type="before_stop", session_id="agent-1",
                                 payload={"stop_reason": "done"})
            blocked.append(outcome["continue_working"])
        assert blocked == [True] * 8 + [False]

        # the probes, without the token: each replica, and through nginx
        for url, word in [*probes(ports), (f"{base}/readyz", "ready"),
                          (f"{base}/healthz", "ok")]:
            answer = await bare.get(url)
            assert (answer.status_code, answer.text) == (200, f"{word}\n"), url

        # the forward path through nginx: `fire --server` and the Java adapter's client
        done = fire_cli(base, token, srv, "before_stop", "agent-3",
                        "--payload", '{"stop_reason": "done"}')
        assert done.returncode == 2 and "not answered" not in done.stderr, done.stderr
        assert json.loads(done.stdout)["reason"].startswith("not done yet")
        done = fire_cli(base, token, srv, "before_tool", "agent-3", "--tool", "Bash",
                        "--input", '{"command": "ls"}')
        assert done.returncode == 0 and "not answered" not in done.stderr, done.stderr
        denied = java_fire(classes, base, token, {"event_type": "before_stop",
                                                  "session_id": "agent-4",
                                                  "payload": {"stop_reason": "done"}},
                           user_dir=hooks, project_dir=srv)
        assert denied["forward_failure"] is None, denied
        assert denied["denied"] and denied["reason"].startswith("not done yet"), denied
        allowed = java_fire(classes, base, token, {
            "event_type": "before_tool", "session_id": "agent-4", "tool_name": "Bash",
            "tool_input": {"command": "ls"}}, user_dir=hooks, project_dir=srv)
        assert allowed["forward_failure"] is None and not allowed["denied"], allowed
        # a host wired with `install --via server` (/hooks/bridge/claude-code)
        command = install_forward(base, srv, tmp_path / "settings.json", token=token)
        hooked = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                                input=payload("claude-code", "PreToolUse.bash", srv),
                                env={**env, "MCP_HOOKS_LOG": "off"}, timeout=HANG)
        assert hooked.returncode == 0 and "mcp-hooks forward" not in hooked.stderr, hooked

        servers[0].proc.terminate()  # web-1 goes away: nginx sends everything to web-2
        servers[0].proc.wait(HANG)
        for _ in range(4):
            outcome = await fire(client, event_type="before_tool", session_id="agent-2",
                                 tool_name="Bash", payload={"tool_input": {"command": "ls"}})
            assert outcome["decision"] == "allow" and [h["name"] for h in
                                                       outcome["hooks"]] == ["no-rm"]

    store = open_store(redis_url)
    try:
        events = [r for r in store.read("events") if r.get("kind") == "event"]
    finally:
        close_store(store)
    stops = [e["replica"] for e in events if e["session_id"] == "agent-1"]
    assert sorted(set(stops)) == ["web-1", "web-2"], stops  # round robin reached both
    assert [e["replica"] for e in events if e["session_id"] == "agent-2"] == ["web-2"] * 4
    for session in ("agent-3", "agent-4"):  # decided by the replicas, not on the client
        assert len([e for e in events if e["session_id"] == session]) == 2, session
    assert len([e for e in events if e["session_id"] == HOST_SESSION]) == 1  # the host's
    assert len({e["hooks_digest"] for e in events}) == 1


@pytest.mark.parametrize("kind", ["redis", "postgres"])
async def test_the_fleet_survives_a_store_restart(kind: str, tmp_path: Path) -> None:
    """The page's fleet on a store that is restarted under it (stopped: every connection
    refused; started again on the same port): the events fired after it, over MCP, over the
    forward path and by the Java adapter's client, through nginx to both replicas, are all
    answered by the hooks; none is denied for the restart (a pooled connection the restart
    broke is replaced, not reported as a lost store)."""
    classes = compiled(tmp_path / "java")
    with restartable(kind) as store:
        async with fleet(store.url, tmp_path) as deployed:
            async def through_mcp(session: str) -> dict[str, Any]:
                return await fire(deployed.client, event_type="before_tool",
                                  session_id=session, tool_name="Bash",
                                  payload={"tool_input": {"command": "ls"}})

            def through_forward(session: str) -> dict[str, Any]:
                done = fire_cli(deployed.base, deployed.token, deployed.srv, "before_tool",
                                session, "--tool", "Bash", "--input", '{"command": "ls"}')
                assert "not answered" not in done.stderr, done.stderr
                return dict(json.loads(done.stdout))

            def through_java(session: str) -> dict[str, Any]:
                return java_fire(classes, deployed.base, deployed.token, {
                    "event_type": "before_tool", "session_id": session, "tool_name": "Bash",
                    "tool_input": {"command": "ls"}}, user_dir=deployed.hooks,
                    project_dir=deployed.srv)

            for n in range(4):  # every replica has used (and pooled) its store connection
                assert (await through_mcp(f"before-{n}"))["decision"] == "allow"
            store.stop()
            store.start()
            answers = [await through_mcp(f"after-{n}") for n in range(4)]  # each replica twice
            answers += [through_forward(f"forward-{n}") for n in range(2)]
            for outcome in answers:
                assert outcome["decision"] == "allow", outcome
                assert [h["name"] for h in outcome["hooks"]] == ["no-rm"], outcome
            for n in range(2):
                allowed = through_java(f"java-{n}")
                assert allowed["forward_failure"] is None and not allowed["denied"], allowed
        reader = open_store(store.url)
        try:
            logged = [r for r in reader.read("events") if r.get("kind") == "event"
                      and str(r.get("session_id")).startswith("after-")]
        finally:
            close_store(reader)
    # both replicas answered after the restart (nginx's round robin reached each)
    assert sorted({r["replica"] for r in logged}) == ["web-1", "web-2"], logged


def test_ci_installs_nginx() -> None:
    run = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert re.search(r"apt-get install -y [^\n]*\bnginx", run)
