"""What each shell verb writes: ``VERBS[verb](shell, verb, args, depth)`` calls ``shell.hit``
on every path the verb would create, change, move or delete (``rm`` its operands, ``cp`` its
destination, ``sed -i`` its files, ``curl -o`` its output, ...), and ``users_command`` names
the ``mcp-hooks`` commands only the user runs. Standard library only.
"""

from __future__ import annotations

import os
import re

from shell_words import SHELLS, WRITE_VERBS, options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from shell_writes import Shell

    Verb = Callable[[Shell, str, list[str], int], None]

# `mcp-hooks` commands only the user runs, and what each changes: an agent that approves its
# own ask (docs/ask.md) or trusts its own hook has taken the person out of the loop
USERS_COMMANDS = {
    "install": "a host's hook config", "uninstall": "a host's hook config",
    "new": "a hooks folder", "trust": "the mcp-hooks trust store",
    "untrust": "the mcp-hooks trust store",
    "approve": "a person's answer to a hook's ask", "refuse": "a person's answer to a hook's ask",
}
# the options before an `mcp-hooks` command that take a value (`--state URL approve ...`)
VALUE_OPTIONS = frozenset({"--state", "--user-dir", "--project-dir", "--log", "--mode",
                           "--managed-dir", "--on-fault", "--chain-timeout", "--scope",
                           "--stop-block-cap"})
# the short options that take a value, of the verbs `_all` reads
_VALUE = {"shred": {"n", "s"}, "mkdir": {"m"}, "touch": {"r", "d", "t"}, "truncate": {"s", "r"},
          "chmod": set(), "chown": set(), "chgrp": set()}


def users_command(args: list[str]) -> tuple[str, str, str] | None:
    """(what, path, label) when ``mcp-hooks ARGS`` runs a command only the user runs."""
    if any(a in ("--dry-run", "-h", "--help") for a in args):
        return None
    for j, arg in enumerate(args):
        if arg.startswith("-") or (j and args[j - 1] in VALUE_OPTIONS):
            continue
        if arg in USERS_COMMANDS:
            return (f"`mcp-hooks {arg}`, run by the agent, which changes", USERS_COMMANDS[arg],
                    "only the user runs it")
        return None
    return None


def _all(shell: Shell, verb: str, args: list[str], depth: int, whole: bool = True) -> None:
    operands, _ = options(args, with_value=_VALUE.get(verb, set()))
    for operand in operands:
        shell.hit(operand, f"`{verb}` of", whole)


def _create(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    _all(shell, verb, args, depth, whole=False)


def _copy(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    operands, found = options(
        args, with_value={"t", "S", "m", "o", "g", "e", "T"} if verb != "rsync" else {"e", "T"},
        long_with_value={"--target-directory", "--suffix", "--mode", "--owner", "--group",
                         "--rsh", "--exclude", "--include", "--filter", "--temp-dir"})
    names = {name for name, _ in found}
    targets = _copy_targets(verb, operands, found, names)
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


def _copy_targets(verb: str, operands: list[str], found: list[tuple[str, str]],
                  names: set[str]) -> list[str]:
    """What ``cp``/``mv``/``install``/``ln``/``rsync``/``scp`` write: the destination, and
    the sources where they go or change too."""
    targets = [v for name, v in found if name in ("-t", "--target-directory")]
    if verb in ("mv", "ln", "link") or "--remove-source-files" in names:
        targets += operands  # the sources go too (mv), or become links to them (ln)
    elif verb == "install" and ("-d" in names or "--directory" in names):
        targets += operands
    elif operands and not targets and len(operands) >= 2:
        targets.append(operands[-1])
    return targets


def _dd(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    for arg in args:
        if arg.startswith("of="):
            shell.hit(arg[3:], "`dd of=`")


def _sed(shell: Shell, verb: str, args: list[str], depth: int) -> None:
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
            skip, given, inplace_here = _sed_cluster(arg[1:])
            inplace |= inplace_here
            script_given |= given
            j += skip
        else:
            operands.append(arg)
        j += 1
    if inplace:
        for operand in operands if script_given else operands[1:]:
            shell.hit(operand, "`sed -i` on")


def _sed_cluster(cluster: str) -> tuple[int, bool, bool]:
    """(words its value takes after it, whether it gives the script, whether it edits in
    place) of one cluster of sed's short options."""
    head = re.match(r"^[nrEsuzi]*", cluster)
    flags = head.group(0) if head else ""
    rest = cluster[len(flags):]
    if rest[:1] in ("e", "f"):
        return int(len(rest) == 1), True, "i" in flags
    return int(rest[:1] == "l" and len(rest) == 1), False, "i" in flags


def _git(shell: Shell, verb: str, args: list[str], depth: int) -> None:
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
        operands, _ = options(rest, with_value={"b", "B", "s", "m", "p"} if sub != "rm" else set(),
                              long_with_value={"--source", "--orphan", "--directory"})
        for operand in operands:
            shell.hit(operand, f"`git {sub}` of", bases=bases)


def _tee(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    operands, _ = options(args)
    for operand in operands:
        shell.hit(operand, f"`{verb}` to")


def _curl(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    flags = {"curl": ({"o"}, {"--output", "--output-dir", "--dump-header", "--trace"}),
             "wget": ({"O", "P", "o", "a"}, {"--output-document", "--directory-prefix",
                                              "--output-file", "--append-output"})}[verb]
    _, found = options(args, with_value=flags[0] | ({"H", "d", "X", "u", "A", "e", "T", "F"}
                                                    if verb == "curl" else set()),
                       long_with_value=flags[1] | {"--header", "--data", "--user"})
    for name, value in found:
        if name.lstrip("-") in flags[0] or name in flags[1]:
            shell.hit(value, f"`{verb}` saving to")


def _archive(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    _, found = options(args, with_value={"C", "d", "f", "o"},
                       long_with_value={"--directory", "--file"})
    create = bool(args) and re.match(r"^-?[a-zA-Z]*[cru]", args[0]) is not None
    for name, value in found:
        if name in ("-C", "--directory", "-d", "-o") or (create and name in ("-f", "--file")):
            shell.hit(value, f"`{verb}` writing into")


def _find(shell: Shell, verb: str, args: list[str], depth: int) -> None:
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


def _patch(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    operands, found = options(args, with_value={"o", "d", "i", "p", "B", "r", "D", "F", "z"},
                              long_with_value={"--output", "--directory", "--input"})
    for operand in operands[:1]:
        shell.hit(operand, "`patch` of")
    for name, value in found:
        if name in ("-o", "--output"):
            shell.hit(value, "`patch` writing to")


def _rename(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    operands, _ = options(args)
    for operand in operands[1:]:
        shell.hit(operand, "`rename` of")


def _mcp_hooks(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    shell.mcp_hooks(verb, args, depth)


def _cd(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    operands, _ = options(args)
    shell.cd(operands[0] if operands else os.path.expanduser("~"))


def _gio(shell: Shell, verb: str, args: list[str], depth: int) -> None:
    if args and args[0] in ("trash", "remove", "move", "copy", "rename", "save", "set"):
        operands, _ = options(args[1:])
        for operand in operands:
            shell.hit(operand, f"`gio {args[0]}` of")


VERBS: dict[str, Verb] = {
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
