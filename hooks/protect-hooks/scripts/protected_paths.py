"""What protect-hooks protects, and whether one path names it: ``Guard.why(raw, bases)``.

A path is protected when it has one of ``PATTERNS``' components anywhere (``.agents/hooks``,
``.claude/settings.json``, ...) or lies under a root the environment names (``fixed_roots``:
the user and managed hooks folders, the mcp-hooks state and config, the hosts' config homes).
A folder that holds one counts too when the operation replaces it as a whole. Every path is
looked up on disk at most ``MAX_LOOKUPS`` times per event (``TooBig`` past it). Standard
library only.
"""

from __future__ import annotations

import fnmatch
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_GLOB = 500  # glob matches looked at per word
# Paths looked up on disk per event (symlinks, folders): past it the call is refused as too
# big to check, so no input makes an answer slow (a lookup costs up to ~100 us on a busy
# machine). A word with wildcards lists folders: it costs GLOB_COST lookups.
MAX_LOOKUPS = 10_000
GLOB_COST = 50
# ``whole`` of Guard.why for what names a path without replacing what is around it: an unknown
# tool's arguments, git's index. The path itself, or a hook-config folder by name (.agents).
NAMED = "named"
Whole = bool | str  # True (replaced as a whole), False (created inside), or NAMED
Root = tuple[str, list[str], str]  # (absolute path, its components, label)


class TooBig(Exception):
    """The event names more paths than MAX_LOOKUPS: refused, never checked halfway."""


# (components, subtree?, label): a path with these consecutive components, wherever it is.
PATTERNS = (
    ((".agents", "hooks"), True, "a project hooks folder (.agents/hooks)"),
    ((".ahp",), True, "a control layer folder (.ahp: hooks.yaml, hooks.local.yaml, oracles)"),
    ((".github", "hooks"), True, "Copilot CLI's project hook config (.github/hooks)"),
    ((".copilot", "hooks"), True, "Copilot CLI's user hook config (.copilot/hooks)"),
    ((".claude", "settings.json"), False, "Claude Code's settings, which hold its hooks"),
    ((".claude", "settings.local.json"), False, "Claude Code's settings, which hold its hooks"),
    ((".codex", "hooks.json"), False, "Codex's hook config"),
    ((".codex", "config.toml"), False, "Codex's config"),
    ((".gemini", "settings.json"), False, "Gemini CLI's settings, which hold its hooks"),
    ((".cursor", "hooks.json"), False, "Cursor's hook config"),
    ((".kimi", "config.toml"), False, "Kimi CLI's config, which holds its hooks"),
    ((".qwen", "settings.json"), False, "Qwen Code's settings, which hold its hooks"),
    ((".clinerules", "hooks"), True, "Cline's project hooks folder (.clinerules/hooks)"),
    ((".cline", "hooks"), True, "Cline's hooks folder (.cline/hooks)"),
    ((".opencode", "plugins"), True, "OpenCode's project plugins (.opencode/plugins)"),
)
# Folders that hold hook config: deleting, moving or replacing one as a whole is refused.
CONTAINERS = {".agents", ".ahp", ".claude", ".codex", ".gemini", ".cursor", ".kimi", ".copilot",
              ".qwen", ".clinerules", ".cline", ".opencode"}
FIRSTS = frozenset(comps[0] for comps, _, _ in PATTERNS)
MAGIC = re.compile(r"[*?[]")
USER_HOOKS = "the user hooks folder"
STATE = "the mcp-hooks state folder (trust store, event log, stop state)"
CONFIG = "the mcp-hooks config folder (forward script and its token)"
CLAUDE = "Claude Code's settings, which hold its hooks"


def _clean(path: str) -> str | None:
    """An absolute, normalised path; ``None`` for what cannot be a path."""
    if not path or "\0" in path:
        return None
    return os.path.normpath(path) if os.path.isabs(path) else None


def _real(path: str) -> str:
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError, RecursionError):
        return path
    return real


def _own_roots(env: os._Environ[str], home: str, config: str) -> list[tuple[str | None, str]]:
    """The hooks folders and mcp-hooks' own state and config, as the environment names them."""
    state = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    wanted: list[tuple[str | None, str]] = [
        (env.get("MCP_HOOKS_USER_DIR"), USER_HOOKS),
        (os.path.join(config, "agents", "hooks"), USER_HOOKS),
        (os.path.join(home, ".config", "agents", "hooks"), USER_HOOKS),
        (env.get("MCP_HOOKS_MANAGED_DIR"), "the managed hooks folder"),
        ("/etc/agents/hooks", "the managed hooks folder"),
        (env.get("MCP_HOOKS_TRUST_STORE"), "the mcp-hooks trust store"),
        (os.path.join(state, "mcp-hooks"), STATE),
        (os.path.join(home, ".local", "state", "mcp-hooks"), STATE),
        (os.path.join(config, "mcp-hooks"), CONFIG),
        (os.path.join(home, ".config", "mcp-hooks"), CONFIG),
    ]
    hook_dir = env.get("AGENT_HOOKS_HOOK_DIR")
    if hook_dir:
        wanted.append((os.path.dirname(os.path.normpath(hook_dir)),
                       "the hooks folder this guard was loaded from"))
    log = env.get("MCP_HOOKS_LOG")
    if log and log.lower() not in ("off", "0", "false", "none"):
        wanted.append((log, "the mcp-hooks event log"))
    return wanted


def _host_roots(env: os._Environ[str], home: str, config: str) -> list[tuple[str | None, str]]:
    """The hosts' hook config where their own variables (or their defaults) put it."""
    wanted: list[tuple[str | None, str]] = []
    claude = env.get("CLAUDE_CONFIG_DIR")
    if claude:
        wanted += [(os.path.join(claude, name), CLAUDE)
                   for name in ("settings.json", "settings.local.json")]
    codex = env.get("CODEX_HOME") or os.path.join(home, ".codex")
    wanted.append((os.path.join(codex, "hooks.json"), "Codex's hook config"))
    wanted.append((os.path.join(codex, "config.toml"), "Codex's config"))
    gemini = env.get("GEMINI_CLI_HOME")
    if gemini:
        wanted.append((os.path.join(gemini, ".gemini", "settings.json"),
                       "Gemini CLI's settings, which hold its hooks"))
    copilot = env.get("COPILOT_HOME") or os.path.join(home, ".copilot")
    wanted.append((os.path.join(copilot, "hooks"), "Copilot CLI's user hook config"))
    kimi = env.get("KIMI_SHARE_DIR") or os.path.join(home, ".kimi")
    wanted.append((os.path.join(kimi, "config.toml"), "Kimi CLI's config, which holds its hooks"))
    cline = env.get("CLINE_DIR")
    if cline:
        wanted.append((os.path.join(cline, "hooks"), "Cline's hooks folder"))
    for base in (config, os.path.join(home, ".config")):
        wanted.append((os.path.join(base, "opencode", "plugins"), "OpenCode's user plugins"))
    return wanted


def fixed_roots() -> list[tuple[str, str]]:
    """(absolute path, label) of every protected location named by the environment."""
    env = os.environ
    home = os.path.expanduser("~")
    config = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    roots = []
    for raw, label in _own_roots(env, home, config) + _host_roots(env, home, config):
        if not raw:
            continue
        path = _clean(os.path.abspath(os.path.expanduser(raw)))
        if path is None or path == "/":
            continue
        for p in {path, _real(path)}:
            roots.append((p, label))
    return roots


class Guard:
    """Decides whether one path may be written."""

    def __init__(self, work_dir: str) -> None:
        self.work_dir = work_dir
        self.roots = fixed_roots()
        self.root_parts: list[Root] = [(p, _parts(p), label) for p, label in self.roots]
        self.home = os.path.normpath(os.path.abspath(os.path.expanduser("~")))
        self.lookups = 0
        # (raw, bases, whole) -> label: a word repeated costs one lookup
        self.answers: dict[tuple[str, tuple[str, ...], Whole], str | None] = {}

    def spend(self, n: int = 1) -> None:
        self.lookups += n
        if self.lookups > MAX_LOOKUPS:
            raise TooBig()

    def resolve(self, raw: str, bases: list[str]) -> list[str]:
        """Every absolute form of ``raw``: lexical against each base, and symlinks resolved."""
        text = _expand(raw)
        out = []
        for base in ([None] if os.path.isabs(text) else bases):
            path = _clean(text if base is None else os.path.join(base, text))
            if path is None:
                continue
            if text.endswith("/") and path != "/":
                path += "/"  # kept so a destination folder is recognised
            out.append(path)
            if not MAGIC.search(path):
                real = _real(path.rstrip("/") or "/")
                if real != path.rstrip("/"):
                    out.append(real)
        return out

    def why(self, raw: object, bases: list[str], whole: Whole = True) -> str | None:
        """The label of the protected location ``raw`` names, or None.

        ``whole``: the operation replaces or removes the path as a whole (rm, mv, a write), so
        a folder that holds protected locations counts too; False for mkdir and touch.
        """
        if not isinstance(raw, str) or not raw or len(raw) > 65536:
            return None
        key = (raw, tuple(bases), whole)
        if key in self.answers:
            return self.answers[key]
        self.spend()
        label = None
        for path in self.resolve(raw, bases):
            label = self._why_path(path.rstrip("/") or "/", whole) or self._why_glob(path, whole)
            if label:
                break
        self.answers[key] = label
        return label

    def _why_glob(self, path: str, whole: Whole) -> str | None:
        """The label of the first match of a path with wildcards, looked up on disk."""
        if not MAGIC.search(path):
            return None
        self.spend(GLOB_COST)
        for match in _glob(path):
            self.spend()
            label = self._why_path(match, whole)
            if label:
                return label
        return None

    def _why_path(self, path: str, whole: Whole) -> str | None:
        """The label of what ``path`` (absolute, normalised) protects or holds, or None.

        Plain paths are compared as strings; only a path with wildcards pays for fnmatch.
        """
        parts = _parts(path)
        path = "/" + "/".join(parts)  # one spelling for the string comparisons (normpath keeps //)
        magic = MAGIC.search(path) is not None
        label = _pattern_label(parts, magic)
        if label:
            return label
        everything = len(parts) <= 1 or path == self.home
        holder = bool(whole) and whole != NAMED and not everything
        label = self._root_label(path, parts, magic, holder)
        if label:
            return label
        if not whole or everything:
            return None  # rm -rf / or ~ is block-dangerous-commands' to refuse, with its reason
        if parts[-1] in CONTAINERS or (magic and any(_same(parts[-1], name)
                                                     for name in CONTAINERS)):
            return f"{parts[-1]}, a folder that holds an agent's hook config"
        if whole != NAMED and not magic and os.path.isdir(path):
            return self._holds_protected(path)
        return None

    def _root_label(self, path: str, parts: list[str], magic: bool, holder: bool) -> str | None:
        """The label of the fixed root ``path`` lies under (or holds, when ``holder``)."""
        for root, root_parts, label in self.root_parts:
            if not magic:
                if path == root or path.startswith(root + "/"):
                    return label
                if holder and root.startswith(path + "/"):
                    return f"a folder that holds {label}"
                continue
            n = len(root_parts)
            if len(parts) >= n and _same_start(parts, root_parts, n):
                return label
            if holder and len(parts) < n and _same_start(parts, root_parts, len(parts)):
                return f"a folder that holds {label}"
        return None

    def _holds_protected(self, folder: str) -> str | None:
        """A protected file or folder inside ``folder`` (or between it and the work dir)."""
        dirs = [folder]
        work = self.work_dir
        if work and (work == folder or work.startswith(folder.rstrip("/") + "/")):
            while work != folder and work not in ("/", ""):
                dirs.append(work)
                work = os.path.dirname(work)
        for d in dirs:
            for comps, _, label in PATTERNS:
                try:
                    if os.path.lexists(os.path.join(d, *comps)):
                        return f"a folder that holds {label}"
                except (OSError, ValueError):
                    continue
        return None


def _expand(raw: str) -> str:
    """``raw`` with a ``file://`` scheme dropped, ``$VARS`` and a leading ``~`` expanded."""
    text = raw
    if text.startswith("file://"):
        text = text[len("file://"):]
    if "$" in text:
        text = os.path.expandvars(text)
    if text.startswith("~"):
        try:
            text = os.path.expanduser(text)
        except (KeyError, ValueError):  # odd pwd entries: left as written
            text = raw
    return text


def _pattern_label(parts: list[str], magic: bool) -> str | None:
    """The label of the first of ``PATTERNS`` found in ``parts``, wherever it stands."""
    if not magic and FIRSTS.isdisjoint(parts):
        return None
    for comps, subtree, label in PATTERNS:
        n = len(comps)
        for i in range(len(parts) - n + 1):
            if (subtree or i + n == len(parts)) and all(
                    _same(parts[i + k], comps[k]) for k in range(n)):
                return label
    return None


def _same_start(parts: list[str], root_parts: list[str], n: int) -> bool:
    """The first ``n`` of ``parts`` (each maybe a wildcard) match those of ``root_parts``."""
    return all(_same(parts[k], root_parts[k]) for k in range(n))


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _same(component: str, name: str) -> bool:
    if component == name:
        return True
    if MAGIC.search(component):
        if name.startswith(".") and not component.startswith("."):
            return False  # as in the shell, * and ? do not match a leading dot
        try:
            return fnmatch.fnmatchcase(name, component)
        except (re.error, ValueError):  # pragma: no cover
            return True
    return False


def _glob(pattern: str) -> Iterator[str]:
    # lazy: only a word with wildcards lists folders (python -X importtime:
    # glob is 1 ms of a cold start)
    import glob

    try:
        for i, match in enumerate(glob.iglob(pattern, recursive=True)):
            if i >= MAX_GLOB:
                return
            yield os.path.normpath(match)
    except (OSError, ValueError, RecursionError, re.error):
        return
