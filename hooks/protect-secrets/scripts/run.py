"""Deny writes to secret files, and writes whose content carries a secret.

Contract: one pre-tool-call event, served by ``mcp_hooks.hookkit`` (one-shot: exit 0 allows,
exit 2 denies with the reason on stderr; persistent: one answer per event line); the reason
never holds the secret itself. File tools are read by their path and content keys. A shell
command is read as text, so what it nests (``sh -c``, ``eval``, ``$(...)``, heredocs) is read
too: redirections and ``tee`` into a secret file, the target of ``cp``/``mv``/``install``/
``ln``/``dd of=``/``sed -i``/``truncate``/``curl -o``/``wget -O`` wherever the verb stands
(quotes and line continuations dropped, so ``".e"nv`` is ``.env``), an interpreter one-liner
or heredoc (python, node, perl, ruby, php) that writes and names a secret file in a string,
and secret content anywhere in the command. A patch (a patch tool's every string, or a
command that applies one) is read for the files its headers name and the lines it adds
(``mcp_hooks.spec.patchtext``, shared with protect-hooks). Linear work; commands past
MAX_COMMAND characters are read up to it. Python 3.10+, standard library, hookkit and
patchtext.
"""

from __future__ import annotations

import os
import re

from mcp_hooks.hookkit import deny, hook
from mcp_hooks.spec.patchtext import (
    TooManyValues,
    added_text,
    applies_patch,
    is_patch_tool,
    patch_paths,
    patch_strings,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_COMMAND = 1_000_000

SAFE_ENV = {".env.example", ".env.sample", ".env.template", ".env.dist"}
SECRET_NAMES = re.compile(
    r"^(?:\.env(?:\..+)?|.+\.(?:pem|key|p12|pfx|jks|keystore)|id_(?:rsa|dsa|ecdsa|ed25519)"
    r"|\.netrc|\.pgpass|credentials(?:\.json)?|service[-_]account.*\.json)$"
)
SECRET_DIRS = re.compile(r"(?:^|/)(?:\.ssh|\.aws|\.gnupg|\.docker|\.kube)/")
CONTENT_RULES: list[tuple[re.Pattern[str] | tuple[re.Pattern[str], re.Pattern[str]], str]] = [
    (re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), "a private key"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*['\"]?[A-Za-z0-9/+=]{40}"),
     "an AWS secret access key"),
    ((re.compile(r"\"type\"\s*:\s*\"service_account\""), re.compile(r"\"private_key\"")),
     "a GCP service-account key"),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{60,}"),
     "a GitHub token"),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20}\b"), "a GitLab token"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    (re.compile(r"\b[rs]k_live_[A-Za-z0-9]{20,}"), "a Stripe live key"),
]
SHELL_WRITE = re.compile(
    r"(?:>>?|\btee\s+(?:-a\s+)?|\b(?:cp|mv|install)\s+\S+\s+)\s*['\"]?([^\s'\";&|>]+)")
# verb -> which of its words it writes: "last" operand, "all" operands, or an option's value
WRITERS = {"cp": "last", "mv": "last", "install": "last", "ln": "last", "rsync": "last",
           "tee": "all", "truncate": "all", "touch": "all", "sed": "all", "perl": "all",
           "dd": "of=", "curl": "-o", "wget": "-O"}
INTERPRETER = re.compile(r"\b(?:python[\d.]*|pypy\d*|node|nodejs|deno|bun|perl|ruby|php)\b")
# compiled on first use (re's cache): most commands run no interpreter
WRITE_API = (
    r"\bopen\s*\([^)]*['\"](?:[wax]|r\+)|write_text|write_bytes|writeFile|appendFile"
    r"|createWriteStream|\b(?:File|IO)\s*\.\s*(?:write|open|new)|copy(?:file|File|2|tree)?\s*\("
    r"|\brename\w*\s*\(|\breplace\s*\(|\bmove\s*\(|symlink|file_put_contents|fopen"
    r"|['\"]\s*\+?>{1,2}\s*['\"]|\bopen\s*\(?\s*\w*\s*,?\s*['\"]\+?>")
LITERAL = r"'([^'\"\n]{1,1024})'|\"([^'\"\n]{1,1024})\""


def carries(text: str) -> str | None:
    """What secret ``text`` carries, if any. A (first, then) rule searches on from its first
    match only: the same answer as ``first[\\s\\S]*then`` in linear time."""
    for rule, what in CONTENT_RULES:
        if isinstance(rule, tuple):
            m = rule[0].search(text)
            if m and rule[1].search(text, m.end()):
                return what
        elif rule.search(text):
            return what
    return None


def secret_path(path: str) -> str | None:
    name = os.path.basename(path.rstrip("/"))
    if name in SAFE_ENV:
        return None
    if SECRET_NAMES.match(name):
        return f"{name} is a secret file"
    if SECRET_DIRS.search(path if path.startswith("/") else "/" + path):
        return f"{path} is inside a folder of credentials"
    return None


def shell_targets(command: str) -> list[str]:
    """Every file a shell command evidently writes, wherever the verb stands (nested too)."""
    flat = re.sub(r"\\\r?\n", "", command)
    targets = [m for text in (command, re.sub(r"['\"\\]", "", flat))
               for m in SHELL_WRITE.findall(text)]
    for segment in re.split(r"[;&|\n()`]|\$\(", re.sub(r"['\"\\]", "", flat)):
        targets += segment_targets(segment.split())
    if INTERPRETER.search(command) and re.search(WRITE_API, command):
        targets += [m.group(1) or m.group(2) for m in re.finditer(LITERAL, command)]
    if applies_patch(command):
        targets += patch_paths(command)
    return targets


def segment_targets(words: list[str]) -> list[str]:
    """The files the writers among one segment's ``words`` write."""
    targets: list[str] = []
    verbs = [k for k, word in enumerate(words) if word.rsplit("/", 1)[-1] in WRITERS]
    for n, k in enumerate(verbs):
        end = verbs[n + 1] if n + 1 < len(verbs) else len(words)
        word = words[k]
        args = words[k + 1:min(end, k + 257)]  # up to the next writer: linear in all
        if word.endswith(("sed", "perl")) and not any(
                re.match(r"^-[a-zA-Z]*i", a) or a.startswith("--in-place") for a in args):
            continue
        targets += written(WRITERS[word.rsplit("/", 1)[-1]], args)
    return targets


def written(how: str, args: list[str]) -> list[str]:
    """What a writer's ``args`` write: its ``last`` operand, ``all`` of them, or an
    option's value (``of=``, ``-o``, ``-O``)."""
    operands = [a for a in args if not a.startswith("-")]
    if how == "last":
        return operands[-1:]
    if how == "all":
        return operands
    if how == "of=":
        return [a[3:] for a in args if a.startswith("of=")]
    return ([args[j + 1] for j, a in enumerate(args[:-1])
             if a == how or a in ("--output", "--output-document")]
            + [a[2:] for a in args if a.startswith(how) and len(a) > 2])


def content_of(tool_input: dict[str, object]) -> str:
    parts = [tool_input.get(k) for k in ("content", "new_string", "new_str", "text", "file_text")]
    edits = tool_input.get("edits")
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, dict):
            parts.append(edit.get("new_string") or edit.get("new_str"))
    return "\n".join(p for p in parts if isinstance(p, str))


def patch_refusal(tool_input: object) -> dict[str, Any] | None:
    """A patch tool's call: every string of its input read as a patch."""
    try:
        texts = patch_strings(tool_input)
    except TooManyValues as exc:
        return deny(f"Secret files protected: {exc}, too many to check; split the patch.")
    for text in texts:
        for path in patch_paths(text):
            why = secret_path(path)
            if why:
                return deny(f"Secret file protected: {why}; the patch would write it. Ask the "
                            "user to change secrets by hand, or patch an example file such as "
                            ".env.example.")
        what = carries(added_text(text))
        if what:
            return deny(f"Secret protected: the patch adds {what}. Do not write secrets into "
                        "files; read them from the environment.")
    return None


def shell_refusal(command: str) -> dict[str, Any] | None:
    """A shell command's: a secret file it writes, or a secret it carries."""
    for target in shell_targets(command):
        why = secret_path(target)
        if why:
            return deny(f"Secret file protected: {why}; the shell command would write it. "
                        "Ask the user to edit secrets by hand.")
    what = carries(command)
    if what:
        return deny(f"Secret protected: the command carries {what}. Never put secrets in "
                    "commands or files; reference an environment variable instead.")
    return None


def file_refusal(tool_input: dict[str, Any]) -> dict[str, Any] | None:
    """A file tool's: the secret file it names, or a secret in the content it writes."""
    path = next((tool_input[k] for k in ("path", "file_path", "filename", "target_file")
                 if isinstance(tool_input.get(k), str)), "")
    why = secret_path(path) if path else None
    if why:
        return deny(f"Secret file protected: {why}. Writes to it are refused; ask the user to "
                    "change secrets by hand, or write an example file such as .env.example.")
    text = content_of(tool_input)
    what = carries(text)
    if what:
        return deny(f"Secret protected: the content for {path or 'this file'} carries {what}. "
                    "Do not write secrets into files; read them from the environment.")
    return None


@hook
def main(payload: dict[str, Any]) -> dict[str, Any] | None:
    tool_input = payload.get("tool_input") or {}
    if is_patch_tool(payload.get("tool_name")):
        return patch_refusal(tool_input)
    command = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        # lazy: only for a list command (python -X importtime: shlex is 0.2 ms of a cold start)
        import shlex

        command = shlex.join(command)
    if isinstance(command, str):
        return shell_refusal(command[:MAX_COMMAND])
    return file_refusal(tool_input)
