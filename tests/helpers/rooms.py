"""The package's rooms and their floors (docs/development.md): test_layers checks every
import against them; test_guard_boundaries reads which rooms are doors."""

from __future__ import annotations

ROOMS: dict[str, int] = {
    "errors": 0, "paths": 0, "guard": 0, "ownstdout": 0, "settings": 0,
    "spec": 1, "registry": 2, "state": 2, "runner": 3, "control": 4, "engine": 5,
    "service": 6, "api": 6, "lanes": 6, "hookkit": 6, "options": 6, "tracing": 6, "registrar": 6,
    "hosts": 7, "adapters": 7, "dashboard": 7, "metrics": 6, "server": 8, "proxy": 9, "cli": 10,
}
