"""protect-hooks' entry: the check is in protect_hooks.py (imported, so its bytecode is cached)."""

import sys

from protect_hooks import main

sys.exit(main())
