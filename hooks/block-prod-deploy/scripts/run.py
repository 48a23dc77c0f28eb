"""Deny shell commands that change production, unless ALLOW_PROD_DEPLOY=1.

Contract: one pre-tool-call event, served by ``mcp_hooks.hookkit`` (one-shot: exit 0 allows,
exit 2 denies with the reason on stderr; persistent: one answer per event line). The rules
are searched in the command's text, so what it nests (``sh -c``, ``eval``, ``$(...)``, a
heredoc, an interpreter's ``os.system("...")``) is searched too; they are also searched with
line continuations joined and quotes and backslashes dropped, so ``kubectl apply \\`` +
newline + ``--context prod`` and ``ter'r'aform apply ... prod`` are read as written. A list
command is joined as a shell would quote it. Linear work; commands past MAX_COMMAND
characters are read up to it. Python 3.10+, standard library and hookkit.
"""

from __future__ import annotations

import os
import re

from mcp_hooks.hookkit import deny, hook

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_COMMAND = 1_000_000

PROD = re.compile(r"(?i)\b(?:prod|production|prd)\b")
READ_ONLY = r"(?!\s+(?:get|describe|logs|top|explain|version|diff|config\s+view)\b)"
# (first, then): a line that holds `first` and, after it, `then`. Searching on from the first
# `first` only is enough (a later one leaves less after it) and keeps the work linear, where
# one regex `first.*?then` retried at every `first` is quadratic on a hostile line.
CHAINS = [
    (re.compile(r"(?i)\b(?:deploy|release|promote|rollout|ship)"), PROD),
    (re.compile(r"(?i)\bkubectl\b" + READ_ONLY), re.compile(r"(?i)\bproduction\b")),
    (re.compile(r"(?i)\bhelm\s+(?:upgrade|install|uninstall|delete|rollback)\b"), PROD),
    (re.compile(r"(?i)\bterraform\s+(?:apply|destroy|import)\b"), PROD),
    (re.compile(r"(?i)\bpulumi\s+(?:up|destroy|refresh)\b"), PROD),
    (re.compile(r"(?i)\bgit\s+push\b"),
     re.compile(r"(?i)\s(?:\S+:)?(?:refs/heads/)?(?:prod|production)\b")),
]
KUBECTL = re.compile(r"(?i)\bkubectl\b" + READ_ONLY)
KUBE_TARGET = re.compile(r"(?i)(?:--context|--namespace|--cluster|-n)[= ](\S*)")
WORD = re.compile(r"[\w:.-]+")
PROD_WORD = re.compile(r"(?i)\b(?:prod|production)")
ACTION = re.compile(r"(?i)deploy|release|rollout")


def changes_prod(line: str) -> bool:
    """One line: deploy ... prod, a kubectl change to a prod context or namespace, helm/
    terraform/pulumi against prod, a push to a prod branch, or one word such as prod-deploy."""
    for first, then in CHAINS:
        m = first.search(line)
        if m and then.search(line, m.end()):
            return True
    m = KUBECTL.search(line)
    if m and any(PROD.search(t.group(1)) for t in KUBE_TARGET.finditer(line, m.end())):
        return True
    for w in WORD.finditer(line):
        p = PROD_WORD.search(w.group(0))
        if p and ACTION.search(w.group(0), p.end()):
            return True
    return False


@hook
def main(payload: dict[str, Any]) -> dict[str, Any] | None:
    if os.environ.get("ALLOW_PROD_DEPLOY") == "1":
        return None
    tool_input = payload.get("tool_input") or {}
    command = tool_input.get("command") or tool_input.get("cmd") or ""
    if isinstance(command, list):
        # lazy: only for a list command (python -X importtime: shlex is 0.2 ms of a cold start)
        import shlex

        command = (shlex.join(command) if all(isinstance(c, str) for c in command)
                   else " ".join(map(str, command)))
    if not isinstance(command, str):
        return None
    command = command[:MAX_COMMAND]
    joined = re.sub(r"\\\r?\n", " ", command)
    texts = (command, joined, re.sub(r"['\"\\]", "", joined))
    if any(changes_prod(line) for text in texts for line in text.split("\n")):
        return deny("Production change blocked: this command deploys to or modifies production. "
                    "Stop and ask a person to run it (or set ALLOW_PROD_DEPLOY=1 for this "
                    f"session). Command: {command.strip()[:300]}")
    return None
