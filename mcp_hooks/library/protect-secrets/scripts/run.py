"""Deny writes to secret files, and writes whose content carries a secret."""

import json
import os
import re
import sys

SAFE_ENV = {".env.example", ".env.sample", ".env.template", ".env.dist"}
SECRET_NAMES = re.compile(
    r"^(?:\.env(?:\..+)?|.+\.(?:pem|key|p12|pfx|jks|keystore)|id_(?:rsa|dsa|ecdsa|ed25519)"
    r"|\.netrc|\.pgpass|credentials(?:\.json)?|service[-_]account.*\.json)$"
)
SECRET_DIRS = re.compile(r"(?:^|/)(?:\.ssh|\.aws|\.gnupg|\.docker|\.kube)/")
CONTENT_RULES = [
    (re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), "a private key"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?[A-Za-z0-9/+=]{40}"), "an AWS secret access key"),
    (re.compile(r"\"type\"\s*:\s*\"service_account\"[\s\S]*\"private_key\""), "a GCP service-account key"),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{60,}"), "a GitHub token"),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20}\b"), "a GitLab token"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    (re.compile(r"\b[rs]k_live_[A-Za-z0-9]{20,}"), "a Stripe live key"),
]
SHELL_WRITE = re.compile(r"(?:>>?|\btee\s+(?:-a\s+)?|\b(?:cp|mv|install)\s+\S+\s+)\s*['\"]?([^\s'\";&|>]+)")


def secret_path(path: str) -> str | None:
    name = os.path.basename(path.rstrip("/"))
    if name in SAFE_ENV:
        return None
    if SECRET_NAMES.match(name):
        return f"{name} is a secret file"
    if SECRET_DIRS.search(path if path.startswith("/") else "/" + path):
        return f"{path} is inside a folder of credentials"
    return None


def content_of(tool_input: dict) -> str:
    parts = [tool_input.get(k) for k in ("content", "new_string", "new_str", "text", "file_text")]
    for edit in tool_input.get("edits") or []:
        if isinstance(edit, dict):
            parts.append(edit.get("new_string") or edit.get("new_str"))
    return "\n".join(p for p in parts if isinstance(p, str))


def main() -> int:
    payload = json.load(sys.stdin)
    tool_input = payload.get("tool_input") or {}
    command = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(command, str):
        for target in SHELL_WRITE.findall(command):
            why = secret_path(target)
            if why:
                print(f"Secret file protected: {why}; the shell command would write it. "
                      "Ask the user to edit secrets by hand.", file=sys.stderr)
                return 2
        for rule, what in CONTENT_RULES:
            if rule.search(command):
                print(f"Secret protected: the command carries {what}. Never put secrets in "
                      "commands or files; reference an environment variable instead.", file=sys.stderr)
                return 2
        return 0
    path = next((tool_input[k] for k in ("path", "file_path", "filename", "target_file")
                 if isinstance(tool_input.get(k), str)), "")
    why = secret_path(path) if path else None
    if why:
        print(f"Secret file protected: {why}. Writes to it are refused; ask the user to "
              "change secrets by hand, or write an example file such as .env.example.", file=sys.stderr)
        return 2
    text = content_of(tool_input)
    for rule, what in CONTENT_RULES:
        if rule.search(text):
            print(f"Secret protected: the content for {path or 'this file'} carries {what}. "
                  "Do not write secrets into files; read them from the environment.", file=sys.stderr)
            return 2
    return 0


sys.exit(main())
