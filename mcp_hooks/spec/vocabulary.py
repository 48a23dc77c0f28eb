"""The shared tool vocabulary: each host's built-in tools under one canonical name and keys.

A hook matches ``tool: Shell`` and reads ``tool_input.command`` whichever door the call came
through. Each door renames the caller's tool (``Bash``, ``run_shell_command``, ``bash``, ...)
and input keys (``file_path`` -> ``path``, ...) on the way in, keeps the caller's own name and
input under ``host`` in the event payload, and maps a rewrite (``modified_input``) back to the
caller's keys on the way out (``ToolMap.to_host``). Keys that are not renamed pass through
both ways; tools with no canonical name (MCP tools, ``git_status``, ...) pass through
unchanged, so a hook that names them still matches.

Which table each door uses:

- the host bridges: their host's own table (``CLAUDE_CODE``, ``CODEX``, ...);
- the MCP server's ``fire_hook_event`` and the proxy: ``MCP_CLIENTS``, the union of every
  host's table. An MCP client is no known host, so every well-known name is read as its
  host means it. The union is unambiguous (``union`` refuses a name two hosts map to
  different canonical tools or edit shapes, or a host key two hosts rename differently;
  where hosts differ only in extra key renames, such as Cursor's ``target_file``, both
  apply). It leaves out ``MCP_SERVER_TOOLS``: names that are also the tools of the reference
  MCP servers (the filesystem server's ``read_file``, ``write_file``, ``list_directory``),
  which in MCP mean that server's own tool and which hooks behind the proxy name as such.

This module is core: it knows no host, no MCP and no command line, so every door (and the
portable check of ``mcp-hooks validate``) reads the same table. A caller's call read through
a table and its rewrite written back (``CallerTool``, ``read_tool_call``, ``answered``) live
in ``spec/toolcall.py``.

Canonical tools and keys (``CANONICAL_KEYS``; docs/bridges.md has the table per host)::

    Shell       command, cwd                 WriteFile   path, content
    ReadFile    path, offset, limit          EditFile    path, edits[{old_string, new_string,
    ApplyPatch  patch                                    replace_all}]
    Glob        pattern, path                Grep        pattern, path, glob
    ListDir     path                         WebFetch    url, prompt
    WebSearch   query                        Agent       prompt, description, subagent_type
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_hooks.spec.toolshapes import RewriteError as RewriteError
from mcp_hooks.spec.toolshapes import merged_shape, style

# The canonical tools and the input keys hooks read (other keys pass through as sent).
CANONICAL_KEYS: dict[str, tuple[str, ...]] = {
    "Shell": ("command", "cwd"),
    "ReadFile": ("path", "offset", "limit"),
    "WriteFile": ("path", "content"),
    "EditFile": ("path", "edits"),
    "ApplyPatch": ("patch",),
    "Glob": ("pattern", "path"),
    "Grep": ("pattern", "path", "glob"),
    "ListDir": ("path",),
    "WebFetch": ("url", "prompt"),
    "WebSearch": ("query",),
    "Agent": ("prompt", "description", "subagent_type"),
}
CANONICAL_TOOLS: tuple[str, ...] = tuple(CANONICAL_KEYS)


@dataclass(frozen=True)
class ToolMap:
    """One host tool and its canonical name.

    Attributes:
        host_name: the tool's name as the host sends it.
        canonical: the canonical tool name.
        keys: host key -> canonical key renames (several host keys may share a canonical key;
            the first present wins, and a rewrite goes back to the key the host sent).
        edits: the shape of a key the host carries its own way: the edit style of an
            ``EditFile`` tool, Cline's command list (``toolshapes``); else None.
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
            shape = style(self.edits)
            out[shape.key] = shape.read(data)
            moved.update(shape.keys)
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
        out, used = self._renamed(data, sent)
        shape = style(self.edits) if self.edits is not None else None
        if shape is not None and shape.key in data:
            value = data[shape.key]
            if shape.key == "edits" and not isinstance(value, list):
                raise RewriteError("edits must be a list of {old_string, new_string} objects")
            out.update(shape.write(value, sent))
            used.add(shape.key)
        for key, value in data.items():
            if key not in used and key not in out:
                out[key] = value
        return out

    def _renamed(self, data: dict[str, Any], sent: dict[str, Any],
                 ) -> tuple[dict[str, Any], set[str]]:
        """The mapped keys in the host's names (the one the host sent, if it sent one)."""
        out: dict[str, Any] = {}
        used: set[str] = set()
        for canonical_key in dict.fromkeys(c for _, c in self.keys):
            if canonical_key not in data:
                continue
            candidates = [h for h, c in self.keys if c == canonical_key]
            fallback = canonical_key if canonical_key in sent else candidates[0]
            host_key = next((h for h in candidates if h in sent), fallback)
            out[host_key] = data[canonical_key]
            used.add(canonical_key)
        return out, used


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
    host_name: str, canonical: str, *keys: tuple[str, str], edits: str | None = None,
    shape: str | None = None,
) -> ToolMap:
    """One table entry; ``shape`` names a non-edit shape of ``toolshapes`` (``edits``
    an edit style), both kept in ``ToolMap.edits``."""
    return ToolMap(host_name, canonical, tuple(keys), edits or shape)


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
    tool("Bash", "Shell"),  # its VS Code-style events (PreToolUse) name the shell as Claude does
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

# Qwen Code: Gemini CLI's tool ids with Claude Code's input keys (``file_path``, ``edit`` in
# Claude's Edit shape). Hooks see ``tool_name`` as the tool's id.
QWEN_CODE = vocabulary(
    tool("run_shell_command", "Shell", ("directory", "cwd")),
    tool("read_file", "ReadFile", PATH),
    tool("write_file", "WriteFile", PATH),
    tool("edit", "EditFile", PATH, edits="claude-edit"),
    tool("glob", "Glob"),
    tool("grep_search", "Grep"),
    tool("list_directory", "ListDir"),
    tool("web_fetch", "WebFetch"),
    tool("web_search", "WebSearch"),
    tool("agent", "Agent"),
)

# Cline CLI: its shell takes a list of commands (one shell text for hooks, one per line).
# ``read_files`` keeps its ``files`` list (a hook's pattern is looked for in every path).
CLINE = vocabulary(
    tool("run_commands", "Shell", shape="cline-commands"),
    tool("read_files", "ReadFile"),
    tool("editor", "EditFile", edits="cline-editor"),
    tool("apply_patch", "ApplyPatch", ("input", "patch")),
    tool("search_codebase", "Grep"),
    tool("fetch_web_content", "WebFetch"),
    tool("spawn_agent", "Agent", ("task", "prompt")),
)

# OpenCode: lowercase ids, camelCase keys. ``apply_patch`` (and the older ``patch``) carry the
# patch in ``patchText``.
OPENCODE = vocabulary(
    tool("bash", "Shell", ("workdir", "cwd")),
    tool("read", "ReadFile", ("filePath", "path")),
    tool("write", "WriteFile", ("filePath", "path")),
    tool("edit", "EditFile", ("filePath", "path"), edits="opencode-edit"),
    tool("apply_patch", "ApplyPatch", ("patchText", "patch")),
    tool("patch", "ApplyPatch", ("patchText", "patch")),
    tool("glob", "Glob"),
    tool("grep", "Grep", ("include", "glob")),
    tool("list", "ListDir"),
    tool("webfetch", "WebFetch"),
    tool("task", "Agent"),
)


# -- one table for every host ----------------------------------------------------------------


def union(*vocabs: Vocabulary, leave_out: frozenset[str] = frozenset()) -> Vocabulary:
    """One table holding every tool of ``vocabs`` (but the names in ``leave_out``).

    A name several tables hold keeps its canonical tool and gets the key renames of all of
    them. Edit shapes that can be told apart by their keys (Copilot CLI's ``edit`` with
    ``old_str``, Qwen Code's with ``old_string``, OpenCode's with ``oldString``) merge: a
    call is read, and a rewrite written, in the shape whose keys it carries.

    Raises:
        ValueError: the union would be ambiguous: a name mapped to different canonical tools
            or to edit shapes that share keys, or a host key renamed to different canonical
            keys.
    """
    merged: dict[str, ToolMap] = {}
    for vocab in vocabs:
        for name, tool in vocab.tools.items():
            if name in leave_out:
                continue
            have = merged.get(name)
            if have is None:
                merged[name] = tool
                continue
            edits = merged_shape(have.edits, tool.edits)
            if have.canonical != tool.canonical or edits == "":
                raise ValueError(f"{name!r} is {have.canonical} ({have.edits}) in one table "
                                 f"and {tool.canonical} ({tool.edits}) in another")
            keys = dict(have.keys)
            for host_key, canonical_key in tool.keys:
                if keys.setdefault(host_key, canonical_key) != canonical_key:
                    raise ValueError(f"{name!r}: {host_key!r} is renamed to both "
                                     f"{keys[host_key]!r} and {canonical_key!r}")
            merged[name] = ToolMap(name, have.canonical, tuple(keys.items()), edits)
    return Vocabulary(merged)


HOST_TABLES: dict[str, Vocabulary] = {
    "claude-code": CLAUDE_CODE, "codex": CODEX, "gemini-cli": GEMINI_CLI, "cursor": CURSOR,
    "copilot-cli": COPILOT_CLI, "kimi-cli": KIMI_CLI, "qwen-code": QWEN_CODE, "cline": CLINE,
    "opencode": OPENCODE,
}
# The reference MCP servers' own tools whose names a host also uses (the filesystem server's):
# behind the proxy they are that server's tools, and hooks name them so.
MCP_SERVER_TOOLS: frozenset[str] = frozenset({"read_file", "write_file", "list_directory"})
MCP_CLIENTS: Vocabulary = union(*HOST_TABLES.values(), leave_out=MCP_SERVER_TOOLS)


# The canonical tools that write files or run commands.
WRITING_TOOLS: frozenset[str] = frozenset({"Shell", "WriteFile", "EditFile", "ApplyPatch"})


def writing_tool_names() -> frozenset[str]:
    """``WRITING_TOOLS`` and every name a host's table gives one of them (``Bash``, ``Write``,
    ``apply_patch``, ``editor``, ...): the tools a guard reads for what they write whatever
    it is told about them (protect-hooks' declared readers)."""
    return WRITING_TOOLS | {name for table in HOST_TABLES.values()
                            for name, tool in table.tools.items()
                            if tool.canonical in WRITING_TOOLS}


def also_named(names: frozenset[str]) -> frozenset[str]:
    """The canonical names any host's table gives ``names`` (a hook's names-only
    ``matcher.tool``), beyond ``names`` themselves: ``{"Bash"}`` -> ``{"Shell"}``.

    Every door renames a host's own tool before hooks see it, so a hook written for one host
    (``tool: Bash``) would otherwise never match anywhere: a guard that silently guards
    nothing. ``hookfile`` widens such a matcher with these names (``validate --portable``
    still asks for the canonical one).
    """
    extra = {tool.canonical for name in names for table in HOST_TABLES.values()
             if (tool := table.get(name)) is not None}
    return frozenset(extra - names)


def tool_catalogue(vocab: Vocabulary = MCP_CLIENTS) -> list[dict[str, Any]]:
    """The canonical tools as JSON-ready data: name, the input keys hooks read, and the
    callers' names ``vocab`` reads as each (for ``hooks://events`` and ``mcp-hooks events``)."""
    names: dict[str, list[str]] = {c: [] for c in CANONICAL_KEYS}
    for host_name, tool in vocab.tools.items():
        if host_name != tool.canonical:
            names[tool.canonical].append(host_name)
    return [{"name": c, "input_keys": list(keys), "caller_names": sorted(names[c])}
            for c, keys in CANONICAL_KEYS.items()]


def matcher_problem(matcher_tool: str) -> str | None:
    """Why a names-only ``matcher.tool`` (``Bash``, ``Write|Edit``) misses calls on the doors
    that speak this vocabulary: a host's own name without its canonical one, which the
    bridges, ``fire_hook_event`` and the proxy all rename before hooks see it. None when it
    is fine (or a regex, which this does not judge)."""
    names = set(matcher_tool.split("|"))
    renamed: dict[str, str] = {}
    for name in sorted(names):
        tool = MCP_CLIENTS.get(name)
        if tool is not None and tool.canonical != name and tool.canonical not in names:
            renamed[name] = tool.canonical
    if not renamed:
        return None
    wanted = "|".join(dict.fromkeys(renamed.values()))
    return (f"{', '.join(renamed)} reach hooks as {wanted.replace('|', ', ')} (every door "
            f"renames a host's own tool names): add {wanted} to it")
