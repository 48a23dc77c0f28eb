"""Follow one value through the calls, module by module: the walks of docs/development.md.

``walk(run, follows)`` runs ``run()`` in this thread (and any thread it starts) under
``sys.setprofile``/``threading.setprofile`` and records every call of a function defined in
``mcp_hooks/`` that *receives the value*: one of its arguments is a followed value by
identity, also inside a ``*args`` tuple or a ``**kwargs`` dict. A value reached only as an
attribute (``self.settings``) does not count, nor does a method of the value's own class
called on it (the value as ``self``: ``Settings.__post_init__``, ``Event.to_payload``): the
value is at home there, it has not moved. ``follows(obj)`` says which
objects are followed: the walks follow one object by identity (``Engine.fire``'s event), or
one object and every instance of a record made from it (``fire``'s ``argparse.Namespace``
and the ``Settings`` built from it). Comprehension and generator-expression frames are not
calls; a coroutine or generator resumed is the same call, not a new one.

Each recorded call gives its *module*: the function's file under ``mcp_hooks/`` as a dotted
name (``cli.fire``, ``settings``, ``engine.engine``). From that sequence of calls:

- **modules entered**: how many distinct modules the value reached;
- **moves**: how many times the module changes from one recorded call to the next, in the
  order the calls were made;
- **climbs back**: how many of those changes enter a module the value had been in before
  and left: in ``cli.fire -> options -> cli.fire`` the second ``cli.fire`` climbs back (the
  value went down to ``options`` and a function of ``cli.fire`` took it again). A walk that
  never climbs back visits each module in one run: it goes through the layers once.

Only ``mcp_hooks/`` counts: the standard library, the SDK and the tests are walked through,
not recorded (a call from them into ``mcp_hooks/`` is recorded, with the path it is on).
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import mcp_hooks

PACKAGE = Path(mcp_hooks.__file__).resolve().parent
_ROOT = str(PACKAGE) + "/"
_NOT_CALLS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


@dataclass
class Walk:
    """What one walk saw: each recorded call as ``(module, function)``, in order."""

    calls: list[tuple[str, str]] = field(default_factory=list)

    @property
    def modules(self) -> list[str]:
        """The modules entered, in the order first entered."""
        return list(dict.fromkeys(module for module, _ in self.calls))

    @property
    def moves(self) -> int:
        """Changes of module from one recorded call to the next."""
        sequence = [module for module, _ in self.calls]
        return sum(1 for one, two in itertools.pairwise(sequence) if one != two)

    @property
    def climbs(self) -> list[tuple[str, str]]:
        """The calls that entered again a module the value had left."""
        left: set[str] = set()
        found = []
        for (before, _), (module, name) in itertools.pairwise(self.calls):
            if module != before:
                left.add(before)
                if module in left:
                    found.append((module, name))
        return found

    def counts(self) -> tuple[int, int, int]:
        """``(modules entered, moves, climbs back)``."""
        return len(self.modules), self.moves, len(self.climbs)

    def said(self) -> str:
        """The walk in one paragraph, for an assertion's message."""
        steps = " -> ".join(f"{m}.{f}" for m, f in self.calls)
        climbs = "; ".join(f"{m}.{f}" for m, f in self.climbs)
        return f"calls: {steps}\nclimbs back: {climbs or 'none'}"


def module_of(filename: str) -> str | None:
    """The dotted module of a file under ``mcp_hooks/`` (``__init__`` is its package); None
    for any other file."""
    if not filename.startswith(_ROOT):
        return None
    parts = filename[len(_ROOT):].removesuffix(".py").split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _own_method(value: object, code: CodeType) -> bool:
    """Whether ``code`` is a method (or property) of ``value``'s own class."""
    found = getattr(type(value), code.co_name, None)
    found = getattr(found, "fget", found)
    return getattr(found, "__code__", None) is code


def _arguments(frame: FrameType) -> Iterable[Any]:
    """The values a call received: its named arguments (``self`` of a method of its own
    class left out), then what ``*args`` and ``**kwargs`` hold."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    flags = code.co_flags
    star = bool(flags & 0x04)
    if star:
        names.append(code.co_varnames[count])
    if flags & 0x08:
        names.append(code.co_varnames[count + star])
    local = frame.f_locals
    for index, name in enumerate(names):
        value = local.get(name)
        if index == 0 and _own_method(value, code):
            continue
        yield value
        if isinstance(value, tuple):
            yield from value
        elif isinstance(value, dict) and name == names[-1] and flags & 0x08:
            yield from value.values()


class _Profiler:
    def __init__(self, follows: Callable[[object], bool]) -> None:
        self.follows = follows
        self.walk = Walk()
        self.lock = threading.Lock()
        self.seen: dict[int, FrameType] = {}  # recorded frames (kept alive: ids stay unique)

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        module = module_of(code.co_filename)
        if module is None or code.co_name in _NOT_CALLS:
            return
        if self.seen.get(id(frame)) is frame:  # a coroutine or generator resumed
            return
        if not any(self.follows(value) for value in _arguments(frame)):
            return
        with self.lock:
            self.seen[id(frame)] = frame
            name = getattr(code, "co_qualname", code.co_name)  # 3.10: no qualified name
            self.walk.calls.append((module, name))


def walk(run: Callable[[], object], follows: Callable[[object], bool]) -> Walk:
    """Run ``run()`` with every call that receives a followed value recorded (see the module
    docstring); what it saw."""
    profiler = _Profiler(follows)
    threading.setprofile(profiler)
    sys.setprofile(profiler)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return profiler.walk


def identity(*values: object, kinds: tuple[type, ...] = ()) -> Callable[[object], bool]:
    """``follows`` for these values by identity, and any instance of ``kinds``."""
    ids = {id(v) for v in values}
    return lambda obj: id(obj) in ids or (bool(kinds) and isinstance(obj, kinds))


__all__ = ["PACKAGE", "Walk", "identity", "module_of", "walk"]
