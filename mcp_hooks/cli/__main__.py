"""``python -m mcp_hooks.cli``: the same as the ``mcp-hooks`` command."""

import sys

from mcp_hooks.cli import main

sys.exit(main())
