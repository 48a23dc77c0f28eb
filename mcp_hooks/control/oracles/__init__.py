"""Oracles by name: the built-in ones, and custom ones from a module path or an entry point.

``build_oracle(name, config, base_dir)`` resolves an entry's ``oracle``:

1. a built-in name (``BUILTIN``): the seven of the seed's table (ChecklistValidator,
   FileChangeLimiter, TestGate, SecurityScanner, DependencyChecker, LintChecker,
   CommitMessageValidator) and the six its full hooks.yaml example names (ContextLoader,
   PermissionChecker, ChangeLogger, ReviewTrigger, CompletionVerifier,
   RetrospectiveGenerator);
2. ``path/to/file.py:ClassName``: a Python file, relative to the folder of the hooks.yaml
   that names it (``base_dir``);
3. ``package.module:ClassName``: an importable module;
4. a name registered in the ``mcp_hooks.oracles`` entry-point group.

A custom class is built as ``cls(config)`` and asked ``evaluate(context)``; it returns a
``Signal``, None, or a dict in ``Signal.as_dict``'s shape or a printed signal's
(``{"intensity": ..., <payload>}``). A custom oracle is code, so ``runs_commands()`` is
always true for it: from a project's hooks.yaml it runs only once the project is trusted.
Custom code that raises is the caller's to catch (``control.evaluate`` turns it into a
fault signal).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_hooks.control.context import OracleContext
from mcp_hooks.control.oracles.base import Oracle, OracleConfigError
from mcp_hooks.control.oracles.commands import LintChecker, TestGate
from mcp_hooks.control.oracles.lifecycle import (
    ChangeLogger,
    ContextLoader,
    RetrospectiveGenerator,
    ReviewTrigger,
)
from mcp_hooks.control.oracles.quality import (
    ChecklistValidator,
    CommitMessageValidator,
    CompletionVerifier,
    FileChangeLimiter,
)
from mcp_hooks.control.oracles.security import (
    DependencyChecker,
    PermissionChecker,
    SecurityScanner,
)
from mcp_hooks.errors import ConfigError, did_you_mean
from mcp_hooks.signals import Signal, printed_signal

ENTRY_POINT_GROUP = "mcp_hooks.oracles"

BUILTIN: dict[str, type[Oracle]] = {cls.name: cls for cls in (
    ChecklistValidator, FileChangeLimiter, TestGate, SecurityScanner, DependencyChecker,
    LintChecker, CommitMessageValidator, ContextLoader, PermissionChecker, ChangeLogger,
    ReviewTrigger, CompletionVerifier, RetrospectiveGenerator)}


class UnknownOracleError(ConfigError):
    """An ``oracle`` that names no built-in, no loadable class and no entry point."""


class CustomOracle(Oracle):
    """A user's class behind the ``Oracle`` interface (its result normalised to a Signal)."""

    open_ended = True

    def __init__(self, cls: type, config: Mapping[str, Any], label: str) -> None:
        super().__init__(config)
        self.name = label  # type: ignore[misc]
        try:
            self.inner = cls(dict(config))
        except Exception as exc:  # the user's constructor: its error is the config's fault
            raise OracleConfigError("config", f"{label}({dict(config)!r}) raised "
                                    f"{type(exc).__name__}: {exc}") from None
        if not callable(getattr(self.inner, "evaluate", None)):
            raise OracleConfigError("oracle", f"{label} has no evaluate(context) method")

    def runs_commands(self) -> bool:
        return True

    def evaluate(self, context: OracleContext) -> Signal | None:
        result = self.inner.evaluate(context)
        if result is None or isinstance(result, Signal):
            return result
        if isinstance(result, Mapping):
            data = dict(result)
            if "header" in data:
                return Signal.from_dict(data)
            return printed_signal(data, source=self.name, hook=context.trigger)
        raise ConfigError(f"{self.name}.evaluate returned {type(result).__name__}; return a "
                          "Signal, None, or a signal as a dict")


def _load_file(path: Path, class_name: str) -> type:
    if not path.is_file():
        raise UnknownOracleError(f"{path}: no such file")
    module_name = f"mcp_hooks_custom_oracle_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UnknownOracleError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise UnknownOracleError(f"{path}: importing it raised {type(exc).__name__}: "
                                 f"{exc}") from None
    return _attr(module, class_name, str(path))


def _attr(module: Any, class_name: str, where: str) -> type:
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise UnknownOracleError(f"{where} has no class {class_name!r}")
    return cls


def is_path_reference(name: str) -> bool:
    """Whether ``oracle`` names a Python file (``path/file.py:Class``)."""
    return ":" in name and name.split(":", 1)[0].endswith(".py")


def resolve_class(name: str, base_dir: Path) -> type:
    """The class an entry's ``oracle`` names (see the module docstring).

    Raises:
        UnknownOracleError: nothing by that name, or it cannot be loaded; says why.
    """
    if name in BUILTIN:
        return BUILTIN[name]
    if ":" in name:
        where, _, class_name = name.rpartition(":")
        if is_path_reference(name):
            path = Path(where)
            return _load_file(path if path.is_absolute() else base_dir / path, class_name)
        try:
            module = importlib.import_module(where)
        except Exception as exc:
            raise UnknownOracleError(f"module {where!r} cannot be imported: "
                                     f"{type(exc).__name__}: {exc}") from None
        return _attr(module, class_name, where)
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name == name:
            try:
                loaded = point.load()
            except Exception as exc:
                raise UnknownOracleError(f"entry point {name!r} ({point.value}) cannot be "
                                         f"loaded: {type(exc).__name__}: {exc}") from None
            if not isinstance(loaded, type):
                raise UnknownOracleError(f"entry point {name!r} is not a class")
            return loaded
    hint = did_you_mean(name, BUILTIN)
    raise UnknownOracleError(
        f"unknown oracle {name!r}{f' ({hint})' if hint else ''}; use a built-in one "
        f"({', '.join(BUILTIN)}), 'path/file.py:Class', 'module:Class', or an entry point "
        f"of the {ENTRY_POINT_GROUP!r} group")


def build_oracle(name: str, config: Mapping[str, Any], base_dir: Path) -> Oracle:
    """An oracle built from an entry's ``oracle`` and ``config``.

    Raises:
        UnknownOracleError: see ``resolve_class``.
        OracleConfigError: the config does not suit the oracle (names the key).
    """
    cls = resolve_class(name, base_dir)
    if name in BUILTIN:
        return cls(config)  # type: ignore[no-any-return]
    return CustomOracle(cls, config, name.rpartition(":")[2] or name)


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "CustomOracle", "Oracle", "OracleConfigError",
           "UnknownOracleError", "build_oracle", "is_path_reference", "resolve_class"]
