"""Every ``MCP_HOOKS_*`` variable mcp-hooks honours, declared once: its ``Settings`` field,
its flag, its default as said, what it means (docs/settings.md is the same table, and
``tests/test_settings.py`` checks that it is).
"""

from __future__ import annotations

from typing import NamedTuple

from mcp_hooks.settings.values import (
    DEFAULT_ASK_TIMEOUT_S,
    DEFAULT_CHAIN_TIMEOUT_S,
    DEFAULT_ENVIRONMENT,
    DEFAULT_FORWARD_TIMEOUT_S,
    DEFAULT_MANAGED_DIR,
    DEFAULT_STOP_BLOCK_CAP,
    MAX_REPLICA_ID,
    MIN_TRUST_KEY,
)


class Variable(NamedTuple):
    """One ``MCP_HOOKS_*`` variable: the ``Settings`` field it gives (None: read outside the
    package, by a hook or a generated script), its flag, its default as said, what it means."""

    name: str
    field: str | None
    flag: str | None
    default: str
    meaning: str


VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("MCP_HOOKS_PROJECT_DIR", "project_dir", "--project-dir",
             "nearest folder at or above the current one with .agents/hooks, else the current",
             "the project whose .agents/hooks and .ahp/hooks.yaml apply"),
    Variable("MCP_HOOKS_USER_DIR", "user_dir", "--user-dir", "$XDG_CONFIG_HOME/agents/hooks",
             "the user hooks folder, shared by every project"),
    Variable("MCP_HOOKS_MANAGED_DIR", "managed_dir", "--managed-dir",
             f"{DEFAULT_MANAGED_DIR} where it exists",
             "the managed hooks folder an administrator owns: its hooks and hooks.yaml run "
             "first and no user or project layer can override them (docs/policy.md)"),
    Variable("MCP_HOOKS_MODE", "mode", "--mode", "enforce",
             "audit: every hook this process runs only records what it would have done "
             "(managed hooks excepted, docs/policy.md); enforce: hooks decide"),
    Variable("MCP_HOOKS_LOG", "log", "--log / --no-log", "$XDG_STATE_HOME/mcp-hooks/events.jsonl",
             "the event log (off: none)"),
    Variable("MCP_HOOKS_ON_FAULT", "on_fault", "--on-fault", "block",
             "block: a fault of ours denies an event that can block; warn: let it through"),
    Variable("MCP_HOOKS_STOP_BLOCK_CAP", "stop_block_cap", "--stop-block-cap",
             str(DEFAULT_STOP_BLOCK_CAP),
             "consecutive before_stop blocks per session before the stop is allowed (0: no cap)"),
    Variable("MCP_HOOKS_TRUST_PROJECT_HOOKS", "trust_project_hooks", "--trust-project-hooks",
             "0", "1 runs every project hook without the trust store (CI, containers)"),
    Variable("MCP_HOOKS_TRUST_STORE", "trust_store", None,
             "$XDG_STATE_HOME/mcp-hooks/trust.json", "the trust store file"),
    Variable("MCP_HOOKS_TOKEN", "token", "--token", "none",
             "the server's bearer token (serve, install --via server, fire --server)"),
    Variable("MCP_HOOKS_SERVER", "server", "--server", "none",
             "the server `fire` forwards events to"),
    Variable("MCP_HOOKS_CHAIN_TIMEOUT", "chain_timeout", "--chain-timeout",
             f"{DEFAULT_CHAIN_TIMEOUT_S:g}",
             "seconds the hooks of one event may take together; a hook's own timeout is cut "
             "to what is left (a host bridge: at most its host's deadline, docs/bridges.md)"),
    Variable("MCP_HOOKS_FORWARD_TIMEOUT", "forward_timeout", None,
             f"{DEFAULT_FORWARD_TIMEOUT_S:g}", "seconds a whole forward to the server may take"),
    Variable("MCP_HOOKS_BRIDGE_COMMAND", "bridge_command", "--bridge-command",
             "the running mcp-hooks", "how a host starts mcp-hooks (install)"),
    Variable("MCP_HOOKS_ENVIRONMENT", "environment", None, DEFAULT_ENVIRONMENT,
             "the deployment environment a hooks.yaml `when.environment` tests (the payload's "
             "`environment` first)"),
    Variable("MCP_HOOKS_RUNNER", "runner", None, "empty (posix_spawn, pidfd)",
             "how hooks are spawned: library, no-pidfd, no-posix-spawn (comma-separated)"),
    Variable("MCP_HOOKS_SERVE_STDIO", "serve_stdio", None, "event-loop",
             "sdk: serve stdio with the MCP SDK's transport"),
    Variable("MCP_HOOKS_PROXY_STDIO", "proxy_stdio", None, "event-loop",
             "sdk: the proxy serves and reaches stdio with the MCP SDK's transports"),
    Variable("MCP_HOOKS_PROXY_HTTP", "proxy_http", None, "event-loop",
             "sdk: the proxy serves and calls streamable HTTP tools/call through the MCP SDK"),
    Variable("MCP_HOOKS_STATE", "state", "--state", "file:",
             "where per-session state lives: file: (the files under $XDG_STATE_HOME/mcp-hooks), "
             "redis://, rediss:// or postgresql:// (shared by every replica)"),
    Variable("MCP_HOOKS_PERSISTENT", None, None, "unset",
             "set to 1 by mcp-hooks in a persistent hook's environment (read by hookkit)"),
    Variable("MCP_HOOKS_FORWARD_HTTP", None, None, "unset",
             "library: the installed forward.py script speaks HTTP with urllib"),
    Variable("MCP_HOOKS_OTEL", "otel", "--otel", "0 (auto when OTEL_EXPORTER_OTLP_ENDPOINT is set)",
             "1: serve and proxy send a span per event and per hook run over OTLP/HTTP "
             "(extra otel); 0: never"),
    Variable("MCP_HOOKS_REPLICA_ID", "replica_id", "--replica-id", "hostname:pid (serve)",
             "the name this process stamps on every record it writes (`replica`), up to "
             f"{MAX_REPLICA_ID} printable characters"),
    Variable("MCP_HOOKS_WATCH", "watch", "--no-watch", "1",
             "0: list the hooks folders once at start, never again (a folder shipped "
             "read-only per deploy); what runs is still checked against its trust"),
    Variable("MCP_HOOKS_ASK_TIMEOUT", "ask_timeout", None,
             f"{DEFAULT_ASK_TIMEOUT_S:g}",
             "seconds a door waits for a person to answer a hook's ask (docs/ask.md); a hook's "
             "metadata.ask_timeout wins; never past the chain deadline"),
    Variable("MCP_HOOKS_ON_ASK_UNAVAILABLE", "on_ask_unavailable", None,
             "deny", "deny or allow: the answer when no person answered an ask in time (a "
             "hook's metadata.on_ask_unavailable wins); the ask stays pending"),
    Variable("MCP_HOOKS_ASK_WEBHOOK", "ask_webhook", None, "none",
             "a URL each new ask is posted to as JSON (with a Slack-compatible text field)"),
    Variable("MCP_HOOKS_TRUST_KEY", "trust_key", None, "none",
             "the key that signs and checks the trust records of a shared --state store, "
             f"at least {MIN_TRUST_KEY} characters (the same wherever the store is used)"),
    Variable("MCP_HOOKS_ASK_KEY", "ask_key", None, "from MCP_HOOKS_TRUST_KEY, else per process",
             "the key that seals an ask's input_required round (2026-07-28 clients), at least "
             f"{MIN_TRUST_KEY} characters, the same on every replica so a retry may reach any"),
)}
