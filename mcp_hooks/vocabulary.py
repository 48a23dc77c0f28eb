"""The shared tool vocabulary: each host's built-in tools under one canonical name and keys.

A hook matches ``tool: Shell`` and reads ``tool_input.command`` on every host; the bridge
renames the host's tool (``Bash``, ``run_shell_command``, ``bash``, ...) and input keys
(``file_path`` -> ``path``, ...) on the way in, and maps a rewrite back on the way out. Keys
that are not renamed pass through both ways; tools with no canonical name (MCP tools, ...)
pass through unchanged.

Canonical tools and keys (README, Host bridges has the table per host)::

    Shell       command, cwd                 WriteFile   path, content
    ReadFile    path, offset, limit          EditFile    path, edits[{old_string, new_string,
    ApplyPatch  patch                                    replace_all}]
    Glob        pattern, path                Grep        pattern, path, glob
    ListDir     path                         WebFetch    url, prompt
    WebSearch   query                        Agent       prompt, description, subagent_type
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_hooks.errors import RunError

CANONICAL_TOOLS: tuple[str, ...] = (
    "Shell", "ReadFile", "WriteFile", "EditFile", "ApplyPatch", "Glob", "Grep", "ListDir",
    "WebFetch", "WebSearch", "Agent",
)


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
    """How one host's edit tool carries its edits (see ``_EDIT_STYLES``)."""

    read: Callable[[dict[str, Any]], Edits]
    write: Callable[[Edits, dict[str, Any]], dict[str, Any]]
    keys: tuple[str, ...]  # host keys the edits live in (replaced by ``edits``)


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
}


@dataclass(frozen=True)
class ToolMap:
    """One host tool and its canonical name.

    Attributes:
        host_name: the tool's name as the host sends it.
        canonical: the canonical tool name.
        keys: host key -> canonical key renames (several host keys may share a canonical key;
            the first present wins, and a rewrite goes back to the key the host sent).
        edits: the edit style for ``EditFile`` tools, else None.
    """

    host_name: str
    canonical: str
    keys: tuple[tuple[str, str], ...] = ()
    edits: str | None = None

    def to_canonical(self, host_input: Mapping[str, Any]) -> dict[str, Any]:
        """The host's input in canonical keys; keys with no rename are kept as they are."""
        data = dict(host_input)
        out: dict[str, Any] = {}
        moved: set[str] = set()
        for host_key, canonical_key in self.keys:
            if host_key in data and canonical_key not in out:
                out[canonical_key] = data[host_key]
                moved.add(host_key)
        if self.edits is not None:
            style = _EDIT_STYLES[self.edits]
            out["edits"] = style.read(data)
            moved.update(style.keys)
        for key, value in data.items():
            if key not in moved and key not in out:
                out[key] = value
        return out

    def to_host(
        self, canonical_input: Mapping[str, Any], host_input: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A rewritten canonical input in the host's keys, as a whole replacement input.

        Raises:
            RewriteError: the rewrite cannot be expressed in the host tool's input.
        """
        data = dict(canonical_input)
        sent = dict(host_input)
        out: dict[str, Any] = {}
        used: set[str] = set()
        for canonical_key in dict.fromkeys(c for _, c in self.keys):
            if canonical_key not in data:
                continue
            candidates = [h for h, c in self.keys if c == canonical_key]
            host_key = next((h for h in candidates if h in sent), candidates[0])
            out[host_key] = data[canonical_key]
            used.add(canonical_key)
        if self.edits is not None and "edits" in data:
            edits = data["edits"]
            if not isinstance(edits, list):
                raise RewriteError("edits must be a list of {old_string, new_string} objects")
            out.update(_EDIT_STYLES[self.edits].write(edits, sent))
            used.add("edits")
        for key, value in data.items():
            if key not in used and key not in out:
                out[key] = value
        return out


@dataclass(frozen=True)
class Vocabulary:
    """The tool table of one host."""

    tools: dict[str, ToolMap] = field(default_factory=dict)

    def get(self, host_name: str) -> ToolMap | None:
        return self.tools.get(host_name)

    def canonical(
        self, host_name: str, host_input: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """``(tool_name, tool_input)`` as hooks see them; unknown tools pass unchanged."""
        tool = self.tools.get(host_name)
        if tool is None:
            return host_name, dict(host_input)
        return tool.canonical, tool.to_canonical(host_input)


def vocabulary(*tools: ToolMap) -> Vocabulary:
    return Vocabulary({t.host_name: t for t in tools})


def tool(
    host_name: str, canonical: str, *keys: tuple[str, str], edits: str | None = None
) -> ToolMap:
    return ToolMap(host_name, canonical, tuple(keys), edits)


PATH = ("file_path", "path")
_SHELL_CMD = ("cmd", "command")

CLAUDE_CODE = vocabulary(
    tool("Bash", "Shell"),
    tool("Read", "ReadFile", PATH),
    tool("Write", "WriteFile", PATH),
    tool("Edit", "EditFile", PATH, edits="claude-edit"),
    tool("MultiEdit", "EditFile", PATH, edits="edits-list"),
    tool("Glob", "Glob"),
    tool("Grep", "Grep"),
    tool("LS", "ListDir"),
    tool("WebFetch", "WebFetch"),
    tool("WebSearch", "WebSearch"),
    tool("Task", "Agent"),
    tool("Agent", "Agent"),
)

# Codex normalises its shell tools to ``Bash`` with ``{command}`` in hook payloads; the other
# names are accepted in case a version sends the raw one. ``apply_patch`` carries the patch
# in ``command``.
CODEX = vocabulary(
    tool("Bash", "Shell"),
    *(tool(name, "Shell", _SHELL_CMD) for name in (
        "shell", "exec_command", "local_shell", "shell_command", "container.exec")),
    tool("apply_patch", "ApplyPatch", ("command", "patch"), ("input", "patch")),
)

GEMINI_CLI = vocabulary(
    tool("run_shell_command", "Shell", ("dir_path", "cwd"), ("directory", "cwd")),
    tool("read_file", "ReadFile", PATH, ("absolute_path", "path")),
    tool("write_file", "WriteFile", PATH),
    tool("replace", "EditFile", PATH, edits="gemini-replace"),
    tool("glob", "Glob", ("dir_path", "path")),
    tool("grep_search", "Grep", ("dir_path", "path"), ("include_pattern", "glob")),
    tool("search_file_content", "Grep", ("dir_path", "path"), ("include", "glob")),
    tool("list_directory", "ListDir", ("dir_path", "path")),
    tool("web_fetch", "WebFetch"),
    tool("google_web_search", "WebSearch"),
)

CURSOR = vocabulary(
    tool("Shell", "Shell"),
    tool("Read", "ReadFile", PATH, ("target_file", "path")),
    tool("Write", "WriteFile", PATH, ("target_file", "path")),
    tool("Edit", "EditFile", PATH, ("target_file", "path"), edits="claude-edit"),
    tool("Glob", "Glob"),
    tool("Grep", "Grep"),
    tool("Task", "Agent"),
)

# Cursor's granular events name no tool: the bridge gives them these.
CURSOR_EVENT_TOOLS: dict[str, ToolMap] = {
    "beforeShellExecution": tool("Shell", "Shell"),
    "afterShellExecution": tool("Shell", "Shell"),
    "beforeReadFile": tool("Read", "ReadFile", PATH),
    "afterFileEdit": tool("Edit", "EditFile", PATH, edits="edits-list"),
}

COPILOT_CLI = vocabulary(
    tool("bash", "Shell"),
    tool("view", "ReadFile"),
    tool("create", "WriteFile", ("file_text", "content")),
    tool("edit", "EditFile", edits="copilot-edit"),
    tool("glob", "Glob"),
    tool("grep", "Grep"),
    tool("web_fetch", "WebFetch"),
    tool("task", "Agent"),
)

KIMI_CLI = vocabulary(
    tool("Shell", "Shell"),
    tool("ReadFile", "ReadFile", ("line_offset", "offset"), ("n_lines", "limit")),
    tool("WriteFile", "WriteFile"),
    tool("StrReplaceFile", "EditFile", edits="kimi-edit"),
    tool("Glob", "Glob", ("directory", "path")),
    tool("Grep", "Grep"),
    tool("FetchURL", "WebFetch"),
    tool("SearchWeb", "WebSearch"),
    tool("Agent", "Agent"),
    tool("Task", "Agent"),
)
