"""The MCP server through the SDK's in-memory Client, in both protocol eras.

``legacy`` is the initialize handshake (JSON-RPC over memory streams); ``auto`` is the
default, which for an in-process server speaks 2026-07-28 directly.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_hooks.errors import EXIT_FAILURE, EXIT_USAGE
from mcp_hooks.server import MAX_PAYLOAD_BYTES, build_server, sdk_compat
from mcp_hooks.service import BadRequest, HookService, ServiceUnavailable, read_hook
from mcp_hooks.settings import Settings
from mcp_hooks.spec.hookfile import load_hook
from mcp_hooks.spec.outcome import Event
from tests.conftest import write_hook
from tests.helpers.mcp_calls import fire, tool_error

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "auto"]
ERA_VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28"}


@pytest.fixture
async def service(project: Path, user_dir: Path, tmp_path: Path) -> AsyncIterator[HookService]:
    async with HookService(Settings.from_env(project_dir=project, user_dir=user_dir,
                                    log=tmp_path / "events.jsonl"), watch_interval=0.05) as svc:
        yield svc


@pytest.fixture(params=ERAS)
async def client(request: pytest.FixtureRequest, service: HookService) -> AsyncIterator[Client]:
    async with Client(build_server(service), mode=request.param) as c:
        assert c.protocol_version == ERA_VERSION[request.param]
        yield c


# -- surface -----------------------------------------------------------------------------------


async def test_tools_have_schemas_annotations_and_descriptions(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"fire_hook_event", "respond_to_signal", "list_hooks", "get_hook"}
    fire_tool = tools["fire_hook_event"]
    assert "before_tool" in (fire_tool.description or "")
    assert "deny" in (fire_tool.description or "")
    assert fire_tool.input_schema["required"] == ["event_type"]
    assert fire_tool.input_schema["properties"]["tool_input"]["anyOf"][0]["type"] == "object"
    out = fire_tool.output_schema
    assert out is not None and out["properties"]["decision"]["enum"] == ["allow", "deny"]
    assert "$ref" not in json.dumps(out)
    assert fire_tool.annotations is not None and fire_tool.annotations.read_only_hint is False
    for name in ("list_hooks", "get_hook"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.read_only_hint is True
        assert tools[name].output_schema is not None


async def test_instructions_and_prompt(client: Client, project_hooks: Path) -> None:
    assert client.instructions is not None
    assert "fire_hook_event" in client.instructions and "deny" in client.instructions
    assert client.instructions.count(". ") + 1 == 2  # two sentences
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == ["lifecycle-protocol"]
    write_hook(project_hooks, "gate", trigger="pre-agent-turn-stop")
    result = await client.get_prompt("lifecycle-protocol")
    content = result.messages[0].content
    assert isinstance(content, types.TextContent)
    assert "continue_working" in content.text and "modified_input" in content.text
    assert "before_tool" in content.text
    assert "installed right now for: before_stop" in content.text


# -- fire_hook_event ---------------------------------------------------------------------------


async def test_fire_without_hooks_allows(client: Client) -> None:
    outcome = await fire(client, event_type="before_tool", tool_name="Read",
                         tool_input={"file_path": "a.py"})
    assert outcome["decision"] == "allow" and outcome["hooks"] == []
    assert outcome["modified_input"] is None


async def test_fire_deny_modify_and_context(
    client: Client, project: Path, project_hooks: Path, user_dir: Path
) -> None:
    write_hook(project_hooks, "no-rm", script="echo 'rm -rf is not allowed' >&2\nexit 2\n",
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    write_hook(user_dir, "add-flag",
               script='echo \'{"modified_input": {"command": "ls -la"}, '
               '"additional_context": "listing only"}\'\n',
               extra="priority: 500\nmatcher:\n  tool: Shell\n  pattern: '^ls$'\n")
    denied = await fire(client, event_type="pre-tool-use", tool_name="Bash",
                        tool_input={"command": "rm -rf /"}, session_id="s1",
                        work_dir=str(project))
    assert denied["decision"] == "deny"
    assert denied["blocked_by"] == "no-rm"
    assert denied["reason"] == "rm -rf is not allowed"
    assert denied["event_type"] == "before_tool"

    changed = await fire(client, event_type="before_tool", tool_name="Bash",
                         tool_input={"command": "ls"})
    assert changed["decision"] == "allow"
    assert changed["modified_input"] == {"command": "ls -la"}
    assert changed["additional_context"] == ["listing only"]
    assert [h["name"] for h in changed["hooks"]] == ["add-flag"]


async def test_before_stop_gate_keeps_working(client: Client, project_hooks: Path) -> None:
    write_hook(project_hooks, "tests-pass", trigger="before_stop",
               script="echo 'tests fail: fix test_a' >&2\nexit 2\n")
    outcome = await fire(client, event_type="before_stop", session_id="s",
                         payload={"stop_reason": "done"})
    assert outcome["continue_working"] is True
    assert outcome["reason"] == "tests fail: fix test_a"


async def test_hook_receives_payload_in_work_dir(client: Client, project: Path,
                                                 project_hooks: Path) -> None:
    write_hook(project_hooks, "dump", trigger="subagent_start",
               script='cat > "$AGENT_HOOKS_WORK_DIR/payload.json"\npwd > cwd.txt\n')
    sub = project / "src"
    sub.mkdir()
    await fire(client, event_type="subagent_start", session_id="s9", work_dir=str(sub),
               payload={"subagent_name": "reviewer"}, context={"k": 1})
    payload = json.loads((sub / "payload.json").read_text())
    assert payload["event_type"] == "subagent_start"
    assert payload["subagent_name"] == "reviewer"
    assert payload["session_id"] == "s9"
    assert payload["context"] == {"k": 1}
    assert (sub / "cwd.txt").read_text().strip() == str(sub.resolve())


async def test_crashing_hooks_never_take_the_server_down(
    client: Client, project_hooks: Path
) -> None:
    write_hook(project_hooks, "crash", script="echo boom >&2\nexit 3\n")
    write_hook(project_hooks, "killed", script="kill -9 $$\n")
    write_hook(project_hooks, "garbage", script="echo 'not json'\n")
    outcome = await fire(client, event_type="before_tool", tool_name="Bash", tool_input={})
    assert outcome["decision"] == "allow"
    statuses = {h["name"]: h["status"] for h in outcome["hooks"]}
    assert statuses == {"crash": "error", "killed": "error", "garbage": "error"}
    assert len(outcome["warnings"]) == 3
    assert "fail open" in outcome["warnings"][0]

    write_hook(project_hooks, "strict", script="exit 1\n", extra="metadata:\n  on_error: block\n")
    closed = await fire(client, event_type="before_tool", tool_name="Bash", tool_input={})
    assert closed["decision"] == "deny" and closed["blocked_by"] == "strict"
    assert (await fire(client, event_type="session_start"))["decision"] == "allow"


# -- bad requests ------------------------------------------------------------------------------


async def test_bad_requests_are_tool_errors(client: Client, tmp_path: Path,
                                            project: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    link = project / "escape"
    link.symlink_to(outside)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"event_type": "pre-lunch"}, "unknown event type 'pre-lunch'"),
        ({}, "event_type: required"),
        ({"event_type": 7}, "event_type"),
        ({"event_type": "before_tool", "tool_input": "rm -rf /"}, "tool_input"),
        ({"event_type": "before_tool", "tool_input": [1, 2]}, "tool_input"),
        ({"event_type": "before_stop", "payload": 3}, "payload"),
        ({"event_type": "session_start", "work_dir": str(outside)}, "outside the folders"),
        ({"event_type": "session_start", "work_dir": str(link)}, "outside the folders"),
        ({"event_type": "session_start", "work_dir": "relative/dir"}, "absolute path"),
        ({"event_type": "session_start", "work_dir": str(project / "missing")},
         "not an existing folder"),
    ]
    for arguments, expected in cases:
        message = await tool_error(client, "fire_hook_event", arguments)
        assert expected in message, (arguments, message)
        assert "validation error for" not in message  # no pydantic dump
    # the server keeps serving
    assert (await fire(client, event_type="session_start"))["decision"] == "allow"


async def test_too_much_event_data_is_a_fault_not_an_error(client: Client) -> None:
    """Well formed but more than the server processes: denied (fail closed), saying why;
    an event that cannot block is let through with the warning."""
    big = {"blob": "x" * MAX_PAYLOAD_BYTES}
    denied = await fire(client, event_type="before_tool", tool_name="Bash", tool_input=big)
    assert denied["decision"] == "deny" and denied["blocked_by"] == "mcp-hooks"
    assert "1048576 bytes" in denied["reason"] and "summary" in denied["reason"]
    note = await fire(client, event_type="after_tool_failure", tool_name="Bash", error=big)
    assert note["decision"] == "allow"
    assert any("1048576 bytes" in w for w in note["warnings"])


async def test_tool_input_sent_as_json_text_is_accepted(client: Client) -> None:
    outcome = await fire(client, event_type="before_tool", tool_name="Edit",
                         tool_input='{"file_path": "a.py"}')
    assert outcome["decision"] == "allow"


# -- list_hooks and get_hook -------------------------------------------------------------------


async def test_list_hooks_filters_and_reports_invalid(
    client: Client, project_hooks: Path, user_dir: Path
) -> None:
    write_hook(user_dir, "shell-guard", extra="matcher:\n  tool: Bash|Shell\npriority: 900\n")
    write_hook(project_hooks, "any-tool")
    write_hook(project_hooks, "stop-gate", trigger="before_stop", extra="async: true\n")
    broken = write_hook(project_hooks, "broken")
    (broken / "HOOK.md").write_text("---\nname: broken\ntrigger: before_tool\n---\n")

    result = await client.call_tool("list_hooks", {})
    listing = result.structured_content
    assert listing is not None
    names = [h["name"] for h in listing["hooks"]]
    assert names == ["shell-guard", "any-tool", "stop-gate"]
    guard = listing["hooks"][0]
    assert guard == {
        "name": "shell-guard", "description": "test hook shell-guard", "trigger": "before_tool",
        "event": "before_tool", "scope": "user", "priority": 900, "async": False,
        "timeout": 30000, "matcher": {"tool": "Bash|Shell"}, "on_error": "allow",
        "trust": "trusted", "fix": None, "replaces": None,
    }
    assert listing["hooks"][2]["async"] is True
    assert [(b["name"], b["field"], b["event"], b["in_scope"]) for b in listing["invalid"]] == [
        ("broken", "description", "before_tool", True)]

    by_event = (await client.call_tool("list_hooks", {"event_type": "pre-agent-turn-stop"}))
    assert [h["name"] for h in (by_event.structured_content or {})["hooks"]] == ["stop-gate"]
    by_tool = await client.call_tool("list_hooks", {"tool_name": "PowerShell"})
    assert [h["name"] for h in (by_tool.structured_content or {})["hooks"]] == ["any-tool"]
    by_both = await client.call_tool("list_hooks", {"event_type": "before_tool",
                                                    "tool_name": "Shell"})
    assert [h["name"] for h in (by_both.structured_content or {})["hooks"]] == [
        "shell-guard", "any-tool"]
    assert "unknown event type" in await tool_error(client, "list_hooks", {"event_type": "x"})


async def test_get_hook(client: Client, project_hooks: Path) -> None:
    write_hook(project_hooks, "fmt", trigger="after_tool")
    broken = write_hook(project_hooks, "broken")
    (broken / "HOOK.md").write_text("---\nname: broken\ntrigger: nope\ndescription: d\n---\n")
    result = await client.call_tool("get_hook", {"name": "fmt"})
    doc = result.structured_content
    assert doc is not None
    assert doc["text"] == (project_hooks / "fmt" / "HOOK.md").read_text()
    assert doc["frontmatter"]["trigger"] == "after_tool"
    assert doc["scope"] == "project" and doc["path"].endswith("fmt/HOOK.md")
    assert doc["body"] == "# fmt"  # the prose, read (and stripped) by python-frontmatter

    crlf = write_hook(project_hooks, "windows", trigger="after_tool")
    hook_md = crlf / "HOOK.md"
    hook_md.write_bytes(hook_md.read_bytes().replace(b"\n", b"\r\n"))
    doc = (await client.call_tool("get_hook", {"name": "windows"})).structured_content
    assert doc is not None
    assert doc["text"] == hook_md.read_text()  # newlines as a text read gives them
    assert "\r" not in doc["text"] and doc["body"] == "# windows"

    assert "no hook named 'nope'" in await tool_error(client, "get_hook", {"name": "nope"})
    assert "installed: fmt" in await tool_error(client, "get_hook", {"name": "nope"})
    for path_like in ("../fmt", "fmt/HOOK.md", "/etc/passwd", "..", ".hidden", "a\\b"):
        message = await tool_error(client, "get_hook", {"name": path_like})
        assert "looks like a path" in message, path_like
    assert "not a hook name" in await tool_error(client, "get_hook", {"name": "Fmt"})
    assert "invalid and not loaded" in await tool_error(client, "get_hook", {"name": "broken"})


async def test_projects_are_found_from_work_dir(client: Client, tmp_path: Path,
                                                project: Path) -> None:
    nested = project / "packages" / "app"
    write_hook(nested / ".agents" / "hooks", "app-only", trigger="session_start",
               script="exit 2\n")
    deep = nested / "src"
    deep.mkdir()
    outcome = await fire(client, event_type="session_start", work_dir=str(deep))
    assert outcome["blocked_by"] == "app-only"
    assert (await fire(client, event_type="session_start", work_dir=str(project)))[
        "decision"] == "allow"
    listing = await client.call_tool("list_hooks", {"work_dir": str(nested)})
    assert [h["name"] for h in (listing.structured_content or {})["hooks"]] == ["app-only"]


# -- resources ---------------------------------------------------------------------------------


async def test_resources(client: Client, project_hooks: Path, user_dir: Path) -> None:
    write_hook(project_hooks, "audit", trigger="after_tool", description="log every tool")
    write_hook(user_dir, "guard")
    listed = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert {"hooks://index", "hooks://events", "hooks://hooks/audit",
            "hooks://hooks/guard"} <= set(listed)
    assert listed["hooks://hooks/audit"].mime_type == "text/markdown"
    assert listed["hooks://hooks/audit"].description == "log every tool"
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["hooks://hooks/{name}"]

    index = await client.read_resource("hooks://index")
    content = index.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == "application/json"
    data = json.loads(content.text)
    assert [h["name"] for h in data["hooks"]] == ["guard", "audit"]
    assert data["invalid"] == []

    events = await client.read_resource("hooks://events")
    first = events.contents[0]
    assert isinstance(first, types.TextResourceContents)
    catalogue = json.loads(first.text)
    before_tool = next(e for e in catalogue if e["name"] == "before_tool")
    assert "pre-tool-use" in before_tool["aliases"] and "tool_input" in before_tool[
        "payload_fields"]

    text = await client.read_resource("hooks://hooks/audit")
    hook_md = text.contents[0]
    assert isinstance(hook_md, types.TextResourceContents)
    assert hook_md.mime_type == "text/markdown"
    assert hook_md.text == (project_hooks / "audit" / "HOOK.md").read_text()
    for bad in ("hooks://hooks/nope", "hooks://hooks/..%2Fsecrets", "hooks://hooks/a%2Fb"):
        with pytest.raises(MCPError):
            await client.read_resource(bad)


# -- progress and change notices ---------------------------------------------------------------


async def test_progress_reported_per_sync_hook(client: Client, project_hooks: Path) -> None:
    write_hook(project_hooks, "first", script="exit 0\n", extra="priority: 200\n")
    write_hook(project_hooks, "second", script="exit 0\n")
    write_hook(project_hooks, "later", script="exit 0\n", extra="async: true\n")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool(
        "fire_hook_event", {"event_type": "before_tool", "tool_name": "X", "tool_input": {}},
        progress_callback=on_progress,
    )
    assert not result.is_error
    for _ in range(50):
        if len(seen) >= 2:
            break
        await anyio.sleep(0.01)
    assert [(p, t) for p, t, _ in seen] == [(1, 2), (2, 2)]
    assert seen[0][2] is not None and seen[0][2].startswith("first: allow")
    assert seen[1][2] is not None and seen[1][2].startswith("second: allow")


async def test_legacy_clients_hear_list_changed(service: HookService,
                                                project_hooks: Path) -> None:
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceListChangedNotification):
            heard.set()

    async with Client(build_server(service), mode="legacy", message_handler=on_message) as c:
        assert c.server_capabilities.resources is not None
        assert c.server_capabilities.resources.list_changed is True
        before = {str(r.uri) for r in (await c.list_resources()).resources}
        write_hook(project_hooks, "new-hook")
        with anyio.fail_after(30):  # a hang bound: the notice comes at once
            await heard.wait()
        after = {str(r.uri) for r in (await c.list_resources()).resources}
        assert after - before == {"hooks://hooks/new-hook"}


async def test_modern_clients_hear_list_changed(service: HookService,
                                                project_hooks: Path) -> None:
    async with Client(build_server(service)) as c:
        assert c.protocol_version == "2026-07-28"
        async with c.listen(resources_list_changed=True) as subscription:
            write_hook(project_hooks, "new-hook")
            with anyio.fail_after(30):  # a hang bound
                async for event in subscription:
                    assert type(event).__name__ == "ResourcesListChanged"
                    break
        listed = {str(r.uri) for r in (await c.list_resources()).resources}
        assert "hooks://hooks/new-hook" in listed


async def test_engine_for_checks_roots(service: HookService, tmp_path: Path,
                                       project: Path) -> None:
    engine = await service.engine_for(None)
    assert engine.registry.project_dir == Path(os.path.realpath(project))
    assert await service.engine_for(str(project)) is engine
    with pytest.raises(BadRequest, match="outside the folders") as raised:
        await service.engine_for(str(tmp_path))
    assert raised.value.exit_code == EXIT_USAGE  # a ConfigError: the caller's to fix
    with pytest.raises(BadRequest, match="not an existing folder"):
        await service.engine_for(str(project / "nope"))


def test_read_hook_refuses_what_the_index_would(tmp_path: Path, project_hooks: Path) -> None:
    """get_hook reads HOOK.md now, with PyYAML (python-frontmatter), but only past the index's
    guards: a file turned into an alias bomb after it was indexed is refused, not expanded."""
    hook_dir = write_hook(project_hooks, "late")
    spec, _ = load_hook(hook_dir, "project")
    assert read_hook(spec).body == "# late"
    (hook_dir / "HOOK.md").write_text("---\nname: late\ndescription: &a x\nt: *a\n---\n")
    with pytest.raises(BadRequest, match="cannot read"):
        read_hook(spec)
    (hook_dir / "HOOK.md").unlink()
    with pytest.raises(BadRequest, match="cannot read"):
        read_hook(spec)


async def test_hooks_that_cannot_be_loaded_are_service_unavailable(
    project: Path, user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project whose engine cannot be built: a listing raises ServiceUnavailable (a
    RunError), an event that can block is a fault (a deny saying so), never a raise."""
    service = HookService(Settings.from_env(project_dir=project, user_dir=user_dir, no_log=True))

    def cannot_load(project: Path) -> Any:
        raise OSError("disk on fire")

    monkeypatch.setattr(service, "_new_engine", cannot_load)
    async with service:
        with pytest.raises(ServiceUnavailable, match="cannot be loaded") as raised:
            await service.registry_for(None)
        assert raised.value.exit_code == EXIT_FAILURE
        outcome = await service.fire(Event.create(event_type="before_tool", tool_name="Bash"))
        assert outcome.decision == "deny" and outcome.blocked_by == "mcp-hooks"
        assert "cannot be loaded" in (outcome.reason or "")


def test_server_package_exports_exactly_its_public_names() -> None:
    import mcp_hooks.server as package

    assert package.__all__ == sorted(package.__all__)
    assert set(package.__all__) == {"MAX_PAYLOAD_BYTES", "SERVER_NAME", "ServeOptions",
                                    "build_server", "serve", "serve_hooks"}
    for name in package.__all__:
        assert getattr(package, name) is not None
    with pytest.raises(AttributeError):
        package.HookService  # noqa: B018 -- the service is mcp_hooks.service's


# -- sdk_compat: every private SDK name, touched --------------------------------------------


async def test_sdk_compat_names_still_resolve(service: HookService) -> None:
    """After an SDK upgrade this says which workaround broke (see sdk_compat's docstring)."""
    from mcp.server import MCPServer, Server

    server = build_server(service)
    lowlevel = sdk_compat.lowlevel_server(server)
    assert isinstance(lowlevel, Server) and sdk_compat.lowlevel_server(lowlevel) is lowlevel
    assert not isinstance(lowlevel, MCPServer)
    # default_notification_options took: the initialize result advertises listChanged
    init = lowlevel.create_initialization_options()
    assert init.capabilities.resources is not None
    assert init.capabilities.resources.list_changed is True
    assert sdk_compat.session_connection(object()) is None
    assert sdk_compat.TransportStreams is not None
    assert callable(sdk_compat.create_mcp_http_client)
    from starlette.requests import Request

    async def send(message: Any) -> None:
        return None

    request = Request({"type": "http", "method": "GET", "headers": []}, send=send)
    assert sdk_compat.asgi_send(request) is send


# -- one tool vocabulary (vocabulary.MCP_CLIENTS) ----------------------------------------------


async def test_a_hook_on_shell_matches_a_client_that_says_bash(
    client: Client, project_hooks: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.json"
    write_hook(project_hooks, "no-rm", script=f"cat > '{seen}'\necho 'no rm' >&2\nexit 2\n",
               extra="matcher:\n  tool: Shell\n  pattern: 'rm -rf'\n")
    denied = await fire(client, event_type="before_tool", tool_name="Bash",
                        tool_input={"command": "rm -rf /", "timeout": 5})
    assert (denied["decision"], denied["blocked_by"]) == ("deny", "no-rm")
    payload = json.loads(seen.read_text())
    assert payload["tool_name"] == "Shell"
    assert payload["tool_input"] == {"command": "rm -rf /", "timeout": 5}
    assert payload["host"] == {"tool_name": "Bash",
                               "tool_input": {"command": "rm -rf /", "timeout": 5}}
    # input keys too: Read's file_path is ReadFile's path
    seen.unlink()
    write_hook(project_hooks, "no-env", script=f"cat > '{seen}'\nexit 2\n",
               extra="matcher:\n  tool: ReadFile\n  pattern: '\\.env$'\n")
    denied = await fire(client, event_type="before_tool", tool_name="Read",
                        tool_input={"file_path": "/p/.env"})
    assert denied["blocked_by"] == "no-env"
    payload = json.loads(seen.read_text())
    assert (payload["tool_name"], payload["tool_input"]) == ("ReadFile", {"path": "/p/.env"})
    assert payload["host"]["tool_input"] == {"file_path": "/p/.env"}


async def test_a_rewrite_comes_back_in_the_callers_keys(
    client: Client, project_hooks: Path
) -> None:
    write_hook(project_hooks, "safe-write",
               script='echo \'{"modified_input": {"path": "/tmp/b.txt", "content": "safe"}}\'\n',
               extra="matcher:\n  tool: WriteFile\n")
    changed = await fire(client, event_type="before_tool", tool_name="Write",
                         tool_input={"file_path": "/tmp/a.txt", "content": "x"})
    assert changed["modified_input"] == {"file_path": "/tmp/b.txt", "content": "safe"}
    # Gemini CLI's name for the same tool: its own key comes back
    changed = await fire(client, event_type="before_tool", tool_name="create",
                         tool_input={"path": "/tmp/a.txt", "file_text": "x"})
    assert changed["modified_input"] == {"path": "/tmp/b.txt", "file_text": "safe"}

    # a rewrite the caller's tool cannot take (Edit holds one edit) is a fault of ours: the
    # call is refused rather than run with the input the hook replaced
    write_hook(project_hooks, "two-edits", script='echo \'{"modified_input": {"path": "/a", '
               '"edits": [{"old_string": "a", "new_string": "b"}, '
               '{"old_string": "c", "new_string": "d"}]}}\'\n',
               extra="matcher:\n  tool: EditFile\n")
    refused = await fire(client, event_type="before_tool", tool_name="Edit",
                         tool_input={"file_path": "/a", "old_string": "a", "new_string": "b"})
    assert (refused["decision"], refused["blocked_by"]) == ("deny", "mcp-hooks")
    assert refused["modified_input"] is None
    assert "rewrite by a hook was not applied" in refused["reason"]
    assert "exactly one edit" in refused["reason"]


async def test_an_unmapped_tool_name_passes_through_unchanged(
    client: Client, project_hooks: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.jsonl"
    write_hook(project_hooks, "git-guard", script=f"cat >> '{seen}'\necho >> '{seen}'\n",
               extra="matcher:\n  tool: git_status|write_file\n")
    for name, arguments in (("git_status", {"repo_path": "."}),
                            ("write_file", {"path": "a.txt", "content": "x"})):
        outcome = await fire(client, event_type="before_tool", tool_name=name,
                             tool_input=arguments)
        assert [h["name"] for h in outcome["hooks"]] == ["git-guard"]
    payloads = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [(p["tool_name"], p["tool_input"]) for p in payloads] == [
        ("git_status", {"repo_path": "."}), ("write_file", {"path": "a.txt", "content": "x"})]
    assert all("host" not in p for p in payloads)


async def test_list_hooks_reads_tool_names_in_the_vocabulary(
    client: Client, project_hooks: Path
) -> None:
    write_hook(project_hooks, "shell-only", extra="matcher:\n  tool: Shell\n")
    by_tool = await client.call_tool("list_hooks", {"tool_name": "Bash"})
    assert [h["name"] for h in (by_tool.structured_content or {})["hooks"]] == ["shell-only"]


async def test_the_model_is_told_the_vocabulary(client: Client) -> None:
    fire_tool = next(t for t in (await client.list_tools()).tools if t.name == "fire_hook_event")
    assert "Bash -> Shell" in (fire_tool.description or "")
    described = fire_tool.input_schema["properties"]["tool_name"]["description"]
    assert "Shell" in described and "WriteFile" in described
    prompt = await client.get_prompt("lifecycle-protocol")
    content = prompt.messages[0].content
    assert isinstance(content, types.TextContent)
    assert "## Tool names" in content.text and "`Shell` (command, cwd)" in content.text

    events = await client.read_resource("hooks://events")
    first = events.contents[0]
    assert isinstance(first, types.TextResourceContents)
    catalogue = {e["name"]: e for e in json.loads(first.text)}
    assert catalogue["before_tool"]["spec_name"] == "pre-tool-call"
    assert catalogue["before_stop"]["spec_name"] == "pre-agent-turn-stop"
    tools = {t["name"]: t for t in catalogue["after_tool"]["tools"]}
    assert tools["Shell"]["input_keys"] == ["command", "cwd"]
    assert {"Bash", "run_shell_command", "bash"} <= set(tools["Shell"]["caller_names"])
    assert "Write" in tools["WriteFile"]["caller_names"]
    assert "tools" not in catalogue["before_stop"]
