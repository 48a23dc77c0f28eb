"""The dangerous verbs, once a command's prefixes are read: ``check_verb(scan, verb, args,
depth, fed, env)`` denies ``rm -r`` of ``/``, ``~``, a system folder or everything where the
command is, ``find ... -delete`` there, ``chmod``/``chown``/``chgrp -R`` and ``rsync
--delete`` on one, moving one away, formatting, repartitioning, ``dd`` onto a disk and
``shred`` of a device; it also follows ``cd``/``pushd``/``popd`` and the variables a command
sets. Standard library only.
"""

from __future__ import annotations

import re

from command_words import DELETERS, MAX_DEPTH, base
from folders import SETTERS
from shell_lexer import HARMLESS_DEV, protected
from text_rules import FORMAT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from command_scan import Env, Feed, Scan

    Rule = Callable[[Scan, str, list[str], int], None]

FORMATTERS = re.compile(r"mkfs(?:\.\w+)?|mke2fs|mkswap|wipefs")


def check_verb(scan: Scan, verb: str, args: list[str], depth: int, fed: Feed | None,
               env: Env | None = None) -> None:
    """Deny ``verb args`` when it destroys the system or the user's files; follow where its
    ``cd`` leads and what variables it sets."""
    if verb in ("rm", "unlink") and fed is not None:  # xargs rm
        if fed[0] == "list":
            scan.deny(f"xargs {verb} on a listing of {fed[1]} would destroy the system or "
                      "the user's files")
        elif fed[0] == "text":
            args = args + fed[1].split()
    if verb in ("cd", "pushd", "popd"):
        scan.folders.chdir(verb, args, env)
    elif verb in SETTERS or verb == "unset":
        scan.folders.setter(verb, args)
    elif FORMATTERS.fullmatch(verb):
        scan.deny(FORMAT)
    else:
        rule = RULES.get(verb)
        if rule is not None:
            rule(scan, verb, args, depth)


def _rm(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    recursive, targets, end = False, [], False
    for word in args:
        if not end and word == "--":
            end = True
        elif not end and word.startswith("--"):
            name = word[2:].split("=", 1)[0]
            recursive |= bool(name) and "recursive".startswith(name)  # GNU takes prefixes
        elif not end and word.startswith("-") and len(word) > 1:
            recursive |= "r" in word or "R" in word
        else:
            targets.append(word)
    hit = next((h for t in targets if (h := scan.where(t, here=True))), None) \
        if recursive else None
    if hit:
        scan.deny(f"rm -r on {hit} would destroy the system or the user's files")


def _find(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    j = 0
    while j < len(args) and (args[j] in ("-H", "-L", "-P", "-D") or args[j].startswith("-O")):
        j += 2 if args[j] == "-D" else 1
    starts = []
    while j < len(args) and not args[j].startswith(("-", "(", "!", ")", ",")):
        starts.append(args[j])
        j += 1
    expr = args[j:]
    deletes = "-delete" in expr
    for k, arg in enumerate(expr):
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            deletes |= _exec(scan, expr, k, depth)
    root = next((p for s in starts or ["."] if (p := scan.where(s))), None)
    if root and deletes:
        scan.deny(f"find {root} ... deleting files walks the whole of "
                  f"{root.rsplit(' in ', 1)[-1]}; start it in the folder you mean to clean")


def _exec(scan: Scan, expr: list[str], k: int, depth: int) -> bool:
    """Whether the command of find's ``-exec`` at ``expr[k]`` deletes; it is read as a
    command too."""
    end = next((e for e in range(k + 1, len(expr)) if expr[e] in (";", "+")), len(expr))
    command = expr[k + 1:end]
    if not command:
        return False
    deletes = base(command[0]) in DELETERS or any(
        re.search(r"\b(?:rm|unlink|shred)\b", w) for w in command[1:])
    if depth <= MAX_DEPTH:
        scan.simple(command, None, [], None, depth + 1)
    return deletes


def _permissions(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    recursive = any(a == "--recursive" or re.match(r"^-[a-zA-Z]*R", a) for a in args)
    operands = [a for a in args if not a.startswith("-")][1:]
    hit = next((p for a in operands if (p := protected(a, here=False))), None)
    if recursive and hit:
        scan.deny(f"{verb} -R on {hit} breaks the permissions of the whole system")


def _rsync(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    operands = [a for a in args if not a.startswith("-")]
    if any(a.startswith("--del") for a in args) and operands:
        hit = protected(operands[-1], here=False)
        if hit:
            scan.deny(f"rsync --delete into {hit} deletes everything not in the source")


def _mv(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    operands = [a for a in args if not a.startswith("-")]
    hit = next((p for a in operands[:-1] if (p := protected(a, here=False))), None)
    if hit:
        scan.deny(f"moving {hit} away breaks the system or the user's files")


def _partition(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    if any(a.startswith("/dev/") for a in args):
        scan.deny("repartitioning a disk destroys its data")


def _dd(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    if any(a.startswith("of=/dev/") and not HARMLESS_DEV.match(a[3:]) for a in args):
        scan.deny("dd onto a device overwrites a disk")


def _shred(scan: Scan, verb: str, args: list[str], depth: int) -> None:
    if any(a.startswith("/dev/") for a in args):
        scan.deny("shredding a device destroys its data")


RULES: dict[str, Rule] = {
    "rm": _rm, "find": _find, "rsync": _rsync, "mv": _mv, "dd": _dd, "shred": _shred,
    **dict.fromkeys(("chmod", "chown", "chgrp"), _permissions),
    **dict.fromkeys(("fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk"), _partition),
}
