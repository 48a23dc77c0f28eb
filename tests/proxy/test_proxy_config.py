"""The proxy's upstream configuration: mcpServers files and --upstream values."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcp_hooks.errors import ConfigError, MCPHooksError, RunError, exit_code
from mcp_hooks.proxy.config import (
    ProxyConfigError,
    collect_upstreams,
    load_config,
    parse_upstream,
)
from tests.conftest import MCP_HOOKS


def write_config(path: Path, servers: object, key: str = "mcpServers") -> Path:
    path.write_text(json.dumps({key: servers}))
    return path


def test_the_shapes_hosts_use(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {
        "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "."],
                "env": {"LEVEL": "debug", "N": 3}, "cwd": "sub"},
        "remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
        "old": {"type": "sse", "url": "http://127.0.0.1:9000/sse", "timeout": 5},
        "typed": {"type": "stdio", "command": "srv"},
        "streamable": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
        "off": {"command": "never", "disabled": True},
    })
    specs = {s.name: s for s in load_config(config, environ={})}
    assert set(specs) == {"git", "remote", "old", "typed", "streamable"}
    git = specs["git"]
    assert (git.transport, git.command, git.args) == ("stdio", "uvx",
                                                      ("mcp-server-git", "--repository", "."))
    assert git.env == {"LEVEL": "debug", "N": "3"}
    assert git.cwd == str(tmp_path / "sub")  # relative to the file's folder
    assert (specs["remote"].transport, specs["remote"].headers) == ("http", {"X-Key": "k"})
    assert (specs["old"].transport, specs["old"].timeout) == ("sse", 5)
    assert specs["typed"].transport == "stdio"
    assert specs["streamable"].transport == "http"


def test_server_url_transport_key_and_absolute_cwd(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {
        "w": {"serverUrl": "https://h.example/mcp", "transport": "SSE"},
        "s": {"transport": "stdio", "command": "srv", "cwd": str(tmp_path / "abs")},
    })
    specs = {s.name: s for s in load_config(config, environ={})}
    assert (specs["w"].transport, specs["w"].url) == ("sse", "https://h.example/mcp")
    assert (specs["s"].transport, specs["s"].cwd) == ("stdio", str(tmp_path / "abs"))


def test_vs_code_servers_key(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"fs": {"type": "stdio", "command": "fs"}},
                          key="servers")
    assert [s.name for s in load_config(config, environ={})] == ["fs"]


def test_environment_variables_are_expanded(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {
        "a": {"command": "${TOOL}", "args": ["--token=${env:SECRET}", "${MISSING:-fallback}"],
              "env": {"HOME_DIR": "${HOME_DIR:-/tmp}"}},
        "b": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${SECRET}"}},
    })
    specs = {s.name: s for s in load_config(config, environ={"TOOL": "srv", "SECRET": "s3",
                                                              "HOST": "h.example"})}
    assert specs["a"].command == "srv"
    assert specs["a"].args == ("--token=s3", "fallback")
    assert specs["a"].env == {"HOME_DIR": "/tmp"}
    assert specs["b"].url == "https://h.example/mcp"
    assert specs["b"].headers == {"Authorization": "Bearer s3"}


@pytest.mark.parametrize(("servers", "needle"), [
    ({"a": {"command": "x", "args": ["${NOPE}"]}}, "mcpServers.a.args: the environment "
                                                   "variable NOPE is not set"),
    ({"a": {"args": ["x"]}}, "mcpServers.a: needs 'command' (a stdio server) or 'url'"),
    ({"a": {"type": "stdio"}}, "mcpServers.a: a stdio server needs 'command'"),
    ({"a": {"type": "ftp", "url": "x"}}, "mcpServers.a.type: 'ftp' is not a transport"),
    ({"a": {"type": "sse"}}, "mcpServers.a: an sse server needs 'url'"),
    ({"a": {"url": "ws://x"}}, "mcpServers.a.url: 'ws://x' must start with http://"),
    ({"a": {"command": "x", "args": "not a list"}}, "mcpServers.a.args: must be a list"),
    ({"a": {"command": "x", "env": {"K": ["v"]}}}, "mcpServers.a.env.K: must be a string"),
    ({"a": {"command": "x", "timeout": -1}}, "mcpServers.a.timeout: must be a positive"),
    ({"a": "srv"}, "mcpServers.a: must be an object"),
    ({"": {"command": "x"}}, "mcpServers.: a server needs a non-empty name"),
    ({"a": {"command": 3}}, "mcpServers.a.command: must be a string"),
    ({"a": {"command": "x", "cwd": 5}}, "mcpServers.a.cwd: must be a string"),
    ({"a": {"url": "https://h/mcp", "headers": {"K": None}}},
     "mcpServers.a.headers.K: must be a string"),
    ({"a": {"transport": "bogus", "command": "x"}}, "mcpServers.a.type: 'bogus' is not a "),
    ({"a": {"type": "stdio", "timeout": 0}}, "mcpServers.a.timeout: must be a positive"),
    ({"a": {"type": "sse", "timeout": True}}, "mcpServers.a.timeout: must be a positive"),
])
def test_malformed_entries_name_the_field(tmp_path: Path, servers: object, needle: str) -> None:
    config = write_config(tmp_path / "mcp.json", servers)
    with pytest.raises(ProxyConfigError) as err:
        load_config(config, environ={})
    assert str(config) in str(err.value)
    assert needle in str(err.value)


def test_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ProxyConfigError, match="no such config file"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ProxyConfigError, match="not valid JSON"):
        load_config(bad)
    other = tmp_path / "other.json"
    other.write_text('{"tools": {}}')
    with pytest.raises(ProxyConfigError, match="has no 'mcpServers' object"):
        load_config(other)


def test_upstream_option() -> None:
    spec = parse_upstream("git=uvx mcp-server-git --repository '/a b'")
    assert (spec.name, spec.transport, spec.command, spec.args) == (
        "git", "stdio", "uvx", ("mcp-server-git", "--repository", "/a b"))
    remote = parse_upstream("api=https://example.com/mcp")
    assert (remote.transport, remote.url) == ("http", "https://example.com/mcp")
    for bad in ("nothing", "=cmd", "name=", "name='unclosed"):
        with pytest.raises(ProxyConfigError, match="--upstream"):
            parse_upstream(bad)


def test_names_must_differ_and_something_must_be_given(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"git": {"command": "a"}})
    specs = collect_upstreams(config, ["fs=node fs.js"], environ={})
    assert [s.name for s in specs] == ["git", "fs"]
    with pytest.raises(ProxyConfigError, match="'git' is configured twice"):
        collect_upstreams(config, ["git=other"], environ={})
    with pytest.raises(ProxyConfigError, match="no upstream servers"):
        collect_upstreams(None, [])
    assert issubclass(ProxyConfigError, MCPHooksError)


def test_error_classes_and_their_exit_codes() -> None:
    from mcp_hooks.proxy.upstream import UpstreamError

    assert issubclass(ProxyConfigError, ConfigError)
    assert exit_code(ProxyConfigError("x")) == 64  # the caller's config: fix it and retry
    assert issubclass(UpstreamError, RunError)
    assert exit_code(UpstreamError("x")) == 1  # the input was fine; the upstream was not


def test_prefix_is_a_safe_tool_name_prefix() -> None:
    assert parse_upstream("git=x").prefix == "git__"
    assert parse_upstream("my server!=x").prefix == "my_server___"


def test_command_line_reports_config_errors(tmp_path: Path) -> None:
    done = subprocess.run([MCP_HOOKS, "proxy", "--config", str(tmp_path / "none.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 64
    assert "no such config file" in done.stderr
    done = subprocess.run([MCP_HOOKS, "proxy"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 64
    assert "--upstream NAME=COMMAND" in done.stderr


def test_the_proxy_entry_of_its_own_config_is_skipped(tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    write_config(config, {
        "hooks": {"command": "mcp-hooks", "args": ["proxy", "--config", str(config)]},
        "other-proxy": {"command": "uvx", "args": ["mcp-hooks", "proxy", "--config", "x.json"]},
        "git": {"command": "uvx", "args": ["mcp-server-git"]},
    })
    assert [s.name for s in load_config(config, environ={})] == ["other-proxy", "git"]


def test_descriptions_hide_secrets() -> None:
    spec = parse_upstream("a=srv --token abc --api-key=xyz https://u:p@h/x plain TOKEN=1 -v")
    assert spec.describe() == ("srv --token '***' '--api-key=***' 'https://***@h/x' plain "
                               "'TOKEN=***' -v")
    remote = parse_upstream("b=https://user:pw@example.com/mcp")
    assert remote.describe() == "http https://***@example.com/mcp"


def test_timeouts_must_be_positive() -> None:
    done = subprocess.run([MCP_HOOKS, "proxy", "--upstream", "a=true", "--timeout", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 64
    assert "--timeout must be a positive number of seconds" in done.stderr
