"""``mcp-hooks fire --server``: the event answered by a real ``mcp-hooks serve --transport
http --token`` (``POST /hooks/fire``), where a persistent hook stays resident; and every way
that can go wrong (another program on the port, no server, a folder the server does not
serve) answered by the local one-shot run instead, with one line on stderr; an error status
from the server's address (a wrong token's 401, a 404 where nothing serves /hooks/fire) a deny
naming the URL and the status, not a quiet local decision.

The hook here speaks the persistent protocol by hand and says in every answer which process
answered and in which mode, so a test can tell the server's answer from the local one.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_hooks
from mcp_hooks.hosts.forward import FIRE_PATH
from mcp_hooks.hosts.forward_auth import SIGNATURE_HEADER, answer_problem, sign_request
from mcp_hooks.hosts.forward_script import write_forward_files
from mcp_hooks.spec.outcome import Outcome
from tests.conftest import write_hook
from tests.helpers.forward_served import fake_listener, served

TOKEN = "fire-forward-token"
SOURCE = str(Path(mcp_hooks.__file__).resolve().parent.parent)
NOTE = "mcp-hooks fire: not answered by the server"

HOOK_PY = '''\
import json, os, sys

MODE = "resident" if os.environ.get("MCP_HOOKS_PERSISTENT") == "1" else "one-shot"


def answer(event):
    where = f"{MODE} pid={os.getpid()}"
    if "rm -rf" in (event.get("tool_input") or {}).get("command", ""):
        return {"exit_code": 2, "reason": f"no rm -rf ({where})"}
    return {"exit_code": 0, "additional_context": where}


if MODE == "resident":
    for line in sys.stdin:
        event = json.loads(line)
        event_id = event.pop("_mcp_hooks_event_id")  # echoed: it answers this event
        sys.stdout.write(json.dumps({**answer(event), "_mcp_hooks_event_id": event_id}) + "\\n")
        sys.stdout.flush()
    sys.exit(0)
result = answer(json.load(sys.stdin))
code = result.pop("exit_code")
if code == 2:
    sys.stderr.write(result["reason"])
else:
    print(json.dumps(result))
sys.exit(code)
'''

DENY = '{"command": "rm -rf /"}'
ALLOW = '{"command": "ls"}'


@pytest.fixture
def hooks(project_hooks: Path) -> None:
    write_hook(project_hooks, "resident", script=HOOK_PY, entry="scripts/run.py",
               extra="metadata:\n  persistent: true\nmatcher:\n  tool: Shell\n")


@pytest.fixture
def server(hooks: None, project: Path, user_dir: Path, tmp_path: Path) -> Iterator[str]:
    with served(project, user_dir, tmp_path / "server-events.jsonl", "--token", TOKEN) as url:
        yield url


def fire(project: Path, user_dir: Path, tool_input: str, *options: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``mcp-hooks fire before_tool --tool Shell`` run in the project, as a person would."""
    argv = [sys.executable, "-m", "mcp_hooks.cli", "fire", "before_tool", "--tool", "Shell",
            "--input", tool_input, "--user-dir", str(user_dir), "--no-log", *options]
    return subprocess.run(argv, capture_output=True, text=True, cwd=project, timeout=120,
                          env={**os.environ, "PYTHONPATH": SOURCE, **(env or {})})


def where(text: str) -> tuple[str, int]:
    """(mode, pid) the hook wrote into its answer."""
    found = re.search(r"(resident|one-shot) pid=(\d+)", text)
    assert found, text
    return found.group(1), int(found.group(2))


def shape(data: Any) -> Any:
    """The JSON's shape: keys and value kinds, not values."""
    if isinstance(data, dict):
        return {key: shape(value) for key, value in data.items()}
    if isinstance(data, list):
        return [shape(item) for item in data]
    return type(data).__name__


# -- answered by the server -------------------------------------------------------------------


def test_a_persistent_hook_stays_resident_in_the_server(server: str, project: Path,
                                                        user_dir: Path, tmp_path: Path) -> None:
    first = fire(project, user_dir, ALLOW, "--server", server, "--token", TOKEN)
    second = fire(project, user_dir, ALLOW, "--server", server + "/mcp", "--token", TOKEN)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert NOTE not in first.stderr + second.stderr
    mode, pid = where(first.stdout)
    assert (mode, pid) == where(second.stdout)
    assert mode == "resident" and pid not in (os.getpid(),)
    # the same command without the server: a new one-shot process each time
    local = [where(fire(project, user_dir, ALLOW).stdout) for _ in range(2)]
    assert [m for m, _ in local] == ["one-shot", "one-shot"]
    assert len({pid, local[0][1], local[1][1]}) == 3
    # the server logged both events (the local runs log nowhere: --no-log)
    events = [json.loads(line) for line in (tmp_path / "server-events.jsonl").read_text()
              .splitlines()]
    assert [e["decision"] for e in events if e.get("kind") == "event"] == ["allow", "allow"]


def test_server_and_token_from_the_environment(server: str, project: Path,
                                               user_dir: Path) -> None:
    env = {"MCP_HOOKS_SERVER": server, "MCP_HOOKS_TOKEN": TOKEN}
    assert where(fire(project, user_dir, ALLOW, env=env).stdout)[0] == "resident"
    # --no-server wins over the environment
    forced = fire(project, user_dir, ALLOW, "--no-server", env=env)
    assert where(forced.stdout)[0] == "one-shot" and NOTE not in forced.stderr


def test_the_token_install_via_server_saved_is_used(server: str, project: Path,
                                                    user_dir: Path) -> None:
    write_forward_files(TOKEN, ["mcp-hooks"], dry_run=False)  # under this test's XDG folders
    done = fire(project, user_dir, ALLOW, "--server", server)
    assert where(done.stdout)[0] == "resident", done.stderr


def test_a_deny_exits_2_with_the_reason(server: str, project: Path, user_dir: Path) -> None:
    denied = fire(project, user_dir, DENY, "--server", server, "--token", TOKEN)
    assert denied.returncode == 2, denied.stderr
    assert "DENIED" in denied.stdout and "no rm -rf (resident pid=" in denied.stdout
    assert NOTE not in denied.stderr


def test_json_output_has_the_local_shape(server: str, project: Path, user_dir: Path) -> None:
    for tool_input, code in ((DENY, 2), (ALLOW, 0)):
        remote = fire(project, user_dir, tool_input, "--server", server, "--token", TOKEN,
                      "--json")
        local = fire(project, user_dir, tool_input, "--json")
        assert remote.returncode == local.returncode == code, remote.stderr + local.stderr
        theirs, ours = json.loads(remote.stdout), json.loads(local.stdout)
        assert shape(theirs) == shape(ours)
        assert Outcome.from_dict(theirs).to_json(indent=2) == remote.stdout.rstrip("\n")
        assert theirs["decision"] == ours["decision"]
        assert [h["name"] for h in theirs["hooks"]] == [h["name"] for h in ours["hooks"]]
        # the same text, but for which process answered (and how long it took)
        assert where(json.dumps(theirs))[0] == "resident"
        assert where(json.dumps(ours))[0] == "one-shot"


def test_a_hook_s_ask_is_the_server_s_deny_naming_the_pending_id_at_once(
        server: str, project: Path, user_dir: Path, project_hooks: Path) -> None:
    """The server does not wait out of band past this client's deadline (``?ask=now``): the
    deny names the ask, which stays pending on the server's store for ``mcp-hooks approve``."""
    write_hook(project_hooks, "asker", extra="matcher:\n  tool: Shell\n  pattern: deploy\n",
               script='cat >/dev/null\necho \'{"decision": "ask", "reason": "a person"}\'\n')
    asked = fire(project, user_dir, '{"command": "deploy"}', "--server", server, "--token",
                 TOKEN, env={"MCP_HOOKS_ASK_TIMEOUT": "600"})
    assert asked.returncode == 2, asked.stderr
    assert NOTE not in asked.stderr  # the server's answer, not a local run
    assert re.search(r"mcp-hooks approve ask-[0-9a-f]{10}", asked.stdout), asked.stdout


# -- answered locally, with a note ---------------------------------------------------------------


def assert_local_deny(done: subprocess.CompletedProcess[str], why: str) -> None:
    assert done.returncode == 2, done.stderr
    assert where(done.stdout)[0] == "one-shot", done.stdout
    notes = [line for line in done.stderr.splitlines() if line.startswith(NOTE)]
    assert len(notes) == 1 and why in notes[0], done.stderr


def assert_refused(done: subprocess.CompletedProcess[str], said: str) -> None:
    """Denied by mcp-hooks itself (not by the hook, here or there), naming the URL and the
    status, with one line on stderr saying the same."""
    assert done.returncode == 2, done.stderr
    assert "resident" not in done.stdout and "one-shot" not in done.stdout, done.stdout
    assert said in done.stdout.replace("\n", " "), done.stdout
    notes = [line for line in done.stderr.splitlines()
             if line.startswith("mcp-hooks fire: refused by the server's address")]
    assert len(notes) == 1 and said in notes[0] and NOTE not in done.stderr, done.stderr


def test_a_wrong_token_is_refused_naming_the_url_and_status(server: str, project: Path,
                                                           user_dir: Path) -> None:
    done = fire(project, user_dir, ALLOW, "--server", server, "--token", "not-the-token")
    assert_refused(done, f"{server}/hooks/fire answered HTTP 401")


def test_no_token_at_all_runs_the_hooks_here(server: str, project: Path,
                                             user_dir: Path) -> None:
    assert_local_deny(fire(project, user_dir, DENY, "--server", server), "no token")


def test_no_server_runs_the_hooks_here(hooks: None, project: Path, user_dir: Path) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = fire(project, user_dir, DENY, "--server", f"http://127.0.0.1:{port}",
                "--token", TOKEN)
    assert_local_deny(done, "no answer from")


@pytest.mark.parametrize("headers", [{}, {SIGNATURE_HEADER: "0" * 64}],
                         ids=["unsigned", "forged"])
def test_another_program_on_the_port_is_not_believed(headers: dict[str, str], hooks: None,
                                                     project: Path, user_dir: Path) -> None:
    allow = Outcome(event_type="before_tool").to_json().encode()  # a well-formed allow
    with fake_listener(allow, headers) as (url, seen):
        done = fire(project, user_dir, DENY, "--server", url, "--token", TOKEN)
    assert seen == [FIRE_PATH + "?ask=now"]
    assert_local_deny(done, "so it is not believed")


def test_other_hooks_folders_run_here(server: str, project: Path, user_dir: Path,
                                      tmp_path: Path) -> None:
    other_user = tmp_path / "other-user-hooks"
    other_user.mkdir()
    done = fire(project, other_user, DENY, "--server", server, "--token", TOKEN)
    assert_local_deny(done, "answered 422")
    assert str(other_user) in done.stderr


# -- the endpoint itself -------------------------------------------------------------------------


def post(url: str, body: bytes, token: str = TOKEN, *, bearer: bool = False,
         ) -> tuple[int, dict[str, str], bytes]:
    """A POST to ``/hooks/fire``, signed with ``token`` (or with the bearer token instead);
    a signed answer's signature is checked here."""
    signed = sign_request(token, FIRE_PATH, body)
    headers = {"Content-Type": "application/json",
               **({"Authorization": f"Bearer {token}"} if bearer else signed.headers)}
    request = urllib.request.Request(url + FIRE_PATH, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, answer = response.status, response
            got = {k.lower(): v for k, v in answer.headers.items()}, answer.read()
    except urllib.error.HTTPError as error:
        status, got = error.code, ({k.lower(): v for k, v in error.headers.items()},
                                   error.read())
    if SIGNATURE_HEADER.lower() in got[0]:
        assert answer_problem(token, signed, status, *got) is None
    return status, *got


def test_the_endpoint_signs_and_names_bad_fields(server: str, project: Path,
                                                 tmp_path: Path) -> None:
    event = {"event_type": "pre-tool-call", "tool_name": "Shell",
             "tool_input": {"command": "rm -rf /"}, "work_dir": str(project)}
    status, headers, body = post(server, json.dumps(event).encode())
    assert status == 200 and SIGNATURE_HEADER.lower() in headers
    assert Outcome.from_json(body).denied
    status, headers, body = post(server, json.dumps(event).encode(), bearer=True)
    assert status == 401 and SIGNATURE_HEADER.lower() not in headers  # v2 only
    for bad, field in (({**event, "tool_input": "rm"}, "tool_input"),
                       ({**event, "colour": "red"}, "colour"),
                       ({"tool_name": "Shell"}, "event_type"),
                       ([1, 2], "body")):
        status, headers, body = post(server, json.dumps(bad).encode())
        assert status == 400 and body.decode().startswith(f"{field}:"), body
        assert SIGNATURE_HEADER.lower() in headers  # a 4xx after the check is signed too
    status, _, body = post(server, b"{not json")
    assert status == 400 and body.decode().startswith("body:")
    status, _, body = post(server, json.dumps({**event, "event_type": "pre-nothing"}).encode())
    assert status == 400 and "pre-nothing" in body.decode()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    status, _, body = post(server, json.dumps({**event, "work_dir": str(elsewhere)}).encode())
    assert status == 422 and "does not answer for that folder" in body.decode()
    status, headers, _ = post(server, json.dumps(event).encode(), token="wrong")
    assert status == 401 and SIGNATURE_HEADER.lower() not in headers


def test_the_endpoint_is_absent_without_a_token(hooks: None, project: Path, user_dir: Path,
                                                tmp_path: Path) -> None:
    with served(project, user_dir, tmp_path / "log.jsonl", "--host", "127.0.0.1") as url:
        status, _, _ = post(url, b"{}")
        assert status == 404
        done = fire(project, user_dir, ALLOW, "--server", url, "--token", TOKEN)
        warned = fire(project, user_dir, ALLOW, "--server", url, "--token", TOKEN,
                      "--on-fault", "warn")
    assert_refused(done, f"{url}/hooks/fire answered HTTP 404")
    assert "route /hooks/ to the server" in done.stdout.replace("\n", " ")
    assert warned.returncode == 0 and "answered HTTP 404" in warned.stdout, warned.stdout


def test_the_bundled_guards_decide_the_same_resident_in_serve_and_one_shot_from_fire(
        project: Path, user_dir: Path, tmp_path: Path) -> None:
    """The library's guards as shipped (persistent): resident in a real ``mcp-hooks serve``
    (``fire --server``) and spawned by ``fire`` alone, over the same commands."""
    import shutil

    library = Path(SOURCE) / "hooks"
    for name in ("block-dangerous-commands", "block-prod-deploy", "protect-hooks",
                 "protect-secrets"):
        shutil.copytree(library / name, user_dir / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    inputs = [{"command": "rm -rf /"}, {"command": "ls -la"},
              {"command": "kubectl apply -f prod.yaml --context production"},
              {"command": "echo AKIAABCDEFGHIJKLMNOP > .env"},
              {"command": "rm -rf .agents/hooks"}, {"command": "git status"}]

    def decisions(*options: str) -> list[tuple[int, str | None, str | None]]:
        found = []
        for tool_input in inputs * 2:  # twice: the second round meets resident processes
            done = fire(project, user_dir, json.dumps(tool_input), "--json", *options)
            assert done.returncode in (0, 2), done.stderr
            outcome = json.loads(done.stdout)
            found.append((done.returncode, outcome["blocked_by"], outcome["reason"]))
        return found

    with served(project, user_dir, tmp_path / "server-events.jsonl", "--token", TOKEN) as url:
        resident = decisions("--server", url, "--token", TOKEN)
    spawned = decisions("--no-server")
    assert resident == spawned
    assert [code for code, *_ in resident[:len(inputs)]].count(2) >= 3, resident
    served_events = [json.loads(line) for line in
                     (tmp_path / "server-events.jsonl").read_text().splitlines()]
    assert sum(e.get("kind") == "event" for e in served_events) == len(inputs) * 2
