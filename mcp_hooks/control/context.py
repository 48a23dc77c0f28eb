"""What an oracle sees: one event's payload read as an issue, a tool call and a project.

``OracleContext.from_payload(trigger, payload)`` takes the same JSON object a HOOK.md hook
reads on stdin (``event_type``, ``session_id``, ``work_dir``, ``tool_name``, ``tool_input``,
``issue``, ...), so the engine builds one payload for both formats.

Contracts a caller may rely on:

- ``issue`` is the issue-lifecycle payload object (``id``, ``type``, ``title``, ``status``,
  ``checklist`` as ``[{"text", "done"}]``, ``files_changed``), or None on events without one.
- ``changed_files`` is ``issue.files_changed`` when the payload gives it, else what git says
  changed in ``work_dir`` (staged, unstaged and untracked files, relative paths, sorted);
  git runs once per context, only when an oracle or a ``when`` condition asks.
- git runs as an oracle's commands do (``runtime.run``: its own process group, a hook's
  environment without our secrets, within the evaluation's deadline), never prompting and
  taking no optional lock; a revision from a config (``base``) is checked to name a commit
  (``git rev-parse --verify --end-of-options``) before it reaches another git command, and
  only the commit id it resolved to does.
- ``environment`` (the deployment environment ``when.environment`` tests) is the payload's
  ``environment``, else the process's (``deployment``: ``Settings.environment``, which is
  ``$MCP_HOOKS_ENVIRONMENT``, passed down by the engine), else ``development``.
- ``view()`` is the object ``when`` conditions read with dotted paths: ``tool``,
  ``tool_input.*``, ``issue.*``, ``files.changed``, ``files.changed_count``, ``environment``,
  ``env.NAME`` (the process environment), ``session_id``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from mcp_hooks.control import runtime
from mcp_hooks.control.files import SAFE_GIT_CONFIG, SAFE_GIT_ENV
from mcp_hooks.errors import ConfigError
from mcp_hooks.settings import DEFAULT_ENVIRONMENT

GIT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ChecklistItem:
    text: str
    done: bool


@dataclass(frozen=True)
class Issue:
    """The ``issue`` object of an issue-lifecycle event (every field optional)."""

    id: str | None = None
    type: str | None = None
    title: str | None = None
    status: str | None = None
    checklist: tuple[ChecklistItem, ...] | None = None
    files_changed: tuple[str, ...] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_payload(cls, data: Any) -> Issue | None:
        if not isinstance(data, Mapping):
            return None
        checklist: tuple[ChecklistItem, ...] | None = None
        if isinstance(data.get("checklist"), list):
            checklist = tuple(
                ChecklistItem(str(item.get("text", "")), bool(item.get("done")))
                if isinstance(item, Mapping) else ChecklistItem(str(item), False)
                for item in data["checklist"])
        files = data.get("files_changed")
        text = {k: (str(data[k]) if data.get(k) is not None else None)
                for k in ("id", "type", "title", "status")}
        return cls(**text, checklist=checklist,
                   files_changed=tuple(str(f) for f in files) if isinstance(files, list)
                   else None, raw=dict(data))


class GitResult(NamedTuple):
    """What one git command said: ``returncode`` None when it timed out."""

    returncode: int | None
    stdout: str
    stderr: str


class BadRevisionError(ConfigError, ValueError):
    """A configured revision that does not name a commit of the repository."""


def git(work_dir: Path, *args: str, timeout: float = GIT_TIMEOUT) -> GitResult:
    """Run ``git -C work_dir args`` (text, captured, no prompt for credentials, no optional
    lock), as an oracle's command (see the module docstring).

    Raises:
        OSError: git cannot be started.
    """
    done = runtime.run(["git", *SAFE_GIT_CONFIG, "-C", str(work_dir), *args], work_dir,
                       timeout=timeout, env=SAFE_GIT_ENV)
    if done.spawn_error is not None:
        raise OSError(done.spawn_error)
    return GitResult(None if done.timed_out else done.exit_code,
                     done.stdout.decode("utf-8", "surrogateescape"),
                     done.stderr.decode("utf-8", "replace"))


def resolve_commit(work_dir: Path, revision: str) -> str:
    """The commit id ``revision`` names in ``work_dir``'s repository.

    Raises:
        BadRevisionError: it names no commit (or looks like an option).
        OSError: git cannot be started.
    """
    if not revision or revision.startswith("-") or any(c.isspace() or ord(c) < 32
                                                        for c in revision):
        raise BadRevisionError(f"{revision!r} is not a git revision")
    found = git(work_dir, "rev-parse", "--verify", "--quiet", "--end-of-options",
                f"{revision}^{{commit}}")
    commit = found.stdout.strip()
    if found.returncode != 0 or not commit:
        raise BadRevisionError(f"{revision!r} names no commit in {work_dir}")
    return commit


def git_changed_files(work_dir: Path, base: str | None = None) -> tuple[str, ...]:
    """Changed paths in a git work tree: since ``base`` (``git diff --name-only base``) plus
    untracked files, or, without ``base``, everything ``git status`` lists. Empty outside a
    repository or when git fails.

    Raises:
        BadRevisionError: ``base`` names no commit of the repository.
    """
    try:
        if base:
            commit = resolve_commit(work_dir, base)
            diff = git(work_dir, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z",
                       commit, "--")
            extra = git(work_dir, "ls-files", "--others", "--exclude-standard", "-z")
            if diff.returncode != 0:
                return ()
            names = [*diff.stdout.split("\0"), *extra.stdout.split("\0")]
        else:
            status = git(work_dir, "status", "--porcelain=v1", "-z", "--untracked-files=all")
            if status.returncode != 0:
                return ()
            names = []
            parts = iter(status.stdout.split("\0"))
            for part in parts:
                if len(part) < 4:
                    continue
                names.append(part[3:])
                if part[0] in "RC":  # a rename or copy: the next field is the old path
                    next(parts, None)
    except OSError:
        return ()
    return tuple(sorted({n for n in names if n}))


@dataclass(frozen=True)
class OracleContext:
    """One event, as oracles read it.

    Attributes:
        trigger: the canonical event name (``before_issue_submit``, ``before_tool``, ...).
        work_dir: the project folder (the hooks' cwd).
        payload: the whole event payload, as hooks receive it.
        deployment: the process's deployment environment (``Settings.environment``), for a
            payload that names none.
    """

    trigger: str
    work_dir: Path
    payload: Mapping[str, Any] = field(default_factory=dict)
    deployment: str = DEFAULT_ENVIRONMENT

    @classmethod
    def from_payload(cls, trigger: str, payload: Mapping[str, Any],
                     work_dir: Path | str | None = None,
                     environment: str = DEFAULT_ENVIRONMENT) -> OracleContext:
        where = work_dir or payload.get("work_dir") or os.getcwd()
        return cls(trigger, Path(where), dict(payload), environment)

    @property
    def session_id(self) -> str | None:
        value = self.payload.get("session_id")
        return str(value) if value else None

    @property
    def tool_name(self) -> str | None:
        value = self.payload.get("tool_name")
        return str(value) if value else None

    @property
    def tool_input(self) -> Mapping[str, Any]:
        value = self.payload.get("tool_input")
        return value if isinstance(value, Mapping) else {}

    @cached_property
    def issue(self) -> Issue | None:
        return Issue.from_payload(self.payload.get("issue"))

    @property
    def issue_id(self) -> str | None:
        return self.issue.id if self.issue else None

    @property
    def environment(self) -> str:
        value = self.payload.get("environment") or self.deployment
        return str(value) if value else DEFAULT_ENVIRONMENT

    @cached_property
    def changed_files(self) -> tuple[str, ...]:
        if self.issue is not None and self.issue.files_changed is not None:
            return self.issue.files_changed
        return git_changed_files(self.work_dir)

    def view(self) -> dict[str, Any]:
        """The object ``when`` conditions read (``files`` is computed on first access)."""
        context = self

        class _Files(dict[str, Any]):
            def __missing__(self, key: str) -> Any:
                if key == "changed":
                    return list(context.changed_files)
                if key == "changed_count":
                    return len(context.changed_files)
                raise KeyError(key)

        return {
            "tool": self.tool_name,
            "tool_input": dict(self.tool_input),
            "issue": dict(self.issue.raw) if self.issue else {},
            "files": _Files(),
            "environment": self.environment,
            "env": dict(os.environ),
            "session_id": self.session_id,
        }
