"""The gating proxy (see ``mcp_hooks.proxy.app``)."""
