"""Each oracle on a real git repository in a temporary folder."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.control import BUILTIN, OracleContext, build_oracle
from mcp_hooks.control.oracles import module_refusal, parse_reference
from mcp_hooks.control.oracles.base import OracleConfigError
from mcp_hooks.control.oracles.quality import split_batches
from mcp_hooks.paths import state_dir
from mcp_hooks.spec.signals import Signal
from tests.helpers.control_helpers import git, make_repo, write


def run(name: str, repo: Path, config: dict[str, Any] | None = None,
        trigger: str = "before_issue_submit", **payload: Any) -> Signal | None:
    oracle = build_oracle(name, config or {}, repo)
    return oracle.evaluate(OracleContext.from_payload(trigger, {"work_dir": str(repo),
                                                                **payload}))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# p\n", "src/app.py": "x = 1\n"})


def test_thirteen_builtins() -> None:
    assert len(BUILTIN) == 13


def test_checklist_from_the_issue_and_from_a_markdown_file(repo: Path) -> None:
    half = {"checklist": [{"text": "a", "done": True}, {"text": "b", "done": False}]}
    blocked = run("ChecklistValidator", repo, issue=half)
    assert blocked is not None and blocked.blocks and "[chk-002] b" in blocked.text()
    assert run("ChecklistValidator", repo, {"min_completion_rate": 0.5, "allow_partial": True},
               issue=half) is None
    warned = run("ChecklistValidator", repo, {"min_completion_rate": 0.5}, issue=half)
    assert warned is not None and warned.intensity == "prompt"
    write(repo, "TASKS.md", "# tasks\n- [x] one\n- [ ] two\n* [X] three\n")
    result = run("ChecklistValidator", repo, {"checklist_file": "TASKS.md",
                                              "min_completion_rate": 0.9})
    assert result is not None and result.blocks and "1/3 open" in result.text()
    with pytest.raises(OracleConfigError):
        build_oracle("ChecklistValidator", {"min_completion_rate": 2}, repo)


def test_file_change_limiter_counts_git_and_splits(repo: Path) -> None:
    for i in range(5):
        write(repo, f"src/m{i}.py", "")
        write(repo, f"docs/d{i}.md", "")
    assert run("FileChangeLimiter", repo, {"max_files": 10}) is None
    write(repo, "src/app.py", "x = 2\n")
    control = run("FileChangeLimiter", repo, {"max_files": 10, "control_action": "split_batch"})
    assert control is not None and control.intensity == "control"
    [mod] = control.payload["modifications"]
    assert mod["action"] == "split_batch"
    assert [len(b) for b in mod["batches"]] == [5, 6]  # docs/ together, src/ together
    warned = run("FileChangeLimiter", repo, {"max_files": 10, "action": "prompt"})
    assert warned is not None and "11 files" in warned.text()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feat: many")
    assert run("FileChangeLimiter", repo, {"max_files": 10}) is None
    based = run("FileChangeLimiter", repo, {"max_files": 10, "base": "HEAD~1", "action": "block"})
    assert based is not None and based.blocks
    assert split_batches([f"f{i}" for i in range(5)], 2) == [["f0", "f1"], ["f2", "f3"], ["f4"]]


PASSING = "def test_ok():\n    assert 1 + 1 == 2\n"
FAILING = "def test_bad():\n    assert 1 + 1 == 3\n"


def test_test_gate_runs_the_projects_tests(repo: Path) -> None:
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    write(repo, "tests/test_a.py", PASSING)
    assert run("TestGate", repo, {"command": pytest_cmd}) is None
    write(repo, "tests/test_b.py", FAILING)
    failed = run("TestGate", repo, {"command": pytest_cmd})
    assert failed is not None and failed.blocks and failed.header.type == "tests_failed"
    missing = run("TestGate", repo, {"command": ["no-such-test-runner-x"]})
    assert missing is not None and missing.header.type == "tests_not_run"


def test_test_gate_reads_the_coverage_total(repo: Path) -> None:
    report = "Name  Stmts  Miss  Cover\nsrc/app.py  10  3  70%\nTOTAL  10  3  70%\n"
    write(repo, "report.txt", report)
    low = run("TestGate", repo, {"command": "cat report.txt", "coverage_threshold": 80})
    assert low is not None and low.header.type == "coverage_low" and "70.0%" in low.text()
    assert run("TestGate", repo, {"command": "cat report.txt", "coverage_threshold": 70}) is None
    write(repo, "coverage.json", json.dumps({"totals": {"percent_covered": 91.5}}))
    assert run("TestGate", repo, {"command": "true", "coverage_threshold": 90}) is None
    write(repo, "cov.xml", '<?xml version="1.0"?><coverage line-rate="0.5"></coverage>')
    xml = run("TestGate", repo, {"command": "true", "coverage_threshold": 60,
                                 "coverage_file": "cov.xml"})
    assert xml is not None and "50.0%" in xml.text()
    (repo / "coverage.json").unlink()
    none = run("TestGate", repo, {"command": "true", "coverage_threshold": 60})
    assert none is not None and none.header.type == "coverage_missing"


def test_security_scanner_on_changed_files_and_tool_input(repo: Path) -> None:
    assert run("SecurityScanner", repo) is None
    write(repo, "src/db.py", 'cur.execute(f"SELECT * FROM users WHERE id = {uid}")\n')
    sql = run("SecurityScanner", repo, {"rules": ["no-sql-injection"]})
    assert sql is not None and sql.blocks and "src/db.py:1" in sql.text()
    write(repo, "src/db.py", "eval(data)\n")
    medium = run("SecurityScanner", repo)
    assert medium is not None and medium.intensity == "prompt"
    assert run("SecurityScanner", repo, {"severity_threshold": "high"}) is None
    secret = run("SecurityScanner", repo, trigger="before_tool", tool_name="Write",
                 tool_input={"content": "AWS = 'AKIAABCDEFGHIJKLMNOP'"})
    assert secret is not None and secret.blocks and "tool_input" in secret.text()
    with pytest.raises(OracleConfigError):
        build_oracle("SecurityScanner", {"rules": ["no-such-rule"]}, repo)


def test_dependency_checker(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "dep", {
        "requirements.txt": "requests>=2\nPyYAML\n",
        "pkg/__init__.py": "", "pkg/main.py": "import os\nimport requests\nimport yaml\n"
                                              "from pkg import x\n",
        "web/index.js": "const a = require('left-pad'); import b from './b';\n",
        "package.json": json.dumps({"dependencies": {"left-pad": "1"}})})
    assert run("DependencyChecker", repo) is None
    write(repo, "pkg/more.py", "import numpy\n")
    missing = run("DependencyChecker", repo)
    assert missing is not None and missing.blocks and "numpy" in missing.text()
    write(repo, "package.json", "{broken")
    broken = run("DependencyChecker", repo, {"manifest_files": ["package.json", "go.mod"]})
    assert broken is not None and "does not parse" in broken.text() and "go.mod is missing" \
        in broken.text()


# manifest, its text, what the block names (None: ``import requests`` is declared)
MANIFESTS = [
    ("requirements.txt", "-r more.txt\nRequests>=2  # http\n", None),
    ("requirements.txt", "flask\n", "requests (imported in app.py) is not declared"),
    ("requirements.txt", "requests\n!!x\n", "line 2: '!!x' is not a requirement"),
    ("pyproject.toml", '[project]\ndependencies = ["requests>=2"]\n', None),
    ("pyproject.toml", '[project.optional-dependencies]\nhttp = ["requests"]\n', None),
    ("pyproject.toml", '[tool.poetry.dependencies]\nRequests = "^2"\n', None),
    ("pyproject.toml", '[project]\ndependencies = ["flask"]\n', "requests (imported in"),
    ("pyproject.toml", "[project\n", "pyproject.toml does not parse"),
    ("package.json", json.dumps({"devDependencies": {"requests": "1"}}), None),
    ("package.json", json.dumps({"dependencies": {"left-pad": "1"}}), "requests (imported in"),
    ("package.json", "[]", "package.json does not parse: not a JSON object"),
]


@pytest.mark.parametrize(("manifest", "text", "named"), MANIFESTS)
def test_dependency_checker_reads_each_kind_of_manifest(tmp_path: Path, manifest: str, text: str,
                                                        named: str | None) -> None:
    source = ("app.js", "require('requests');\n") if manifest == "package.json" else (
        "app.py", "import requests\n")
    repo = make_repo(tmp_path / "dep", {manifest: text, source[0]: source[1]})
    result = run("DependencyChecker", repo)
    if named is None:
        assert result is None
    else:
        assert result is not None and result.blocks and named in result.text()


# config, changed files, checklist -> the steps the block asks for (none: it passes)
COMPLETIONS = [
    ({}, ["src/a.py"], [], ["add or update tests for the changed code"]),
    ({}, ["src/a.py", "tests/test_a.py"], [], []),
    ({"require_tests": False}, ["src/a.py"], [], []),
    ({"require_docs": True}, ["src/a.py", "tests/test_a.py"], [],
     ["update the documentation (docs/, README, *.md)"]),
    ({"require_docs": True}, ["docs/a.md"], [], []),
    ({"require_docs": True}, ["src/a.py"], [],
     ["add or update tests for the changed code",
      "update the documentation (docs/, README, *.md)"]),
    ({}, ["tests/test_a.py"], [{"text": "a", "done": True}, {"text": "b", "done": False}],
     ["complete b"]),
    ({"require_checklist": False}, ["tests/test_a.py"], [{"text": "b", "done": False}], []),
]


@pytest.mark.parametrize(("config", "files", "checklist", "steps"), COMPLETIONS)
def test_completion_verifier_asks_for_each_missing_step(
        repo: Path, config: dict[str, Any], files: list[str], checklist: list[dict[str, Any]],
        steps: list[str]) -> None:
    issue = {"id": "FEAT-1", "files_changed": files, "checklist": checklist}
    result = run("CompletionVerifier", repo, config, trigger="before_issue_close", issue=issue)
    if not steps:
        assert result is None
    else:
        assert result is not None and result.blocks
        assert result.payload["reason"] == f"the issue is not complete: {'; '.join(steps)}"
        assert result.payload["resolution_path"] == steps


@pytest.mark.parametrize(("oracle", "why"), [
    ("mcp_hooks.control:Oracle", "mcp-hooks' own modules are not custom oracles"),
    ("json:JSONDecoder", "'json' is part of Python's standard library"),
    ("no_such_module_zq:X", "no module 'no_such_module_zq' on the Python path"),
    ("pytest:Item", "'pytest' is an installed package ("),
    ("shadow:Check", "'shadow' is a file of the project ("),
])
def test_a_module_oracle_is_refused_with_its_reason(repo: Path, oracle: str, why: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "shadow.py", "class Check:\n    pass\n")
    monkeypatch.syspath_prepend(str(repo))
    refusal = module_refusal(parse_reference(oracle), repo)
    assert refusal is not None and refusal.startswith(why)


def test_a_module_outside_every_refused_place_is_not_refused(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "elsewhere/mine_zq.py", "class Check:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    assert module_refusal(parse_reference("mine_zq:Check"), repo) is None


@pytest.mark.skipif(shutil.which("ruff") is None and not Path(sys.executable).with_name(
    "ruff").exists(), reason="ruff is not installed")
def test_lint_checker_reports_and_auto_fixes(repo: Path) -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    linter = {"name": "ruff", "command": [ruff, "check", "--no-cache", "--select", "F401", "."],
              "fix": [ruff, "check", "--no-cache", "--select", "F401", "--fix", "."]}
    assert run("LintChecker", repo, {"linters": [linter]}) is None
    write(repo, "src/app.py", "import os\nx = 1\n")
    found = run("LintChecker", repo, {"linters": [linter]})
    assert found is not None and found.intensity == "prompt" and "F401" in found.text()
    fixed = run("LintChecker", repo, {"linters": [linter], "auto_fix": True})
    assert fixed is not None and fixed.intensity == "control"
    assert fixed.payload["modifications"][0]["files"] == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == "x = 1\n"
    with pytest.raises(OracleConfigError):
        build_oracle("LintChecker", {"linters": ["nolint"]}, repo)


def test_commit_message_validator(repo: Path) -> None:
    assert run("CommitMessageValidator", repo) is None  # HEAD: "chore: init"
    git(repo, "commit", "-q", "--allow-empty", "-m", "did stuff")
    bad = run("CommitMessageValidator", repo)
    assert bad is not None and bad.intensity == "prompt" and "did stuff" in bad.text()
    needs = {"required_fields": ["Issue"], "intensity": "block"}
    cmd = 'git commit -m "feat: add x"'
    missing = run("CommitMessageValidator", repo, needs, trigger="before_tool",
                  tool_name="Bash", tool_input={"command": cmd})
    assert missing is not None and missing.blocks and "Issue" in missing.text()
    assert run("CommitMessageValidator", repo, needs,
               commit_message="feat: add x\n\nIssue: FEAT-1\n") is None


def test_the_seeds_other_oracles(repo: Path, tmp_path: Path) -> None:
    issue = {"id": "FEAT-1", "title": "add x", "checklist": [{"text": "a", "done": True}],
             "files_changed": ["src/app.py"]}
    loaded = run("ContextLoader", repo, trigger="after_issue_start", issue=issue)
    assert loaded is not None and loaded.intensity == "aid" and "chore: init" in loaded.text()
    asked = run("PermissionChecker", repo, trigger="before_tool", tool_name="Bash",
                tool_input={"command": "rm -rf build"})
    assert asked is not None and asked.intensity == "prompt"
    refused = run("PermissionChecker", repo, {"require_confirmation": False},
                  trigger="before_tool", tool_input={"command": "RM -RF /"})
    assert refused is not None and refused.blocks
    log = repo / "logs" / "changes.jsonl"  # absolute, inside the project
    assert run("ChangeLogger", repo, {"log_file": str(log)}, trigger="after_tool",
               tool_name="Write", tool_input={"file_path": "a.py"}) is None
    assert json.loads(log.read_text())["files"] == ["a.py"]
    assert run("ChangeLogger", repo, trigger="after_tool", tool_name="Write",
               tool_input={"file_path": "b.py"}) is None  # default: the state folder
    [line] = (state_dir() / "changes.jsonl").read_text().splitlines()
    assert json.loads(line)["files"] == ["b.py"]
    incomplete = run("CompletionVerifier", repo, {"require_docs": True},
                     trigger="before_issue_close", issue=issue)
    assert incomplete is not None and incomplete.blocks and "tests" in incomplete.text()
    notify = write(tmp_path, "notify.sh", "#!/bin/sh\nread payload\n"
                   "echo \"reviewers notified for $AHP_ACTIONS\"\n")
    notify.chmod(0o755)
    review = run("ReviewTrigger", repo, {"command": [str(notify)], "create_pr": True},
                 trigger="after_issue_submit", issue=issue)
    assert review is not None and review.intensity == "aid"
    assert review.text().startswith("reviewers notified for notify_reviewers create_pr")
    retro = run("RetrospectiveGenerator", repo, {"archive_issue": True},
                trigger="after_issue_close", issue=issue)
    assert retro is not None and "archived to .ahp/archive/FEAT-1.json" in retro.text()
    assert json.loads((repo / ".ahp/archive/FEAT-1.json").read_text())["metrics"][
        "commits"] == 1
