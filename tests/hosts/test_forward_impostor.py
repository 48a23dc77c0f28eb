"""Whoever holds the port learns nothing and is never believed (forward protocol v2).

A listener in this test takes the server's address and records every byte it receives. It
answers ``fire --server`` and the ``install --via server`` forward script with "allow" signed
the old way (v1, even with the real token), signed with a guessed token, unsigned, replayed
from an earlier real exchange, or relayed to the real ``mcp-hooks serve`` with another body;
or it never answers at all. Every time: the token is in none of the bytes it got, nothing it
said is believed, the local hooks answer (the deny still denies) and stderr says why in one
line. Against the real server: a captured request sent again, with its time moved, or with
its body, path or folder header changed, is refused with 401 and fires nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import mcp_hooks
from mcp_hooks.hosts.forward_auth import (
    AUTH_HEADER,
    NONCE_HEADER,
    TIME_HEADER,
    USER_DIR_HEADER,
    answer_signature,
)
from mcp_hooks.hosts.forward_http import MAX_ANSWER_BYTES, MAX_HEAD_BYTES, MAX_REQUEST_BYTES
from mcp_hooks.spec.outcome import Outcome
from tests.conftest import write_hook
from tests.helpers.forward_served import served
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures

TOKEN = "impostor-test-token-\u00e9\u00e9"  # non-ASCII: its UTF-8 bytes are looked for too
SOURCE = str(Path(mcp_hooks.__file__).resolve().parent.parent)
FIXTURES = Path(__file__).parents[1] / "fixtures" / "hosts"
FIRE_NOTE = "mcp-hooks fire: not answered by the server"
SCRIPT_NOTE = "mcp-hooks forward:"
DENY = '{"command": "rm -rf /"}'
ALLOW = '{"command": "ls"}'
FIRE_ALLOW = Outcome(event_type="before_tool").to_json().encode()
HOST_ALLOW = (b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
              b'"permissionDecision": "allow"}}')


@dataclass
class Request:
    """One request as the listener received it."""

    raw: bytes
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Listener:
    """A listener on a kernel-picked port: every request it got, and how it answers."""

    url: str
    respond: Callable[[Request], bytes | None]
    got: list[Request] = field(default_factory=list)


def read_request(conn: socket.socket) -> Request:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    target = lines[0].split(" ")[1] if " " in lines[0] else ""
    return Request(head + b"\r\n\r\n" + body, target, headers, body)


def http_answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    head = [f"HTTP/1.1 {status} X", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Connection: close",
            *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def exchange(base: str, raw: bytes) -> bytes:
    """Send raw request bytes to ``base`` and read the raw answer to the end."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def status_of(answer: bytes) -> tuple[int, bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


@contextmanager
def listener(respond: Callable[[Request], bytes | None]) -> Iterator[Listener]:
    """A real TCP listener; ``respond`` returns the raw answer, or None to never answer
    (the connection is held open until the test ends)."""
    stop = threading.Event()
    state = Listener("", respond)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            request = read_request(self.request)
            state.got.append(request)
            answer = state.respond(request)
            if answer is None:
                stop.wait(60)
                return
            self.request.sendall(answer)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def assert_no_secret(got: list[Request]) -> None:
    """The token, in any form we can think of, is in none of the bytes received."""
    assert got, "the listener was never asked"
    forms = {TOKEN.encode(), TOKEN.encode().hex().encode(), TOKEN.encode("latin-1", "replace")}
    forms.add(re.sub(r"[^A-Za-z0-9-]", "", TOKEN).encode())
    for request in got:
        for form in forms:
            assert form not in request.raw, request.raw
        assert "authorization" not in request.headers


# -- the ways to answer wrongly ---------------------------------------------------------------


def v1_signed(allow: bytes) -> Callable[[Request], bytes]:
    """An allow signed the old way, with the real token (HMAC of nonce and body)."""
    def respond(request: Request) -> bytes:
        nonce = request.headers[NONCE_HEADER.lower()]
        v1 = hmac.new(TOKEN.encode(), nonce.encode() + b"\n" + allow,
                      hashlib.sha256).hexdigest()
        return http_answer(200, allow, {"X-MCP-Hooks-Signature": v1})
    return respond


def guessed(allow: bytes) -> Callable[[Request], bytes]:
    """An allow signed the v2 way over the request, with a guessed token."""
    def respond(request: Request) -> bytes:
        nonce = request.headers[NONCE_HEADER.lower()]
        mac = request.headers[AUTH_HEADER.lower()].removeprefix("v2=")
        signature = answer_signature("guessed-token", nonce, mac, 200, allow)
        return http_answer(200, allow, {"X-MCP-Hooks-Signature": signature})
    return respond


def unsigned(allow: bytes) -> Callable[[Request], bytes]:
    return lambda request: http_answer(200, allow)


def relayed(base: str, harmless: bytes) -> Callable[[Request], bytes]:
    """The request passed to the real server with a harmless body, its answer passed back."""
    def respond(request: Request) -> bytes:
        head = request.raw.partition(b"\r\n\r\n")[0].decode("latin-1")
        head = re.sub(r"(?im)^content-length:.*$", f"Content-Length: {len(harmless)}", head)
        return exchange(base, head.encode("latin-1") + b"\r\n\r\n" + harmless)
    return respond


def passed_through(base: str) -> Callable[[Request], bytes]:
    return lambda request: exchange(base, request.raw)


# -- fire --server and the forward script -----------------------------------------------------


@pytest.fixture
def hooks(project_hooks: Path) -> None:
    write_hook(project_hooks, "deny-rm", script='echo "no rm -rf here" >&2\nexit 2\n',
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")


@pytest.fixture
def server(hooks: None, project: Path, user_dir: Path, tmp_path: Path) -> Iterator[str]:
    with served(project, user_dir, tmp_path / "server-events.jsonl", "--token", TOKEN) as url:
        yield url


def served_events(tmp_path: Path) -> list[str]:
    log = tmp_path / "server-events.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return [e["decision"] for e in map(json.loads, lines) if e.get("kind") == "event"]


def fire(project: Path, user_dir: Path, url: str, tool_input: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mcp_hooks.cli", "fire", "before_tool", "--tool", "Shell",
            "--input", tool_input, "--user-dir", str(user_dir), "--no-log", "--server", url,
            "--token", TOKEN]
    return subprocess.run(argv, capture_output=True, text=True, cwd=project, timeout=120,
                          env={**os.environ, "PYTHONPATH": SOURCE, **(env or {})})


def forward_command(url: str, project: Path, tmp_path: Path) -> str:
    config = tmp_path / "settings.json"
    subprocess.run(
        [sys.executable, "-m", "mcp_hooks.cli", "install", "claude-code", "--via", "server",
         "--url", url, "--token", TOKEN, "--event", "PreToolUse", "--config", str(config)],
        check=True, capture_output=True, cwd=project, env={**os.environ, "PYTHONPATH": SOURCE})
    command: str = json.loads(config.read_text())["hooks"]["PreToolUse"][0]["hooks"][0][
        "command"]
    return command


def host_call(command: str, project: Path, name: str = "PreToolUse.rm",
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    payload = (FIXTURES / "claude-code" / f"{name}.json").read_text().replace(
        "$PROJECT", str(project))
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, input=payload,
                          env={**os.environ, "MCP_HOOKS_LOG": "off", **(env or {})},
                          timeout=120)


def one_note(stderr: str, prefix: str, why: str) -> None:
    notes = [line for line in stderr.splitlines() if line.startswith(prefix)]
    assert len(notes) == 1 and why in notes[0], stderr


def assert_fire_denied_here(done: subprocess.CompletedProcess[str], why: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "DENIED" in done.stdout and "no rm -rf here" in done.stdout
    one_note(done.stderr, FIRE_NOTE, why)


def assert_host_denied_here(done: subprocess.CompletedProcess[str], why: str) -> None:
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", done.stderr
    assert answer["permissionDecisionReason"] == "no rm -rf here"
    one_note(done.stderr, SCRIPT_NOTE, why)


WRONG = {"v1-signed": (v1_signed, "with a signature that is not the server's",
                       "did not prove it came from the mcp-hooks server (a wrong signature)"),
         "guessed-token": (guessed, "with a signature that is not the server's",
                           "did not prove it came from the mcp-hooks server (a wrong "
                           "signature)"),
         "unsigned": (unsigned, "answered 200 with no signature",
                      "did not prove it came from the mcp-hooks server (no signature)")}


@pytest.mark.parametrize("kind", list(WRONG))
def test_fire_believes_no_impostor(kind: str, hooks: None, project: Path,
                                   user_dir: Path) -> None:
    make, why, _ = WRONG[kind]
    with listener(make(FIRE_ALLOW)) as port:
        done = fire(project, user_dir, port.url, DENY)
    assert_no_secret(port.got)
    assert [r.target for r in port.got] == ["/hooks/fire?ask=now"]
    assert_fire_denied_here(done, why)


@pytest.mark.parametrize("kind", list(WRONG))
def test_the_forward_script_believes_no_impostor(kind: str, hooks: None, project: Path,
                                                 tmp_path: Path) -> None:
    make, _, why = WRONG[kind]
    with listener(make(HOST_ALLOW)) as port:
        done = host_call(forward_command(port.url, project, tmp_path), project)
    assert_no_secret(port.got)
    assert [r.target for r in port.got] == ["/hooks/bridge/claude-code?event=PreToolUse"]
    assert_host_denied_here(done, why)


def test_a_relay_cannot_swap_the_request(server: str, project: Path, user_dir: Path,
                                         tmp_path: Path) -> None:
    """The relay sends the real server a harmless event with the client's headers: refused
    there (the MAC covers the body), and the refusal is not believed as an answer either."""
    harmless = json.dumps({"event_type": "before_tool", "tool_name": "Shell",
                           "tool_input": json.loads(ALLOW), "work_dir": str(project)}).encode()
    with listener(relayed(server, harmless)) as port:
        done = fire(project, user_dir, port.url, ALLOW)
    assert_no_secret(port.got)
    assert done.returncode == 2 and "DENIED" in done.stdout, done.stdout + done.stderr
    assert f"{port.url}/hooks/fire answered HTTP 401" in done.stderr  # refused, not run here
    assert "not this server's MAC" in done.stderr
    harmless_host = (FIXTURES / "claude-code" / "PreToolUse.bash.json").read_text().replace(
        "$PROJECT", str(project)).encode()
    with listener(relayed(server, harmless_host)) as port:
        done = host_call(forward_command(port.url, project, tmp_path), project)
    assert_no_secret(port.got)
    assert done.returncode == 2 and done.stdout == "", done.stderr  # blocked, saying why
    assert "with HTTP 401 (unsigned)" in done.stderr
    assert served_events(tmp_path) == []  # the server fired nothing for the relay


def test_a_relay_can_only_pass_the_real_answer_to_the_real_request(
        server: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    """Passed through untouched, the exchange works (and the relay learns no token); the
    real server's signed answer to one request, handed back for another, is not believed."""
    answers: list[bytes] = []

    def relay(request: Request) -> bytes:
        answers.append(exchange(server, request.raw))
        return answers[-1]

    with listener(relay) as port:
        allowed = fire(project, user_dir, port.url, ALLOW)
        assert allowed.returncode == 0 and FIRE_NOTE not in allowed.stderr, allowed.stderr
        port.respond = lambda request: answers[0]  # the real signed allow, to another request
        denied = fire(project, user_dir, port.url, DENY)
    assert_no_secret(port.got)
    assert_fire_denied_here(denied, "with a signature that is not the server's")
    assert served_events(tmp_path) == ["allow"]  # the relayed allow; the deny ran here


def test_a_silent_listener_costs_the_deadline_then_the_hooks_run_here(
        hooks: None, project: Path, user_dir: Path, tmp_path: Path) -> None:
    env = {"MCP_HOOKS_FORWARD_TIMEOUT": "0.5"}
    with listener(lambda request: None) as port:
        done = fire(project, user_dir, port.url, DENY, env=env)
        assert_fire_denied_here(done, "within 0.5 s")
        script = host_call(forward_command(port.url, project, tmp_path), project, env=env)
        assert_host_denied_here(script, "within 0.5 s")
    assert_no_secret(port.got)
    assert len(port.got) == 2


def test_an_invalid_deadline_is_said_and_the_default_used(hooks: None, project: Path,
                                                         user_dir: Path, tmp_path: Path) -> None:
    env = {"MCP_HOOKS_FORWARD_TIMEOUT": "soon"}
    with listener(unsigned(FIRE_ALLOW)) as port:
        done = fire(project, user_dir, port.url, DENY, env=env)
        script = host_call(forward_command(port.url, project, tmp_path), project, env=env)
    assert "MCP_HOOKS_FORWARD_TIMEOUT='soon' is not a positive number" in done.stderr
    assert "MCP_HOOKS_FORWARD_TIMEOUT='soon' is not a positive number" in script.stderr
    assert_fire_denied_here(done, "with no signature")


# -- the real server refuses what was not sent as it is ----------------------------------------


def test_the_server_refuses_replayed_skewed_and_changed_requests(
        server: str, project: Path, user_dir: Path, tmp_path: Path) -> None:
    with listener(passed_through(server)) as port:
        done = fire(project, user_dir, port.url, ALLOW)
    assert done.returncode == 0 and FIRE_NOTE not in done.stderr, done.stderr
    (captured,) = port.got
    assert served_events(tmp_path) == ["allow"]

    def refused(raw: bytes, why: str) -> None:
        status, body = status_of(exchange(server, raw))
        assert status == 401 and why in body.decode(), body

    refused(captured.raw, "replayed nonce")
    head, _, body = captured.raw.partition(b"\r\n\r\n")
    text = head.decode("latin-1")
    when = captured.headers[TIME_HEADER.lower()]
    skewed = text.replace(f"{TIME_HEADER}: {when}", f"{TIME_HEADER}: {int(when) - 1000}")
    refused(skewed.encode() + b"\r\n\r\n" + body, "clock skew")
    # changed requests carry a fresh nonce (the seen one is refused before the body is read,
    # above), so it is their MAC that refuses them
    nonce = captured.headers[NONCE_HEADER.lower()].encode()

    def fresh(raw: bytes) -> bytes:
        return raw.replace(nonce, os.urandom(len(nonce) // 2).hex().encode())

    changed_body = body.replace(b'"ls"', b'"id"')
    assert changed_body != body and len(changed_body) == len(body)
    refused(fresh(captured.raw.replace(body, changed_body)), "not this server's MAC")
    refused(fresh(captured.raw.replace(b"POST /hooks/fire ", b"POST /hooks/fire?x=1 ")),
            "not this server's MAC")
    user = captured.headers[USER_DIR_HEADER.lower()]
    refused(fresh(captured.raw.replace(user.encode(), user.encode() + b"%2Fother")),
            "not this server's MAC")
    # a well-formed request the test signs itself, an hour late
    from mcp_hooks.hosts.forward_auth import sign_request

    late = sign_request(TOKEN, "/hooks/fire", body, now=time.time() - 3600)
    raw = (f"POST /hooks/fire HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
           f"Content-Length: {len(body)}\r\n"
           + "".join(f"{k}: {v}\r\n" for k, v in late.headers.items())).encode() + b"\r\n" + body
    refused(raw, "clock skew")
    assert served_events(tmp_path) == ["allow"]  # nothing more was fired


def test_doctor_reports_a_forward_script_that_still_sends_the_token(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    from mcp_hooks.hosts.forward_script import script_path
    from tests.conftest import MCP_HOOKS

    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(tmp_path / "codex-home"),
           "KIMI_SHARE_DIR": str(tmp_path / "kimi-share"), "PYTHONPATH": SOURCE}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([MCP_HOOKS, *args], capture_output=True, text=True, env=env,
                              cwd=project, timeout=120)

    def problems() -> list[str]:
        done = run("doctor", "--json", "--user-dir", str(user_dir))
        return [p["what"] for p in json.loads(done.stdout)["problems"]]

    install = ("install", "codex", "--scope", "user", "--via", "server", "--url",
               "http://127.0.0.1:9", "--token", TOKEN, "--event", "PreToolUse")
    assert run(*install).returncode == 0
    assert not [p for p in problems() if "older forward script" in p]
    script = script_path()
    script.write_bytes(script.read_bytes().replace(b"mcp-hooks/2 request", b"nonce + body"))
    assert [p for p in problems() if "older forward script" in p and str(script) in p]
    assert run(*install).returncode == 0  # rewrites the script
    assert not [p for p in problems() if "older forward script" in p]


# -- bounded in time and size: dripped, endless and huge answers; huge requests ----------------


@dataclass
class Stream:
    """A listener that answers by writing to the connection itself; ``sent``: the bytes the
    client took from it (what its socket accepted before the client hung up)."""

    url: str
    sent: int = 0


@contextmanager
def streamer(write: Callable[[socket.socket, Stream], None]) -> Iterator[Stream]:
    """A real TCP listener that reads the request, then ``write(conn, state)``s its answer
    (counting what it sent in ``state.sent``) until the client hangs up or it is done."""
    state = Stream("")

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            read_request(self.request)
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
            with suppress(OSError):  # the client hung up: what it took is counted
                write(self.request, state)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def send_counted(conn: socket.socket, state: Stream, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = conn.send(view[:1 << 16])
        state.sent += n
        view = view[n:]


CHUNKED_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
ENDLESS = MAX_ANSWER_BYTES + (128 << 20)  # the most an impostor here offers
# what may sit in the two sockets' buffers besides what the reader took (measured: under
# 1 MiB to a client, 8 MiB to the server): far below what was offered
IN_FLIGHT = 16 << 20


def one_byte_chunks(conn: socket.socket, state: Stream) -> None:
    """A whole chunked answer, unsigned, of one-byte chunks, just under the answer cap (a
    reassembly that copies the rest per chunk takes hours on it), sent at once."""
    count = (MAX_ANSWER_BYTES - 4096) // 6
    send_counted(conn, state, CHUNKED_HEAD + b"1\r\nx\r\n" * count + b"0\r\n\r\n")


def endless(head: bytes) -> Callable[[socket.socket, Stream], None]:
    def write(conn: socket.socket, state: Stream) -> None:
        send_counted(conn, state, head)
        block = b"1\r\nx\r\n" * (1 << 14) if b"chunked" in head else b"x" * (1 << 16)
        while state.sent < ENDLESS:
            send_counted(conn, state, block)
    return write


def drip(conn: socket.socket, state: Stream) -> None:
    """One one-byte chunk every 10 ms, for longer than any test waits."""
    send_counted(conn, state, CHUNKED_HEAD)
    for _ in range(60_000):
        send_counted(conn, state, b"1\r\nx\r\n")
        time.sleep(0.01)


CLIENTS = ["fire", "script", "script-library"]


def denied_here(client: str, url: str, project: Path, user_dir: Path, tmp_path: Path,
                env: dict[str, str] | None = None) -> str:
    """Run ``client`` (``fire --server``, or the forward script by hand or through
    http.client) against ``url`` on an event the local hooks deny: it must give up on the
    listener, and the local hooks deny. Its one line saying why."""
    if client == "fire":
        done = fire(project, user_dir, url, DENY, env=env)
        assert_fire_denied_here(done, "")
        prefix = FIRE_NOTE
    else:
        library = {"MCP_HOOKS_FORWARD_HTTP": "library"} if client == "script-library" else {}
        done = host_call(forward_command(url, project, tmp_path), project,
                         env={**(env or {}), **library})
        assert_host_denied_here(done, "")
        prefix = SCRIPT_NOTE
    return next(line for line in done.stderr.splitlines() if line.startswith(prefix))


@pytest.mark.parametrize("client", CLIENTS)
def test_one_byte_chunks_are_put_together_in_one_pass(client: str, hooks: None, project: Path,
                                                      user_dir: Path, tmp_path: Path) -> None:
    """Some 700,000 one-byte chunks, all sent: read, reassembled and found unsigned well
    within the deadline (a reassembly that copied the rest per chunk took hours, after the
    deadline had stopped counting, and the host gave up first: a non-blocking error)."""
    with streamer(one_byte_chunks) as port:
        why = denied_here(client, port.url, project, user_dir, tmp_path,
                          env={"MCP_HOOKS_FORWARD_TIMEOUT": "60"})
    assert "no signature" in why, why


@pytest.mark.parametrize("head", [
    CHUNKED_HEAD,
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n",  # to the close
    b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n",  # says 1 GiB
], ids=["chunked", "until-close", "content-length"])
@pytest.mark.parametrize("client", CLIENTS)
def test_an_endless_answer_is_read_up_to_the_cap(client: str, head: bytes, hooks: None,
                                                 project: Path, user_dir: Path,
                                                 tmp_path: Path) -> None:
    """The client stops reading at the cap and says so; the listener counts what it took."""
    with streamer(endless(head)) as port:
        why = denied_here(client, port.url, project, user_dir, tmp_path,
                          env={"MCP_HOOKS_FORWARD_TIMEOUT": "60"})
    assert f"over the cap of {MAX_ANSWER_BYTES} bytes" in why, why
    # http.client caps the body it keeps, not the framing of its chunks (here 5 bytes a byte)
    framing = 5 * MAX_ANSWER_BYTES if client == "script-library" and head == CHUNKED_HEAD else 0
    assert port.sent <= MAX_ANSWER_BYTES + MAX_HEAD_BYTES + framing + IN_FLIGHT, port.sent


@pytest.mark.parametrize("client", CLIENTS)
def test_a_drip_costs_the_deadline_for_the_whole_answer(client: str, hooks: None,
                                                        project: Path, user_dir: Path,
                                                        tmp_path: Path) -> None:
    with streamer(drip) as port:
        why = denied_here(client, port.url, project, user_dir, tmp_path,
                          env={"MCP_HOOKS_FORWARD_TIMEOUT": "0.5"})
    assert "within 0.5 s" in why, why


@pytest.mark.parametrize("client", ["fire", "script"])
def test_a_payload_over_the_request_cap_is_not_sent(client: str, hooks: None, project: Path,
                                                    user_dir: Path, tmp_path: Path) -> None:
    with listener(unsigned(FIRE_ALLOW)) as port:
        if client == "fire":
            big = json.dumps({"command": "rm -rf /", "pad": "x" * MAX_REQUEST_BYTES})
            argv = [sys.executable, "-m", "mcp_hooks.cli", "fire", "before_tool", "--tool",
                    "Shell", "--input", "-", "--user-dir", str(user_dir), "--no-log",
                    "--server", port.url, "--token", TOKEN]
            done = subprocess.run(argv, capture_output=True, text=True, cwd=project,
                                  timeout=120, input=big,
                                  env={**os.environ, "PYTHONPATH": SOURCE})
            assert_fire_denied_here(done, f"over the cap of {MAX_REQUEST_BYTES} bytes")
        else:
            payload = (FIXTURES / "claude-code" / "PreToolUse.rm.json").read_text().replace(
                "$PROJECT", str(project))
            data = json.loads(payload)
            data["tool_input"]["pad"] = "x" * MAX_REQUEST_BYTES
            done = subprocess.run(["sh", "-c", forward_command(port.url, project, tmp_path)],
                                  capture_output=True, text=True, input=json.dumps(data),
                                  env={**os.environ, "MCP_HOOKS_LOG": "off"}, timeout=120)
            assert_host_denied_here(done, f"over the cap of {MAX_REQUEST_BYTES} bytes")
    assert port.got == []


def answer_on(sock: socket.socket) -> tuple[int, bytes]:
    """The status and body of the one answer on ``sock`` (read to its length, or the end)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    while length and len(body) < int(length.group(1)):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(head.split(b" ")[1]), body


def ask_with_no_body(base: str, target: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """Send a request's head saying a 256 MiB body follows, and none of the body."""
    host, port = base.removeprefix("http://").split(":")
    head = [f"POST {target} HTTP/1.1", "Host: x", "Content-Length: 268435456",
            *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        return answer_on(sock)


def signed_headers(token: str, target: str, now: float | None = None) -> dict[str, str]:
    from mcp_hooks.hosts.forward_auth import sign_request

    return sign_request(token, target, b"{}", now=now).headers


def test_the_server_refuses_a_huge_body_before_reading_it(server: str, tmp_path: Path) -> None:
    """Whatever the headers show wrong is refused before a byte of the body is read, and a
    body over the cap (said, or streamed) is not read past it (the client counts what the
    server took); nothing is fired."""
    for target in ("/hooks/fire", "/hooks/bridge/claude-code?event=PreToolUse"):
        status, body = ask_with_no_body(server, target, {AUTH_HEADER: "v2=nope"})
        assert status == 401 and b"not a v2 signed request" in body, body
        stale = signed_headers(TOKEN, target, now=time.time() - 3600)
        status, body = ask_with_no_body(server, target, stale)
        assert status == 401 and b"clock skew" in body, body
        status, body = ask_with_no_body(server, target, signed_headers("guessed", target))
        assert status == 413 and f"cap of {MAX_REQUEST_BYTES} bytes".encode() in body, body
    status, body = ask_with_no_body(server, "/hooks/bridge/claude-code?event=PreToolUse", {})
    assert status == 401, body  # neither signed nor the bearer: the middleware
    # the bearer, with a payload over the cap: the host's deny, the body unread
    status, body = ask_with_no_body(server, "/hooks/bridge/claude-code?event=PreToolUse",
                                    {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, body
    assert json.loads(body)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert served_events(tmp_path) == []


def test_a_streamed_body_is_read_up_to_the_cap(server: str, tmp_path: Path) -> None:
    host, port = server.removeprefix("http://").split(":")
    offered = MAX_REQUEST_BYTES + (128 << 20)
    head = ["POST /hooks/fire HTTP/1.1", "Host: x", "Transfer-Encoding: chunked",
            *(f"{k}: {v}" for k, v in signed_headers("guessed", "/hooks/fire").items())]
    answered = threading.Event()
    sent = [0]

    def feed(sock: socket.socket) -> None:
        block = b"%x\r\n%s\r\n" % (1 << 16, b"x" * (1 << 16))
        with suppress(OSError):
            while sent[0] < offered and not answered.is_set():
                try:
                    sock.sendall(block)
                except TimeoutError:
                    continue
                sent[0] += len(block)
            sock.sendall(b"0\r\n\r\n")

    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.settimeout(1)
        feeder = threading.Thread(target=feed, args=(sock,), daemon=True)
        feeder.start()
        sock.settimeout(60)
        status, body = answer_on(sock)
        answered.set()
        feeder.join(60)
    assert status == 413 and f"cap of {MAX_REQUEST_BYTES} bytes".encode() in body, body
    assert sent[0] <= MAX_REQUEST_BYTES + IN_FLIGHT, sent[0]
    assert served_events(tmp_path) == []


@pytest.mark.parametrize(("method", "target"), [
    ("POST", "/hooks/other"), ("GET", "/hooks/fire"), ("POST", "/hooks/bridge/a/b"),
    ("PUT", "/hooks/bridge/claude-code")])
def test_only_the_forwarding_endpoints_check_their_own_signature(
        method: str, target: str, server: str) -> None:
    """Anything else under /hooks/ needs the bearer, X-MCP-Hooks-Auth or not."""
    raw = (f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
           f"Content-Length: 2\r\n"
           + "".join(f"{k}: {v}\r\n" for k, v in signed_headers(TOKEN, target).items())
           + "\r\n{}").encode()
    status, body = status_of(exchange(server, raw))
    assert status == 401 and b"bearer token" in body, body


# -- replicas on one shared store: a nonce one accepted, every other refuses ------------------


def test_a_captured_request_is_refused_by_every_other_replica(
        hooks: None, project: Path, user_dir: Path, tmp_path: Path,
        redis_url: str) -> None:  # noqa: F811
    """Two ``serve --state redis://`` replicas: a request (``fire --server``, the forward
    script) captured on its way to one, sent to the other, is refused there as replayed,
    and fires nothing."""
    from mcp_hooks.state.url import close_store, open_store

    def replica(name: str) -> Any:
        return served(project, user_dir, tmp_path / f"{name}.jsonl", "--token", TOKEN,
                      "--state", redis_url, "--replica-id", name, "--stateless")

    with replica("a") as first, replica("b") as second:
        with listener(passed_through(first)) as port:
            done = fire(project, user_dir, port.url, ALLOW)
            assert done.returncode == 0 and FIRE_NOTE not in done.stderr, done.stderr
            script = host_call(forward_command(port.url, project, tmp_path), project,
                               "PreToolUse.bash")
            assert script.returncode == 0 and SCRIPT_NOTE not in script.stderr, script.stderr
        assert [r.target for r in port.got] == [
            "/hooks/fire?ask=now", "/hooks/bridge/claude-code?event=PreToolUse"]
        for captured in port.got:
            status, body = status_of(exchange(second, captured.raw))
            assert status == 401 and b"replayed nonce" in body, body
            status, body = status_of(exchange(first, captured.raw))
            assert status == 401 and b"replayed nonce" in body, body
    store = open_store(redis_url)
    try:
        events = [r for r in store.read("events") if r.get("kind") == "event"]
    finally:
        close_store(store)
    assert [e["replica"] for e in events] == ["a", "a"]


def test_a_replica_that_cannot_reach_the_replay_guard_fires_nothing_and_the_call_is_denied(
        hooks: None, project: Path, user_dir: Path, tmp_path: Path,
        redis_url: str) -> None:  # noqa: F811
    """The shared store goes dark under a replica: it cannot tell a fresh nonce from a replay,
    so it fires nothing and answers a signed 503, and the client denies the call naming it
    (it never falls back to an allow of its own)."""
    from tests.helpers.tcpproxy import Proxy

    host, port = urlsplit(redis_url).hostname or "", urlsplit(redis_url).port or 6379
    with Proxy((host, port)) as proxy:
        state = proxy.url(redis_url) + "?timeout=1"
        with served(project, user_dir, tmp_path / "dark.jsonl", "--token", TOKEN, "--state",
                    state, "--replica-id", "dark", "--stateless") as url:
            proxy.blackhole()
            done = fire(project, user_dir, url, ALLOW)
            script = host_call(forward_command(url, project, tmp_path), project,
                               "PreToolUse.bash")
    assert done.returncode == 2 and "DENIED" in done.stdout, done.stdout + done.stderr
    assert "answered HTTP 503" in done.stdout + done.stderr
    assert "replay guard cannot reach the state store" in done.stdout + done.stderr
    assert script.returncode == 2, script.stdout + script.stderr
    assert "HTTP 503" in script.stderr
    from mcp_hooks.state.url import close_store, open_store

    store = open_store(redis_url)
    try:
        fired = [r for r in store.read("events") if r.get("replica") == "dark"]
    finally:
        close_store(store)
    assert fired == []  # nothing was fired on the dark replica
