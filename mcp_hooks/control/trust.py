"""hooks.yaml's project trust: what it covers (``config_digest``), asking and recording it in
a trust store (``trust_status``, ``trust_config``), and the trust an engine found handed on
to the process that runs the ``async: true`` entries (``TrustedDigest``).

``load_config`` (``config.py``) asks a ``TrustCheck`` whether the project's ``.ahp`` is
trusted as it is now: a ``TrustStore`` (the door's file, or the shared store), or a
``TrustedDigest`` pinned to what the engine itself found trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mcp_hooks.control.files import ahp_snapshot
from mcp_hooks.control.schema import TRUST_NAME

if TYPE_CHECKING:
    from mcp_hooks.control.schema import ControlConfig
    from mcp_hooks.registry.trust import TrustStore


def config_digest(project_dir: Path) -> str:
    """SHA-256 over the project's ``.ahp/hooks*.yaml`` and ``.ahp/**/*.py`` (names and bytes;
    ``files.ahp_snapshot``: bounded, never blocking, links not followed out of ``.ahp``)."""
    return ahp_snapshot(project_dir).digest


class TrustCheck(Protocol):
    """What ``load_config`` asks of a trust store: a ``TrustStore``, or ``TrustedDigest``."""

    def status(self, project_dir: Path, name: str, digest: str) -> str: ...


@dataclass(frozen=True)
class TrustedDigest:
    """The trust an engine found for a project's hooks.yaml, handed to the process that runs
    its ``async: true`` entries (``engine/launch.py``): the digest found trusted (None: not
    trusted), so that process trusts exactly what the engine did, whatever trust store,
    flag or shared store the engine's door named; a different digest now is ``changed``."""

    digest: str | None

    def status(self, project_dir: Path, name: str, digest: str) -> str:
        if self.digest is None:
            return "untrusted"
        return "trusted" if digest == self.digest else "changed"


TRUSTED_ALL = "all"  # trusted without the store (``--trust-project-hooks``)


def trust_found(config: ControlConfig) -> str | None:
    """What ``config`` found of its project layers' trust, to hand on (JSON):
    ``TRUSTED_ALL``, the digest found trusted, or None (not trusted, or no project layer)."""
    if config.trust != "trusted":
        return None
    return config.snapshot.digest if config.snapshot is not None else TRUSTED_ALL


def trust_status(project_dir: Path, store: TrustStore) -> str:
    return store.status(project_dir, TRUST_NAME, config_digest(project_dir))


def trust_config(project_dir: Path, store: TrustStore) -> str:
    """Trust the project's hooks.yaml as it is now (after reading it) in ``store``; returns
    the digest."""
    digest = config_digest(project_dir)
    store.trust(project_dir, {TRUST_NAME: digest})
    return digest


__all__ = ["TRUSTED_ALL", "TrustCheck", "TrustedDigest", "config_digest", "trust_config",
           "trust_found", "trust_status"]
