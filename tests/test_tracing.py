"""``serve --otel``: a span per event and a child span per hook run, over real OTLP/HTTP.

Real parts throughout: an OTLP/HTTP receiver on a loopback port the kernel picks (``POST
/v1/traces``, each body decoded with opentelemetry-proto's ``ExportTraceServiceRequest``), a
real ``mcp-hooks serve --transport http --otel`` subprocess, and a real MCP client firing a
blocking event and an allowed one. The batch processor is told to wait ten minutes, so the
spans reach the receiver only because SIGTERM flushes them. A receiver that is down costs
no event anything; the extra missing is exit 64 naming the pip command. And the engine's
observer protocol without OpenTelemetry: what it is told, 16 threads at once, and an error.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

# the dev extra installs OpenTelemetry (as the extra otel does): never skipped
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from mcp_hooks import Engine, Registry, Settings
from mcp_hooks.spec.outcome import Event, HookRun, Outcome
from tests.conftest import MCP_HOOKS, write_hook
from tests.helpers.background import background
from tests.helpers.mcp_calls import fire
from tests.helpers.proxied import proxied, upstream, wait_for
from tests.helpers.servers import free_port

BLOCKER = """input=$(cat)
case "$input" in
  *"rm -rf"*) echo 'no rm -rf here' >&2; exit 2;;
esac
exit 0
"""


@dataclass
class Span:
    name: str
    trace_id: bytes
    span_id: bytes
    parent: bytes
    attributes: dict[str, Any]
    resource: dict[str, Any]
    start: int
    end: int
    error: bool


@dataclass
class Receiver:
    """What an OTLP/HTTP collector on loopback was sent."""

    url: str
    spans: list[Span] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


def _spans(body: bytes) -> list[Span]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope in resource_spans.scope_spans:
            for s in scope.spans:
                found.append(Span(
                    s.name, s.trace_id, s.span_id, s.parent_span_id,
                    {a.key: _value(a.value) for a in s.attributes}, resource,
                    s.start_time_unix_nano, s.end_time_unix_nano, s.status.code == 2))
    return found


@contextmanager
def receiver() -> Iterator[Receiver]:
    got = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            with got.lock:
                got.paths.append(self.path)
                got.spans.extend(_spans(body))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _env(endpoint: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MCP_HOOKS_"))}
    return {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, **more}


def _serve(project: Path, user_dir: Path, *more: str) -> list[str]:
    return [MCP_HOOKS, "serve", "--transport", "http", "--port", "0", "--project-dir",
            str(project), "--user-dir", str(user_dir), "--no-log", *more]


async def _block_and_allow(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    denied = await fire(client, event_type="before_tool", tool_name="Bash",
                        tool_input={"command": "rm -rf /"}, session_id="s-block")
    allowed = await fire(client, event_type="before_tool", tool_name="Bash",
                         tool_input={"command": "ls"}, session_id="s-allow")
    return denied, allowed


@pytest.mark.anyio
async def test_serve_otel_sends_a_span_per_event_and_per_hook_flushed_on_sigterm(
        project: Path, user_dir: Path) -> None:
    write_hook(user_dir, "audit", script="cat >/dev/null\nexit 0\n")
    write_hook(user_dir, "no-rm", script=BLOCKER)
    with receiver() as got:
        # ten minutes of batching: what arrives below was sent by the flush at SIGTERM
        env = _env(got.url, OTEL_BSP_SCHEDULE_DELAY="600000")
        with background(_serve(project, user_dir, "--otel"), env=env,
                        capture_stdout=True, timeout=120) as server:
            async with Client(server.url) as client:
                denied, allowed = await _block_and_allow(client)
            assert got.spans == [], "sent before the batch delay or the shutdown"
            pid = server.proc.pid
        assert server.proc.returncode == -15, "not stopped by SIGTERM (killed?)"
        spans = list(got.spans)
        assert set(got.paths) == {"/v1/traces"}
    assert denied["decision"] == "deny" and denied["blocked_by"] == "no-rm"
    assert allowed["decision"] == "allow"

    events = {s.attributes["mcp_hooks.session"]: s for s in spans if s.name.startswith("event")}
    assert set(events) == {"s-block", "s-allow"}
    block, allow = events["s-block"], events["s-allow"]
    assert block.name == allow.name == "event before_tool"
    assert block.attributes["mcp_hooks.event"] == "before_tool"
    assert block.attributes["mcp_hooks.decision"] == "deny"
    assert block.attributes["mcp_hooks.blocked_by"] == "no-rm"
    assert allow.attributes["mcp_hooks.decision"] == "allow"
    assert "mcp_hooks.blocked_by" not in allow.attributes
    for span in (block, allow):
        assert span.parent == b"" and not span.error
        assert span.attributes["mcp_hooks.hook_count"] == 2
        assert span.attributes["mcp_hooks.replica"].endswith(f":{pid}")
        assert span.resource["service.name"] == "mcp-hooks"
        assert span.resource["service.instance.id"] == span.attributes["mcp_hooks.replica"]
    assert block.trace_id != allow.trace_id  # one trace per event

    hooks = [s for s in spans if s.name.startswith("hook")]
    assert len(hooks) == 4, [s.name for s in spans]
    by = {(s.trace_id, s.attributes["mcp_hooks.hook.name"]): s for s in hooks}
    for event in (block, allow):
        for name in ("audit", "no-rm"):
            hook = by[(event.trace_id, name)]
            assert hook.name == f"hook {name}"
            assert hook.parent == event.span_id  # a child of its event
            assert event.start <= hook.start <= hook.end <= event.end
            assert hook.attributes["mcp_hooks.hook.timed_out"] is False
            assert hook.attributes["mcp_hooks.hook.duration_ms"] > 0
    assert by[(block.trace_id, "no-rm")].attributes["mcp_hooks.hook.exit_code"] == 2
    assert by[(block.trace_id, "no-rm")].attributes["mcp_hooks.hook.status"] == "deny"
    assert by[(allow.trace_id, "no-rm")].attributes["mcp_hooks.hook.exit_code"] == 0


@pytest.mark.anyio
async def test_a_receiver_that_is_down_never_stops_an_event(project: Path,
                                                          user_dir: Path) -> None:
    """Nothing listens where the spans go (a port the kernel had free): both events answer
    as without tracing, and SIGTERM still stops the server by itself (no SIGKILL needed)."""
    write_hook(user_dir, "no-rm", script=BLOCKER)
    env = _env(f"http://127.0.0.1:{free_port()}", OTEL_BSP_SCHEDULE_DELAY="1")
    with background(_serve(project, user_dir, "--otel"), env=env, capture_stdout=True,
                    timeout=120) as server:
        async with Client(server.url) as client:
            for _ in range(3):
                denied, allowed = await _block_and_allow(client)
                assert denied["decision"] == "deny" and denied["reason"] == "no rm -rf here"
                assert allowed["decision"] == "allow"
    assert server.proc.returncode == -15, "not stopped by SIGTERM alone (killed)"


@pytest.mark.anyio
async def test_proxy_otel_traces_the_gated_tool_calls(tmp_path: Path, project: Path,
                                                      user_dir: Path) -> None:
    """``proxy --otel`` over stdio, a real upstream: a denied call is one ``before_tool``
    span (the upstream never called), an allowed one a ``before_tool`` and an ``after_tool``
    span; sent as the proxy ends with its client."""
    write_hook(user_dir, "no-boom", script="""input=$(cat)
case "$input" in *boom*) echo 'no boom' >&2; exit 2;; esac
exit 0
""")
    with receiver() as got:
        env = _env(got.url, OTEL_BSP_SCHEDULE_DELAY="600000")
        async with proxied(tmp_path, project, user_dir, "--upstream", upstream("up"),
                           "--otel", env=env) as client:
            denied = await client.call_tool("echo", {"text": "boom"})
            allowed = await client.call_tool("echo", {"text": "fine"})
        assert denied.is_error and "no boom" in str(denied.content)
        assert not allowed.is_error and "fine" in str(allowed.content)
        await wait_for(lambda: len([s for s in got.spans if s.name.startswith("event")]) >= 3,
                       timeout=60)
        spans = list(got.spans)
    events = sorted((s.name, s.attributes["mcp_hooks.decision"]) for s in spans
                    if s.name.startswith("event") and "tool" in s.name)
    assert events == [("event after_tool", "allow"), ("event before_tool", "allow"),
                      ("event before_tool", "deny")], [s.name for s in spans]
    (blocked,) = [s for s in spans if s.attributes.get("mcp_hooks.blocked_by") == "no-boom"]
    (hook,) = [s for s in spans if s.parent == blocked.span_id]
    assert hook.name == "hook no-boom" and hook.attributes["mcp_hooks.hook.exit_code"] == 2


def test_the_otel_observer_in_16_threads_with_hostile_sessions_and_an_error(
        project: Path, user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process: 16 threads fire at once through one ``OtelObserver``, some with a session
    id of 10,000 lone surrogates (which protobuf cannot encode), and one event raises a
    BaseException: every span arrives once ``close`` returns, each hook under its event."""
    from mcp_hooks.tracing import MAX_TEXT, observer_for

    write_hook(user_dir, "no-rm", script=BLOCKER)
    with receiver() as got:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", got.url)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
        monkeypatch.setenv("NETRC", str(project / "no-netrc"))  # requests' (not the real ~)
        observer = observer_for(Settings(otel="on"))
        assert observer is not None
        engine = Engine(Registry(user_dir, project, watch=False), Settings(), one_shot=True,
                        observer=observer)
        hostile = "\udcff" * 10_000

        def one(n: int) -> None:
            engine.fire_blocking(Event(
                event_type="before_tool", tool_name="Bash",
                tool_input={"command": "rm -rf /" if n % 2 else "ls"},
                session_id=hostile if n % 4 == 0 else f"s{n}", work_dir=str(project)))

        threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        broken = Registry(user_dir, project, watch=False)

        def select(*args: Any) -> Any:
            raise Broken("select broke")

        broken.select = select  # type: ignore[method-assign]
        with pytest.raises(Broken):
            Engine(broken, Settings(), one_shot=True, observer=observer).fire_blocking(
                Event(event_type="after_tool", tool_name="Bash", session_id="s-broken",
                      work_dir=str(project)))
        observer.close()
        observer.close()  # a second close does nothing
        spans = list(got.spans)
    events = [s for s in spans if s.name.startswith("event")]
    hooks = [s for s in spans if s.name.startswith("hook")]
    assert len(events) == 17 and len(hooks) == 16
    by_id = {s.span_id: s for s in events}
    for hook in hooks:
        event = by_id[hook.parent]
        assert hook.trace_id == event.trace_id
        assert hook.attributes["mcp_hooks.hook.exit_code"] == (
            2 if event.attributes["mcp_hooks.decision"] == "deny" else 0)
    sessions = [s.attributes["mcp_hooks.session"] for s in events]
    assert sessions.count("?" * MAX_TEXT) == 4
    (failed,) = [s for s in events if s.error]
    assert failed.name == "event after_tool" and "mcp_hooks.decision" not in failed.attributes
    assert failed.attributes["mcp_hooks.session"] == "s-broken"


# serve, with the OpenTelemetry exporter made unimportable (as without the extra)
WITHOUT_EXTRA = (
    "import sys; sys.modules['opentelemetry.exporter.otlp.proto.http.trace_exporter'] = None\n"
    "from mcp_hooks.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n")


def test_otel_without_the_extra_is_exit_64_naming_the_pip_command(project: Path,
                                                                    user_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA, *_serve(project, user_dir, "--otel")[1:]],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        env=_env("http://127.0.0.1:9"))
    assert done.returncode == 64, done.stderr
    assert "pip install '.[otel]' in a checkout of mcp-hooks" in done.stderr
    assert "--otel" in done.stderr
    assert done.stdout == ""


def test_the_standard_endpoint_alone_without_the_extra_warns_and_serves(
        project: Path, user_dir: Path) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT set for some other program: serve still serves, saying
    why it sends no traces."""
    argv = [sys.executable, "-c", WITHOUT_EXTRA, *_serve(project, user_dir)[1:]]
    warning = r"(OTEL_EXPORTER_OTLP_ENDPOINT is set, but no traces are sent.*)"
    with background(argv, env=_env("http://127.0.0.1:9"), capture_stdout=True,
                    announce=warning, timeout=120) as server:
        said = server.url
        line = server.lines.get(timeout=120)
        assert "serving http at" in line, line
    assert "pip install '.[otel]' in a checkout of mcp-hooks" in said


@pytest.mark.parametrize(("environ", "flag", "expected"), [
    ({}, None, "off"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, None, "auto"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, None, "auto"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "MCP_HOOKS_OTEL": "0"}, None, "off"),
    ({"MCP_HOOKS_OTEL": "1"}, None, "on"),
    ({}, True, "on"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, None, "off"),
])
def test_settings_otel(environ: dict[str, str], flag: bool | None, expected: str) -> None:
    assert Settings.from_env(environ, otel=flag).otel == expected


def test_a_bad_otel_value_names_the_variable() -> None:
    from mcp_hooks.errors import ConfigError

    with pytest.raises(ConfigError, match="MCP_HOOKS_OTEL='maybe'"):
        Settings.from_env({"MCP_HOOKS_OTEL": "maybe"})


# -- the engine's observer protocol, without OpenTelemetry ----------------------------------


class Recorder:
    """An ``EventObserver`` that keeps what it is told, per event."""

    def __init__(self) -> None:
        self.traces: list[Trace] = []
        self.lock = threading.Lock()

    def event(self, name: str, event: Event) -> Trace:
        trace = Trace(name, event.session_id)
        with self.lock:
            self.traces.append(trace)
        return trace


@dataclass
class Trace:
    name: str
    session: str | None
    hooks: list[HookRun] = field(default_factory=list)
    ends: list[tuple[Outcome | None, BaseException | None]] = field(default_factory=list)

    def hook_done(self, run: HookRun) -> None:
        self.hooks.append(run)

    def finish(self, outcome: Outcome | None, error: BaseException | None) -> None:
        self.ends.append((outcome, error))


def test_the_engine_tells_its_observer_each_event_hook_and_end_in_16_threads(
        project: Path, user_dir: Path) -> None:
    write_hook(user_dir, "no-rm", script=BLOCKER)
    recorder = Recorder()
    registry = Registry(user_dir, project, watch=False)
    engine = Engine(registry, Settings(), one_shot=True, observer=recorder)
    results: dict[int, Outcome] = {}

    def one(n: int) -> None:
        command = "rm -rf /" if n % 2 else "ls"
        results[n] = engine.fire_blocking(Event(
            event_type="before_tool", tool_name="Bash", tool_input={"command": command},
            session_id=f"s{n}", work_dir=str(project)))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(results) == 16 and len(recorder.traces) == 16
    for trace in recorder.traces:
        n = int(str(trace.session)[1:])
        assert trace.name == "before_tool"
        ((outcome, error),) = trace.ends  # finished exactly once
        assert error is None and outcome is results[n]
        assert [(h.name, h.exit_code) for h in trace.hooks] == [("no-rm", 2 if n % 2 else 0)]


class Broken(BaseException):
    """Not an Exception: what only a BaseException handler sees."""


def test_an_event_that_raises_is_finished_with_the_error(project: Path, user_dir: Path) -> None:
    recorder = Recorder()
    registry = Registry(user_dir, project, watch=False)

    def select(*args: Any) -> Any:
        raise Broken("select broke")

    registry.select = select  # type: ignore[method-assign]
    engine = Engine(registry, Settings(), one_shot=True, observer=recorder)
    with pytest.raises(Broken):
        engine.fire_blocking(Event(event_type="before_tool", tool_name="Bash",
                                   tool_input={"command": "ls"}, session_id="s",
                                   work_dir=str(project)))
    ((trace,),) = [recorder.traces]
    ((outcome, error),) = trace.ends
    assert outcome is None and isinstance(error, Broken)
