"""The tools the user declared readers in this hook's own HOOK.md (``metadata.readers``).

The copy of HOOK.md that runs lists tools, by name, that only read, so the guard lets them
through whatever they name. It sits in a protected folder, so an agent cannot declare its own
tools readers. It is re-read when the file changes.
"""

from __future__ import annotations

import os

HOOK_MD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "HOOK.md")
Readers = tuple[frozenset[str], str | None]  # (lower-case tool names, problem or None)
_declared: dict[tuple[str, int, int], Readers] = {}  # (path, mtime_ns, size) -> its readers


def declared_readers() -> tuple[str, frozenset[str], str | None]:
    """(HOOK.md path, lower-case tool names it declares readers, problem or None)."""
    path = HOOK_MD
    try:
        st = os.stat(path)
    except OSError as exc:
        return path, frozenset(), f"{path} cannot be read ({exc.strerror})"
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _declared:
        _declared.clear()
        _declared[key] = _read_readers(path)
    return (path, *_declared[key])


def _read_readers(path: str) -> Readers:
    # the engine's own frontmatter reader (mcp_hooks is importable: run.py is served by
    # mcp_hooks.hookkit), imported only when a tool call is about to be refused
    # (python -X importtime: pathlib 4 ms, the reader 65 ms of a cold start)
    from pathlib import Path

    from mcp_hooks.spec.hookfile import parse_frontmatter  # lazy: 65 ms of a cold start

    fix = "it must be a list of tool names, e.g. `readers: [git_frob, mcp__tickets__search]`"
    try:
        with open(path, encoding="utf-8") as f:
            data = parse_frontmatter(Path(path), f.read(1_000_000))
    except Exception as exc:  # a HOOK.md the user broke: named in the refusal, never a crash
        return frozenset(), f"its readers could not be read ({exc})"
    metadata = data.get("metadata")
    readers = metadata.get("readers") if isinstance(metadata, dict) else None
    if readers is None:
        return frozenset(), None
    if isinstance(readers, str):
        readers = [readers]
    if not isinstance(readers, list) or not all(isinstance(r, str) and r for r in readers):
        return frozenset(), f"metadata.readers in {path} is ignored: {fix}"
    return frozenset(r.lower() for r in readers), None
