"""The package exports exactly what it means to."""

from __future__ import annotations

import mcp_hooks


def test_exported_names() -> None:
    assert mcp_hooks.__all__ == sorted(mcp_hooks.__all__)
    assert set(mcp_hooks.__all__) == {
        "Ask", "AskAnswer", "AskRequest", "EVENTS", "Engine", "Event", "EventLog",
        "HookFileError", "HookRun", "HookSpec",
        "Hooks", "InvalidEventError", "InvalidHook", "MCPHooksError", "Outcome", "Registry",
        "Settings", "StopGuard", "UnknownEventError", "__version__", "afire", "canonical_event",
        "default_log_path", "default_user_dir", "fire", "load_hook", "project_hooks_dir",
    }
    assert set(mcp_hooks.__all__) == {*mcp_hooks._EXPORTS, "__version__"}
    for name in mcp_hooks.__all__:
        assert hasattr(mcp_hooks, name), name
