"""hooks.yaml's trust is read from the shared store when ``--state`` names one, as the
project hooks' is: ``mcp-hooks trust --state URL`` records it there."""

from __future__ import annotations

from pathlib import Path

from mcp_hooks.control.config import trust_config
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.state.url import close_store, open_store
from tests.helpers.control_helpers import make_repo, write
from tests.helpers.servers import redis_service, redis_url  # noqa: F401 - fixtures


def test_hooks_yaml_trusted_in_the_shared_store_is_trusted(
        redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    repo = make_repo(tmp_path / "repo")
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - oracle: TestGate\n      config: {command: 'true'}\n")
    store = open_store(redis_url, replica="r1")
    try:
        shared = TrustStore.over(store, "redis")
        assert shared is not None
        layer = ControlLayer(repo, user_file=tmp_path / "home" / ".ahp" / "hooks.yaml",
                             watch=True, trust_project=False, trust_store=shared)
        config = layer.config()
        assert config is not None and config.trust == "untrusted"
        trust_config(repo, shared)  # what `mcp-hooks trust --state URL` does
        shared._fetched = None  # read the store again now, not after SHARED_REFRESH
        config = layer.config()
        assert config is not None and config.trust == "trusted"
    finally:
        close_store(store)
