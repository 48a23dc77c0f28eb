"""Deny agent tool calls that change the hook folders, the trust store or a host's hook config.

``check(event)`` reads one before_tool event and returns the reason to deny it, or None;
run.py serves it with ``mcp_hooks.hookkit`` (one-shot: exit 2 with the reason on stderr;
persistent: one answer per event line). Standard library and ``mcp_hooks.spec.patchtext``
(the patch reader protect-secrets shares). See ../HOOK.md for what is protected and what
this cannot see.
"""

import fnmatch
import os
import re
import shlex

from mcp_hooks.spec.patchtext import (
    TooManyValues,
    applies_patch,
    is_patch_tool,
    patch_paths,
    patch_strings,
)

MAX_SHELL = 100_000  # longer commands get the conservative scan, not shlex
MAX_DEPTH = 8  # nested sh -c / $(...) / eval levels before the conservative scan
MAX_NODES = 20_000  # values walked in one tool_input
MAX_GLOB = 500  # glob matches looked at per word
# Paths looked up on disk per event (symlinks, folders): past it the call is refused as too
# big to check, so no input makes an answer slow (a lookup costs up to ~100 us on a busy
# machine). A word with wildcards lists folders: it costs GLOB_COST lookups.
MAX_LOOKUPS = 10_000
GLOB_COST = 50
PREFIX = "Hook configuration protected:"
# ``whole`` of Guard.why for what names a path without replacing what is around it: an unknown
# tool's arguments, git's index. The path itself, or a hook-config folder by name (.agents).
NAMED = "named"


class TooBig(Exception):
    """The event names more paths than MAX_LOOKUPS: refused, never checked halfway."""

# --- what is protected -----------------------------------------------------------------

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


def _clean(path):
    """An absolute, normalised path; ``None`` for what cannot be a path."""
    if not path or "\0" in path:
        return None
    return os.path.normpath(path) if os.path.isabs(path) else None


def _real(path):
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError, RecursionError):
        return path
    return real


def fixed_roots():
    """(absolute path, label) of every protected location named by the environment."""
    env = os.environ
    home = os.path.expanduser("~")
    config = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    state = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    user_hooks = "the user hooks folder"
    state_label = "the mcp-hooks state folder (trust store, event log, stop state)"
    config_label = "the mcp-hooks config folder (forward script and its token)"
    wanted = [
        (env.get("MCP_HOOKS_USER_DIR"), user_hooks),
        (os.path.join(config, "agents", "hooks"), user_hooks),
        (os.path.join(home, ".config", "agents", "hooks"), user_hooks),
        (env.get("MCP_HOOKS_MANAGED_DIR"), "the managed hooks folder"),
        ("/etc/agents/hooks", "the managed hooks folder"),
        (env.get("MCP_HOOKS_TRUST_STORE"), "the mcp-hooks trust store"),
        (os.path.join(state, "mcp-hooks"), state_label),
        (os.path.join(home, ".local", "state", "mcp-hooks"), state_label),
        (os.path.join(config, "mcp-hooks"), config_label),
        (os.path.join(home, ".config", "mcp-hooks"), config_label),
    ]
    hook_dir = env.get("AGENT_HOOKS_HOOK_DIR")
    if hook_dir:
        wanted.append((os.path.dirname(os.path.normpath(hook_dir)),
                       "the hooks folder this guard was loaded from"))
    log = env.get("MCP_HOOKS_LOG")
    if log and log.lower() not in ("off", "0", "false", "none"):
        wanted.append((log, "the mcp-hooks event log"))
    claude = env.get("CLAUDE_CONFIG_DIR")
    if claude:
        for name in ("settings.json", "settings.local.json"):
            wanted.append((os.path.join(claude, name),
                           "Claude Code's settings, which hold its hooks"))
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
    roots = []
    for raw, label in wanted:
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

    def __init__(self, work_dir):
        self.work_dir = work_dir
        self.roots = fixed_roots()
        self.root_parts = [(p, _parts(p), label) for p, label in self.roots]
        self.home = os.path.normpath(os.path.abspath(os.path.expanduser("~")))
        self.lookups = 0
        self.answers = {}  # (raw, bases, whole) -> label: a word repeated costs one lookup

    def spend(self, n=1):
        self.lookups += n
        if self.lookups > MAX_LOOKUPS:
            raise TooBig()

    def resolve(self, raw, bases):
        """Every absolute form of ``raw``: lexical against each base, and symlinks resolved."""
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

    def why(self, raw, bases, whole=True):
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
            label = self._why_path(path.rstrip("/") or "/", whole)
            if label:
                break
            if MAGIC.search(path):
                self.spend(GLOB_COST)
                for match in _glob(path):
                    self.spend()
                    label = self._why_path(match, whole)
                    if label:
                        break
                if label:
                    break
        self.answers[key] = label
        return label

    def _why_path(self, path, whole):
        """The label of what ``path`` (absolute, normalised) protects or holds, or None.

        Plain paths are compared as strings; only a path with wildcards pays for fnmatch.
        """
        parts = _parts(path)
        path = "/" + "/".join(parts)  # one spelling for the string comparisons (normpath keeps //)
        magic = MAGIC.search(path) is not None
        if magic or not FIRSTS.isdisjoint(parts):
            for comps, subtree, label in PATTERNS:
                n = len(comps)
                for i in range(len(parts) - n + 1):
                    if (subtree or i + n == len(parts)) and all(
                            _same(parts[i + k], comps[k]) for k in range(n)):
                        return label
        everything = len(parts) <= 1 or path == self.home
        holder = whole and whole != NAMED and not everything
        for root, root_parts, label in self.root_parts:
            if not magic:
                if path == root or path.startswith(root + "/"):
                    return label
                if holder and root.startswith(path + "/"):
                    return f"a folder that holds {label}"
                continue
            if len(parts) >= len(root_parts) and all(
                    _same(parts[k], root_parts[k]) for k in range(len(root_parts))):
                return label
            if holder and len(parts) < len(root_parts) and all(
                    _same(parts[k], root_parts[k]) for k in range(len(parts))):
                return f"a folder that holds {label}"
        if not whole or everything:
            return None  # rm -rf / or ~ is block-dangerous-commands' to refuse, with its reason
        if parts[-1] in CONTAINERS or (magic and any(_same(parts[-1], name)
                                                     for name in CONTAINERS)):
            return f"{parts[-1]}, a folder that holds an agent's hook config"
        if whole != NAMED and not magic and os.path.isdir(path):
            return self._holds_protected(path)
        return None

    def _holds_protected(self, folder):
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


def _parts(path):
    return [p for p in path.split("/") if p]


def _same(component, name):
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


def _glob(pattern):
    import glob  # only for words with wildcards

    try:
        for i, match in enumerate(glob.iglob(pattern, recursive=True)):
            if i >= MAX_GLOB:
                return
            yield os.path.normpath(match)
    except (OSError, ValueError, RecursionError, re.error):
        return


# --- shell commands --------------------------------------------------------------------

ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")
WRAPPERS = {
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-T", "-D", "--user", "--group"},
    "doas": {"-u", "-C"}, "env": {"-u", "--unset", "-C", "--chdir"}, "nohup": set(),
    "nice": {"-n", "--adjustment"}, "ionice": {"-c", "-n", "-p"}, "time": {"-f", "-o"},
    "command": set(), "builtin": set(), "exec": {"-a"}, "stdbuf": {"-i", "-o", "-e"},
    "chronic": set(), "unbuffer": set(), "caffeinate": set(), "chroot": set(),
    "setsid": set(), "flock": {"-w", "-E", "--timeout", "--conflict-exit-code"},
    "then": set(), "do": set(), "else": set(), "elif": set(), "if": set(), "while": set(),
    "until": set(), "!": set(), "{": set(), "}": set(), "fakeroot": set(), "strace": {"-o", "-e"},
}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"}
INTERPRETERS = {"python", "python3", "python2", "pypy", "pypy3", "node", "nodejs", "deno", "bun",
                "ruby", "php", "perl", "lua", "osascript", "pwsh", "powershell", "Rscript"}
WRITE_API = re.compile(
    r"open\s*\(|write|unlink|remove|rmtree|rename|replace|mkdir|makedirs|copy|move|symlink|chmod|"
    r"truncate|touch|appendFile|rm\b|fs\.|File\.|IO\.|Path\s*\(|shutil|system|popen|exec|spawn|"
    r"subprocess|`", re.I)
LITERAL = re.compile(r"'((?:[^'\\\n]|\\.){1,4096})'|\"((?:[^\"\\\n]|\\.){1,4096})\"")
# every verb that writes files, for the conservative scans
WRITE_VERBS = {
    "rm", "rmdir", "unlink", "shred", "srm", "trash", "trash-put", "mv", "cp", "install", "ln",
    "link", "rsync", "scp", "tee", "touch", "mkdir", "truncate", "chmod", "chown", "chgrp",
    "chattr", "setfacl", "dd", "sed", "perl", "ruby", "git", "patch", "curl", "wget", "tar",
    "unzip", "vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "sponge", "mcp-hooks", "find",
    "apply_patch", "python", "python3", "node", "gio", "rename", "xargs", "cpio", "7z", "bsdtar",
}
SUBST = re.compile(r"[$<>]\(")


class Shell:
    """Collects what a shell command would write."""

    def __init__(self, guard, bases):
        self.guard = guard
        self.bases = list(bases)
        self.found = None  # (what, path, label) of the first protected write
        self.words = []  # every word seen, for the conservative scan
        self.blind_write = False  # a write whose target we cannot read (a variable, xargs)

    def hit(self, path, what, whole=True, bases=None):
        if self.found is not None or not isinstance(path, str):
            return
        if "$" in path and re.search(r"\$[{A-Za-z_(]", os.path.expandvars(path)):
            self.blind_write = True
        for candidate in _braces(path):
            label = self.guard.why(candidate, bases or self.bases, whole)
            if label:
                self.found = (what, path, label)
                return

    # The conservative scan: a protected path anywhere in a command that writes somewhere.
    def conservative(self, text):
        if self.found is not None:
            return
        words = dict.fromkeys(re.findall(r"[^\s;&|<>()`'\"]+", text))  # each word once
        writes = ">" in text or any(os.path.basename(w) in WRITE_VERBS for w in words)
        if writes:
            self.scan(words, "a command that writes files and names")

    def scan(self, words, what):
        """The first of ``words`` that names a protected location, as ``found``."""
        for word in words:
            for candidate in _braces(word):
                label = self.guard.why(candidate, self.bases)
                if label:
                    self.found = (what, candidate, label)
                    return

    def run(self, text, depth=0):
        if self.found is not None or not text:
            return
        if depth > MAX_DEPTH or len(text) > MAX_SHELL:
            self.conservative(text)
            return
        text = text.replace("\\\n", "")
        for inner in _substitutions(text):
            self.run(inner, depth + 1)
        if applies_patch(text):
            for path in patch_paths(text):
                self.hit(path, "a patch that writes")
        tokens = _tokens(text)
        if tokens is None:  # unbalanced quotes: read it the careful way
            self.conservative(text)
            return
        words = []
        redirect = None
        for token in tokens:
            if _is_operator(token):
                writes_to = ">" in token
                if _separates(token):
                    self.simple(words, depth)
                    words = []
                if writes_to:
                    if words and words[-1].isdigit():
                        words.pop()  # 2> : the number is a descriptor, not an argument
                    redirect = token
                elif "<" in token:
                    redirect = "<"
                continue
            if redirect is not None:
                if ">" in redirect and not (redirect.endswith("&") and
                                            (token.isdigit() or token == "-")):
                    self.hit(token, f"the redirection {redirect}")
                redirect = None
                continue
            words.append(token)
            self.words.append(token)
        self.simple(words, depth)
        if self.blind_write and self.found is None:
            self.scan(dict.fromkeys(self.words),
                      "a command that writes through a variable or xargs and names")

    def simple(self, words, depth):
        """One simple command: strip assignments and wrappers, then look at the verb."""
        if self.found is not None or not words:
            return
        i = 0
        while i < len(words):
            word = words[i]
            name = os.path.basename(word)
            if ASSIGN.match(word):
                i += 1
            elif name in WRAPPERS:
                takes = WRAPPERS[name]
                i += 1
                while i < len(words) and words[i].startswith("-") and words[i] != "-":
                    option = words[i]
                    i += 1
                    if option in ("-C", "--chdir") and name == "env" and i < len(words):
                        self.cd(words[i])
                    if option == "-S" and name == "env" and i < len(words):
                        self.run(words[i], depth + 1)
                    if option in takes and "=" not in option:
                        i += 1
            elif name == "timeout":
                i += 1
                while i < len(words) and words[i].startswith("-"):
                    i += 2 if words[i] in ("-s", "-k", "--signal", "--kill-after") else 1
                i += 1  # the duration
            elif name in ("xargs", "parallel"):
                rest = words[i + 1:]
                if any(os.path.basename(w) in WRITE_VERBS for w in rest):
                    self.blind_write = True
                i += 1
                while i < len(words) and words[i].startswith("-"):
                    i += 2 if words[i] in ("-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a") else 1
            elif name in ("uvx", "npx", "pipx", "uv") and i + 1 < len(words):
                i += 2 if words[i + 1] in ("run", "tool") else 1
                while i < len(words) and words[i].startswith("-"):
                    i += 1
            else:
                break
        if i >= len(words):
            return
        verb = os.path.basename(words[i])
        args = words[i + 1:]
        handler = VERBS.get(verb)
        if handler is not None:
            handler(self, verb, args, depth)
        elif verb in SHELLS:
            self.shell_c(args, depth)
        elif verb.rstrip("0123456789.") in INTERPRETERS or verb in INTERPRETERS:
            self.interpreter(verb, args)
        elif verb == "eval":
            self.run(" ".join(args), depth + 1)
        elif verb == "mcp_hooks" or (args[:2] == ["-m", "mcp_hooks"]):
            self.mcp_hooks(verb, args[2:] if args[:1] == ["-m"] else args, depth)

    def is_dir(self, word):
        if word.endswith("/") or word in (".", ".."):
            return True
        return any(os.path.isdir(p) for p in self.guard.resolve(word, self.bases)[:4]
                   if not MAGIC.search(p))

    def cd(self, target):
        new = []
        for base in self.bases:
            for path in self.guard.resolve(target, [base])[:1]:
                new.append(path.rstrip("/") or "/")
        self.bases = list(dict.fromkeys(self.bases + new))[:16]

    def shell_c(self, args, depth):
        for j, arg in enumerate(args):
            if arg.startswith("-") and "c" in arg.lstrip("-") and not arg.startswith("--"):
                if j + 1 < len(args):
                    self.run(args[j + 1], depth + 1)
                return
            if not arg.startswith("-") and arg not in ("sh", "bash"):  # a script file
                return

    def interpreter(self, verb, args):
        for j, arg in enumerate(args[:4]):  # python [-I] [-P] -m mcp_hooks[.cli] COMMAND ...
            if arg == "-m" and j + 1 < len(args):
                if args[j + 1] in ("mcp_hooks", "mcp_hooks.cli"):
                    self.mcp_hooks(verb, args[j + 2:], 0)
                    return
                break
        code = None
        for j, arg in enumerate(args):
            if arg in ("-c", "-e", "-E", "--eval", "-p", "--print", "-r") and j + 1 < len(args):
                code = args[j + 1]
                break
            if re.match(r"^-[a-zA-Z]*[ce]$", arg) and j + 1 < len(args):
                code = args[j + 1]
                break
        if verb == "perl" or verb == "ruby":
            self.in_place(verb, args)
        if code is None or not WRITE_API.search(code):
            return
        for m in LITERAL.finditer(code[:MAX_SHELL]):
            literal = m.group(1) or m.group(2)
            self.hit(literal, f"a {verb} one-liner that writes files and names")
            if self.found:
                return

    def in_place(self, verb, args):
        operands, inplace = [], False
        j = 0
        while j < len(args):
            arg = args[j]
            if arg == "--":
                operands.extend(args[j + 1:])
                break
            if arg.startswith("-") and len(arg) > 1:
                cluster = arg[1:]
                if cluster.startswith("i") or re.match(r"^[a-zA-Z]*i", cluster):
                    inplace = True
                if re.search(r"[eE]$", cluster):
                    j += 1  # the code
                elif cluster in ("I", "M", "x"):
                    j += 1
            else:
                operands.append(arg)
            j += 1
        if inplace:
            for operand in operands:
                self.hit(operand, f"{verb} -i on")

    def mcp_hooks(self, verb, args, depth):
        if any(a in ("--dry-run", "-h", "--help") for a in args):
            return
        for j, arg in enumerate(args):
            if arg.startswith("-") or j and args[j - 1] in _VALUE_OPTIONS:
                continue
            if arg in _USERS_COMMANDS and self.found is None:
                what = _USERS_COMMANDS[arg]
                self.found = (f"`mcp-hooks {arg}`, run by the agent, which changes", what,
                              "only the user runs it")
            return


# `mcp-hooks` commands only the user runs, and what each changes: an agent that approves its
# own ask (docs/ask.md) or trusts its own hook has taken the person out of the loop
_USERS_COMMANDS = {
    "install": "a host's hook config", "uninstall": "a host's hook config",
    "new": "a hooks folder", "trust": "the mcp-hooks trust store",
    "untrust": "the mcp-hooks trust store",
    "approve": "a person's answer to a hook's ask", "refuse": "a person's answer to a hook's ask",
}

# the options before an `mcp-hooks` command that take a value (`--state URL approve ...`)
_VALUE_OPTIONS = frozenset({"--state", "--user-dir", "--project-dir", "--log", "--mode",
                            "--managed-dir", "--on-fault", "--chain-timeout", "--scope",
                            "--stop-block-cap"})


def _options(args, with_value=(), long_with_value=()):
    """(operands, [(option, value)]) of a GNU-style argument list."""
    operands, options = [], []
    j = 0
    while j < len(args):
        arg = args[j]
        if arg == "--":
            operands.extend(args[j + 1:])
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if not eq and name in long_with_value and j + 1 < len(args):
                j += 1
                value = args[j]
            options.append((name, value))
        elif arg.startswith("-") and len(arg) > 1:
            for k, ch in enumerate(arg[1:], 1):
                if ch in with_value:
                    value = arg[k + 1:]
                    if not value and j + 1 < len(args):
                        j += 1
                        value = args[j]
                    options.append(("-" + ch, value))
                    break
                options.append(("-" + ch, ""))
        else:
            operands.append(arg)
        j += 1
    return operands, options


def _all(shell, verb, args, depth, whole=True):
    operands, _ = _options(args, with_value=_VALUE.get(verb, set()))
    for operand in operands:
        shell.hit(operand, f"`{verb}` of", whole)


_VALUE = {"shred": {"n", "s"}, "mkdir": {"m"}, "touch": {"r", "d", "t"}, "truncate": {"s", "r"},
          "chmod": set(), "chown": set(), "chgrp": set()}


def _create(shell, verb, args, depth):
    _all(shell, verb, args, depth, whole=False)


def _copy(shell, verb, args, depth):
    operands, options = _options(
        args, with_value={"t", "S", "m", "o", "g", "e", "T"} if verb != "rsync" else {"e", "T"},
        long_with_value={"--target-directory", "--suffix", "--mode", "--owner", "--group",
                         "--rsh", "--exclude", "--include", "--filter", "--temp-dir"})
    names = {name for name, _ in options}
    targets = [v for name, v in options if name in ("-t", "--target-directory")]
    if verb in ("mv", "ln", "link") or "--remove-source-files" in names:
        targets += operands  # the sources go too (mv), or become links to them (ln)
    elif verb == "install" and ("-d" in names or "--directory" in names):
        targets += operands
    elif operands and not targets and len(operands) >= 2:
        targets.append(operands[-1])
    into = []  # a destination folder: what lands in it is what is written
    for dest in targets if verb not in ("mv", "ln", "link") else targets[-1:]:
        if shell.is_dir(dest):
            into += [dest.rstrip("/") + "/" + os.path.basename(src.rstrip("/"))
                     for src in operands[:-1] or operands]
    whole = verb in ("mv", "ln", "link") or "--delete" in names or not into
    for target in targets:
        if verb in ("rsync", "scp") and re.match(r"^[^/]*:", target):
            continue  # remote
        shell.hit(target, f"`{verb}` to", whole or not shell.is_dir(target))
    for target in into:
        shell.hit(target, f"`{verb}` to")


def _dd(shell, verb, args, depth):
    for arg in args:
        if arg.startswith("of="):
            shell.hit(arg[3:], "`dd of=`")


def _sed(shell, verb, args, depth):
    inplace, script_given, operands = False, False, []
    j = 0
    while j < len(args):
        arg = args[j]
        if arg == "--":
            operands.extend(args[j + 1:])
            break
        if arg.startswith("--"):
            inplace |= arg.startswith("--in-place")
            if arg in ("--expression", "--file"):
                script_given = True
                j += 1
            script_given |= arg.startswith(("--expression=", "--file="))
        elif arg.startswith("-") and len(arg) > 1:
            cluster = arg[1:]
            head = re.match(r"^[nrEsuzi]*", cluster).group(0)
            inplace |= "i" in head
            rest = cluster[len(head):]
            if rest[:1] in ("e", "f"):
                script_given = True
                if len(rest) == 1:
                    j += 1
            elif rest[:1] == "l" and len(rest) == 1:
                j += 1
        else:
            operands.append(arg)
        j += 1
    if inplace:
        for operand in operands if script_given else operands[1:]:
            shell.hit(operand, "`sed -i` on")


def _git(shell, verb, args, depth):
    bases = shell.bases
    j = 0
    while j < len(args) and args[j].startswith("-"):
        if args[j] == "-C" and j + 1 < len(args):
            bases = [p for b in bases for p in shell.guard.resolve(args[j + 1], [b])[:1]]
            j += 2
        elif args[j] in ("-c", "--git-dir", "--work-tree", "--namespace"):
            j += 2
        else:
            j += 1
    if j >= len(args):
        return
    sub, rest = args[j], args[j + 1:]
    if sub in ("checkout", "restore", "rm", "mv", "clean", "apply", "am", "stash"):
        operands, _ = _options(rest, with_value={"b", "B", "s", "m", "p"} if sub != "rm" else set(),
                               long_with_value={"--source", "--orphan", "--directory"})
        for operand in operands:
            shell.hit(operand, f"`git {sub}` of", bases=bases)


def _tee(shell, verb, args, depth):
    operands, _ = _options(args)
    for operand in operands:
        shell.hit(operand, f"`{verb}` to")


def _curl(shell, verb, args, depth):
    flags = {"curl": ({"o"}, {"--output", "--output-dir", "--dump-header", "--trace"}),
             "wget": ({"O", "P", "o", "a"}, {"--output-document", "--directory-prefix",
                                              "--output-file", "--append-output"})}[verb]
    _, options = _options(args, with_value=flags[0] | ({"H", "d", "X", "u", "A", "e", "T", "F"}
                                                          if verb == "curl" else set()),
                          long_with_value=flags[1] | {"--header", "--data", "--user"})
    for name, value in options:
        if name.lstrip("-") in flags[0] or name in flags[1]:
            shell.hit(value, f"`{verb}` saving to")


def _archive(shell, verb, args, depth):
    _, options = _options(args, with_value={"C", "d", "f", "o"},
                          long_with_value={"--directory", "--file"})
    create = bool(args) and re.match(r"^-?[a-zA-Z]*[cru]", args[0]) is not None
    for name, value in options:
        if name in ("-C", "--directory", "-d", "-o") or (create and name in ("-f", "--file")):
            shell.hit(value, f"`{verb}` writing into")


def _find(shell, verb, args, depth):
    starts = []
    for arg in args:
        if arg.startswith(("-", "(", "!", ")")) and arg not in ("-", ):
            break
        starts.append(arg)
    writes = "-delete" in args
    for j, arg in enumerate(args):
        if arg in ("-exec", "-execdir", "-ok", "-okdir") and j + 1 < len(args):
            writes |= os.path.basename(args[j + 1]) in WRITE_VERBS | SHELLS
        if arg in ("-fprint", "-fprint0", "-fprintf", "-fls") and j + 1 < len(args):
            shell.hit(args[j + 1], "`find` writing to")
    if writes:
        for start in starts or ["."]:
            shell.hit(start, "`find -delete/-exec` under")


def _patch(shell, verb, args, depth):
    operands, options = _options(args, with_value={"o", "d", "i", "p", "B", "r", "D", "F", "z"},
                                 long_with_value={"--output", "--directory", "--input"})
    for operand in operands[:1]:
        shell.hit(operand, "`patch` of")
    for name, value in options:
        if name in ("-o", "--output"):
            shell.hit(value, "`patch` writing to")


def _rename(shell, verb, args, depth):
    operands, _ = _options(args)
    for operand in operands[1:]:
        shell.hit(operand, "`rename` of")


def _mcp_hooks(shell, verb, args, depth):
    shell.mcp_hooks(verb, args, depth)


def _cd(shell, verb, args, depth):
    operands, _ = _options(args)
    shell.cd(operands[0] if operands else os.path.expanduser("~"))


def _gio(shell, verb, args, depth):
    if args and args[0] in ("trash", "remove", "move", "copy", "rename", "save", "set"):
        operands, _ = _options(args[1:])
        for operand in operands:
            shell.hit(operand, f"`gio {args[0]}` of")


VERBS = {
    **dict.fromkeys(("rm", "rmdir", "unlink", "shred", "srm", "trash", "trash-put", "truncate",
                     "chmod", "chown", "chgrp", "chattr", "setfacl", "vi", "vim", "nvim", "nano",
                     "emacs", "ed", "ex", "sponge"), _all),
    **dict.fromkeys(("touch", "mkdir"), _create),
    **dict.fromkeys(("mv", "cp", "install", "ln", "link", "rsync", "scp"), _copy),
    "dd": _dd, "sed": _sed, "gsed": _sed, "git": _git, "tee": _tee, "curl": _curl,
    "wget": _curl, "tar": _archive, "bsdtar": _archive, "gtar": _archive, "unzip": _archive,
    "find": _find, "patch": _patch, "rename": _rename, "mcp-hooks": _mcp_hooks, "cd": _cd,
    "pushd": _cd, "gio": _gio,
}


def _tokens(text):
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def _is_operator(token):
    return bool(token) and all(c in "();<>|&\n" for c in token)


def _separates(token):
    redirect = ">" in token or "<" in token
    return (any(c in token for c in ";\n()") or "&&" in token or "||" in token
            or ("|" in token and token not in (">|",)) or ("&" in token and not redirect))


def _substitutions(text):
    """The bodies of $(...), <(...), >(...) and `...` in ``text`` (one level)."""
    out = []
    i, n = 0, len(text)
    while True:
        m = SUBST.search(text, i)
        if m is None:
            break
        j, depth = m.end(), 1
        while j < n and depth:
            c = text[j]
            depth += (c == "(") - (c == ")")
            j += 1
        out.append(text[m.end():j - 1] if depth == 0 else text[m.end():])
        i = j
    out.extend(re.findall(r"`([^`]*)`", text))
    return out


def _braces(word, limit=64):
    """Brace expansion of one word (a{b,c}d -> abd acd), at most ``limit`` results."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if m is None:
        return [word]
    out = []
    for choice in m.group(1).split(","):
        for expanded in _braces(word[:m.start()] + choice + word[m.end():], limit):
            out.append(expanded)
            if len(out) >= limit:
                return out
    return out


# --- file tools ------------------------------------------------------------------------

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


def _norm_key(key):
    return re.sub(r"[^a-z0-9]", "", key.lower()) if isinstance(key, str) else ""


def tool_paths(tool_input):
    """(key, path) of every string in ``tool_input`` that names a file, walked iteratively."""
    out = []
    stack = [(None, tool_input, False)]
    seen = 0
    while stack and seen < MAX_NODES:
        key, value, pathish = stack.pop()
        seen += 1
        if isinstance(value, dict):
            for k, v in value.items():
                norm = _norm_key(k)
                if (isinstance(k, str) and k.lower() in CONTENT_KEYS
                        and not isinstance(v, (dict, list))):
                    continue
                stack.append((k, v, bool(PATHISH.search(norm)) if norm else False))
        elif isinstance(value, (list, tuple)):
            for v in value:
                stack.append((key, v, pathish))
        elif isinstance(value, str) and (pathish or _looks_like_path(value)):
            out.append((key, value))
    return out


def _looks_like_path(value):
    if not value or len(value) > 4096 or "\n" in value or " " in value:
        return False
    return value.startswith(("/", "~", "./", "../", "$", "file://")) or "/" in value


def _last_name(tool):
    return re.split(r"__|[./:]", tool)[-1] if tool else ""


def check_tool(guard, payload):
    """(what, path, label[, advice]) of the first protected write the call makes, or None."""
    tool = payload.get("tool_name") or payload.get("tool") or ""
    tool = tool if isinstance(tool, str) else ""
    tool_input = payload.get("tool_input")
    if tool_input is None:
        tool_input = payload.get("arguments") or {}
    work_dir = guard.work_dir
    bases = [work_dir]
    lower = tool.lower()
    last = _last_name(lower)
    if isinstance(tool_input, dict):
        cwd = next((tool_input[k] for k in ("cwd", "dir_path", "directory", "workdir")
                    if isinstance(tool_input.get(k), str)), None)
        if cwd:
            bases = list(dict.fromkeys([*guard.resolve(cwd, [work_dir])[:1], work_dir]))
        command = tool_input.get("command", tool_input.get("cmd"))
    else:
        command = tool_input if isinstance(tool_input, str) else None

    editor = last in ("str_replace_based_edit_tool", "str_replace_editor", "text_editor")
    shell_tool = (lower in SHELL_TOOLS or last in SHELL_TOOLS
                  or (not editor
                      and re.search(r"shell|bash|terminal|exec|command", last) is not None))
    if shell_tool and command is not None:
        if isinstance(command, list):
            parts = [c for c in command if isinstance(c, str)]
            command = shlex.join(parts) if len(parts) == len(command) else " ".join(parts)
        if isinstance(command, str):
            shell = Shell(guard, bases)
            shell.run(command)
            return shell.found
    if editor and isinstance(tool_input, dict) and tool_input.get("command") == "view":
        return None
    if is_patch_tool(lower):  # every string of its input: hosts name the key differently
        found = _patch_writes(guard, tool_input, bases)
        if found is not None:
            return found
    if lower in READ_TOOLS or last in READ_TOOLS or (READ_NAME.match(last)
                                                      and not WRITE_WORD.search(last)):
        return None
    name = tool or "this tool"
    if last in GIT_TOOLS:
        found = _git_tool(guard, name, last, tool_input, bases)
    elif editor or WRITE_WORD.search(last):
        # a tool whose name says it writes: what it names is replaced as a whole, so a folder
        # that holds hooks counts too (create_directory only makes what it names)
        whole = not re.search(r"mkdir|create_directory|createdirectory", last)
        found = _named_paths(guard, tool_input, bases, whole, f"{name} would {_tool_verb(last)}")
    else:
        # a tool not known here: a write only where an argument names a protected location
        found = _named_paths(guard, tool_input, bases, NAMED, f"{name} naming")
        if found is not None:
            hook_md, _, _ = declared_readers()
            found = (*found, f"{name} is an unknown tool treated as a write: declare it a reader "
                             f"in {hook_md}, key metadata.readers (`readers: [{last or name}]` "
                             "under `metadata:`), if it only reads. Only the user edits that "
                             "file. Ask the user to declare it there, or to make this change "
                             "themselves; do not try another way around this check.")
    if found is not None:
        hook_md, readers, problem = declared_readers()
        if lower in readers or last in readers:
            if not (editor or is_patch_tool(lower) or _host_file_tool(tool)):
                return None
            found = (*found[:3], f"{name} is a file tool, read for what it writes whatever "
                                 f"{hook_md} declares (metadata.readers). {ASK_THE_USER}")
        if problem:
            what, path, label, *advice = found
            found = (what, path, f"{label}; and {problem}", *advice)
    return found


def _patch_writes(guard, tool_input, bases):
    """(what, path, label) of the first protected file a patch tool's input names."""
    for text in patch_strings(tool_input):
        for path in patch_paths(text):
            label = guard.why(path, bases)
            if label:
                return ("a patch that writes", path, label)
    return None


def _host_file_tool(tool):
    """A host's own file, patch or shell tool, by its whole name (the engine's vocabulary)."""
    # imported only when a declared reader would let a write through: ~40 ms of a cold start
    # (python -X importtime), never paid on an ordinary event
    from mcp_hooks.spec.vocabulary import writing_tool_names

    return tool.lower() in {n.lower() for n in writing_tool_names()}


def _named_paths(guard, tool_input, bases, whole, what):
    for _key, path in tool_paths(tool_input):
        label = guard.why(path, bases, whole)
        if label:
            return (what, path, label)
    return None


def _tool_verb(name):
    for word, verb in (("delet", "delete"), ("remov", "delete"), ("move", "move"),
                       ("renam", "rename"), ("edit", "edit"), ("replac", "edit"),
                       ("creat", "create"), ("copy", "copy to"), ("patch", "patch")):
        if word in name:
            return verb
    return "write"


# --- what the user declared a reader ---------------------------------------------------

# This hook's own HOOK.md (the copy that runs): `metadata.readers` lists tools, by name, that
# only read, so the guard lets them through whatever they name. It sits in a protected folder.
HOOK_MD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "HOOK.md")
_declared = {}  # (path, mtime_ns, size) -> (names, problem): re-read when the file changes


def declared_readers():
    """(HOOK.md path, lower-case tool names it declares readers, problem or None)."""
    path = HOOK_MD
    try:
        st = os.stat(path)
    except OSError as exc:
        return path, frozenset(), f"{path} cannot be read ({exc.strerror})"
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _declared:
        _declared.clear()
        _declared[key] = _read_readers(path)
    return (path, *_declared[key])


def _read_readers(path):
    # the engine's own frontmatter reader (mcp_hooks is importable: run.py is served by
    # mcp_hooks.hookkit), imported only when a tool call is about to be refused
    from pathlib import Path

    from mcp_hooks.spec.hookfile import parse_frontmatter

    fix = "it must be a list of tool names, e.g. `readers: [git_frob, mcp__tickets__search]`"
    try:
        with open(path, encoding="utf-8") as f:
            data = parse_frontmatter(Path(path), f.read(1_000_000))
    except Exception as exc:  # a HOOK.md the user broke: named in the refusal, never a crash
        return frozenset(), f"its readers could not be read ({exc})"
    metadata = data.get("metadata")
    readers = metadata.get("readers") if isinstance(metadata, dict) else None
    if readers is None:
        return frozenset(), None
    if isinstance(readers, str):
        readers = [readers]
    if not isinstance(readers, list) or not all(isinstance(r, str) and r for r in readers):
        return frozenset(), f"metadata.readers in {path} is ignored: {fix}"
    return frozenset(r.lower() for r in readers), None


# --- mcp-server-git --------------------------------------------------------------------

GIT_TIMEOUT = 3.0  # seconds per git command (the hook's own timeout is 5 s)
# The tools of mcp-server-git that change a repository (its readers are in READ_TOOLS): each
# may not work in a protected folder; git_add may not stage a protected path; git_commit may
# not record a staged change to one; git_checkout may not switch to a revision that changes one.
GIT_TOOLS = {"git_add", "git_commit", "git_checkout", "git_reset", "git_create_branch",
             "git_init"}


class GitFailed(Exception):
    """git could not say what a commit or checkout would change."""


def _git_tool(guard, name, last, tool_input, bases):
    args = tool_input if isinstance(tool_input, dict) else {}
    raw = args.get("repo_path")
    repo = guard.work_dir
    if isinstance(raw, str) and raw:
        label = guard.why(raw, bases, NAMED)
        if label:
            return (f"{name}, which writes into the repository at", raw, label)
        repo = next(iter(guard.resolve(raw, bases)), repo).rstrip("/") or "/"
    if last == "git_add":
        files = args.get("files")
        for file in files if isinstance(files, list) else [files]:
            label = guard.why(file, [repo], NAMED)
            if label:
                return (f"{name} of", file, label)
        return None
    if last not in ("git_commit", "git_checkout"):
        return None
    branch = args.get("branch_name")
    if last == "git_checkout" and not isinstance(branch, str):
        return None  # the server refuses it
    try:
        changed = _git_changes(guard, repo, None if last == "git_commit" else branch)
    except GitFailed as exc:
        return (f"{name}, whose changes could not be listed ({exc}), in", raw or repo,
                "it might change a hooks folder, so it is refused")
    for path, label in changed:
        if last == "git_commit":
            return (f"{name}, which records the staged change to", path, label)
        return (f"{name} of {branch!r}, which changes", path, label)
    return None


def _git_changes(guard, repo, revision):
    """(path, label) of each protected path the index (revision None: what a commit records)
    or a checkout of ``revision`` changes, asked of git with the protected paths as
    pathspecs, so git lists only those."""
    top = _git(repo, "rev-parse", "--show-toplevel").strip("\n")
    if not top:
        raise GitFailed(f"{repo} is not in a git working tree")
    specs = []
    for comps, subtree, _ in PATTERNS:
        specs.append(":(top,glob)**/" + "/".join(comps) + ("/**" if subtree else ""))
    for root, _, _ in guard.root_parts:
        if root.startswith(top + "/"):
            specs.append(":(top,literal)" + root[len(top) + 1:])
    if revision is None:
        try:
            out = _git(repo, "diff-index", "--cached", "--name-only", "-z", "--no-renames",
                       "HEAD", "--", *specs)
        except GitFailed:  # no commit yet: everything in the index is what a commit records
            out = _git(repo, "ls-files", "-z", "--cached", "--full-name", "--", *specs)
    else:
        out = _git(repo, "diff-tree", "-r", "--name-only", "-z", "--no-renames",
                   "--end-of-options", "HEAD", revision, "--", *specs)
    found = []
    for rel in out.split("\0"):
        if rel:
            label = guard.why(top + "/" + rel, [top], NAMED)
            if label:
                found.append((rel, label))
    return found


def _git(repo, *args):
    import subprocess  # only git_commit and git_checkout spawn: every other event stays fast

    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        done = subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", repo, *args],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=GIT_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {args[0]} took over {GIT_TIMEOUT:g} s") from None
    except (OSError, ValueError) as exc:
        raise GitFailed(f"git could not run: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitFailed(f"git {args[0]}: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "surrogateescape")


# --- the answer ------------------------------------------------------------------------

UNREADABLE = (f"{PREFIX} the event could not be read as JSON, so this tool call cannot be "
              "checked and is refused.")
ASK_THE_USER = ("Agents may read hook folders, the trust store and the hosts' hook config but "
                "never change them. Ask the user to make this change themselves (edit the hooks "
                "or config by hand, or run `mcp-hooks trust` / `mcp-hooks install` "
                "themselves); do not try another way around this check.")


def check(payload):
    """The refusal (its reason for the agent) of one before_tool event, or None to allow."""
    work_dir = payload.get("work_dir") or payload.get("cwd") or os.getcwd()
    if not isinstance(work_dir, str) or not os.path.isabs(work_dir):
        work_dir = os.getcwd()
    guard = Guard(os.path.normpath(work_dir))
    try:
        found = check_tool(guard, payload)
    except (TooBig, TooManyValues):
        tool = payload.get("tool_name") or payload.get("tool")
        return (f"{PREFIX} refused this {tool if isinstance(tool, str) else ''} call: it names "
                f"more paths than the {MAX_LOOKUPS} this guard checks per call, so it cannot "
                "tell whether it changes hook folders or the hosts' hook config. Split it into "
                "smaller calls (fewer files or words per command).")
    if found is None:
        return None
    what, path, label, *advice = found
    shown = path if len(path) <= 200 else path[:200] + "..."
    shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{PREFIX} refused {what} {shown!s} — {label}. {advice[0] if advice else ASK_THE_USER}"
