"""Deny shell commands that change production, unless ALLOW_PROD_DEPLOY=1."""

import json
import os
import re
import sys

PROD = r"(?:prod|production|prd)\b"
READ_ONLY = r"(?!\s+(?:get|describe|logs|top|explain|version|diff|config\s+view)\b)"
RULES = [
    re.compile(r"(?i)\b(?:deploy|release|promote|rollout|ship)[\w:.-]*.*?\b" + PROD),
    re.compile(r"(?i)\b(?:prod|production)[\w:.-]*(?:deploy|release|rollout)"),
    re.compile(r"(?i)\bkubectl\b" + READ_ONLY +
               r".*?(?:--context|--namespace|--cluster|-n)[= ]\S*\b" + PROD),
    re.compile(r"(?i)\bkubectl\b" + READ_ONLY + r".*\bproduction\b"),
    re.compile(r"(?i)\bhelm\s+(?:upgrade|install|uninstall|delete|rollback)\b.*?\b" + PROD),
    re.compile(r"(?i)\bterraform\s+(?:apply|destroy|import)\b.*?\b" + PROD),
    re.compile(r"(?i)\bpulumi\s+(?:up|destroy|refresh)\b.*?\b" + PROD),
    re.compile(r"(?i)\bgit\s+push\b.*?\s(?:\S+:)?(?:refs/heads/)?(?:prod|production)\b"),
]


def main() -> int:
    if os.environ.get("ALLOW_PROD_DEPLOY") == "1":
        return 0
    payload = json.load(sys.stdin)
    tool_input = payload.get("tool_input") or {}
    command = tool_input.get("command") or tool_input.get("cmd") or ""
    if isinstance(command, list):
        command = " ".join(map(str, command))
    if any(rule.search(command) for rule in RULES):
        print("Production change blocked: this command deploys to or modifies production. "
              "Stop and ask a person to run it (or set ALLOW_PROD_DEPLOY=1 for this session). "
              f"Command: {command.strip()[:300]}", file=sys.stderr)
        return 2
    return 0


sys.exit(main())
