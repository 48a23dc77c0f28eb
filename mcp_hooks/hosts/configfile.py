"""A host's hook config file: our entries merged in, recognised, taken out, written safely.

Rules (``install`` and ``uninstall`` rest on them): every unrelated entry is kept as it was;
replacing our entries with the same ones changes nothing; our entries are recognised by their
shape whatever command starts them (``... bridge <host> --event ...``, our forward script,
the older ``mcp-hooks bridge`` forms), URL (``/hooks/bridge/``) or MCP tool
(``bridge_hook``); the previous file is copied to ``paths.backups_dir()`` before a change and
the new one replaces it atomically; a JSON file is edited in place (``jsontext``: what did not
change keeps its bytes). ``cwd_import_reason`` says whether a command would load code from the
folder a host runs it in (``install`` refuses to write one, ``doctor`` reports one). Five
formats (``Host.config_format``):

- ``grouped``: ``{"hooks": {event: [{"hooks": [handler, ...]}, ...]}}`` (Claude Code, Codex,
  Gemini CLI); a group left empty by an uninstall is dropped, as is an event left empty;
- ``flat``: ``{"version": 1, "hooks": {event: [handler, ...]}}`` (Cursor, Copilot CLI);
- ``toml``: Kimi's ``config.toml``, edited as text: our ``[[hooks]]`` tables live in one
  block between two marker comments, appended to the file and removed as a whole; the result
  is parsed back before it is written;
- ``files``: a folder holding one executable per event, named after it (Cline's hooks
  folder); ours are the files whose text the host's ``config_commands`` reads as ours
  (``Generated``), written with its ``config_text``; a file of an event's name that is not
  ours is never touched (install refuses), and uninstall removes only our files (and the
  folder, if that leaves it empty);
- ``module``: one file we generate as a whole (OpenCode's plugin), ``config_text`` of every
  event's command; one that is not ours is never touched.

A file that cannot be read as its format, or whose ``hooks`` has the wrong shape, is never
touched: ``InstallError`` says what to fix.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mcp_hooks import paths
from mcp_hooks.errors import ConfigError, RunError
from mcp_hooks.hosts import ALIASES, HOSTS
from mcp_hooks.hosts.base import Host
from mcp_hooks.hosts.forward import FORWARD_PATH, TOOL_NAME
from mcp_hooks.hosts.jsontext import render

TOML_BEGIN = "# >>> mcp-hooks: managed block, written by `mcp-hooks install kimi-cli`"
TOML_END = "# <<< mcp-hooks"
FORWARD_STEM = "mcp-hooks-forward"  # our forward script: .py now, .sh in earlier versions
FORWARD_SCRIPT = FORWARD_STEM + ".py"
# Our commands by their shape, whatever starts them: `... bridge <host> --event ...`, our
# forward script (the .sh of earlier versions too), or the older `mcp-hooks bridge` forms.
OURS = re.compile(
    r"(?:\bbridge\s+['\"]?(?:" + "|".join(re.escape(h) for h in (*HOSTS, *ALIASES))
    + r")['\"]?\s+--event\b"
    r"|mcp[-_]hooks(?:\.exe)?['\"]?\s+bridge\b|-m\s+mcp_hooks(?:\.cli)?\s+bridge\b"
    r"|" + re.escape(FORWARD_STEM) + r"\.(?:sh|py)\b)"
)

Handler = dict[str, Any]
MakeHandler = Callable[[str], Handler]


@runtime_checkable
class Generated(Protocol):
    """A host whose config we generate whole (the ``files`` and ``module`` formats)."""

    def config_text(self, commands: Mapping[str, str]) -> str:
        """The file's text, running ``commands`` (host event -> command line; ``files``:
        one event per file)."""

    def config_commands(self, text: str) -> dict[str, str] | None:
        """Host event -> command line of a text ``config_text`` wrote; None: not ours."""


def generated(host: Host) -> Generated:
    """``host`` as a host whose config we generate.

    Raises:
        InstallError: its format says generated files, but it does not write them.
    """
    if not isinstance(host, Generated):
        raise InstallError(f"{host.title} declares no generated config ({host.config_format})")
    return host


class InstallError(RunError):
    """A host config that must not be touched (unreadable, wrong shape), or a command that
    would not keep working: exit 1, nothing changed."""


class InstallOptionError(ConfigError):
    """``install`` options that cannot be carried out for this host (an event it does not
    have, a ``--via`` it does not take, a missing token, a scope it has not): exit 64."""


@dataclass(frozen=True)
class Target:
    """Where one host's hook config is written, and in which format."""

    path: Path  # the file; for the "files" format, the folder
    format: str  # "grouped", "flat", "toml", "files" or "module" (Host.config_format)


def target(host: Host, scope: str, project: Path) -> Target:
    """The config file of ``host`` for ``scope``.

    Raises:
        InstallOptionError: the host has no config for that scope.
    """
    path = host.config_path(scope, project)
    if path is None:
        raise InstallOptionError(f"{host.title} reads hooks only from its user config "
                                 f"({host.user_config_text()}); use --scope user")
    return Target(path, host.config_format)


def is_ours(handler: Any, host: Host) -> bool:
    """Whether a handler of ``host``'s config is one we wrote (command, URL or MCP tool)."""
    if not isinstance(handler, dict):
        return False
    command = host.entry_command(handler)
    if command is not None and OURS.search(command):
        return True
    url = handler.get("url")
    if handler.get("type") == "http" and isinstance(url, str) and FORWARD_PATH in url:
        return True
    return handler.get("type") == "mcp_tool" and handler.get("tool") == TOOL_NAME


def edit(where: Target, text: str, events: Sequence[str], make: MakeHandler | None,
         host: Host) -> str:
    """The config text with our entries replaced by ``make(event)`` for each event, or removed
    (``make`` None). An empty result means: remove the file (nothing but ours was left)."""
    if where.format == "toml":
        return edit_toml(where.path, text, events, make, host)
    if where.format == "module":
        return edit_module(where.path, text, events, make, host)
    return edit_json(where, text, events, make, host)


def edit_all(where: Target, events: Sequence[str], make: MakeHandler | None,
             host: Host) -> dict[Path, tuple[str, str]]:
    """Every file the change touches: ``(old text, new text)`` per path (new ``""``: the file
    goes); one file for every format but ``files``."""
    if where.format == "files":
        return edit_files(where.path, events, make, host)
    old = where.path.read_text(encoding="utf-8") if where.path.exists() else ""
    return {where.path: (old, edit(where, old, events, make, host))}


def _commands(make: MakeHandler, events: Sequence[str], host: Host) -> dict[str, str]:
    return {event: host.entry_command(make(event)) or "" for event in events}


# -- commands that never import from the host's folder ----------------------------------

# An interpreter by its name: python, python3, python3.12, pypy3, python.exe ...
_PYTHON = re.compile(r"^(?:python|pypy)[\d.]*(?:\.exe)?$")
_ARG_FLAGS = frozenset("WXQ")  # interpreter options that take the next word (or their rest)
_LONG_ARG_FLAGS = frozenset({"--check-hash-based-pycs"})
SAFE_FLAGS = ("-I", "-P")  # isolated mode; -P (3.11+): no script or current folder on sys.path


def cwd_import_reason(command: str) -> str | None:
    """Why ``command`` (a shell line as a host runs it, in the project folder) would load
    code found in that folder: a ``python -m``/``-c`` without ``-I``/``-P`` (the current
    folder comes first on ``sys.path``: a cloned repository's own ``mcp_hooks/`` would run),
    a script or program named by a relative path. None: it would not (a program found on
    PATH, an absolute script, ``-I``/``-P``, ``PYTHONSAFEPATH`` set before it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None  # not a command line at all: the caller reports that
    safe_env = False
    for at, word in enumerate(words):
        name, _, value = word.partition("=")
        if _ and re.fullmatch(r"[A-Za-z_]\w*", name):
            safe_env = safe_env or (name == "PYTHONSAFEPATH" and bool(value))
            continue
        if "/" in word and not os.path.isabs(word):
            return (f"it starts {word!r}, a relative path, which the host looks up in the "
                    "folder it runs the command in (the project)")
        if _PYTHON.match(os.path.basename(word)):
            return None if safe_env else _python_reason(words[at + 1:])
        if word != "env" and not word.startswith("-"):
            return None  # a program found on PATH (or by its absolute path)
    return None


def _python_reason(words: list[str]) -> str | None:
    """Why an interpreter run with these words would import from the current folder."""
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        if word == "-" or not word.startswith("-"):
            if word != "-" and os.path.isabs(word):
                return None  # an absolute script: its own folder goes first on sys.path
            return (f"Python runs the script {word!r} from the folder the host runs it in "
                    "(the project)")
        if word.startswith("--"):
            at += word in _LONG_ARG_FLAGS
            continue
        mode, takes_next = _short_flags(word[1:])
        if mode in ("I", "P"):
            return None
        if mode:
            what = "-c" if mode == "c" else "-m " + (
                word[word.index("m") + 1:] or (words[at:at + 1] or [""])[0])
            return (f"`python {what}` without -I or -P puts the folder the host runs it in "
                    "(the project) first on sys.path, so a cloned repository's own "
                    "mcp_hooks/ would run instead of mcp-hooks, before any trust check")
        at += takes_next
    return "Python reads its program from stdin, with the current folder on sys.path"


def _short_flags(flags: str) -> tuple[str, bool]:
    """One word of short interpreter options (without its ``-``): the first of ``I``, ``P``,
    ``m``, ``c`` in it (else ``""``), and whether an option in it takes the next word."""
    for index, flag in enumerate(flags):
        if flag in "IPmc":
            return flag, False
        if flag in _ARG_FLAGS:
            return "", index == len(flags) - 1
    return "", False


# -- generated files: a folder of executables, one module --------------------------------


def _small_text(path: Path) -> str | None:
    """A file's text if it could be one of ours (small, UTF-8), else None."""
    try:
        if path.stat().st_size > 64 * 1024:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def our_files(folder: Path, host: Host) -> dict[str, tuple[Path, str, str]]:
    """Our executables in a ``files`` folder: event -> (path, text, command)."""
    found: dict[str, tuple[Path, str, str]] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.iterdir()):
        text = _small_text(path) if path.is_file() else None
        commands = generated(host).config_commands(text) if text is not None else None
        for event, command in (commands or {}).items():
            if path.name == event:
                found[event] = (path, text or "", command)
    return found


def edit_files(folder: Path, events: Sequence[str], make: MakeHandler | None,
               host: Host) -> dict[Path, tuple[str, str]]:
    """The ``files`` folder with our executables replaced by one per event (``make``) or
    removed (None). A file named after an event that is not ours is never touched."""
    if folder.exists() and not folder.is_dir():
        raise InstallError(f"{folder} is not a folder; nothing was changed")
    ours = our_files(folder, host)
    wanted = {} if make is None else {
        event: generated(host).config_text({event: command})
        for event, command in _commands(make, events, host).items()}
    changes: dict[Path, tuple[str, str]] = {}
    for event in dict.fromkeys([*ours, *wanted]):
        path = folder / event
        if event not in ours and (path.exists() or path.is_symlink()):
            raise InstallError(f"{path} exists and was not written by mcp-hooks; {host.title} "
                               "runs it on that event. Move it away (or call it from your own "
                               "script), then install again; nothing was changed")
        changes[path] = (ours[event][1] if event in ours else "", wanted.get(event, ""))
    return changes


def edit_module(path: Path, text: str, events: Sequence[str], make: MakeHandler | None,
                host: Host) -> str:
    """Our generated file for ``events`` (``make``), or ``""`` to remove it (None). A file
    there that is not ours is never touched: install refuses, uninstall leaves it."""
    if text.strip() and generated(host).config_commands(text) is None:
        if make is None:
            return text
        raise InstallError(f"{path} exists and was not written by mcp-hooks; move it away "
                           "(or pass --config to write another file); nothing was changed")
    return "" if make is None else generated(host).config_text(_commands(make, events, host))


# -- JSON ---------------------------------------------------------------------------------


def _load_json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it first, nothing was "
                           "changed") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} must hold a JSON object; nothing was changed")
    return data


def _hooks_object(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    hooks = data.get("hooks")
    if hooks is None:
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: \"hooks\" must be an object; nothing was changed")
    return hooks


def _strip_grouped(hooks: dict[str, Any], host: Host) -> None:
    """Remove our handlers from Claude-shaped ``hooks``, dropping groups and events left empty."""
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept.append(group)
                continue
            remaining = [h for h in inner if not is_ours(h, host)]
            if len(remaining) == len(inner):
                kept.append(group)
            elif remaining:
                kept.append({**group, "hooks": remaining})
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]


def _strip_flat(hooks: dict[str, Any], host: Host) -> None:
    """Remove our handlers from Cursor/Copilot ``hooks`` (event -> list of handlers)."""
    for event in list(hooks):
        handlers = hooks[event]
        if not isinstance(handlers, list):
            continue
        kept = [h for h in handlers if not is_ours(h, host)]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]


def _event_list(path: Path, hooks: dict[str, Any], event: str) -> list[Any]:
    entries = hooks.setdefault(event, [])
    if not isinstance(entries, list):
        raise InstallError(f"{path}: hooks.{event} must be a list; nothing was changed")
    return entries


def edit_json(where: Target, text: str, events: Sequence[str], make: MakeHandler | None,
              host: Host) -> str:
    """The JSON config with our entries replaced by fresh ones (``make``) or removed (None)."""
    data = _load_json(where.path, text)
    hooks = _hooks_object(where.path, data)
    if where.format == "grouped":
        _strip_grouped(hooks, host)
        if make is not None:
            for event in events:
                group: dict[str, Any] = {"hooks": [make(event)]}
                _event_list(where.path, hooks, event).append(group)
    else:
        _strip_flat(hooks, host)
        if make is not None:
            data.setdefault("version", 1)
            for event in events:
                _event_list(where.path, hooks, event).append(make(event))
    if make is None:
        if not hooks:
            del data["hooks"]
        if not data or data == {"version": 1}:
            return ""  # nothing left but what we wrote: remove the file
    return render(text, data)  # what did not change keeps its bytes (jsontext)


# -- TOML (Kimi CLI) ----------------------------------------------------------------------


def _strip_block(text: str) -> str:
    out: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("# >>> mcp-hooks"):
            inside = True
            continue
        if inside and stripped == TOML_END:
            inside = False
            continue
        if not inside:
            out.append(line)
    result = "".join(out)
    return result.rstrip("\n") + "\n" if result.strip() else ""


def edit_toml(path: Path, text: str, events: Sequence[str], make: MakeHandler | None,
              host: Host) -> str:
    """A ``config.toml`` with our managed block replaced (``make``) or removed (None); each
    handler is written as one ``[[hooks]]`` table, key by key."""
    check_toml(path, text, host)
    base = _strip_block(text)
    if make is None:
        return base
    lines = [TOML_BEGIN + f"; remove it with `mcp-hooks uninstall {host.name}`"]
    for event in events:
        lines.append("[[hooks]]")
        lines += [f"{key} = {json.dumps(value, ensure_ascii=False)}"
                  for key, value in make(event).items()]
        lines.append("")
    lines.append(TOML_END)
    sep = "\n" if base and not base.endswith("\n\n") else ""
    result = base + sep + "\n".join(lines) + "\n"
    check_toml(path, result, host, ours=len(events))
    return result


def toml_reader() -> Any:
    """``tomllib``; on Python 3.10 ``tomli`` (a dependency there), or None if it was
    removed (the text edit stands on its marker lines without it)."""
    if sys.version_info >= (3, 11):
        import tomllib  # lazy: 12 ms of cold start, only for a host's TOML config

        return tomllib

    try:  # pragma: no cover - Python 3.10
        return importlib.import_module("tomli")
    except ModuleNotFoundError:  # pragma: no cover
        return None


def check_toml(path: Path, text: str, host: Host, ours: int | None = None) -> None:
    """``text`` parses as TOML (and holds ``ours`` of our ``[[hooks]]``, when given)."""
    toml = toml_reader()
    if toml is None:  # pragma: no cover - Python 3.10 without tomli
        return
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        if ours is None:
            raise InstallError(f"{path} is not valid TOML ({exc}); fix it first, nothing was "
                               "changed") from None
        raise InstallError(f"appending our [[hooks]] to {path} would not give valid TOML "
                           f"({exc}); nothing was changed") from None
    if ours is not None:
        found = [h for h in data.get("hooks", []) if is_ours(h, host)]
        if len(found) < ours:
            raise InstallError(f"{path}: our [[hooks]] did not land where expected "
                               "(does the file end inside an array or table that takes them?); "
                               "nothing was changed")


# -- writing ------------------------------------------------------------------------------


def backup_path(host: Host, scope: str, path: Path) -> Path:
    """Where the previous config is saved: ``paths.backups_dir()`` (not beside the file, so a
    project's config folder does not fill with backups)."""
    stamp = time.strftime("%Y%m%dT%H%M%S") + f".{time.time_ns() % 1_000_000:06d}"
    return paths.backups_dir() / f"{stamp}-{host.name}-{scope}-{path.name}"


def replace(path: Path, old: str, new: str, backup: Path, mode: int | None = None) -> Path | None:
    """Write ``new`` over ``path`` (``""``: remove it), saving ``old`` at ``backup`` first;
    ``mode``: the new file's permissions. Returns the backup written, if any. Raises OSError."""
    saved = None
    if old:
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, backup)
        saved = backup
    if new:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.mcp-hooks-tmp")
        tmp.write_text(new, encoding="utf-8")
        if mode is not None:
            tmp.chmod(mode)
        elif path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    else:
        path.unlink(missing_ok=True)
    return saved


__all__ = ["OURS", "SAFE_FLAGS", "Generated", "InstallError", "InstallOptionError", "Target",
           "backup_path", "cwd_import_reason", "edit", "edit_all", "generated", "is_ours",
           "our_files", "replace", "target"]
