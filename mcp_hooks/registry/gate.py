"""The trust gate of project hooks: what runs is what was trusted, checked again before it runs.

A project hook runs only while its folder hashes to the digest the trust store holds for it
(``digest.hook_digest``). ``Registry`` asks ``digest_of`` when it scans, and again just before
a hook runs (``Registry.recheck``: when its hooks are selected, and before each sync hook of
a chain), in every mode, ``--no-watch`` included: a script edited on disk (a ``git pull``)
makes the hook "changed" at its next run, never run unverified.

Re-hashing a folder on every run would cost a read of every file; ``digest_of`` re-hashes only
when the folder's stat signature moved: every entry's mtime, ctime, size, inode and mode (not
following links). The ctime cannot be set by a user (``touch`` sets the mtime only), so no
write keeps a signature still, except one landing in the same clock tick as the hash; a
signature with an entry changed less than ``SETTLE_NS`` before it was taken is "unsettled"
and its digest is never reused (re-hashed at every check until the folder has been still for
that long), as git does with its racily clean index entries.

What is left between the check and the ``exec`` is the spawn itself (microseconds); what a
running script reads later (a file it sources, a module it imports) is read as it is then:
the digest covers the hook folder only (see docs/safety.md).
"""

from __future__ import annotations

import os
import shlex
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp_hooks.registry.digest import hook_digest
from mcp_hooks.spec.hookfile import HookSpec

TrustStatus = Literal["trusted", "untrusted", "changed"]

SETTLE_NS = 1_000_000_000  # an entry changed this recently: its folder is re-hashed every time
_DEEP_LIMIT = 1000  # entries of one hook folder looked at; past that, the digest decides


def project_of(hook_dir: Path) -> Path:
    """The project of a project hook folder (``<project>/.agents/hooks/<name>``)."""
    return hook_dir.parent.parent.parent


@dataclass(frozen=True)
class UntrustedHook:
    """A valid project hook that does not run: never trusted, or changed since it was."""

    spec: HookSpec
    status: TrustStatus
    digest: str
    project_dir: Path

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def fix(self) -> str:
        """The command that trusts it (after the user has read it)."""
        return f"mcp-hooks trust {shlex.quote(str(self.project_dir))} --hook {self.name}"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "trust": self.status, "dir": str(self.spec.dir),
                "event": self.spec.event, "sha256": self.digest, "fix": self.fix}


def held_note(held: list[UntrustedHook]) -> str:
    """The warning an event carries for the project hooks trust held back (``held``: not
    empty)."""
    which = ", ".join(f"{u.name} ({u.status})" for u in held)
    project = held[0].project_dir
    return (f"project hook(s) not trusted, so not run: {which}. Read them, then trust "
            f"them with: mcp-hooks trust {shlex.quote(str(project))}")


@dataclass(frozen=True)
class Known:
    """A hook folder's digest and the stat signature it was made under."""

    signature: tuple[Any, ...]
    digest: str
    settled: bool  # no entry changed within SETTLE_NS of the signature: the digest may be reused


def deep_signature(hook_dir: Path, folders: list[str]) -> tuple[tuple[Any, ...], bool]:
    """The stat of every entry under a hook folder (not following links), bounded, and
    whether it is settled (see the module docstring); each folder below it is appended to
    ``folders`` (to be watched)."""
    recent = time.time_ns() - SETTLE_NS
    settled = True
    found: list[Any] = []
    stack = [str(hook_dir)]
    while stack and len(found) < _DEEP_LIMIT:
        folder = stack.pop()
        if folder != str(hook_dir):
            folders.append(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            found.append((folder, None))
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                found.append((entry.path, None))
                continue
            found.append((entry.path, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino,
                          st.st_mode))
            settled = settled and max(st.st_mtime_ns, st.st_ctime_ns) < recent
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
    # a folder left unlooked-at (past the bound): never settled, its digest never reused
    return tuple(sorted(found, key=lambda item: item[0])), settled and not stack


def digest_of(hook_dir: Path, known: Known | None, folders: list[str]) -> Known:
    """A hook folder's digest: ``known``'s when its signature has not moved and was settled,
    else hashed again now (the signature taken first, so a write during the hash moves it)."""
    signature, settled = deep_signature(hook_dir, folders)
    if known is not None and known.settled and known.signature == signature:
        return known
    return Known(signature, hook_digest(hook_dir), settled)
