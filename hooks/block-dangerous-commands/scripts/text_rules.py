"""The dangerous commands read on the text itself: ``rule_hit(text)`` is the reason of the
first of ``RULES`` the text matches (formatting, repartitioning or overwriting a disk, a fork
bomb, a download piped into an interpreter, ``chmod``/``chown -R`` on ``/``). They run on
every command before it is parsed, and on what cannot be parsed (the conservative scan).
Standard library only.
"""

from __future__ import annotations

import re

# (words one of which the command must hold, pattern, why): a pattern is compiled only when
# one of its words is there, so a plain command pays for none of them.
RULES = [
    (("mkfs", "wipefs", "mke2fs", "mkswap"), r"\b(?:mkfs(?:\.\w+)?|wipefs|mke2fs|mkswap)\b",
     "formatting a filesystem destroys everything on it"),
    (("disk", "parted"), r"\b(?:fdisk|sfdisk|parted|gdisk)\b[^;&|]*/dev/",
     "repartitioning a disk destroys its data"),
    (("of=/dev/",), r"\bdd\b[^|;&]*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)",
     "dd onto a device overwrites a disk"),
    (("/dev/",), r">\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d)",
     "writing straight to a disk device destroys its data"),
    (("shred",), r"\bshred\b[^|;&]*/dev/", "shredding a device destroys its data"),
    ((":",), r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:\s*&[^}]*\}\s*;\s*:",
     "a fork bomb exhausts the machine"),
    (("curl", "wget", "fetch"), r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:env\s+\S+\s+)?"
     r"(?:sh|bash|zsh|dash|ksh|fish|python[\d.]*|perl|ruby|node)\b",
     "piping a download into an interpreter runs unreviewed code; download it, read it, "
     "then run it"),
    (("curl", "wget"), r"\b(?:sh|bash|zsh)\s+(?:-c\s+)?[\"']?(?:\$\(|<\()\s*(?:curl|wget)\b",
     "running a downloaded script unseen"),
    (("chmod",), r"\bchmod\s+(?:-\w*R\w*\s+|--recursive\s+)[0-7]*777\s+/(?:\s|$)",
     "chmod -R 777 / breaks every permission on the system"),
    (("chown",), r"\bchown\s+(?:-\w*R\w*\s+|--recursive\s+)\S+\s+/(?:\s|$)",
     "chown -R on / breaks the system"),
]
FORMAT = "formatting a filesystem destroys everything on it"
DOWNLOAD = ("piping a download into an interpreter runs unreviewed code; download it, read it, "
            "then run it")


def rule_hit(text: str) -> str | None:
    """The reason of the first of ``RULES`` ``text`` matches, or None."""
    return next((why for words, rule, why in RULES
                 if any(w in text for w in words) and re.search(rule, text)), None)

