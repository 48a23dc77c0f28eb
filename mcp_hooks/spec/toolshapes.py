"""The input shapes a host tool carries a canonical key in (``vocabulary``'s edit styles).

Most host tools differ from the canonical ones only in key names (``file_path`` ->
``path``), which ``vocabulary.ToolMap`` renames. Some carry a key in a shape of their own:
an edit tool's edits (one ``old_string``/``new_string`` pair, Kimi's ``edit`` object or list,
MultiEdit's ``edits`` list, OpenCode's camelCase pair), Cline's list of shell commands. Each
shape (``EditStyle``) reads the host's input into the canonical value and writes a rewritten
value back in the host's keys. The union of every host's table merges shapes that can be
told apart by their keys (``a|b``: ``merged_shape``, read by ``style``).

Core: it knows no host and no door.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_hooks.errors import RunError


class RewriteError(RunError, ValueError):
    """A rewritten canonical input that the host's tool cannot take."""


Edits = list[dict[str, Any]]


def _edit(old: Any, new: Any, replace_all: Any = None) -> dict[str, Any]:
    edit: dict[str, Any] = {"old_string": old, "new_string": new}
    if replace_all is not None:
        edit["replace_all"] = replace_all
    return edit


@dataclass(frozen=True)
class EditStyle:
    """How one host tool carries a canonical key in a shape of its own (see ``_EDIT_STYLES``):
    an edit tool's edits (``edits``), Cline's list of shell commands (``command``)."""

    read: Callable[[dict[str, Any]], Any]
    write: Callable[[Any, dict[str, Any]], dict[str, Any]]
    keys: tuple[str, ...]  # host keys the value lives in (replaced by ``key``)
    key: str = "edits"  # the canonical key it becomes


def _one(edits: Edits, tool: str) -> dict[str, Any]:
    if len(edits) != 1 or not isinstance(edits[0], dict):
        raise RewriteError(f"{tool} takes exactly one edit; the rewrite has {len(edits)}")
    return edits[0]


def _single_read(old: str, new: str, flag: str) -> Callable[[dict[str, Any]], Edits]:
    def read(data: dict[str, Any]) -> Edits:
        if old not in data and new not in data:
            return []
        return [_edit(data.get(old), data.get(new), data.get(flag) if flag else None)]
    return read


def _single_write(old: str, new: str, flag: str, tool: str) -> Callable[
        [Edits, dict[str, Any]], dict[str, Any]]:
    def write(edits: Edits, _original: dict[str, Any]) -> dict[str, Any]:
        edit = _one(edits, tool)
        out = {old: edit.get("old_string"), new: edit.get("new_string")}
        if flag and edit.get("replace_all") is not None:
            out[flag] = edit["replace_all"]
        return out
    return write


def _commands_text(item: Any) -> Any:
    """One Cline command as shell text: a string as it is, ``{command, args}`` joined as
    Cline shows it; anything else unchanged (the bridge refuses a command that is no
    string)."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and isinstance(item.get("command"), str):
        args = item.get("args") or []
        if isinstance(args, list) and all(isinstance(a, str) for a in args):
            return " ".join([item["command"], *(json.dumps(a) if re.search(r'[\s"]', a)
                                                else a for a in args)])
    return item


def _commands_read(data: dict[str, Any]) -> Any:
    """Cline's ``run_commands`` input as one shell text: its ``commands`` (a list or one
    command), one per line."""
    raw = data.get("commands")
    items = raw if isinstance(raw, list) else [raw] if raw is not None else []
    texts = [_commands_text(i) for i in items]
    if all(isinstance(t, str) for t in texts):
        return "\n".join(texts)
    return next(t for t in texts if not isinstance(t, str))


def _commands_write(command: Any, original: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(command, str):
        raise RewriteError("the rewritten shell command must be a string")
    if command == _commands_read(original) and isinstance(original.get("commands"), list):
        return {"commands": original["commands"]}  # untouched: the list as it was sent
    return {"commands": [command]}


def _list_read(key: str, old: str, new: str, flag: str) -> Callable[[dict[str, Any]], Edits]:
    def read(data: dict[str, Any]) -> Edits:
        raw = data.get(key)
        items = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else []
        return [_edit(e.get(old), e.get(new), e.get(flag) if flag else None)
                for e in items if isinstance(e, dict)]
    return read


def _list_write(key: str, old: str, new: str, flag: str, single_as_object: bool) -> Callable[
        [Edits, dict[str, Any]], dict[str, Any]]:
    def write(edits: Edits, original: dict[str, Any]) -> dict[str, Any]:
        items = []
        for e in edits:
            if not isinstance(e, dict):
                raise RewriteError("each item of edits must be an object")
            item = {old: e.get("old_string"), new: e.get("new_string")}
            if flag and e.get("replace_all") is not None:
                item[flag] = e["replace_all"]
            items.append(item)
        # Kimi's ``edit`` is an object for one edit or a list for several: keep the form sent.
        if single_as_object and len(items) == 1 and not isinstance(original.get(key), list):
            return {key: items[0]}
        return {key: items}
    return write


_EDIT_STYLES: dict[str, EditStyle] = {
    # Claude Code Edit, Gemini CLI replace (allow_multiple), Copilot CLI edit (old_str, new_str)
    "claude-edit": EditStyle(
        _single_read("old_string", "new_string", "replace_all"),
        _single_write("old_string", "new_string", "replace_all", "Edit"),
        ("old_string", "new_string", "replace_all"),
    ),
    "gemini-replace": EditStyle(
        _single_read("old_string", "new_string", "allow_multiple"),
        _single_write("old_string", "new_string", "allow_multiple", "replace"),
        ("old_string", "new_string", "allow_multiple"),
    ),
    "copilot-edit": EditStyle(
        _single_read("old_str", "new_str", ""),
        _single_write("old_str", "new_str", "", "edit"),
        ("old_str", "new_str"),
    ),
    # Claude Code MultiEdit, Cursor afterFileEdit: edits[{old_string, new_string, replace_all}]
    "edits-list": EditStyle(
        _list_read("edits", "old_string", "new_string", "replace_all"),
        _list_write("edits", "old_string", "new_string", "replace_all", False),
        ("edits",),
    ),
    # Kimi StrReplaceFile: edit {old, new, replace_all} or a list of them
    "kimi-edit": EditStyle(
        _list_read("edit", "old", "new", "replace_all"),
        _list_write("edit", "old", "new", "replace_all", True),
        ("edit",),
    ),
    # OpenCode edit: camelCase {filePath, oldString, newString, replaceAll}
    "opencode-edit": EditStyle(
        _single_read("oldString", "newString", "replaceAll"),
        _single_write("oldString", "newString", "replaceAll", "edit"),
        ("oldString", "newString", "replaceAll"),
    ),
    # Cline editor: {path, old_text, new_text, insert_line} (no old_text: create or insert)
    "cline-editor": EditStyle(
        _single_read("old_text", "new_text", ""),
        _single_write("old_text", "new_text", "", "editor"),
        ("old_text", "new_text"),
    ),
    # Cline run_commands: {"commands": [string or {command, args}, ...]} -> one shell text
    "cline-commands": EditStyle(_commands_read, _commands_write, ("commands",), key="command"),
}


def style(name: str) -> EditStyle:
    """The style ``name``; ``a|b``: the union's merge of styles whose keys differ (each call
    is read, and a rewrite written, in the one whose keys it carries)."""
    if "|" not in name:
        return _EDIT_STYLES[name]
    parts = [_EDIT_STYLES[n] for n in name.split("|")]

    def carried(data: dict[str, Any]) -> EditStyle:
        return next((p for p in parts if any(k in data for k in p.keys)), parts[0])

    return EditStyle(lambda data: carried(data).read(data),
                     lambda value, sent: carried(sent).write(value, sent),
                     tuple(dict.fromkeys(k for p in parts for k in p.keys)), parts[0].key)


def merged_shape(have: str | None, new: str | None) -> str | None:
    """The shape of two tables' entries for one name: the same one, or edit styles whose keys
    differ joined as ``a|b``; ``""`` when they cannot be told apart."""
    if have == new:
        return have
    if have is None or new is None:
        return ""
    names = have.split("|")
    if new in names:
        return have
    styles = [_EDIT_STYLES[n] for n in names]
    added = _EDIT_STYLES[new]
    if any(s.key != added.key or set(s.keys) & set(added.keys) for s in styles):
        return ""
    return f"{have}|{new}"
