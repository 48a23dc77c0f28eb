"""block-dangerous-commands' entry: the check is in dangerous_commands.py (imported, so its
byte-code is cached between runs)."""

import sys

from dangerous_commands import main

sys.exit(main())
