"""hooks.yaml: layers, overrides, validation naming file/entry/key, when, trust, evaluate."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_hooks.control import (
    ControlConfig,
    HooksYamlError,
    Ladder,
    OracleContext,
    evaluate,
    load_config,
    trust_config,
)
from mcp_hooks.errors import ConfigError
from mcp_hooks.registry.trust import TrustStore
from mcp_hooks.settings import Settings
from tests.helpers.control_helpers import make_repo, write


def load(project: Path, tmp_path: Path, **kw: object) -> ControlConfig:
    return load_config(project, user_file=tmp_path / "home" / ".ahp" / "hooks.yaml",
                       trust_store=TrustStore(tmp_path / "trust.json"), **kw)  # type: ignore[arg-type]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


SEED_FULL = """
hooks:
  pre-issue-start:
    - oracle: DependencyChecker
      config:
        manifest_files: ["package.json", "requirements.txt"]
      when:
        environment: ["development", "staging"]
  post-issue-start:
    - oracle: ContextLoader
      config: {include_files: true, include_git_history: true}
  pre-tool-use:
    - oracle: PermissionChecker
      config:
        dangerous_commands: ["rm -rf", "DROP TABLE"]
        require_confirmation: true
      when:
        tool: ["Bash", "Database"]
  post-tool-use:
    - oracle: ChangeLogger
      config: {log_level: "info"}
      when:
        tool: ["Write", "Edit", "Delete"]
  pre-issue-submit:
    - oracle: ChecklistValidator
      config: {allow_partial: false}
      priority: 1
    - oracle: FileChangeLimiter
      config: {max_files: 20, action: prompt}
      priority: 2
    - oracle: TestGate
      config: {coverage_threshold: 80, require_all_pass: true}
      priority: 3
    - oracle: SecurityScanner
      config:
        rules: ["no-secrets", "no-sql-injection"]
      priority: 4
  post-issue-submit:
    - oracle: ReviewTrigger
      config: {notify_reviewers: true, create_pr: true}
  pre-issue-close:
    - oracle: CompletionVerifier
      config: {require_tests: true, require_docs: true}
  post-issue-close:
    - oracle: RetrospectiveGenerator
      config: {generate_metrics: true, archive_issue: true}
"""


def test_the_seeds_full_example_loads_as_written(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", SEED_FULL)
    config = load(repo, tmp_path, trust_project=True)
    assert not config.problems
    assert config.triggers == {"before_issue_start", "after_issue_start", "before_tool",
                               "after_tool", "before_issue_submit", "after_issue_submit",
                               "before_issue_close", "after_issue_close"}
    names = [e.oracle_name for e in config.for_trigger("before_issue_submit")]
    assert names == ["ChecklistValidator", "FileChangeLimiter", "TestGate", "SecurityScanner"]


def test_seed_section_8_block_then_prompt_then_pass(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", """
hooks:
  pre-issue-submit:
    - oracle: ChecklistValidator
      priority: 1
    - oracle: FileChangeLimiter
      config: {max_files: 20, action: prompt}
      priority: 2
""")
    config = load(repo, tmp_path)
    files = [f"src/m{i}.py" for i in range(25)]
    issue = {"id": "FEAT-0123", "checklist": [{"text": "code", "done": True},
                                             {"text": "tests", "done": False},
                                             {"text": "API docs", "done": False}],
             "files_changed": files}
    first = evaluate("pre-issue-submit", {"work_dir": str(repo), "issue": issue}, config=config)
    assert [s.intensity for s in first] == ["block"]  # the first block stops the rest
    assert first[0].source == "checklist-validator"
    assert "[chk-003] API docs" in first[0].payload["reason"]
    assert first[0].context.issue_id == "FEAT-0123"
    assert first[0].context.hook == "before_issue_submit"
    for item in issue["checklist"]:
        item["done"] = True
    second = evaluate("before_issue_submit", {"work_dir": str(repo), "issue": issue},
                      config=config)
    assert [(s.intensity, s.source) for s in second] == [("prompt", "file-change-limiter")]
    assert "25 files" in second[0].payload["message"]


def test_layers_override_by_trigger_and_oracle(repo: Path, tmp_path: Path) -> None:
    write(tmp_path, "home/.ahp/hooks.yaml", """
hooks:
  pre-issue-submit:
    - oracle: FileChangeLimiter
      config: {max_files: 5, action: block}
    - oracle: ChecklistValidator
""")
    write(repo, ".ahp/hooks.yaml", """
hooks:
  before_issue_submit:
    - oracle: FileChangeLimiter
      config: {max_files: 10}
""")
    write(repo, ".ahp/hooks.local.yaml", """
hooks:
  pre-issue-submit:
    - oracle: ChecklistValidator
      enabled: false
""")
    config = load(repo, tmp_path)
    [limiter] = config.for_trigger("before_issue_submit")
    assert limiter.config == {"max_files": 10, "action": "block"}  # config merged key by key
    assert limiter.layer == "project" and limiter.order == (0, 0)
    assert [e.enabled for e in config.entries if e.oracle_name == "ChecklistValidator"] == [False]


@pytest.mark.parametrize(("text", "entry", "key"), [
    ("hooks:\n  pre-issue-submit:\n    - oracle: FileChangeLimiter\n      config: {max_file: 3}\n",
     "pre-issue-submit[0] (FileChangeLimiter)", "config.max_file"),
    ("hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n      priorty: 1\n",
     "pre-issue-submit[0] (TestGate)", "priorty"),
    ("hooks:\n  pre-issue-submit:\n    - oracle: ChecklistValidatr\n",
     "pre-issue-submit[0] (ChecklistValidatr)", "oracle"),
    ("hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n      when: {colour: red}\n",
     "pre-issue-submit[0] (TestGate)", "when.colour"),
    ("hooks:\n  pre-isue-submit:\n    - oracle: TestGate\n", "pre-isue-submit", None),
    ("hooks:\n  pre-issue-submit:\n    - config: {}\n", "pre-issue-submit[0]", "oracle"),
])
def test_errors_name_file_entry_and_key(repo: Path, tmp_path: Path, text: str, entry: str,
                                        key: str | None) -> None:
    path = write(repo, ".ahp/hooks.yaml", text)
    [problem] = load(repo, tmp_path).problems
    assert isinstance(problem, HooksYamlError) and isinstance(problem, ConfigError)
    assert (problem.file, problem.entry, problem.key) == (path, entry, key)
    assert str(problem).startswith(f"{path}: {entry}")


def test_a_broken_hooks_yaml_fails_closed(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks: [unclosed\n")
    config = load(repo, tmp_path)
    [signal] = evaluate("before_tool", {"work_dir": str(repo), "tool_name": "Bash"},
                        config=config)
    assert signal.blocks and signal.source == "hooks.yaml" and "malformed YAML" in signal.text()
    # a problem inside one trigger fails only that trigger
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-close:\n    - oracle: Nope\n")
    config = load(repo, tmp_path)
    assert evaluate("before_tool", {"work_dir": str(repo)}, config=config) == []
    assert evaluate("pre-issue-close", {"work_dir": str(repo)}, config=config)[0].blocks


def test_anchors_are_refused(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "x: &a [1]\nhooks: {}\ny: *a\n")
    [problem] = load(repo, tmp_path).problems
    assert "anchors" in problem.reason


def test_when_conditions(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, ".ahp/hooks.yaml", """
hooks:
  pre-issue-submit:
    - oracle: FileChangeLimiter
      id: strict-in-production
      config: {max_files: 2, action: block}
      when: {environment: production, files.changed_count: "> 2", issue.type: feature}
    - oracle: FileChangeLimiter
      config: {max_files: 30, action: prompt}
      when: {environment: [development, staging]}
  pre-tool-use:
    - oracle: PermissionChecker
      when: {tool: [Bash], env.CI: "1"}
""")
    config = load(repo, tmp_path)
    issue = {"type": "feature", "files_changed": ["a", "b", "c"]}

    def chosen(trigger: str, **payload: object) -> list[str]:
        # the deployment environment as the engine passes it: the door's Settings
        ctx = OracleContext.from_payload(trigger, {"work_dir": str(repo), **payload},
                                         environment=Settings.from_env().environment)
        return [e.id for e in config.for_trigger(trigger, ctx)]

    assert chosen("before_issue_submit", issue=issue) == ["FileChangeLimiter"]
    monkeypatch.setenv("MCP_HOOKS_ENVIRONMENT", "production")
    assert chosen("before_issue_submit", issue=issue) == ["strict-in-production"]
    assert chosen("before_issue_submit", issue={**issue, "type": "bug"}) == []
    assert chosen("before_issue_submit", issue={**issue, "files_changed": ["a"]}) == []
    assert chosen("before_tool", tool_name="Bash") == []
    monkeypatch.setenv("CI", "1")
    assert chosen("before_tool", tool_name="Bash") == ["PermissionChecker"]
    assert chosen("before_tool", tool_name="Write") == []


def test_files_changed_count_from_git(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: ChecklistValidator\n"
          "      config: {require_checklist: true}\n      when: {files.changed_count: '>= 2'}\n")
    config = load(repo, tmp_path)
    ctx = OracleContext.from_payload("before_issue_submit", {"work_dir": str(repo)})
    assert ctx.changed_files == (".ahp/hooks.yaml",)
    assert config.for_trigger("before_issue_submit", ctx) == []
    write(repo, "new.py", "x = 1\n")
    ctx = OracleContext.from_payload("before_issue_submit", {"work_dir": str(repo)})
    assert len(config.for_trigger("before_issue_submit", ctx)) == 1


def test_priority_order_then_unordered(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", """
hooks:
  pre-issue-submit:
    - {oracle: SecurityScanner}
    - {oracle: TestGate, priority: 2}
    - {oracle: ChecklistValidator, priority: 1}
    - {oracle: CompletionVerifier}
""")
    names = [e.oracle_name for e in load(repo, tmp_path, trust_project=True).for_trigger(
        "before_issue_submit")]
    assert names == ["ChecklistValidator", "TestGate", "SecurityScanner", "CompletionVerifier"]


def test_project_entries_that_run_commands_need_trust(repo: Path, tmp_path: Path,
                                                      untrusted: None) -> None:
    write(tmp_path, "home/.ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - oracle: TestGate\n      config: {command: 'true'}\n")
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - oracle: TestGate\n      config: {command: 'touch pwned'}\n"
          "    - oracle: ChecklistValidator\n")
    store = TrustStore(tmp_path / "trust.json")
    config = load(repo, tmp_path)
    assert config.trust == "untrusted"
    [gate, checklist] = config.for_trigger("before_issue_submit")
    assert gate.config == {"command": "true"} and gate.layer == "user"  # not overridden
    assert checklist.layer == "project"  # reads only: applies untrusted
    # changing the user's entry is not adding one: ignored, with a warning on its trigger
    [note] = config.notes_for("before_issue_submit")
    assert "ignored: the project's .ahp is not trusted" in str(note)
    assert "config.command" in str(note) and f"mcp-hooks trust {repo}" in str(note)
    assert not config.untrusted
    trust_config(repo, store)
    config = load(repo, tmp_path)
    assert config.trust == "trusted" and not config.untrusted
    assert config.for_trigger("before_issue_submit")[0].config == {"command": "touch pwned"}
    write(repo, ".ahp/hooks.local.yaml", "hooks: {}\n")  # any change needs trust again
    assert load(repo, tmp_path).trust == "changed"


def test_custom_oracle_from_a_file_and_a_module(repo: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    code = """
from mcp_hooks.spec.signals import Signal

class DocsOracle:
    def __init__(self, config):
        self.word = config.get("word", "api")
    def evaluate(self, context):
        if any(self.word in f for f in context.changed_files):
            return {"intensity": "prompt", "message": "update the API docs",
                    "suggestions": ["update docs"]}
        return Signal.accept()

class Broken:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        raise RuntimeError("boom")
"""
    write(repo, ".ahp/oracles/docs.py", code)
    # a module's oracle subclasses Oracle (a plain class of a module is refused, below)
    write(tmp_path / "mods", "my_oracles.py", code.replace("class Broken:",
          "from mcp_hooks.control import Oracle\n\nclass Plain:\n    def evaluate(self, c):"
          "\n        return None\n\nclass Broken(Oracle):"))
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    write(repo, ".ahp/hooks.yaml", """
hooks:
  pre-issue-submit:
    - {oracle: "oracles/docs.py:DocsOracle", config: {word: api}, priority: 1}
    - {oracle: "my_oracles:Broken", priority: 2}
""")
    config = load(repo, tmp_path, trust_project=True)
    assert not config.problems
    signals = evaluate("pre-issue-submit", {"work_dir": str(repo),
                                           "issue": {"files_changed": ["src/api.py"]}},
                       config=config)
    assert [(s.intensity, s.source, s.header.type) for s in signals] == [
        ("prompt", "docs-oracle", "prompt"), ("prompt", "broken", "oracle_fault")]
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - {oracle: '../outside.py:X'}\n")
    [problem] = load(repo, tmp_path, trust_project=True).problems
    assert problem.key == "oracle" and "inside .ahp" in problem.reason
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - {oracle: 'my_oracles:Plain'}\n")
    [problem] = load(repo, tmp_path, trust_project=True).problems
    assert "Plain is not a subclass of mcp_hooks.control.Oracle" in problem.reason


def test_async_entries_run_in_the_background_as_aid(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: ChecklistValidator\n"
          "      async: true\n")
    config = load(repo, tmp_path)
    payload = {"work_dir": str(repo), "issue": {"checklist": [{"text": "a", "done": False}]}}
    assert evaluate("pre-issue-submit", payload, config=config) == []
    [aid] = evaluate("pre-issue-submit", payload, config=config, background=True)
    assert aid.intensity == "aid" and "checklist incomplete" in aid.text()


def test_escalation_entry_climbs_the_ladder(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: ChecklistValidator\n"
          "      escalation: true\n")
    config = load(repo, tmp_path)
    ladder = Ladder(tmp_path / "ladder.json")
    payload = {"work_dir": str(repo), "session_id": "s1",
               "issue": {"checklist": [{"text": "a", "done": False}]}}
    seen = [evaluate("pre-issue-submit", payload, config=config, ladder=ladder)[0].intensity
            for _ in range(3)]
    assert seen == ["prompt", "block", "block"]  # no modification to offer: control skipped


def test_validate_covers_hooks_yaml(repo: Path, tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.conftest import MCP_HOOKS

    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: TestGate\n"
          "      config: {coverage: 80}\n")
    done = subprocess.run([MCP_HOOKS, "validate", "--project-dir", str(repo)],
                          capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 1
    assert "hooks.yaml: pre-issue-submit[0] (TestGate): config.coverage: unknown option" \
        in done.stderr



def test_validate_shows_every_problem_of_an_entry(repo: Path) -> None:
    """Every problem of a hooks.yaml entry, a line each (as for HOOK.md), in text and JSON."""
    import json
    import os
    import subprocess

    from tests.conftest import MCP_HOOKS

    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - oracle: TestGate\n      priorty: 2\n      priority: -1\n"
          "      when: {nope: 1, tool: [[1]]}\n      escalation: sometimes\n"
          "    - oracle: ChecklistValidator\n      config: {coverage: 80, timeout: no}\n")
    argv = [MCP_HOOKS, "validate", "--project-dir", str(repo)]
    done = subprocess.run(argv, capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 1
    for text in ("pre-issue-submit[0] (TestGate): priorty: unknown key (did you mean",
                 "pre-issue-submit[0] (TestGate): priority: must be a whole number",
                 "pre-issue-submit[0] (TestGate): when.nope: unknown condition",
                 "pre-issue-submit[0] (TestGate): when.tool: must be a value",
                 "pre-issue-submit[0] (TestGate): escalation: must be true or a list",
                 "pre-issue-submit[1] (ChecklistValidator): config.coverage: unknown option",
                 "pre-issue-submit[1] (ChecklistValidator): config.timeout: must be"):
        assert text in done.stderr, (text, done.stderr)
    assert "0 hook(s) checked, 7 problem(s)" in done.stderr
    as_json = subprocess.run([*argv, "--json"], capture_output=True, text=True,
                             env=os.environ.copy())
    assert as_json.returncode == 1 and as_json.stderr == ""
    report = json.loads(as_json.stdout)
    assert report["ok"] is False and len(report["problems"]) == 7
    first = report["problems"][0]
    assert first["source"] == "hooks.yaml" and first["entry"] == "pre-issue-submit[0] (TestGate)"
    assert first["field"] == "priorty" and first["file"] == str(repo / ".ahp" / "hooks.yaml")


# -- overrides, trust and files (the hostile cases through the doors: test_control_hostile) --


def _readme_hooks_yaml() -> str:
    text = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    return text.split("cat > .ahp/hooks.yaml <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0] + "\n"


def _docs_override() -> str:
    text = (Path(__file__).parents[2] / "docs" / "control.md").read_text(encoding="utf-8")
    marker = ("readme-test: run-by "
              "(tests/control/test_control_config.py::test_the_docs_override_example")
    return text.split(marker, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_docs_override_example_overrides(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/hooks.yaml", _readme_hooks_yaml())
    write(repo, ".ahp/hooks.local.yaml", _docs_override())
    config = load(repo, tmp_path)
    [limiter] = [e for e in config.entries if e.oracle_name == "FileChangeLimiter"]
    assert limiter.config == {"max_files": 40, "action": "prompt"}
    assert limiter.escalation == ("prompt", "control", "block") and not config.notes
    # the example as it was (an id the README's entry does not have): a second entry, warned
    write(repo, ".ahp/hooks.local.yaml", _docs_override().replace(
        "config:", "id: change-size-limiter\n      config:"))
    config = load(repo, tmp_path)
    assert [e.id for e in config.entries if e.oracle_name == "FileChangeLimiter"] == [
        "FileChangeLimiter", "change-size-limiter"]
    [note] = config.notes_for("before_issue_submit")
    assert "overrides nothing: no entry above is keyed 'change-size-limiter'" in str(note)
    assert "write `id: FileChangeLimiter` or leave id out" in str(note)


def test_switching_off_what_is_not_there_warns(repo: Path, tmp_path: Path) -> None:
    write(tmp_path, "home/.ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n"
          "    - {oracle: PermissionChecker, id: guard}\n")
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n"
          "    - {oracle: PermissionChecker, enabled: false}\n")
    config = load(repo, tmp_path)
    [note] = config.notes_for("before_tool")
    assert "`enabled: false` switches nothing off" in str(note)
    assert [e.id for e in config.for_trigger("before_tool")] == ["guard"]


def test_entries_that_write_files_wait_for_trust(repo: Path, tmp_path: Path,
                                                 untrusted: None) -> None:
    write(repo, ".ahp/hooks.yaml", """
hooks:
  post-tool-use:
    - {oracle: ChangeLogger, id: anywhere, config: {log_file: /tmp/x/.bashrc}}
    - {oracle: ChangeLogger}
  post-issue-close:
    - {oracle: RetrospectiveGenerator, config: {archive_issue: true}}
""")
    config = load(repo, tmp_path)
    assert sorted(e.id for e in config.untrusted) == [
        "ChangeLogger", "RetrospectiveGenerator", "anywhere"]
    assert config.entries == []


def test_a_custom_oracle_prints_to_stderr_and_a_class_without_evaluate_is_not_built(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    built = tmp_path / "built"
    write(repo, ".ahp/loud.py", f"""
import pathlib
print("LOUD AT IMPORT")
class Loud:
    def __init__(self, config):
        print("LOUD AT INIT")
    def evaluate(self, context):
        print("LOUD AT EVALUATE")
class NoEvaluate:
    def __init__(self, config):
        pathlib.Path({str(built)!r}).touch()
""")
    write(repo, ".ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n    - oracle: loud.py:Loud\n"
          "  pre-issue-close:\n    - oracle: loud.py:NoEvaluate\n")
    config = load(repo, tmp_path)
    [problem] = config.problems
    assert "NoEvaluate has no evaluate(context) method" in problem.reason
    assert not built.exists()
    assert evaluate("pre-issue-submit", {"work_dir": str(repo)}, config=config) == []
    out, err = capsys.readouterr()
    assert "LOUD" not in out
    assert "LOUD AT IMPORT" in err and "LOUD AT INIT" in err and "LOUD AT EVALUATE" in err


def test_custom_oracles_only_from_their_own_ahp_folder(repo: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "elsewhere/x.py", "class X:\n    def evaluate(self, c):\n        pass\n")
    write(repo, "shadow.py", "from mcp_hooks.control import Oracle\n\n"
          "class Check(Oracle):\n    def evaluate(self, c):\n        return None\n")
    monkeypatch.syspath_prepend(str(repo))  # a project file that shadows a user's module
    write(tmp_path, "home/.ahp/hooks.yaml", "hooks:\n  pre-issue-submit:\n"
          f"    - oracle: {tmp_path / 'elsewhere' / 'x.py'}:X\n"
          "    - oracle: shadow:Check\n")
    reasons = sorted(p.reason for p in load(repo, tmp_path).problems)
    assert "must lie inside .ahp/" in reasons[0] and str(tmp_path / "home" / ".ahp") in reasons[0]
    assert "'shadow' is a file of the project" in reasons[1]


def test_a_symlinked_hooks_yaml_inside_ahp_is_read(repo: Path, tmp_path: Path) -> None:
    write(repo, ".ahp/config/main.yaml", "hooks:\n  pre-issue-submit:\n"
          "    - oracle: ChecklistValidator\n")
    (repo / ".ahp" / "hooks.yaml").symlink_to("config/main.yaml")
    config = load(repo, tmp_path)
    assert not config.problems and [e.oracle_name for e in config.entries] == [
        "ChecklistValidator"]
