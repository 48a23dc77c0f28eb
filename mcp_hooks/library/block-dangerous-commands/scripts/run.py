"""Deny shell commands that destroy a system or pipe the internet into a shell."""

import json
import re
import shlex
import sys

PROTECTED = {
    "/", "/*", "~", "~/", "~/*", "$HOME", "${HOME}", "$HOME/", "$HOME/*", "${HOME}/*", ".", "..",
    *(f"/{d}{tail}" for d in ("bin", "boot", "dev", "etc", "home", "lib", "lib64", "opt", "root",
                               "sbin", "srv", "sys", "usr", "var") for tail in ("", "/", "/*")),
}
RULES = [
    (re.compile(r"\b(?:mkfs(?:\.\w+)?|wipefs|mke2fs|mkswap)\b"),
     "formatting a filesystem destroys everything on it"),
    (re.compile(r"\b(?:fdisk|sfdisk|parted|gdisk)\b[^;&|]*/dev/"), "repartitioning a disk destroys its data"),
    (re.compile(r"\bdd\b[^|;&]*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)"),
     "dd onto a device overwrites a disk"),
    (re.compile(r">\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d)"),
     "writing straight to a disk device destroys its data"),
    (re.compile(r"\bshred\b[^|;&]*/dev/"), "shredding a device destroys its data"),
    (re.compile(r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:\s*&[^}]*\}\s*;\s*:"), "a fork bomb exhausts the machine"),
    (re.compile(r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:env\s+\S+\s+)?"
                r"(?:sh|bash|zsh|dash|ksh|fish|python[\d.]*|perl|ruby|node)\b"),
     "piping a download into an interpreter runs unreviewed code; download it, read it, then run it"),
    (re.compile(r"\b(?:sh|bash|zsh)\s+(?:-c\s+)?[\"']?(?:\$\(|<\()\s*(?:curl|wget)\b"),
     "running a downloaded script unseen"),
    (re.compile(r"\bchmod\s+(?:-\w*R\w*\s+|--recursive\s+)[0-7]*777\s+/(?:\s|$)"),
     "chmod -R 777 / breaks every permission on the system"),
    (re.compile(r"\bchown\s+(?:-\w*R\w*\s+|--recursive\s+)\S+\s+/(?:\s|$)"), "chown -R on / breaks the system"),
]
SEPARATORS = {";", "&&", "||", "|", "&", "\n"}


def simple_commands(command: str) -> list[list[str]]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain splitting
        tokens = command.split()
    commands, current = [], []
    for token in tokens:
        if token in SEPARATORS or set(token) <= set(";&|"):
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


def rm_danger(words: list[str]) -> str | None:
    while words and (words[0] in ("sudo", "doas", "command", "exec", "nice", "time") or "=" in words[0]):
        words = words[1:]
    if not words or words[0].rsplit("/", 1)[-1] != "rm":
        return None
    recursive, targets, end_of_flags = False, [], False
    for word in words[1:]:
        if not end_of_flags and word == "--":
            end_of_flags = True
        elif not end_of_flags and word.startswith("--"):
            recursive |= word == "--recursive"
        elif not end_of_flags and word.startswith("-") and len(word) > 1:
            recursive |= "r" in word or "R" in word
        else:
            targets.append(word)
    hits = [t for t in targets if t in PROTECTED or t.rstrip("/") in PROTECTED]
    if recursive and hits:
        return f"rm -r on {hits[0]} would destroy the system or the user's files"
    return None


def main() -> int:
    payload = json.load(sys.stdin)
    tool_input = payload.get("tool_input") or {}
    command = tool_input.get("command") or tool_input.get("cmd") or ""
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    reasons = [why for rule, why in RULES if rule.search(command)]
    reasons += [why for words in simple_commands(command) if (why := rm_danger(words))]
    if reasons:
        print(f"Dangerous command blocked: {reasons[0]}. Command: {command.strip()[:300]}",
              file=sys.stderr)
        return 2
    return 0


sys.exit(main())
