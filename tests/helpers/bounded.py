"""Run a call that must not hang, failing the test instead (the bound is far from the
expected time: it only stops a hang)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def bounded(call: Callable[[], T], limit: float = 120.0) -> T:
    """``call()``, failing the test instead of hanging it (far from the expected time)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(limit)
    assert not worker.is_alive(), f"still running after {limit} s: it hung"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
