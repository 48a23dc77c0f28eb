"""The standing comparison of issue 34 (the fast lane): the gateway hop over streamable HTTP.

One upstream: a bare ``MCPServer`` with an ``echo`` tool served over streamable HTTP (its own
process). The MCP Python SDK's client, over streamable HTTP, calls ``echo`` three ways, the
rounds interleaved (the side going first rotates every round):

- **direct**: the client talks to the upstream itself;
- **proxy, no hook**: through ``mcp-hooks proxy --transport http`` with no hook at all;
- **proxy, persistent hook**: through a second proxy with one matching ``before_tool`` hook,
  a persistent ``sh`` loop (``metadata.persistent: true``) answering ``{}`` per event;
- **proxy, persistent hook, SDK path**: the same with ``MCP_HOOKS_PROXY_HTTP=sdk`` (no
  streamable-HTTP fast path: the SDK's server and client on both sides), the A/B.

Figures: the median latency of one call (p50) and its ratio to direct; the calls per second
of 8 clients at once (each on its own session, all calling as fast as they can for the same
number of calls) and their ratio to direct. Targets (issue 34, item 1): the hooked proxy's p50
<= 1.5x direct, its calls/s at 8 clients >= 0.7x direct. Every figure is a ratio in one run;
the absolute ones carry the machine's load.

Run: ``.venv/bin/python bench/bench_peer.py [--calls N] [--clients N]``. Prints the figures
and replaces the ``## peer`` section of bench/RESULTS.md. ``bench_peer.py --echo-http PORT``
is the upstream.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import median_us, say, verdict, write_section

MCP_HOOKS = str(Path(sys.executable).parent / "mcp-hooks")
P50_TARGET = 1.5
THROUGHPUT_TARGET = 0.7
PERSISTENT_SH = """\
#!/bin/sh
# One answer per event line: allow, echoing the event's id (no process spawned per event).
while IFS= read -r line; do
  id=${line##*\\"_mcp_hooks_event_id\\"}
  id=${id#*\\"}
  printf '{"_mcp_hooks_event_id": "%s"}\\n' "${id%%\\"*}"
done
"""


def echo_http(port: int) -> None:
    """The upstream: one echo tool over streamable HTTP on 127.0.0.1:``port``."""
    from mcp.server import MCPServer

    server = MCPServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    server.run("streamable-http", port=port)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def persistent_hook(root: Path) -> None:
    folder = root / ".agents" / "hooks" / "allow-all"
    (folder / "scripts").mkdir(parents=True)
    script = folder / "scripts" / "run.sh"
    script.write_text(PERSISTENT_SH)
    script.chmod(0o755)
    (folder / "HOOK.md").write_text(
        "---\nname: allow-all\ndescription: answers allow to every call, persistently\n"
        "trigger: before_tool\nmetadata:\n  persistent: true\n---\n")


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"a server of the bench exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port} after 60 s")


@contextlib.contextmanager
def servers(tmp: Path) -> Iterator[dict[str, str]]:
    """Start the upstream and the two proxies; yield each path's URL."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp / "config"),
               XDG_STATE_HOME=str(tmp / "state"), MCP_HOOKS_TRUST_PROJECT_HOOKS="1")
    bare, hooked = tmp / "bare", tmp / "hooked"
    bare.mkdir()
    persistent_hook(hooked)
    up, p_bare, p_hooked, p_sdk = free_port(), free_port(), free_port(), free_port()
    upstream_url = f"http://127.0.0.1:{up}/mcp"
    procs = [subprocess.Popen([sys.executable, __file__, "--echo-http", str(up)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        wait_listening(up, procs[0])
        for port, project, extra in ((p_bare, bare, {}), (p_hooked, hooked, {}),
                                     (p_sdk, hooked, {"MCP_HOOKS_PROXY_HTTP": "sdk"})):
            procs.append(subprocess.Popen(
                [MCP_HOOKS, "proxy", "--transport", "http", "--port", str(port),
                 "--upstream", f"echo={upstream_url}", "--project-dir", str(project)],
                cwd=project, env={**env, **extra}, stderr=subprocess.DEVNULL))
            wait_listening(port, procs[-1])
        yield {"direct": upstream_url,
               "proxy, no hook": f"http://127.0.0.1:{p_bare}/mcp",
               "proxy, persistent hook": f"http://127.0.0.1:{p_hooked}/mcp",
               "proxy, persistent hook, SDK path": f"http://127.0.0.1:{p_sdk}/mcp"}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextlib.asynccontextmanager
async def client(url: str) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(timeout=60) as http, \
            Client(streamable_http_client(url, http_client=http)) as mcp_client:
        # The first call also waits for the proxy's upstream to be listed.
        await mcp_client.call_tool("echo", {"text": "warm"})
        yield mcp_client


async def latency(urls: dict[str, str], calls: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in urls}
    async with contextlib.AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(client(url))
                   for name, url in urls.items()}
        names = list(urls)
        for i in range(calls):
            order = names[i % len(names):] + names[:i % len(names)]
            for name in order:
                start = time.perf_counter()
                result = await clients[name].call_tool("echo", {"text": f"call {i}"})
                samples[name].append(time.perf_counter() - start)
                assert not result.is_error, (name, result)
    return samples


async def throughput(url: str, clients: int, calls: int) -> float:
    """Calls per second of ``clients`` sessions calling ``calls`` times each, at once."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(client(url)) for _ in range(clients)]

        async def run(session: Any) -> None:
            for i in range(calls):
                result = await session.call_tool("echo", {"text": f"call {i}"})
                assert not result.is_error, result

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(run, session)
        return clients * calls / (time.perf_counter() - start)


async def measure(urls: dict[str, str], calls: int, clients: int,
                  rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    samples = await latency(urls, calls)
    rates: dict[str, list[float]] = {name: [] for name in urls}
    names = list(urls)
    per_client = max(calls // clients, 20)
    for r in range(rounds):  # interleaved: each round runs every path once, rotating
        for name in names[r % len(names):] + names[:r % len(names)]:
            rates[name].append(await throughput(urls[name], clients, per_client))
    return samples, rates


def report(samples: dict[str, list[float]], rates: dict[str, list[float]], calls: int,
           clients: int) -> str:
    direct_us = median_us(samples["direct"])
    direct_rate = sorted(rates["direct"])[len(rates["direct"]) // 2]
    lines = [f"{calls} calls per path, interleaved; throughput: {clients} clients at once, "
             f"median of {len(rates['direct'])} interleaved rounds", "",
             "| path | p50 (µs) | p50 / direct | calls/s at "
             f"{clients} clients | / direct |", "|---|---|---|---|---|"]
    for name in samples:
        p50 = median_us(samples[name])
        rate = sorted(rates[name])[len(rates[name]) // 2]
        lines.append(f"| {name} | {p50:.0f} | {p50 / direct_us:.2f} | {rate:.0f} | "
                     f"{rate / direct_rate:.2f} |")
    hooked = "proxy, persistent hook"
    p50_ratio = median_us(samples[hooked]) / direct_us
    rate_ratio = sorted(rates[hooked])[len(rates[hooked]) // 2] / direct_rate
    lines += ["", f"- target p50 <= {P50_TARGET}x direct with the persistent hook: "
              f"{p50_ratio:.2f}x, {verdict(p50_ratio <= P50_TARGET)}",
              f"- target calls/s at {clients} clients >= {THROUGHPUT_TARGET}x direct: "
              f"{rate_ratio:.2f}x, {verdict(rate_ratio >= THROUGHPUT_TARGET)}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--echo-http", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_http:
        echo_http(args.echo_http)
        return
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp_name, \
            servers(Path(tmp_name)) as urls:
        samples, rates = anyio.run(measure, urls, args.calls, args.clients, args.rounds)
    body = report(samples, rates, args.calls, args.clients)
    say(body)
    write_section("peer", body)


if __name__ == "__main__":
    main()
