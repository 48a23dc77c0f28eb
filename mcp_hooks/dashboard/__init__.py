"""The dashboard: what mcp-hooks knows, as web pages a person would rather look at.

``mcp-hooks dashboard`` serves it alone; ``serve --transport http --dashboard`` mounts it at
``/dashboard``. It reads the configured store through ``state/`` (``source.py``) and the hooks
through ``registry/``, computes each page's data (``views.py``) and serves a Starlette app
(``app.py``) of plain HTML, CSS and JavaScript shipped in the package (``static/``) behind the
token rules of ``guard.py``. A room of the doors below ``server/``: it imports nothing of it
(the server reads its request bodies with ``body.py``); ``cli/serve.py`` mounts it
(docs/dashboard.md).
"""
