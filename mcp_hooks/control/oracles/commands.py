"""Oracles that run the project's own tools: ``TestGate`` and ``LintChecker``.

Both run commands from the project, so a project's hooks.yaml entry naming them runs only
once the project's ``.ahp`` folder is trusted (``runs_commands()`` is true).

- ``TestGate`` runs ``command`` (default: ``npm test`` with a package.json, ``make test``
  with a Makefile that has a ``test:`` target, else ``python -m pytest -q``) in the project.
  ``require_all_pass`` (default true): a non-zero exit blocks. ``coverage_threshold`` (a
  percentage): the coverage total is read from ``coverage_file`` when given, else from
  ``coverage.json`` (``totals.percent_covered``) or ``coverage.xml`` (``line-rate``) left
  by the run, else from the ``TOTAL ... NN%`` line of the output (``coverage report``,
  pytest-cov); below the threshold, or not found, blocks. A command that cannot start or
  passes ``timeout`` seconds blocks too: a gate that could not look does not pass. The
  coverage file is read inside the project only (no symlink, a regular file, at most
  ``COVERAGE_CAP`` bytes).
- ``LintChecker`` runs each of ``linters``: a known name (``ruff``, ``flake8``, ``black``,
  ``eslint``, ``prettier``) or ``{name, command, fix}``. Findings are a prompt (or
  ``intensity: block``). With ``auto_fix``, a linter with a fix command is run to fix, then
  checked again: files it changed come back as a control signal (the fix applied,
  ``reversible``: ``git diff`` shows it); what is still wrong after the fix, a prompt.

Both default ``timeout`` to ``DEFAULT_TIMEOUT`` (600 s): it bounds the whole evaluation,
every command of it included (``base``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from mcp_hooks.control import runtime
from mcp_hooks.control.context import OracleContext, git
from mcp_hooks.control.oracles.base import (
    DEFAULT_TIMEOUT,
    CommandResult,
    Option,
    Oracle,
    OracleConfigError,
    checked_path,
    run_command,
)
from mcp_hooks.control.oracles.quality import check_intensity
from mcp_hooks.spec.signals import Signal

_COMMAND = "a command (a string, or a list of words)"
_TOTAL = re.compile(r"^TOTAL\b.*?(\d+(?:\.\d+)?)%\s*$", re.MULTILINE)
COVERAGE_CAP = 32 << 20  # bytes of a coverage.json / coverage.xml read
MAKEFILE_CAP = 1 << 20


def _is_command(value: Any) -> bool:
    return (isinstance(value, str) and bool(value.strip())) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value))


def default_test_command(work_dir: Path) -> list[str]:
    if (work_dir / "package.json").is_file():
        return ["npm", "test", "--silent"]
    try:
        makefile = runtime.read_inside(work_dir, ("Makefile",), MAKEFILE_CAP, what="Makefile")
    except (OSError, runtime.FileRefused):
        makefile = b""
    if re.search(rb"^test:", makefile, re.MULTILINE):
        return ["make", "test"]
    return ["python", "-m", "pytest", "-q"]


def coverage_total(work_dir: Path, output: str, coverage_file: str | None) -> float | None:
    """The coverage percentage a test run reported (see the module docstring), or None."""
    candidates = [coverage_file] if coverage_file else ["coverage.json", "coverage.xml"]
    for name in candidates:
        try:
            parts = runtime.relative_parts(str(name), "coverage_file")
            text = runtime.read_inside(work_dir, parts, COVERAGE_CAP, what="coverage_file"
                                       ).decode("utf-8", "replace")
        except (OSError, runtime.FileRefused):
            continue
        if str(name).endswith(".json"):
            try:
                return float(json.loads(text)["totals"]["percent_covered"])
            except (ValueError, KeyError, TypeError):
                continue
        found = re.search(r"<coverage\b[^>]*\bline-rate=\"([\d.]+)\"", text)
        if found:
            return float(found.group(1)) * 100
    totals = _TOTAL.findall(output)
    return float(totals[-1]) if totals else None


class TestGate(Oracle):
    __test__ = False  # not a pytest class, whatever its name
    name = "TestGate"
    options: ClassVar[Mapping[str, Option]] = {
        "command": Option((str, list), None, _COMMAND),
        "require_all_pass": Option((bool,), True, "true or false"),
        "coverage_threshold": Option((int, float), None, "a percentage from 0 to 100"),
        "coverage_file": Option((str,), None, "a coverage.json or coverage.xml path"),
    }
    default_timeout = DEFAULT_TIMEOUT

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        checked_path("coverage_file", self.config["coverage_file"])
        if self.config["command"] is not None and not _is_command(self.config["command"]):
            raise OracleConfigError("command", f"must be {_COMMAND}")
        threshold = self.config["coverage_threshold"]
        if threshold is not None and not 0 <= threshold <= 100:
            raise OracleConfigError("coverage_threshold", "must be from 0 to 100")

    def runs_commands(self) -> bool:
        return True

    def evaluate(self, context: OracleContext) -> Signal | None:
        command = self.config["command"] or default_test_command(context.work_dir)
        result = run_command(command, context.work_dir, timeout=self.timeout)
        shown = " ".join(result.argv)
        if result.returncode is None:
            return Signal.block(f"tests could not run: {result.problem}", type="tests_not_run",
                                resolution_path=[f"make `{shown}` runnable, or set "
                                                 "TestGate's config.command"])
        if self.config["require_all_pass"] and not result.ok:
            return Signal.block(
                f"tests failed (`{shown}` exited {result.returncode}): {result.summary(1500)}",
                resolution_path=["fix the failing tests", f"run `{shown}` until it passes"],
                type="tests_failed")
        threshold = self.config["coverage_threshold"]
        if threshold is None:
            return None
        total = coverage_total(context.work_dir, result.stdout + "\n" + result.stderr,
                               self.config["coverage_file"])
        if total is None:
            return Signal.block(
                f"no coverage total found after `{shown}`; {threshold}% is required",
                resolution_path=["run the tests with coverage (pytest --cov, coverage run) "
                                 "so a TOTAL line or coverage.json/xml is produced"],
                type="coverage_missing")
        if total < threshold:
            return Signal.block(f"coverage {total:.1f}% is below {threshold}%",
                                resolution_path=[f"add tests until coverage reaches {threshold}%"],
                                type="coverage_low")
        return None


KNOWN_LINTERS: dict[str, tuple[list[str], list[str] | None]] = {
    "ruff": (["ruff", "check", "."], ["ruff", "check", "--fix", "."]),
    "flake8": (["flake8"], None),
    "black": (["black", "--check", "."], ["black", "."]),
    "eslint": (["npx", "--no-install", "eslint", "."],
               ["npx", "--no-install", "eslint", "--fix", "."]),
    "prettier": (["npx", "--no-install", "prettier", "--check", "."],
                 ["npx", "--no-install", "prettier", "--write", "."]),
}


def _linter(index: int, item: Any) -> tuple[str, Any, Any]:
    key = f"linters[{index}]"
    if isinstance(item, str):
        if item not in KNOWN_LINTERS:
            raise OracleConfigError(key, f"unknown linter {item!r}; use one of "
                                    f"{', '.join(KNOWN_LINTERS)} or {{name, command, fix}}")
        check, fix = KNOWN_LINTERS[item]
        return item, check, fix
    if not isinstance(item, Mapping) or not _is_command(item.get("command")):
        raise OracleConfigError(key, "must be a linter name or {name, command, fix} with "
                                f"command {_COMMAND}")
    unknown = set(item) - {"name", "command", "fix"}
    if unknown:
        raise OracleConfigError(f"{key}.{sorted(unknown)[0]}", "unknown key; use name, "
                                "command, fix")
    if item.get("fix") is not None and not _is_command(item["fix"]):
        raise OracleConfigError(f"{key}.fix", f"must be {_COMMAND}")
    return str(item.get("name") or f"linter {index}"), item["command"], item.get("fix")


def _snapshot(work_dir: Path) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file git tracks or would track, to see what a fix touched."""
    try:
        listed = git(work_dir, "ls-files", "-co", "--exclude-standard", "-z")
    except OSError:
        return {}
    out: dict[str, tuple[int, int]] = {}
    for name in filter(None, listed.stdout.split("\0")):
        try:
            st = (work_dir / name).stat()
        except OSError:
            continue
        out[name] = (st.st_mtime_ns, st.st_size)
    return out


class LintChecker(Oracle):
    name = "LintChecker"
    options: ClassVar[Mapping[str, Option]] = {
        "linters": Option((list,), ["ruff"], "a list of linter names or {name, command, fix}"),
        "auto_fix": Option((bool,), False, "true or false"),
        "intensity": Option((str,), "prompt", "block or prompt"),
    }
    default_timeout = DEFAULT_TIMEOUT

    def __init__(self, config: Any = None) -> None:
        linters = (config or {}).get("linters")
        rest = {k: v for k, v in (config or {}).items() if k != "linters"}
        super().__init__(rest)
        if linters is not None and not isinstance(linters, list):
            raise OracleConfigError("linters", "must be a list of linter names or "
                                    "{name, command, fix}")
        self.linters = [_linter(i, item) for i, item in enumerate(linters or ["ruff"])]
        check_intensity("intensity", self.config["intensity"], ("block", "prompt"))

    def runs_commands(self) -> bool:
        return True

    def evaluate(self, context: OracleContext) -> Signal | None:
        findings: list[tuple[str, CommandResult]] = []
        fixed: list[dict[str, Any]] = []
        for name, check, fix in self.linters:
            result = self._lint(name, check, fix, context.work_dir, fixed)
            if result is not None:
                findings.append((name, result))
        if findings:
            return self._findings(findings, fixed)
        if fixed:
            files = sorted({f for m in fixed for f in m["files"]})
            return Signal.control(fixed, reversible=True, type="lint_fixed", files=files)
        return None

    def _lint(self, name: str, check: Any, fix: Any, work_dir: Path,
              fixed: list[dict[str, Any]]) -> CommandResult | None:
        """One linter's failing result, None when it passes (after its fix, with auto_fix);
        a fix that changed files is appended to ``fixed``."""
        timeout = self.timeout
        result = run_command(check, work_dir, timeout=timeout)
        if result.ok:
            return None
        if self.config["auto_fix"] and fix is not None and result.returncode is not None:
            change = _apply_fix(name, fix, work_dir, timeout)
            if change is not None:
                fixed.append(change)
            result = run_command(check, work_dir, timeout=timeout)
        return None if result.ok else result

    def _findings(self, findings: list[tuple[str, CommandResult]],
                  fixed: list[dict[str, Any]]) -> Signal:
        text = "; ".join(f"{name}: {r.summary(800)}" for name, r in findings)
        fixes = [f"fix what {name} reports" for name, _ in findings]
        if fixed:
            text += " (auto-fixed: " + "; ".join(m["description"] for m in fixed) + ")"
        if self.config["intensity"] == "block":
            return Signal.block(f"lint: {text}", resolution_path=fixes, type="lint")
        return Signal.prompt(f"lint: {text}", suggestions=fixes, type="lint")


def _apply_fix(name: str, fix: Any, work_dir: Path, timeout: float) -> dict[str, Any] | None:
    """Run a linter's fix command; the control action naming the files it changed, if any."""
    before = _snapshot(work_dir)
    run_command(fix, work_dir, timeout=timeout)
    after = _snapshot(work_dir)
    touched = sorted(n for n in after if before.get(n) != after[n])
    if not touched:
        return None
    return {"action": "lint_fix", "linter": name, "files": touched,
            "description": f"{name} fixed {len(touched)} file(s): {', '.join(touched)}"}
