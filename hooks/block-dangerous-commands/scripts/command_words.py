"""The words of a command that matter here: the shells, interpreters, wrappers and runners a
verb may stand behind, the verbs that delete, and ``base(word)``, the verb a word names
(``/bin/rm``, ``/bin/r?``). Standard library only.
"""

from __future__ import annotations

import fnmatch
import re

from shell_lexer import GLOB

MAX_DEPTH = 8  # nested sh -c / eval / $(...) / interpreter levels
MAX_PARSE = 32_000  # characters split by shlex at once (heredoc bodies cut out), or of a program
MAX_CALLS = 200  # call sites (or verbs, in the conservative scan) read per program
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "tcsh", "csh", "yash"}
LANGS = {"python": "python", "pypy": "python", "node": "node", "nodejs": "node", "deno": "node",
         "bun": "node", "perl": "perl", "ruby": "ruby", "jruby": "ruby", "php": "php"}
WRAPPERS = {  # prefix -> its options that take a value
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-T", "-D", "--user", "--group",
             "--chdir"},
    "doas": {"-u", "-C"}, "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "nohup": set(),
    "nice": {"-n", "--adjustment"}, "ionice": {"-c", "-n", "-p"}, "time": {"-f", "-o"},
    "command": set(), "builtin": set(), "exec": {"-a"}, "stdbuf": {"-i", "-o", "-e"},
    "setsid": set(), "chronic": set(), "unbuffer": set(), "caffeinate": set(), "busybox": set(),
    "toybox": set(), "fakeroot": set(), "nocache": set(), "then": set(), "do": set(),
    "else": set(), "elif": set(), "if": set(), "while": set(), "until": set(), "!": set(),
    "{": set(), "xargs": {"-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-E", "-e", "-a",
                          "--max-args", "--max-procs", "--delimiter", "--arg-file"},
}
RUNNERS = {"uv", "uvx", "poetry", "pipenv", "pdm", "hatch", "rye", "npx", "bunx", "pnpx"}
DELETERS = {"rm", "unlink", "shred", "srm", "rmdir", "trash", "trash-put"}
PASS_THROUGH = {"cat", "tee", "sort", "uniq", "head", "tail"}
KNOWN = sorted({"rm", "find", "chmod", "chown", "chgrp", "rsync", "mv", "dd", "shred", "mkfs",
                "wipefs", "fdisk", "sfdisk", "parted", "gdisk", "eval", "xargs", *SHELLS, *LANGS})
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")
CHDIR = {("env", "-C"), ("env", "--chdir"), ("sudo", "-D"), ("sudo", "--chdir")}


def base(word: str) -> str:
    """The verb ``word`` names: its last path component, a wildcard matched to a known verb."""
    name = word.rsplit("/", 1)[-1]
    if GLOB.search(name):  # /bin/r? -rf /
        name = next((k for k in KNOWN if fnmatch.fnmatchcase(k, name)), name)
    return name

