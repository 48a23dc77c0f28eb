"""Whether a shared store's URL leaves it open, and the one-line warnings that say so.

A shared state store is part of the gate: it holds the trusted digests of project hooks
(unless signed, ``registry/signing.py``), the ``before_stop`` counts, the aid handed to the
model as context and the answers to signals. Whoever can write it decides those, so:

- ``open_warnings``: the URL carries no password (a password-less Redis, a PostgreSQL that
  trusts local connections: any local user may write it), or, for a Redis URL with a
  password, the server answers a ``PING`` without one (no ``requirepass``: the password in
  the URL protects nothing). ``serve`` and ``doctor --state`` print them at start.
- ``argv_warning``: ``--state`` given on the command line with a password in it, where ``ps``
  shows it to every user and every hook reads it (``/proc/$PPID/cmdline``); every command
  that takes ``--state`` prints it (``cli.main``). ``MCP_HOOKS_STATE`` is the fix (the
  environment is readable by the same user only, and hooks never get the variable).

Standard library only: nothing here connects but the one ``PING`` over a plain socket.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from mcp_hooks.state.remote import redact

PROBE_TIMEOUT = 1.0  # seconds the Redis PING without a password may take


def _password(url: str) -> bool:
    """Whether the URL itself carries a password (``:pw@`` or ``?password=``)."""
    try:
        parts = urlsplit(url.strip())
        query = parse_qsl(parts.query)
        return bool(parts.password) or any(k == "password" and v for k, v in query)
    except ValueError:
        return False


def _scheme(url: str) -> str:
    return url.strip().partition(":")[0].lower()


def argv_warning(command: str, url: str | None) -> str | None:
    """The warning for ``--state URL`` on ``command``'s command line with a password in it."""
    if not url or not _password(url):
        return None
    return (f"mcp-hooks {command}: warning: --state carries the store's password on the "
            "command line, where `ps` shows it to every user and every hook can read it "
            "(/proc/$PPID/cmdline); pass the URL in MCP_HOOKS_STATE instead")


def _pg_password_elsewhere(environ: Mapping[str, str]) -> bool:
    """libpq's other places for a password: ``PGPASSWORD``, the password file."""
    if environ.get("PGPASSWORD"):
        return True
    passfile = environ.get("PGPASSFILE") or os.path.expanduser("~/.pgpass")
    return Path(passfile).is_file()


def redis_answers_without_password(url: str, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the Redis of a ``redis://`` URL answers ``PING`` with no password given
    (False when it asks for one, cannot be reached in ``timeout`` or is not plain TCP)."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname or "localhost", parts.port or 6379
    except ValueError:
        return False
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(b"PING\r\n")
            answer = sock.recv(64)
    except OSError:
        return False
    return answer.startswith(b"+PONG")


def open_warnings(url: str, environ: Mapping[str, str] | None = None,
                  probe: bool = True) -> list[str]:
    """The warnings (one sentence each, naming the fix; the caller adds its prefix) for a
    shared store anyone who can reach may write; none for ``file:``. ``probe``: for a Redis
    URL with a password, ask the server whether it needs one."""
    scheme = _scheme(url)
    if scheme not in ("redis", "rediss", "postgresql", "postgres"):
        return []
    env = os.environ if environ is None else environ
    shown = redact(url.strip())
    gate = ("can write the trusted digests, stop counts, model context and signal answers "
            "there, and so decide what runs and what is allowed")
    if not _password(url) and not (scheme.startswith("postgres") and _pg_password_elsewhere(env)):
        fix = ("requirepass in the Redis configuration" if scheme.startswith("redis") else
               "a password role and scram-sha-256 (not trust) in pg_hba.conf")
        return [f"the state store {shown} is used without a "
                f"password: anyone who can reach it (any local user, for a store on this "
                f"machine) {gate}; give it {fix} and the URL with the password in "
                "MCP_HOOKS_STATE (docs/safety.md)"]
    if probe and scheme == "redis" and redis_answers_without_password(url):
        return [f"the Redis of {shown} answers without a "
                f"password (no requirepass), so anyone who can reach it {gate}; set "
                "requirepass in its configuration (docs/deploy.md)"]
    return []
