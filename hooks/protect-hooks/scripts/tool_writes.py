"""What one tool call writes, by the tool's kind: ``check_tool(guard, payload)``.

Shell tools are read by ``shell_writes``; patch tools for every file their patches name; the
readers (by name, or declared in HOOK.md) pass; mcp-server-git's writers go to
``git_writes``; a tool whose name says it writes is checked for every path it names, replaced
as a whole; a tool not known here only where an argument names a protected path itself.
"""

from __future__ import annotations

import re
import shlex

from declared_readers import declared_readers
from git_writes import GIT_TOOLS, git_tool
from protected_paths import NAMED, Guard, Whole
from shell_writes import Found, Shell

from mcp_hooks.spec.patchtext import is_patch_tool, patch_paths, patch_strings

MAX_NODES = 20_000  # values walked in one tool_input
ASK_THE_USER = ("Agents may read hook folders, the trust store and the hosts' hook config but "
                "never change them. Ask the user to make this change themselves (edit the hooks "
                "or config by hand, or run `mcp-hooks trust` / `mcp-hooks install` "
                "themselves); do not try another way around this check.")

SHELL_TOOLS = {"shell", "bash", "run_shell_command", "exec_command", "execute_command",
               "local_shell", "shell_command", "container.exec", "run_terminal_cmd",
               "terminal", "run_command", "execute", "exec", "powershell"}
# Tools that only read, by name, lower case: the whole name or the part after a server prefix
# (mcp__git__git_status, git__git_status and git_status are all git_status).
READ_TOOLS = {
    # the hosts' own
    "readfile", "read", "view", "glob", "grep", "grep_search", "search_file_content", "listdir",
    "ls", "webfetch", "web_fetch", "websearch", "google_web_search", "fetchurl", "searchweb",
    "agent", "task", "notebookread", "todoread", "todowrite", "codebase_search", "file_search",
    "list_dir",
    # @modelcontextprotocol/server-filesystem
    "read_file", "read_text_file", "read_media_file", "read_multiple_files", "list_directory",
    "list_directory_with_sizes", "directory_tree", "search_files", "get_file_info",
    "list_allowed_directories",
    # mcp-server-git (git_branch lists branches)
    "git_status", "git_log", "git_diff", "git_diff_staged", "git_diff_unstaged", "git_show",
    "git_branch",
    # mcp-server-fetch
    "fetch",
}
READ_NAME = re.compile(r"^(?:read|view|list|get|search|find|glob|grep|ls|stat|fetch|cat|show|"
                       r"describe|query|lookup|inspect)(?:_|$|[A-Z])", re.I)
WRITE_WORD = re.compile(r"write|edit|creat|delet|remov|move|renam|copy|patch|replac|append|"
                        r"insert|mkdir|touch|save|put|upload|chmod|apply|update|set", re.I)
CONTENT_KEYS = {"content", "contents", "new_string", "old_string", "new_str", "old_str", "text",
                "file_text", "edits", "edit", "patch", "input", "description", "prompt", "query",
                "pattern", "message", "body", "title", "code", "data", "diff", "old", "new",
                "replacement", "insert_text", "new_source", "command", "cmd", "url"}
PATHISH = re.compile(r"(?:path|paths|file|files|filename|dir|directory|folder|uri|destination|"
                     r"dest|source|src|target|from|to|output|outfile|name)$")
EDITORS = ("str_replace_based_edit_tool", "str_replace_editor", "text_editor")


class Call:
    """One tool call as this guard reads it: its name, input, folders and kind."""

    def __init__(self, guard: Guard, payload: dict[str, object]) -> None:
        tool = payload.get("tool_name") or payload.get("tool") or ""
        self.tool = tool if isinstance(tool, str) else ""
        tool_input = payload.get("tool_input")
        self.input = (payload.get("arguments") or {}) if tool_input is None else tool_input
        self.lower = self.tool.lower()
        self.last = _last_name(self.lower)
        self.name = self.tool or "this tool"
        self.bases = [guard.work_dir]
        self.command: object = self.input if isinstance(self.input, str) else None
        if isinstance(self.input, dict):
            cwd = next((self.input[k] for k in ("cwd", "dir_path", "directory", "workdir")
                        if isinstance(self.input.get(k), str)), None)
            if cwd:
                self.bases = list(dict.fromkeys([*guard.resolve(cwd, [guard.work_dir])[:1],
                                                 guard.work_dir]))
            self.command = self.input.get("command", self.input.get("cmd"))
        self.editor = self.last in EDITORS
        self.shell = (self.lower in SHELL_TOOLS or self.last in SHELL_TOOLS
                      or (not self.editor and re.search(r"shell|bash|terminal|exec|command",
                                                        self.last) is not None))

    def reads(self) -> bool:
        """A reader by name: passes whatever it names."""
        return (self.lower in READ_TOOLS or self.last in READ_TOOLS
                or (READ_NAME.match(self.last) is not None
                    and not WRITE_WORD.search(self.last)))

    def views(self) -> bool:
        """An editor tool's ``view`` command: it reads."""
        return (self.editor and isinstance(self.input, dict)
                and self.input.get("command") == "view")


def check_tool(guard: Guard, payload: dict[str, object]) -> Found | None:
    """(what, path, label[, advice]) of the first protected write the call makes, or None."""
    call = Call(guard, payload)
    if call.shell and call.command is not None:
        command = _command_text(call.command)
        if command is not None:
            shell = Shell(guard, call.bases)
            shell.run(command)
            return shell.found
    if call.views():
        return None
    if is_patch_tool(call.lower):  # every string of its input: hosts name the key differently
        found = _patch_writes(guard, call.input, call.bases)
        if found is not None:
            return found
    if call.reads():
        return None
    found = _writes(guard, call)
    return _declared(call, found) if found is not None else None


def _command_text(command: object) -> str | None:
    """A shell tool's command as one line (a list of words joined), or None."""
    if isinstance(command, list):
        parts = [c for c in command if isinstance(c, str)]
        command = shlex.join(parts) if len(parts) == len(command) else " ".join(parts)
    return command if isinstance(command, str) else None


def _writes(guard: Guard, call: Call) -> Found | None:
    """The first protected path a tool that is neither a shell nor a reader writes."""
    if call.last in GIT_TOOLS:
        return git_tool(guard, call.name, call.last, call.input, call.bases)
    if call.editor or WRITE_WORD.search(call.last):
        # a tool whose name says it writes: what it names is replaced as a whole, so a folder
        # that holds hooks counts too (create_directory only makes what it names)
        whole = not re.search(r"mkdir|create_directory|createdirectory", call.last)
        return _named_paths(guard, call.input, call.bases, whole,
                            f"{call.name} would {_tool_verb(call.last)}")
    # a tool not known here: a write only where an argument names a protected location
    found = _named_paths(guard, call.input, call.bases, NAMED, f"{call.name} naming")
    if found is None:
        return None
    hook_md, _, _ = declared_readers()
    return (*found, f"{call.name} is an unknown tool treated as a write: declare it a reader "
                    f"in {hook_md}, key metadata.readers (`readers: [{call.last or call.name}]` "
                    "under `metadata:`), if it only reads. Only the user edits that "
                    "file. Ask the user to declare it there, or to make this change "
                    "themselves; do not try another way around this check.")


def _declared(call: Call, found: Found) -> Found | None:
    """``found`` as HOOK.md's declared readers leave it: a declared reader passes, but for a
    file tool; a broken declaration is named in the label."""
    hook_md, readers, problem = declared_readers()
    if call.lower in readers or call.last in readers:
        if not (call.editor or is_patch_tool(call.lower) or _host_file_tool(call.tool)):
            return None
        found = (*found[:3], f"{call.name} is a file tool, read for what it writes whatever "
                             f"{hook_md} declares (metadata.readers). {ASK_THE_USER}")
    if problem:
        what, path, label, *advice = found
        found = (what, path, f"{label}; and {problem}", *advice)
    return found


def _norm_key(key: object) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower()) if isinstance(key, str) else ""


def tool_paths(tool_input: object) -> list[tuple[object, str]]:
    """(key, path) of every string in ``tool_input`` that names a file, walked iteratively."""
    out: list[tuple[object, str]] = []
    stack: list[tuple[object, object, bool]] = [(None, tool_input, False)]
    seen = 0
    while stack and seen < MAX_NODES:
        key, value, pathish = stack.pop()
        seen += 1
        if isinstance(value, dict):
            stack.extend(_members(value))
        elif isinstance(value, (list, tuple)):
            for v in value:
                stack.append((key, v, pathish))
        elif isinstance(value, str) and (pathish or _looks_like_path(value)):
            out.append((key, value))
    return out


def _members(value: dict[object, object]) -> list[tuple[object, object, bool]]:
    """(key, value, whether the key names a path) of an object's members, content keys'
    plain values left out."""
    out = []
    for k, v in value.items():
        norm = _norm_key(k)
        if isinstance(k, str) and k.lower() in CONTENT_KEYS and not isinstance(v, (dict, list)):
            continue
        out.append((k, v, bool(PATHISH.search(norm)) if norm else False))
    return out


def _looks_like_path(value: str) -> bool:
    if not value or len(value) > 4096 or "\n" in value or " " in value:
        return False
    return value.startswith(("/", "~", "./", "../", "$", "file://")) or "/" in value


def _last_name(tool: str) -> str:
    return re.split(r"__|[./:]", tool)[-1] if tool else ""


def _patch_writes(guard: Guard, tool_input: object, bases: list[str]) -> Found | None:
    """(what, path, label) of the first protected file a patch tool's input names."""
    for text in patch_strings(tool_input):
        for path in patch_paths(text):
            label = guard.why(path, bases)
            if label:
                return ("a patch that writes", path, label)
    return None


def _host_file_tool(tool: str) -> bool:
    """A host's own file, patch or shell tool, by its whole name (the engine's vocabulary)."""
    # imported only when a declared reader would let a write through, never paid on an
    # ordinary event (python -X importtime: ~50 ms of a cold start)
    from mcp_hooks.spec.vocabulary import writing_tool_names

    return tool.lower() in {n.lower() for n in writing_tool_names()}


def _named_paths(guard: Guard, tool_input: object, bases: list[str], whole: Whole,
                 what: str) -> Found | None:
    for _key, path in tool_paths(tool_input):
        label = guard.why(path, bases, whole)
        if label:
            return (what, path, label)
    return None


def _tool_verb(name: str) -> str:
    for word, verb in (("delet", "delete"), ("remov", "delete"), ("move", "move"),
                       ("renam", "rename"), ("edit", "edit"), ("replac", "edit"),
                       ("creat", "create"), ("copy", "copy to"), ("patch", "patch")):
        if word in name:
            return verb
    return "write"
