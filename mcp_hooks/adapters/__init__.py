"""Adapters that wire mcp-hooks into agent frameworks (one module per framework).

Each adapter is an optional extra (``pip install mcp-hooks[<framework>]``): it imports its
framework, and nothing in the package imports an adapter, so ``import mcp_hooks`` never
loads a framework.
"""
