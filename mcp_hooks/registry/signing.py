"""Signed trust records: a shared store's digests count only when signed with the trust key.

Whoever can write a shared state store (``--state redis://...|postgresql://...``) could
otherwise write a digest into its trust records and make an untrusted project hook run on
every replica. With a trust key (``MCP_HOOKS_TRUST_KEY``, ``Settings.trust_key``: a secret
kept outside the store, the same on every replica and wherever ``mcp-hooks trust --state``
runs), each record carries ``sig``: the hex HMAC-SHA256, under the key, of the record's
project, hook name, digest and time, framed (``record_signature``). A record whose ``sig`` is
missing or does not match (forged, copied to another project or hook name, written without
the key or with another) is ignored, so the hook reads as untrusted, and reported once per
process on stderr (``Signatures.check``).

Without a key, records are used as they are (as before signing existed); ``serve`` then warns
at start (``unsigned_warning``). What a signature cannot stop: a record once signed and then
revoked can be written back by someone who kept a copy (a replay); change the key and trust
again to rule that out (docs/safety.md).

Standard library only; imported with ``trust.py`` (cheap).
"""

from __future__ import annotations

import hashlib
import hmac
import shlex
import sys
from collections.abc import Mapping
from typing import Any

KEY_ENV = "MCP_HOOKS_TRUST_KEY"
_DOMAIN = b"mcp-hooks trust record v1\n"


def _bytes(text: object) -> bytes:
    return str(text).encode("utf-8", "surrogatepass")  # a path's lone surrogates, losslessly


def record_signature(key: str, project: str, name: str, entry: Mapping[str, Any]) -> str:
    """The hex HMAC-SHA256 under ``key`` of one record: project, hook name, digest, time."""
    parts = (project, name, entry.get("sha256"), entry.get("trusted_at"))
    framed = b"".join(b"%d:%s," % (len(p), p) for p in map(_bytes, parts))
    return hmac.new(_bytes(key), _DOMAIN + framed, hashlib.sha256).hexdigest()


def unsigned_warning(where: str) -> str:
    """What ``serve`` and ``trust`` say (one sentence, naming the fix; the caller adds its
    prefix) when a shared store's records are unsigned."""
    return (f"{KEY_ENV} is not set, so the trust records in {where} are "
            "not signed: anyone who can write that store can make any project hook run on "
            f"every replica; set {KEY_ENV} (the same secret on every replica and where "
            "`mcp-hooks trust --state` runs; docs/safety.md)")


class Signatures:
    """Checks the records of one shared store under one key; says each bad record once."""

    def __init__(self, key: str, where: str) -> None:
        self.key = key
        self.where = where
        self._told: set[tuple[str, str, str]] = set()

    def sign(self, project: str, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        """``entry`` with its ``sig``."""
        return {**entry, "sig": record_signature(self.key, project, name, entry)}

    def check(self, projects: dict[str, dict[str, dict[str, Any]]]
              ) -> dict[str, dict[str, dict[str, Any]]]:
        """The records whose ``sig`` matches; each other one is reported once on stderr."""
        kept: dict[str, dict[str, dict[str, Any]]] = {}
        for project, hooks in projects.items():
            for name, entry in hooks.items():
                sig = entry.get("sig") if isinstance(entry, dict) else None
                if isinstance(sig, str) and hmac.compare_digest(
                        sig, record_signature(self.key, project, name, entry)):
                    kept.setdefault(project, {})[name] = entry
                else:
                    self._tell(project, name, str(sig))
        return kept

    def _tell(self, project: str, name: str, sig: str) -> None:
        seen = (project, name, sig)
        if seen in self._told:
            return
        self._told.add(seen)
        print(f"mcp-hooks: warning: the trust record of {name!r} in project {project!r} in "
              f"{self.where} is not signed with {KEY_ENV} (forged, copied, or written without "
              "that key): ignored, the hook does not run; if you wrote it, trust it again with "
              f"{KEY_ENV} and MCP_HOOKS_STATE set: mcp-hooks trust {shlex.quote(project)} "
              f"--hook {shlex.quote(name)}",
              file=sys.stderr, flush=True)
