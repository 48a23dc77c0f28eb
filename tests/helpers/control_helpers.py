"""Shared helpers of the control-layer tests: real git repositories in temporary folders."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def git(repo: Path, *args: str) -> str:
    import os

    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, check=True)
    return done.stdout


def make_repo(path: Path, files: dict[str, str] | None = None, message: str = "chore: init",
              ) -> Path:
    """A git repository at ``path`` with ``files`` committed (``README.md`` by default)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "# project\n"}).items():
        write(path, name, text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return path


def write(root: Path, name: str, text: str) -> Path:
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
