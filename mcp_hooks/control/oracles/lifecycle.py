"""Oracles of the issue's course: ``ContextLoader``, ``ChangeLogger``, ``ReviewTrigger``,
``RetrospectiveGenerator``. They advise (aid signals) and record; none blocks.

What would reach outside the machine (notifying reviewers, opening a pull request) is a
configured ``command``: it runs in the project with the event payload as JSON on stdin and
``AHP_ACTIONS`` (space-separated: ``notify_reviewers``, ``create_pr``, ``archive_issue``) in
its environment, and its first line of output becomes the aid's text. Such an entry runs a
command, so from a project's hooks.yaml it needs the project's trust. Without a command the
aid says what a person should do instead.

- ``ContextLoader``: an aid with the issue, the changed files (``include_files``) and the
  last ``history`` commits (``include_git_history``).
- ``ChangeLogger``: appends one JSON line per call (time, session, tool, files) to
  ``log_file`` (default ``$XDG_STATE_HOME/mcp-hooks/changes.jsonl``) in one ``O_APPEND``
  write; ``log_level: debug`` also returns an aid saying so.
- ``ReviewTrigger``: ``notify_reviewers`` / ``create_pr`` through ``command``.
- ``RetrospectiveGenerator``: metrics of the issue (files changed, checklist done, commits)
  with ``generate_metrics``; ``archive_issue`` writes ``<archive_dir>/<issue id>.json``
  (``archive_dir`` inside the project, default ``.ahp/archive``); ``command`` too if given.

Where they write: ``ChangeLogger`` and ``RetrospectiveGenerator`` with ``archive_issue``
write files, so, like an entry with a command, they need the project's trust when a
project's hooks.yaml names them (``runs_commands()``); an untrusted one writes nothing. A
trusted one writes only inside the project or the state folder: ``log_file`` is relative to
the project or absolute inside one of them, ``archive_dir`` relative to the project (``~``
and ``..`` are config errors), and the file is reached without following any symlink below
that folder (``runtime``): a committed symlink cannot lead a write outside it; such a write
is refused and the aid says why.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from mcp_hooks.control import runtime
from mcp_hooks.control.context import OracleContext, git
from mcp_hooks.control.oracles.base import (
    Option,
    Oracle,
    OracleConfigError,
    checked_path,
    run_command,
)
from mcp_hooks.paths import state_dir
from mcp_hooks.spec.signals import Signal

_COMMAND_WORDS = "a command (a string, or a list of words)"
ACTION_TIMEOUT = 60.0  # the default timeout of the oracles that may run a command


def _command_option() -> Option:
    return Option((str, list), None, _COMMAND_WORDS)


def _run_action(oracle: Oracle, context: OracleContext, actions: list[str]) -> str | None:
    """Run the configured command for ``actions``; its first output line, or why it failed."""
    command = oracle.config.get("command")
    if not command or not actions:
        return None
    result = run_command(command, context.work_dir, stdin=json.dumps(dict(context.payload)),
                         env={"AHP_ACTIONS": " ".join(actions)},
                         timeout=oracle.timeout)
    if not result.ok:
        return f"{' '.join(actions)} failed: {result.summary(300) or result.returncode}"
    lines = result.stdout.strip().splitlines()
    return lines[0] if lines else f"{' '.join(actions)} done"


class ContextLoader(Oracle):
    name = "ContextLoader"
    options: ClassVar[Mapping[str, Option]] = {
        "include_files": Option((bool,), True, "true or false"),
        "include_git_history": Option((bool,), True, "true or false"),
        "history": Option((int,), 10, "a number of commits"),
    }

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        if not 1 <= self.config["history"] <= 1000:
            raise OracleConfigError("history", "must be a number of commits from 1 to 1000")

    def evaluate(self, context: OracleContext) -> Signal | None:
        issue = context.issue
        parts = []
        if issue is not None:
            parts.append(f"issue {issue.id or '?'}: {issue.title or ''} "
                         f"({issue.type or 'issue'}, {issue.status or 'open'})".strip())
        if self.config["include_files"] and context.changed_files:
            parts.append("changed files: " + ", ".join(context.changed_files[:50]))
        follow: list[str] = []
        if self.config["include_git_history"]:
            try:
                log = git(context.work_dir, "log", f"-{self.config['history']}",
                          "--format=%h %s")
            except OSError:
                log = None
            if log is not None and log.returncode == 0 and log.stdout.strip():
                follow = log.stdout.strip().splitlines()
                parts.append("recent commits: " + "; ".join(follow))
        if not parts:
            return None
        return Signal.aid(". ".join(parts), follow_ups=[], type="context",
                          files=context.changed_files)


class ChangeLogger(Oracle):
    name = "ChangeLogger"
    options: ClassVar[Mapping[str, Option]] = {
        "log_level": Option((str,), "info", "info or debug"),
        "log_file": Option((str,), None, "a file to append JSON lines to"),
    }

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        if self.config["log_level"] not in ("info", "debug"):
            raise OracleConfigError("log_level", "must be info or debug")
        given = self.config["log_file"]
        if given is not None and not given.startswith("/"):
            checked_path("log_file", given)
        elif given is not None and "\0" in given:
            raise OracleConfigError("log_file", f"{given!r} is not a path")

    def runs_commands(self) -> bool:
        return True  # it writes a file: a project's entry needs the project's trust

    def target(self, context: OracleContext) -> tuple[Path, tuple[str, ...]]:
        """The folder the log is written under and its path there.

        Raises:
            runtime.FileRefused: ``log_file`` is outside the project and the state folder.
        """
        given = self.config["log_file"]
        if given:
            return runtime.locate(given, [context.work_dir, state_dir()], "log_file")
        return state_dir(), ("changes.jsonl",)

    def path(self, context: OracleContext) -> Path:
        root, parts = self.target(context)
        return root.joinpath(*parts)

    def evaluate(self, context: OracleContext) -> Signal | None:
        files = sorted({str(v) for k, v in context.tool_input.items()
                        if k in ("file_path", "path", "notebook_path") and v})
        record = {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "session_id": context.session_id, "hook": context.trigger,
                  "tool": context.tool_name, "files": files, "work_dir": str(context.work_dir)}
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "replace")
        shown = self.config["log_file"] or "changes.jsonl"
        try:
            root, parts = self.target(context)
            shown = str(root.joinpath(*parts))
            if root != context.work_dir:
                root.mkdir(mode=0o700, parents=True, exist_ok=True)  # our own state folder
            runtime.append_inside(root, parts, line, what="log_file")
        except runtime.FileRefused as exc:
            return Signal.aid(f"the change log is not written: {exc}", type="change_log")
        except OSError as exc:
            return Signal.aid(f"the change log {shown} cannot be written "
                              f"({exc.strerror or exc})", type="change_log")
        if self.config["log_level"] == "debug":
            return Signal.aid(f"logged {context.tool_name} to {shown}", type="change_log",
                              files=files)
        return None


class ReviewTrigger(Oracle):
    name = "ReviewTrigger"
    options: ClassVar[Mapping[str, Option]] = {
        "notify_reviewers": Option((bool,), True, "true or false"),
        "create_pr": Option((bool,), False, "true or false"),
        "command": _command_option(),
    }
    default_timeout = ACTION_TIMEOUT

    def runs_commands(self) -> bool:
        return bool(self.config["command"])

    def evaluate(self, context: OracleContext) -> Signal | None:
        actions = [a for a in ("notify_reviewers", "create_pr") if self.config[a]]
        if not actions:
            return None
        done = _run_action(self, context, actions)
        if done is not None:
            return Signal.aid(done, type="review", follow_ups=["wait for the review"])
        todo = {"notify_reviewers": "ask a reviewer to look at the submission",
                "create_pr": "open a pull request for the branch"}
        return Signal.aid("submitted for review; no notification command is configured",
                          follow_ups=[todo[a] for a in actions], type="review")


class RetrospectiveGenerator(Oracle):
    name = "RetrospectiveGenerator"
    options: ClassVar[Mapping[str, Option]] = {
        "generate_metrics": Option((bool,), True, "true or false"),
        "archive_issue": Option((bool,), False, "true or false"),
        "archive_dir": Option((str,), ".ahp/archive", "a folder inside the project"),
        "command": _command_option(),
    }
    default_timeout = ACTION_TIMEOUT

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        checked_path("archive_dir", self.config["archive_dir"])

    def runs_commands(self) -> bool:  # a command, or a file written into the project
        return bool(self.config["command"]) or bool(self.config["archive_issue"])

    def metrics(self, context: OracleContext) -> dict[str, Any]:
        issue = context.issue
        checklist = issue.checklist if issue and issue.checklist else ()
        out: dict[str, Any] = {"files_changed": len(context.changed_files),
                               "checklist_items": len(checklist),
                               "checklist_done": sum(1 for i in checklist if i.done)}
        try:
            count = git(context.work_dir, "rev-list", "--count", "HEAD")
            out["commits"] = int(count.stdout.strip()) if count.returncode == 0 else None
        except (OSError, ValueError):
            out["commits"] = None
        return out

    def evaluate(self, context: OracleContext) -> Signal | None:
        notes: list[str] = []
        metrics = self.metrics(context) if self.config["generate_metrics"] else {}
        if metrics:
            notes.append("metrics: " + ", ".join(f"{k} {v}" for k, v in metrics.items()))
        if self.config["archive_issue"]:
            ident = re.sub(r"[^A-Za-z0-9._-]", "_", context.issue_id or "issue").lstrip(".")
            parts = (*runtime.relative_parts(self.config["archive_dir"], "archive_dir"),
                     f"{ident or 'issue'}.json")
            shown = "/".join(parts)
            record = {"issue": dict(context.issue.raw) if context.issue else None,
                      "metrics": metrics, "closed_at":
                      time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            data = (json.dumps(record, indent=2, default=str) + "\n").encode("utf-8",
                                                                             "replace")
            try:
                runtime.replace_inside(context.work_dir, parts, data, what="archive")
                notes.append(f"archived to {shown}")
            except runtime.FileRefused as exc:
                notes.append(f"not archived: {exc}")
            except OSError as exc:
                notes.append(f"cannot archive to {shown} ({exc.strerror or exc})")
        done = _run_action(self, context, ["archive_issue"] if self.config["archive_issue"]
                           else ["retrospective"])
        if done:
            notes.append(done)
        if not notes:
            return None
        return Signal.aid("; ".join(notes), type="retrospective",
                          best_practices=["review what slowed the issue down"])
