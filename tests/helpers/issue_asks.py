"""``issue_that_asks``: a project whose hooks.yaml asks a person before an issue that changes
more than 20 files is submitted, and the event of one that changes 25."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcp_hooks import Registry
from mcp_hooks.engine.entries import ControlLayer
from mcp_hooks.spec.outcome import Event
from tests.helpers.control_helpers import make_repo, write

ASKS_OVER_20_FILES = """
hooks:
  pre-issue-submit:
    - oracle: FileChangeLimiter
      config: {max_files: 20, action: prompt}
      ask: true
      priority: 1
"""


@dataclass(frozen=True)
class IssueThatAsks:
    registry: Registry
    control: ControlLayer
    event: Event


def issue_that_asks(tmp_path: Path, *, then: str = "",
                    files: dict[str, str] | None = None) -> IssueThatAsks:
    """A git repository at ``tmp_path / "repo"`` whose ``.ahp/hooks.yaml`` asks a person
    (FileChangeLimiter at 20 files, ``ask: true``, priority 1), then runs the entries ``then``
    (more items of its ``pre-issue-submit`` list); ``files`` (name: text) are written into
    it too, uncommitted like hooks.yaml. With the project's registry (user hooks in
    ``tmp_path / "user-hooks"``), its control layer and a ``pre-issue-submit`` event of
    session ``s1`` for an issue that changes 25 files."""
    repo = make_repo(tmp_path / "repo")
    for name, text in (files or {}).items():
        write(repo, name, text)
    write(repo, ".ahp/hooks.yaml", ASKS_OVER_20_FILES + then)
    issue = {"id": "FEAT-7", "files_changed": [f"src/m{i}.py" for i in range(25)]}
    return IssueThatAsks(
        Registry(tmp_path / "user-hooks", repo),
        ControlLayer(repo, user_file=tmp_path / "home" / ".ahp" / "hooks.yaml"),
        Event("pre-issue-submit", session_id="s1", work_dir=str(repo),
              payload={"issue": issue}))
