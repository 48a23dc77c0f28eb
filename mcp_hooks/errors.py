"""Errors raised by mcp-hooks.

One base class, a few specific kinds::

    MCPHooksError                  every error this package raises on purpose
    ├── UnknownEventError          an event name that is neither canonical nor an alias
    ├── InvalidEventError          an event whose fields are malformed (payload not an object, ...)
    └── HookFileError              a HOOK.md that cannot be loaded: keeps file, field and reason

A hook that *decides* "no" is not an error: it is an ``Outcome`` with ``decision="deny"``.
A hook that crashes, times out or prints garbage is not an exception either: it is a
``HookRun`` with ``status="error"`` or ``"timeout"``. Exceptions are for the caller's mistakes.
"""

from __future__ import annotations

from pathlib import Path


class MCPHooksError(Exception):
    """Base class of every error raised by mcp-hooks."""


class UnknownEventError(MCPHooksError, ValueError):
    """An event type that is not in the catalogue, under any spelling."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        super().__init__(
            f"unknown event type {name!r}; use one of: {', '.join(known)} "
            "(or an alias listed by `mcp-hooks events`)"
        )


class InvalidEventError(MCPHooksError, ValueError):
    """An event whose fields have the wrong shape."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


class HookFileError(MCPHooksError):
    """A HOOK.md (or its folder) that cannot be loaded.

    Attributes:
        file: the HOOK.md, or the hook folder when the file itself is missing.
        field: the frontmatter field at fault, or None when the whole file is.
        reason: what is wrong and how to fix it.
    """

    def __init__(self, file: Path, field: str | None, reason: str) -> None:
        self.file = file
        self.field = field
        self.reason = reason
        self.trigger: str | None = None  # the trigger it seems to name, when one can be read
        where = f"{file}: {field}" if field else str(file)
        super().__init__(f"{where}: {reason}")
