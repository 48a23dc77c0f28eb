"""Oracles by name: the built-in ones, and custom ones from a file, a module or an entry point.

``parse_reference(name)`` reads an entry's ``oracle`` without importing anything;
``build_oracle(name, config, base_dir)`` resolves and builds it:

1. a built-in name (``BUILTIN``): the seven of the seed's table (ChecklistValidator,
   FileChangeLimiter, TestGate, SecurityScanner, DependencyChecker, LintChecker,
   CommitMessageValidator) and the six its full hooks.yaml example names (ContextLoader,
   PermissionChecker, ChangeLogger, ReviewTrigger, CompletionVerifier,
   RetrospectiveGenerator);
2. a name registered in the ``mcp_hooks.oracles`` entry-point group;
3. ``path/to/file.py:ClassName``: a Python file, relative to the folder of the hooks.yaml
   that names it (``base_dir``);
4. ``package.module:ClassName``: a module.

The allow-list. Only an entry point the user installed is loaded as such; nothing else is an
oracle just because Python can import it:

- a file must be a regular file of at most ``MAX_ORACLE_FILE`` inside ``roots`` (default:
  ``base_dir``, the ``.ahp`` folder of the hooks.yaml that names it; a symlink out of it is
  refused), read once and, when the caller gives ``trusted_files``, only with the SHA-256
  that was trusted; its class must be defined in that file;
- a module is loaded when an entry point of the group names it (``value`` ``module:Class``),
  or when it lies outside the standard library, the installed packages (site-packages) and
  mcp-hooks, and its class subclasses ``Oracle``: ``subprocess:Popen`` is refused before
  anything is imported;
- every custom class must have ``evaluate``, checked before it is built.

A custom class is built as ``cls(config)`` and asked ``evaluate(context)``; it returns a
``Signal``, None, or a dict in ``Signal.as_dict``'s shape or a printed signal's
(``{"intensity": ..., <payload>}``). Importing, building and asking it run with Python's
``sys.stdout`` sent to stderr, so custom code that prints cannot corrupt a host's answer on
stdout. A custom oracle is code, so ``runs_commands()`` is always true for it. Nothing of
this module decides trust: ``control.config`` never resolves a custom name from a layer it
does not trust (it holds such an entry back as a ``HeldBack`` oracle, which never runs).
Custom code that raises in ``evaluate`` is the caller's to catch (``control.evaluate`` turns
it into a fault signal).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import os
import re
import site
import stat
import sys
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp_hooks.control.context import OracleContext
from mcp_hooks.control.files import LayerFileError, contained, kind_of, read_bounded, size_words
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
from mcp_hooks.spec.signals import Signal, printed_signal

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from mcp_hooks.control.files import AhpSnapshot

ENTRY_POINT_GROUP = "mcp_hooks.oracles"
MAX_ORACLE_FILE = 1 << 20  # bytes: an oracle is a class, never a megabyte of code

BUILTIN: dict[str, type[Oracle]] = {cls.name: cls for cls in (
    ChecklistValidator, FileChangeLimiter, TestGate, SecurityScanner, DependencyChecker,
    LintChecker, CommitMessageValidator, ContextLoader, PermissionChecker, ChangeLogger,
    ReviewTrigger, CompletionVerifier, RetrospectiveGenerator)}

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_POINT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_FORMS = (f"a built-in one ({', '.join(BUILTIN)}), 'path/file.py:Class' (inside the .ahp "
          f"folder), 'module:Class', or an entry point of the {ENTRY_POINT_GROUP!r} group")


class UnknownOracleError(ConfigError):
    """An ``oracle`` that names no built-in, no loadable class and no entry point, or one the
    allow-list refuses (the message says which rule and the fix)."""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Custom code's ``print`` goes to stderr: stdout is a host's answer (the fd is not
    redirected: a child process it starts writes where it writes)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


@dataclass(frozen=True)
class OracleRef:
    """An entry's ``oracle``, read without importing anything.

    Attributes:
        name: as written.
        kind: ``builtin``, ``entry_point``, ``file`` (``path/file.py:Class``) or ``module``.
        where: the file as written, the module, or the entry point's name.
        class_name: the class after the colon (empty for a built-in or an entry point).
    """

    name: str
    kind: Literal["builtin", "entry_point", "file", "module"]
    where: str = ""
    class_name: str = ""

    @property
    def custom(self) -> bool:
        return self.kind != "builtin"


def _entry_points() -> list[EntryPoint]:
    # lazy: 59 ms of cold start, only when an oracle names a package
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))  # installed metadata: nothing runs


def parse_reference(name: str) -> OracleRef:
    """What ``name`` refers to (see the module doc); reads installed metadata, imports nothing.

    Raises:
        UnknownOracleError: a malformed name, or a bare name that is neither built in nor an
            installed entry point.
    """
    if name in BUILTIN:
        return OracleRef(name, "builtin")
    if ":" in name:
        where, _, class_name = name.rpartition(":")
        if not _IDENT.match(class_name):
            raise UnknownOracleError(f"oracle {name!r}: {class_name!r} is not a class name; "
                                     f"use {_FORMS}")
        if where.endswith(".py"):
            return OracleRef(name, "file", where, class_name)
        if not _MODULE.match(where):
            raise UnknownOracleError(f"oracle {name!r}: {where!r} is neither a module name "
                                     f"(a.b.c) nor a .py file; use {_FORMS}")
        return OracleRef(name, "module", where, class_name)
    if _POINT.match(name) and any(p.name == name for p in _entry_points()):
        return OracleRef(name, "entry_point", name)
    hint = did_you_mean(name, BUILTIN)
    raise UnknownOracleError(f"unknown oracle {name!r}{f' ({hint})' if hint else ''}; "
                             f"use {_FORMS}")


def is_path_reference(name: str) -> bool:
    """Whether ``oracle`` names a Python file (``path/file.py:Class``)."""
    return ":" in name and name.rpartition(":")[0].endswith(".py")


# -- the allow-list -----------------------------------------------------------------------


def oracle_file(ref: OracleRef, base_dir: Path, roots: Sequence[Path] | None = None) -> Path:
    """The file of a ``file`` reference, resolved and checked by ``stat`` alone: inside one of
    ``roots`` (default ``base_dir``), a regular file, at most ``MAX_ORACLE_FILE``.

    Raises:
        UnknownOracleError: it is not, saying which rule and the fix.
    """
    given = Path(ref.where)
    path = given if given.is_absolute() else base_dir / given
    reasons = []
    for root in roots or (base_dir,):
        try:
            real = contained(path, root)
            break
        except LayerFileError as exc:
            reasons.append(exc.reason)
    else:
        where = " or ".join(str(r) for r in roots or (base_dir,))
        raise UnknownOracleError(
            f"{ref.name}: a custom oracle's file must lie inside .ahp/ ({where}), the folder "
            f"of the hooks.yaml that names it, which trust covers: {path} {reasons[-1]}")
    try:
        st = os.stat(real)
    except OSError as exc:
        raise UnknownOracleError(f"{ref.name}: {path}: cannot be read ({exc.strerror})") \
            from None
    if not stat.S_ISREG(st.st_mode):
        raise UnknownOracleError(f"{ref.name}: {path} is a {kind_of(st.st_mode)}, not a "
                                 "regular file; not read")
    if st.st_size > MAX_ORACLE_FILE:
        raise UnknownOracleError(f"{ref.name}: {path} is over {size_words(MAX_ORACLE_FILE)}"
                                 "; not read")
    return real


def _installed_places() -> list[Path]:
    """Where the standard library and installed packages live: each prefix's ``lib``
    folders, the user's site-packages, and every ``site-packages`` / ``dist-packages`` on the
    path (``sysconfig`` and ``site``'s functions are not used: they expand ``~``)."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found = [Path(p, lib) for p in prefixes for lib in ("lib", "lib64", "Lib")]
    found += [Path(p) for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    user_site = getattr(site, "USER_SITE", None)
    if isinstance(user_site, str):
        found.append(Path(user_site))
    out = []
    for place in found:
        with contextlib.suppress(OSError, RuntimeError):
            out.append(place.resolve())
    return out


def module_refusal(ref: OracleRef, project_dir: Path | None = None) -> str | None:
    """Why the allow-list refuses the unregistered module of a ``module`` reference (found
    with ``importlib.util.find_spec`` of its top-level name: nothing is imported), or None."""
    top = ref.where.split(".", 1)[0]
    if top == "mcp_hooks":
        return "mcp-hooks' own modules are not custom oracles; name the built-in oracle"
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return f"{top!r} is part of Python's standard library"
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError) as exc:
        return f"{top!r} cannot be found ({exc})"
    if spec is None:
        return f"no module {top!r} on the Python path"
    places = list(spec.submodule_search_locations or ()) or [spec.origin or ""]
    installed = _installed_places()
    for place in places:
        why = _place_refusal(top, place, project_dir, installed)
        if why is not None:
            return why
    return None


def _place_refusal(top: str, place: str, project_dir: Path | None,
                   installed: Iterable[Path]) -> str | None:
    """Why module ``top`` found at ``place`` is refused (built in, in the project, in an
    installed package), or None."""
    if not place or place in ("built-in", "frozen"):
        return f"{top!r} is built into Python"
    try:
        real = Path(place).resolve()
    except (OSError, RuntimeError):
        return f"{top!r} is at {place}, which cannot be resolved"
    if project_dir is not None and real.is_relative_to(project_dir.resolve()):
        return (f"{top!r} is a file of the project ({real}), which trust does not cover; "
                "put the oracle in .ahp and name it as path/file.py:Class")
    if any(real.is_relative_to(p) for p in installed):
        return f"{top!r} is an installed package ({real})"
    return None


def _registered(ref: OracleRef) -> EntryPoint | None:
    for point in _entry_points():
        if (ref.kind == "entry_point" and point.name == ref.where) or (
                ref.kind == "module" and point.value.replace(" ", "") == ref.name):
            return point
    return None


def _load_point(point: EntryPoint) -> type:
    try:
        with _quiet():
            loaded = point.load()
    except (Exception, SystemExit) as exc:
        raise UnknownOracleError(f"entry point {point.name!r} ({point.value}) cannot be "
                                 f"loaded: {type(exc).__name__}: {exc}") from None
    if not isinstance(loaded, type):
        raise UnknownOracleError(f"entry point {point.name!r} ({point.value}) is not a class")
    return loaded


def _load_module(ref: OracleRef, project_dir: Path | None) -> type:
    why = module_refusal(ref, project_dir)
    if why is not None:
        raise UnknownOracleError(
            f"{ref.name}: refused: {why}. Register the oracle's class as an entry point of "
            f"the {ENTRY_POINT_GROUP!r} group, or keep its module outside the standard "
            "library, the installed packages and the project, its class a subclass of "
            "mcp_hooks.control.Oracle")
    try:
        with _quiet():
            module = importlib.import_module(ref.where)
    except (Exception, SystemExit) as exc:
        raise UnknownOracleError(f"module {ref.where!r} cannot be imported: "
                                 f"{type(exc).__name__}: {exc}") from None
    cls = _attr(module, ref.class_name, ref.where)
    if not issubclass(cls, Oracle):
        raise UnknownOracleError(
            f"{ref.name}: refused: {ref.class_name} is not a subclass of "
            f"mcp_hooks.control.Oracle; subclass it, or register it as an entry point of the "
            f"{ENTRY_POINT_GROUP!r} group")
    return cls


def _load_file(ref: OracleRef, path: Path, snapshot: AhpSnapshot | None) -> type:
    try:
        source = read_bounded(path, MAX_ORACLE_FILE)
    except LayerFileError as exc:
        raise UnknownOracleError(f"{ref.name}: {exc}") from None
    if snapshot is not None and path.is_relative_to(snapshot.root.resolve()):
        trusted = snapshot.sha_of(path)
        if trusted is None or hashlib.sha256(source).hexdigest() != trusted:
            raise UnknownOracleError(f"{ref.name}: {path} is not the file that was trusted "
                                     "(it changed); review it and run `mcp-hooks trust`")
    module_name = f"mcp_hooks_custom_oracle_{hashlib.sha256(bytes(path)).hexdigest()[:16]}"
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    sys.modules[module_name] = module
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
        with _quiet():
            exec(code, module.__dict__)  # a trusted layer's own oracle file
    except (Exception, SystemExit) as exc:
        sys.modules.pop(module_name, None)
        raise UnknownOracleError(f"{path}: importing it raised {type(exc).__name__}: "
                                 f"{exc}") from None
    cls = _attr(module, ref.class_name, str(path))
    if cls.__module__ != module_name:
        raise UnknownOracleError(f"{ref.name}: refused: {ref.class_name} is not defined in "
                                 f"{path} (it comes from {cls.__module__}); define the "
                                 "oracle's class in its file")
    return cls


def _attr(module: Any, class_name: str, where: str) -> type:
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise UnknownOracleError(f"{where} has no class {class_name!r}")
    return cls


def resolve_class(name: str, base_dir: Path, *, roots: Sequence[Path] | None = None,
                  project_dir: Path | None = None, snapshot: AhpSnapshot | None = None,
                  ) -> type:
    """The class an entry's ``oracle`` names, under the allow-list (see the module doc).

    Only a trusted layer's entry gets here: this imports custom code.

    Args:
        base_dir: the folder of the hooks.yaml that names it.
        roots: where an oracle file may lie (default: ``base_dir``).
        project_dir: the project: a module found inside it is refused (trust covers only
            ``.ahp``).
        snapshot: what trust covered; a file under its root must have the trusted SHA-256.

    Raises:
        UnknownOracleError: nothing by that name, refused, or it cannot be loaded; says why.
    """
    ref = parse_reference(name)
    if ref.kind == "builtin":
        return BUILTIN[name]
    point = _registered(ref)
    if point is not None:
        cls = _load_point(point)
    elif ref.kind == "module":
        cls = _load_module(ref, project_dir)
    elif ref.kind == "file":
        cls = _load_file(ref, oracle_file(ref, base_dir, roots), snapshot)
    else:  # pragma: no cover -- parse_reference listed it a moment ago
        raise UnknownOracleError(f"entry point {name!r} is no longer installed")
    if not callable(getattr(cls, "evaluate", None)):
        raise UnknownOracleError(f"{name}: refused: {cls.__name__} has no evaluate(context) "
                                 "method, so it is not an oracle; it was not built")
    return cls


def inspect_reference(name: str, base_dir: Path, *, roots: Sequence[Path] | None = None,
                      project_dir: Path | None = None) -> str:
    """What a custom ``oracle`` would load, checked without importing or running anything
    (for ``validate`` and the trust review): a file is read (bounded) and parsed with ``ast``.

    Raises:
        UnknownOracleError: the allow-list refuses it, the file is missing or does not parse,
            or it defines no such class.
    """
    ref = parse_reference(name)
    if ref.kind == "builtin":
        return "built in"
    if _registered(ref) is not None:
        return f"the installed entry point {name!r}"
    if ref.kind == "module":
        why = module_refusal(ref, project_dir)
        if why is not None:
            raise UnknownOracleError(f"{name}: would be refused: {why}; register it as an "
                                     f"entry point of the {ENTRY_POINT_GROUP!r} group")
        return f"module {ref.where} (not imported)"
    path = oracle_file(ref, base_dir, roots)
    try:
        tree = ast.parse(read_bounded(path, MAX_ORACLE_FILE), str(path))
    except LayerFileError as exc:
        raise UnknownOracleError(f"{name}: {exc}") from None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnknownOracleError(f"{path}: does not parse as Python: {exc}") from None
    if not any(isinstance(node, ast.ClassDef) and node.name == ref.class_name
               for node in tree.body):
        raise UnknownOracleError(f"{path} defines no class {ref.class_name!r}")
    return f"class {ref.class_name} of {path} (syntax checked, not imported)"


class CustomOracle(Oracle):
    """A user's class behind the ``Oracle`` interface (its result normalised to a Signal)."""

    open_ended = True

    def __init__(self, cls: type, config: Mapping[str, Any], label: str) -> None:
        super().__init__(config)
        self.name = label  # type: ignore[misc]
        try:
            with _quiet():
                self.inner = cls(dict(config))
        except Exception as exc:  # the user's constructor: its error is the config's fault
            raise OracleConfigError("config", f"{label}({dict(config)!r}) raised "
                                    f"{type(exc).__name__}: {exc}") from None
        if not callable(getattr(self.inner, "evaluate", None)):
            raise OracleConfigError("oracle", f"{label} has no evaluate(context) method")

    def runs_commands(self) -> bool:
        return True

    def evaluate(self, context: OracleContext) -> Signal | None:
        with _quiet():
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


class HeldBack(Oracle):
    """A custom oracle that was named but not resolved: its layer is not trusted (or it was
    only read, for ``validate`` or the trust review). Nothing of it was imported; it never
    runs."""

    open_ended = True

    def __init__(self, name: str, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.name = name  # type: ignore[misc]

    def runs_commands(self) -> bool:
        return True

    def evaluate(self, context: OracleContext) -> Signal | None:
        raise UnknownOracleError(f"{self.name} was not resolved (not trusted, or only read); "
                                 "it does not run")


def build_oracle(name: str, config: Mapping[str, Any], base_dir: Path, *,
                 roots: Sequence[Path] | None = None, project_dir: Path | None = None,
                 snapshot: AhpSnapshot | None = None) -> Oracle:
    """An oracle built from an entry's ``oracle`` and ``config`` (custom ones: only for a
    trusted layer, see ``resolve_class``).

    Raises:
        UnknownOracleError: see ``resolve_class``.
        OracleConfigError: the config does not suit the oracle (names the key).
    """
    ref = parse_reference(name)
    if ref.kind == "builtin":
        return BUILTIN[name](config)
    cls = resolve_class(name, base_dir, roots=roots, project_dir=project_dir,
                        snapshot=snapshot)
    return CustomOracle(cls, config, ref.class_name or name)


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "MAX_ORACLE_FILE", "CustomOracle", "HeldBack",
           "Oracle", "OracleConfigError", "OracleRef", "UnknownOracleError", "build_oracle",
           "inspect_reference", "is_path_reference", "module_refusal", "oracle_file",
           "parse_reference", "resolve_class"]
