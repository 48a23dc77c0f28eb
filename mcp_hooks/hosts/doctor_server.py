"""``mcp-hooks doctor``'s look at a running server: for ``--via server`` and ``--via http``
entries, whether the server answers and proves it holds the token (a forward protocol v2
request, which never sends the token, answered with a signature over it, for a payload that
runs no hook), and whether the forward script on disk is one that keeps the token to itself.
"""

from __future__ import annotations

from http.client import HTTPConnection, HTTPSConnection
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from mcp_hooks.hosts.base import Host
from mcp_hooks.hosts.forward import FORWARD_PATH
from mcp_hooks.hosts.forward_auth import answer_problem, sign_request


class Findings(Protocol):
    """Where a check puts what it found (``doctor.Report``)."""

    def problem(self, what: str, fix: str | None = None, host: str | None = None) -> None: ...

    def warn(self, what: str, fix: str | None = None, host: str | None = None) -> None: ...


FORWARD_V2_MARKER = b"mcp-hooks/2 request"  # in every forward script that signs, not sends


def check_forward_script(report: Findings, host: Host, script: Path, scope: str) -> None:
    """A forward script from before protocol v2 sends the token to whatever holds the port:
    a problem, fixed by installing again (which rewrites the script)."""
    try:
        text = script.read_bytes()
    except OSError:
        return  # _check_commands says it is missing
    if FORWARD_V2_MARKER not in text:
        report.problem(f"{script} is an older forward script: it sends the server's token to "
                       "whatever listens on the server's port, and believes its answers",
                       f"mcp-hooks install {host.name} --via server --scope {scope} (rewrites "
                       "the script)", host.name)


def check_server(report: Findings, host: Host, url: str, token: str | None, event: str, *,
                 fallback: bool) -> dict[str, Any]:
    """Whether the server at ``url`` answers and proves it holds ``token``. The request is a
    forward protocol v2 one (the token is not sent); the payload is unreadable on purpose
    (``[]``): the server answers it without running any hook."""
    info: dict[str, Any] = {"url": url, "status": "unchecked"}
    fix_token = (f"mcp-hooks install {host.name} --via {'server' if fallback else 'http'} "
                 "--token <the server's token> (the same as `mcp-hooks serve --token`)")
    if not token:
        info["status"] = "no token"
        report.problem(f"no token to reach the server at {url}"
                       + ("" if fallback else " (MCP_HOOKS_TOKEN is not set here)"),
                       fix_token, host.name)
        return info
    parts = urlsplit(url)
    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    path = (parts.path.rstrip("/") + FORWARD_PATH + quote(host.name, safe="") + "?event="
            + quote(event, safe=""))
    signed = sign_request(token, path, b"[]")
    try:
        conn = kind(parts.hostname or "127.0.0.1", parts.port, timeout=10)
        try:
            conn.request("POST", path, body=b"[]", headers={
                "Content-Type": "application/json", **signed.headers})
            response = conn.getresponse()
            body = response.read()
            headers = {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
    except (OSError, ValueError) as exc:
        info["status"] = f"not answering ({exc})"
        if fallback:
            report.warn(f"the server at {url} does not answer ({exc}); the local bridge "
                        "answers instead (slower)", "start it: mcp-hooks serve --transport "
                        "http --token ...", host.name)
        else:
            report.problem(f"the server at {url} does not answer ({exc}), and Claude Code "
                           "carries on without http hooks", "start it (mcp-hooks serve "
                           "--transport http --token ...) or mcp-hooks install claude-code "
                           "--via command", host.name)
        return info
    problem = answer_problem(token, signed, response.status, headers, body)
    said = body.decode("utf-8", "replace").strip().splitlines()[:1]
    if problem and response.status == 401:
        info["status"] = "wrong token"
        report.problem(f"the server at {url} refuses our signed request (401"
                       + (f": {said[0][:300]}" if said else "") + "); its token differs from "
                       "ours, or the two clocks differ by more than 5 minutes", fix_token,
                       host.name)
        return info
    if problem:
        info["status"] = "not authenticated"
        report.problem(f"the answer from {url} (HTTP {response.status}) does not prove it "
                       f"comes from the mcp-hooks server holding our token ({problem}); "
                       "another program may listen on that port, the server is older, or it "
                       "runs without --token", "stop whatever listens there; start mcp-hooks "
                       "serve --transport http --token ... (upgraded)", host.name)
        return info
    if response.status != 200:
        info["status"] = f"HTTP {response.status}"
        report.problem(f"the server at {url} answered HTTP {response.status}"
                       + (f": {said[0][:300]}" if said else ""), "check that `mcp-hooks serve "
                       "--transport http` runs there with a token", host.name)
        return info
    info["status"] = "answers and authenticates"
    return info


__all__ = ["FORWARD_V2_MARKER", "Findings", "check_forward_script", "check_server"]
