"""``--json`` on ``validate``, ``show``, ``trust``, ``install`` and ``init``: one JSON document
on stdout with the keys docs/cli.md lists, the same exit code as the text form."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MCP_HOOKS, write_hook


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCP_HOOKS, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=os.environ.copy(), stdin=subprocess.DEVNULL)


def document(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one JSON document on stdout (nothing else is there)."""
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def _documented_keys(command: str) -> list[str]:
    """The keys docs/cli.md lists for ``command --json`` (its "--json" table)."""
    text = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text.split("<!-- json-keys -->", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if f"`{command}`" in [c.strip() for c in cells[0].split(",")]:
            return [k.strip(" `") for k in cells[1].split(",")]
    raise AssertionError(f"docs/cli.md lists no --json keys for {command}")


def test_validate_json_lists_each_hook_and_problem(user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "good")
    (user_dir / "bad").mkdir()
    (user_dir / "bad" / "HOOK.md").write_text("---\nname: bad\ntriger: x\n---\n")
    done = run("validate", "--json", str(user_dir))
    assert done.returncode == 1
    doc = document(done)
    assert list(doc) == _documented_keys("validate")
    assert doc["ok"] is False and doc["checked"] == 2
    assert [h["name"] for h in doc["hooks"]] == ["good"]
    assert {p["source"] for p in doc["problems"]} == {"HOOK.md"}
    assert len(doc["problems"]) == doc["problem_count"] >= 2  # every problem, not the first
    clean = run("validate", "--json", str(user_dir / "good"))
    assert clean.returncode == 0 and document(clean)["ok"] is True


def test_show_json_gives_the_fields_and_the_text(user_dir: Path, project: Path) -> None:
    write_hook(user_dir, "guard", extra="matcher:\n  tool: Shell\n")
    (user_dir / "broken").mkdir()
    (user_dir / "broken" / "HOOK.md").write_text("---\nname: broken\n---\n")
    folders = ("--user-dir", str(user_dir), "--project-dir", str(project))
    done = run("show", "guard", "--json", *folders)
    assert done.returncode == 0, done.stderr
    doc = document(done)
    assert list(doc) == _documented_keys("show")
    assert doc["valid"] is True and doc["hook"]["trigger"] == "before_tool"
    assert doc["hook"]["file"] == str(user_dir / "guard" / "HOOK.md")
    assert doc["text"] == (user_dir / "guard" / "HOOK.md").read_text()
    invalid = run("show", "broken", "--json", *folders)
    assert invalid.returncode == 1
    assert document(invalid)["valid"] is False and document(invalid)["problems"]


@pytest.mark.usefixtures("untrusted")
def test_trust_json_reviews_trusts_lists_and_revokes(project: Path) -> None:
    write_hook(project / ".agents" / "hooks", "gate")
    asked = run("trust", str(project), "--json")
    assert asked.returncode == 1  # never asks: without --yes nothing is trusted
    doc = document(asked)
    assert list(doc) == _documented_keys("trust")
    assert doc["pending"] == ["gate"] and doc["trusted"] == [] and doc["ok"] is False
    assert doc["hooks"][0]["status"] == "untrusted" and len(doc["hooks"][0]["sha256"]) == 64
    assert "Project hooks in" in asked.stderr  # the review, for people, on stderr
    trusted = run("trust", str(project), "--json", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    assert document(trusted)["trusted"] == ["gate"]
    again = document(run("trust", str(project), "--json", "--yes"))
    assert again["already_trusted"] == ["gate"] and again["trusted"] == []
    listed = run("trust", str(project), "--list", "--json")
    assert listed.returncode == 0
    assert [(e["hook"], e["project"]) for e in document(listed)["entries"]] == [
        ("gate", str(project.resolve()))]
    assert document(listed)["project"]["hooks"][0]["status"] == "trusted"
    revoked = run("trust", str(project), "--revoke", "--json")
    assert revoked.returncode == 0 and document(revoked)["revoked"] == ["gate"]


def test_install_json_says_what_changed(project: Path) -> None:
    where = ("--scope", "project", "--project-dir", str(project))
    dry = run("install", "claude-code", *where, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    doc = document(dry)
    assert list(doc) == _documented_keys("install")
    assert doc["changed"] is False and doc["dry_run"] is True and "+++" in dry.stderr
    assert doc["config"] == str(project.resolve() / ".claude" / "settings.json")
    done = run("install", "claude-code", *where, "--json")
    assert done.returncode == 0 and document(done)["changed"] is True
    again = run("install", "claude-code", *where, "--json")
    assert document(again)["changed"] is False and document(again)["ok"] is True


def test_init_json_records_guards_hosts_and_the_check(tmp_path: Path, project: Path) -> None:
    done = run("init", "--host", "claude-code", "--scope", "project", "--project-dir",
               str(project), "--json")
    assert done.returncode == 0, done.stderr
    doc = document(done)
    assert list(doc) == _documented_keys("init")
    assert {h["status"] for h in doc["hooks"]} == {"added"}
    assert [(h["host"], h["changed"]) for h in doc["hosts"]] == [("claude-code", True)]
    assert doc["check"][0].split()[:3] == ["mcp-hooks", "--project-dir", str(project.resolve())]
    assert doc["changed"] is True and "1. The recommended guards" in done.stderr
    again = document(run("init", "--host", "claude-code", "--scope", "project",
                         "--project-dir", str(project), "--json"))
    assert again["changed"] is False
