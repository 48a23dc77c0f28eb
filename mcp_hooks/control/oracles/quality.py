"""Oracles on the work itself: checklist, change size, commit message, completion.

- ``ChecklistValidator``: the checklist comes from the issue payload (``issue.checklist``)
  or, with ``checklist_file``, from the task boxes (``- [ ]`` / ``- [x]``) of a markdown
  file in the project. Below ``min_completion_rate`` (default 1.0): block, listing the open
  items as ``chk-NNN``. At or above it but not complete: a prompt when ``allow_partial`` is
  false, nothing when it is true. No checklist at all: nothing (``require_checklist: true``
  makes it a block). The file is read inside the project only: a path with ``..``, ``~``
  or an absolute one is a config error; a symlink on the way, a FIFO or another non-regular
  file, or one over ``CHECKLIST_CAP`` bytes is a fault naming the file (a missing one is
  no checklist).
- ``FileChangeLimiter``: more than ``max_files`` changed files (the issue's
  ``files_changed``, else git) -> ``action``: ``prompt`` (a warning), ``block``, or
  ``control`` (default) with ``control_action: split_batch``: a modification proposing
  batches of at most ``batch_size`` (default ``max_files``) files, keeping each top folder
  together while it fits. ``base`` must look like a revision (never an option: no leading
  ``-``) and name a commit (``context.resolve_commit``), else the evaluation is a fault.
- ``CommitMessageValidator``: the message is the payload's ``commit_message``, the issue's,
  the tool input's ``message``, the ``-m`` of a ``git commit`` command, else the last
  commit's (``git log -1``). It must match ``pattern`` (RE2, searched: anchor it with ``^``;
  default Conventional Commits) and carry each of ``required_fields`` as a trailer
  (``Field: value``). Default intensity prompt.
- ``CompletionVerifier``: before closing, code changes need test changes
  (``require_tests``) and documentation changes (``require_docs``), and the checklist must
  be complete when there is one. Block.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, ClassVar

from mcp_hooks.control import runtime
from mcp_hooks.control.context import ChecklistItem, OracleContext, git, git_changed_files
from mcp_hooks.control.oracles.base import Option, Oracle, OracleConfigError, checked_path
from mcp_hooks.spec.matching import MatcherError, compile_matcher, search
from mcp_hooks.spec.signals import Signal

_NUMBER = (int, float)
_INTENSITY_WORDS = "one of block, control, prompt, aid"
_TASK_BOX = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s+(.*\S)\s*$")
CHECKLIST_CAP = 1 << 20  # bytes of a checklist_file read


def check_intensity(key: str, value: Any, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise OracleConfigError(key, f"must be one of {', '.join(allowed)}, got {value!r}")


def task_boxes(text: str) -> tuple[ChecklistItem, ...]:
    """The markdown task boxes of a text, in order."""
    items = []
    for line in text.splitlines():
        found = _TASK_BOX.match(line)
        if found:
            items.append(ChecklistItem(found.group(2), found.group(1) != " "))
    return tuple(items)


class ChecklistValidator(Oracle):
    name = "ChecklistValidator"
    options: ClassVar[Mapping[str, Option]] = {
        "allow_partial": Option((bool,), False, "true or false"),
        "min_completion_rate": Option(_NUMBER, 1.0, "a number from 0 to 1"),
        "checklist_file": Option((str,), None, "a markdown file path in the project"),
        "require_checklist": Option((bool,), False, "true or false"),
    }

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        if not 0 <= self.config["min_completion_rate"] <= 1:
            raise OracleConfigError("min_completion_rate", "must be from 0 to 1")
        checked_path("checklist_file", self.config["checklist_file"])

    def checklist(self, context: OracleContext) -> tuple[ChecklistItem, ...] | None:
        """The checklist, or None; raises ``runtime.FileRefused`` for a file it must not
        read (the evaluation's fault, naming the file)."""
        name = self.config["checklist_file"]
        if name:
            parts = runtime.relative_parts(name, "checklist_file")
            try:
                data = runtime.read_inside(context.work_dir, parts, CHECKLIST_CAP,
                                           what="checklist_file")
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise runtime.FileRefused(f"checklist_file {name} cannot be read: "
                                          f"{exc.strerror or exc}") from None
            return task_boxes(data.decode("utf-8", "replace"))
        return context.issue.checklist if context.issue else None

    def evaluate(self, context: OracleContext) -> Signal | None:
        items = self.checklist(context)
        if not items:
            if self.config["require_checklist"]:
                where = self.config["checklist_file"] or "the issue"
                return Signal.block(f"no checklist found in {where}", type="checklist_missing",
                                    resolution_path=[f"add a checklist to {where}"])
            return None
        open_items = [(f"chk-{i:03d}", item.text) for i, item in enumerate(items, 1)
                      if not item.done]
        if not open_items:
            return None
        rate = (len(items) - len(open_items)) / len(items)
        listed = ", ".join(f"[{ident}] {text}" for ident, text in open_items)
        todo = [f"complete {text} [{ident}]" for ident, text in open_items]
        if rate < self.config["min_completion_rate"]:
            return Signal.block(
                f"checklist incomplete: {len(open_items)}/{len(items)} open "
                f"({rate:.0%} done, {self.config['min_completion_rate']:.0%} needed): {listed}",
                resolution_path=todo, type="checklist_incomplete")
        if self.config["allow_partial"]:
            return None
        return Signal.prompt(f"checklist not complete: {listed}", suggestions=todo,
                             severity="medium", type="checklist_partial")


def split_batches(files: Iterable[str], size: int) -> list[list[str]]:
    """Files in batches of at most ``size``, each top folder kept together while it fits."""
    groups: dict[str, list[str]] = {}
    for name in sorted(files):
        top = PurePosixPath(name).parts[0] if "/" in name else ""
        groups.setdefault(top, []).append(name)
    batches: list[list[str]] = []
    current: list[str] = []
    for group in groups.values():
        if current and len(current) + len(group) > size:
            batches.append(current)
            current = []
        for name in group:
            if len(current) == size:
                batches.append(current)
                current = []
            current.append(name)
    if current:
        batches.append(current)
    return batches


class FileChangeLimiter(Oracle):
    name = "FileChangeLimiter"
    options: ClassVar[Mapping[str, Option]] = {
        "max_files": Option((int,), 20, "a whole number of files"),
        "action": Option((str,), "control", "block, control or prompt"),
        "control_action": Option((str,), "split_batch", "split_batch"),
        "batch_size": Option((int,), None, "a whole number of files per batch"),
        "base": Option((str,), None, "a git revision to count changes from"),
    }

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        check_intensity("action", self.config["action"], ("block", "control", "prompt"))
        check_intensity("control_action", self.config["control_action"], ("split_batch",))
        if self.config["max_files"] < 1:
            raise OracleConfigError("max_files", "must be at least 1")
        if self.config["batch_size"] is not None and self.config["batch_size"] < 1:
            raise OracleConfigError("batch_size", "must be at least 1")
        base = self.config["base"]
        if base is not None and (not base or base.startswith("-") or any(
                c.isspace() or ord(c) < 32 for c in base)):
            raise OracleConfigError("base", f"must be a git revision (a branch, a tag, a "
                                    f"commit; never starting with '-'), got {base!r}")

    def evaluate(self, context: OracleContext) -> Signal | None:
        if self.config["base"] and not (context.issue and context.issue.files_changed):
            files = git_changed_files(context.work_dir, self.config["base"])
        else:
            files = context.changed_files
        limit = self.config["max_files"]
        if len(files) <= limit:
            return None
        batches = split_batches(files, self.config["batch_size"] or limit)
        what = f"large change: {len(files)} files changed, more than {limit}"
        split = f"split into {len(batches)} batches of at most {self.config['batch_size'] or limit}"
        action = self.config["action"]
        if action == "block":
            return Signal.block(what, resolution_path=[split], type="change_too_large",
                                files=files)
        if action == "prompt":
            return Signal.prompt(f"{what}; submit in steps?", suggestions=[split, "continue"],
                                 type="change_too_large", files=files)
        return Signal.control([{"action": "split_batch", "field": "files",
                                "batches": batches, "description": f"{what}: {split}"}],
                              reversible=True, type="change_too_large", files=files)


CONVENTIONAL = (r"^(feat|fix|docs|style|refactor|perf|test|build|ci|chore|revert)"
                r"(\([^)]+\))?!?: \S")


def commit_message(context: OracleContext) -> str | None:
    """The commit message an event is about (see the module docstring for where from)."""
    issue = context.issue.raw if context.issue else {}
    for value in (context.payload.get("commit_message"), issue.get("commit_message"),
                  context.tool_input.get("message")):
        if isinstance(value, str) and value.strip():
            return value
    command = context.tool_input.get("command")
    if isinstance(command, str) and "commit" in command:
        try:
            words = shlex.split(command)
        except ValueError:
            words = []
        for i, word in enumerate(words[:-1]):
            if word in ("-m", "--message"):
                return words[i + 1]
            if word.startswith("--message="):
                return word.split("=", 1)[1]
    try:
        head = git(context.work_dir, "log", "-1", "--format=%B")
    except OSError:
        return None
    return head.stdout.strip() or None if head.returncode == 0 else None


class CommitMessageValidator(Oracle):
    name = "CommitMessageValidator"
    options: ClassVar[Mapping[str, Option]] = {
        "pattern": Option((str,), CONVENTIONAL, "a regular expression (RE2)"),
        "required_fields": Option((list,), [], "a list of trailer names"),
        "intensity": Option((str,), "prompt", "block or prompt"),
    }

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        check_intensity("intensity", self.config["intensity"], ("block", "prompt"))

        try:
            self.pattern = compile_matcher(self.config["pattern"])
        except MatcherError as exc:
            raise OracleConfigError("pattern", str(exc)) from None

    def evaluate(self, context: OracleContext) -> Signal | None:
        message = commit_message(context)
        if message is None:
            return None
        problems: list[str] = []

        bad_subject = not search(self.pattern, message)
        if bad_subject:
            problems.append(f"the subject {message.splitlines()[0]!r} does not match "
                            f"{self.config['pattern']!r}")
        trailers = {m.group(1).lower() for m in
                    re.finditer(r"^([A-Za-z][\w-]*):\s*\S", message, re.MULTILINE)}
        missing = [f for f in self.config["required_fields"] if f.lower() not in trailers]
        if missing:
            problems.append(f"missing field(s): {', '.join(missing)}")
        if not problems:
            return None
        fixes = [f"add a line '{f}: ...' to the message" for f in missing]
        if bad_subject:
            fixes.insert(0, f"write the subject to match {self.config['pattern']}")
        text = "commit message: " + "; ".join(problems)
        if self.config["intensity"] == "block":
            return Signal.block(text, resolution_path=fixes, type="commit_message")
        return Signal.prompt(text, suggestions=fixes, type="commit_message")


_TEST_PATH = re.compile(r"(^|/)(tests?|spec|__tests__)/|(^|/)test_[^/]*$|_test\.\w+$|"
                        r"\.(test|spec)\.\w+$")
_DOC_PATH = re.compile(r"(^|/)docs?/|\.(md|rst|txt|adoc)$|(^|/)README", re.IGNORECASE)


def _split_changes(files: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """The changed files as (tests, docs, code): a test path wins over a doc path."""
    tests = [f for f in files if _TEST_PATH.search(f)]
    docs = [f for f in files if _DOC_PATH.search(f) and f not in tests]
    code = [f for f in files if f not in tests and f not in docs]
    return tests, docs, code


def _open_items(context: OracleContext) -> list[str]:
    """A step per checklist item of the issue not done yet (none without an issue)."""
    checklist = context.issue.checklist if context.issue else None
    return [f"complete {item.text}" for item in checklist or () if not item.done]


class CompletionVerifier(Oracle):
    name = "CompletionVerifier"
    options: ClassVar[Mapping[str, Option]] = {
        "require_tests": Option((bool,), True, "true or false"),
        "require_docs": Option((bool,), False, "true or false"),
        "require_checklist": Option((bool,), True, "true or false"),
    }

    def evaluate(self, context: OracleContext) -> Signal | None:
        files = context.changed_files
        tests, docs, code = _split_changes(files)
        missing = [step for option, present, step in (
            ("require_tests", tests, "add or update tests for the changed code"),
            ("require_docs", docs, "update the documentation (docs/, README, *.md)"),
        ) if self.config[option] and code and not present]
        if self.config["require_checklist"]:
            missing += _open_items(context)
        if not missing:
            return None
        return Signal.block(f"the issue is not complete: {'; '.join(missing)}",
                            resolution_path=missing, type="incomplete", files=files)
