"""The Python callables of a ``Hooks`` object: registered on the object (instance level) or
on its class and inherited by its subclasses' instances (class level), and the one view the
engine's chain reads them through (``callables.CallableView``).

``CallableRegistrar`` is the base ``api.Hooks`` gets ``add``, ``on`` and its shortcuts
(``before_tool``, ``after_tool``, ``before_model``, ``after_model``, ``before_stop``),
``remove``, ``callables`` and the class-level ``class_hook``/``remove_class_hook``/
``clear_class_hooks`` from. ``hooks.on(event)`` or a shortcut registers a callable for this
``Hooks`` object (instance level); ``class_hook``/``remove_class_hook`` one for every instance
of the class and its subclasses (class level). At equal priority, instance callables run
before class ones, each in registration order, after the HOOK.md hooks; priority is the
spec's (higher first). ``callables.py`` says what each gets and returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from mcp_hooks.engine.callables import CallableHook, CallableView, HookTable, make_hook
from mcp_hooks.spec.events import canonical_event

F = TypeVar("F", bound=Callable[..., Any])


class CallableRegistrar:
    """Registers Python callables as hooks of this object or of its class (see the module
    docstring); ``_view`` is what an engine's registry reads them through."""

    def __init__(self) -> None:
        self._table = HookTable()
        self._view = CallableView(self._tables)

    def _tables(self) -> Iterable[HookTable]:
        yield self._table
        for cls in type(self).__mro__:
            table = cls.__dict__.get("_mcp_hooks_class_table")
            if table is not None:
                yield table

    def add(self, fn: Callable[..., Any], event: str, *, tool: str | None = None,
            pattern: str | None = None, priority: int = 100,
            name: str | None = None) -> CallableHook:
        """Register ``fn`` for ``event`` on this object; returns its handle (``remove``)."""
        return self._table.add(make_hook(fn, event, tool=tool, pattern=pattern,
                                         priority=priority, name=name))

    def on(self, event: str, fn: F | None = None, *, tool: str | None = None,
           pattern: str | None = None, priority: int = 100,
           name: str | None = None) -> Any:
        """``@hooks.on("before_tool", tool="Shell")`` (a decorator returning the function
        unchanged) or ``hooks.on(event, fn)``."""
        def register(fn: F) -> F:
            self.add(fn, event, tool=tool, pattern=pattern, priority=priority, name=name)
            return fn
        return register if fn is None else register(fn)

    def before_tool(self, fn: F | None = None, **options: Any) -> Any:
        return self.on("before_tool", fn, **options)

    def after_tool(self, fn: F | None = None, **options: Any) -> Any:
        return self.on("after_tool", fn, **options)

    def before_model(self, fn: F | None = None, **options: Any) -> Any:
        return self.on("before_model", fn, **options)

    def after_model(self, fn: F | None = None, **options: Any) -> Any:
        return self.on("after_model", fn, **options)

    def before_stop(self, fn: F | None = None, **options: Any) -> Any:
        return self.on("before_stop", fn, **options)

    def remove(self, hook: CallableHook | Callable[..., Any]) -> None:
        """Unregister a handle, or every registration of a function, on this object.

        Raises:
            ValueError: it is not registered on this object.
        """
        _remove(self._table, hook)

    def callables(self, event: str) -> list[CallableHook]:
        """The callables ``event`` would run here (instance and class ones), in run order."""
        return list(self._view.for_event(canonical_event(event)))

    @classmethod
    def class_hook(cls, event: str, fn: F | None = None, *, tool: str | None = None,
                   pattern: str | None = None, priority: int = 100,
                   name: str | None = None) -> Any:
        """``on`` for every instance of this class and its subclasses (class level)."""
        def register(fn: F) -> F:
            _class_table(cls).add(make_hook(fn, event, level="class", tool=tool,
                                            pattern=pattern, priority=priority, name=name))
            return fn
        return register if fn is None else register(fn)

    @classmethod
    def remove_class_hook(cls, hook: CallableHook | Callable[..., Any]) -> None:
        """Unregister a class-level handle or function of this very class."""
        _remove(_class_table(cls), hook)

    @classmethod
    def clear_class_hooks(cls) -> None:
        _class_table(cls).clear()


def _class_table(cls: type) -> HookTable:
    table = cls.__dict__.get("_mcp_hooks_class_table")
    if table is None:
        table = HookTable()
        setattr(cls, "_mcp_hooks_class_table", table)  # noqa: B010 - per class, not inherited
    return table


def _remove(table: HookTable, hook: CallableHook | Callable[..., Any]) -> None:
    if isinstance(hook, CallableHook):
        table.remove(hook)
        return
    found = [h for h in table.hooks() if h.fn is hook]
    if not found:
        raise ValueError(f"{hook!r} is not registered here")
    for h in found:
        table.remove(h)


__all__ = ["CallableRegistrar"]
