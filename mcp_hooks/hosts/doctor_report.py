"""What ``doctor`` found, and how it says it: each finding with its fix, our entries in each
host config (``Wiring``), the report as text (``format_report``) and as JSON (``as_dict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Finding:
    """One problem (breaks the gate) or warning, with how to fix it."""

    what: str
    fix: str | None = None
    host: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "what": self.what, "fix": self.fix}

    def __str__(self) -> str:
        where = f"{self.host}: " if self.host else ""
        return f"{where}{self.what}" + (f"\n    fix: {self.fix}" if self.fix else "")


@dataclass
class Entry:
    """One of our handlers in a host config."""

    event: str
    kind: str  # command, server, http, mcp_tool
    command: str | None = None
    url: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"event": self.event, "via": self.kind, "command": self.command, "url": self.url}


@dataclass
class Wiring:
    """Our entries in one config file of one host."""

    host: str
    scope: str
    file: Path
    entries: list[Entry] = field(default_factory=list)
    resolves: dict[str, bool] = field(default_factory=dict)  # executable -> found
    probe: dict[str, Any] | None = None
    server: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "scope": self.scope, "file": str(self.file),
                "events": [e.event for e in self.entries],
                "entries": [e.as_dict() for e in self.entries],
                "resolves": self.resolves, "probe": self.probe, "server": self.server}


@dataclass
class Report:
    wirings: list[Wiring] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)  # facts worth knowing, nothing to fix
    hooks: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Any] = field(default_factory=dict)

    def problem(self, what: str, fix: str | None = None, host: str | None = None) -> None:
        self.problems.append(Finding(what, fix, host))

    def warn(self, what: str, fix: str | None = None, host: str | None = None) -> None:
        self.warnings.append(Finding(what, fix, host))

    def as_dict(self) -> dict[str, Any]:
        return {"ok": not self.problems,
                "problems": [p.as_dict() for p in self.problems],
                "warnings": [w.as_dict() for w in self.warnings],
                "notes": [n.as_dict() for n in self.notes],
                "hosts": [w.as_dict() for w in self.wirings],
                "hooks": self.hooks, "files": self.files}


def format_report(report: Report) -> str:
    lines: list[str] = []
    for w in report.wirings:
        events = ", ".join(e.event for e in w.entries)
        lines.append(f"{w.host} ({w.scope}): {w.file}")
        lines.append(f"    events: {events}")
        if w.probe is not None:
            lines.append(f"    probe ({w.probe['event']}): "
                         + ("denied, as it should" if w.probe.get("ok") else "FAILED"))
        if w.server is not None:
            lines.append(f"    server {w.server['url']}: {w.server['status']}")
    hooks = report.hooks
    if hooks:
        same = len(hooks.get("identical", []))
        lines.append(f"hooks: {hooks.get('valid', 0)} valid, {len(hooks.get('invalid', []))} "
                     f"invalid, {len(hooks.get('untrusted', []))} untrusted, "
                     f"{len(hooks.get('replaced', []))} replaced"
                     + (f" ({same} by an identical copy)" if same else ""))
    for key, info in report.files.items():
        lines.append(f"{key.replace('_', ' ')}: {info['path']} ({info['status']})")
    for finding in report.notes:
        lines.append(f"note: {finding}")
    for finding in report.warnings:
        lines.append(f"warning: {finding}")
    for finding in report.problems:
        lines.append(f"PROBLEM: {finding}")
    lines.append(f"{len(report.problems)} problem(s), {len(report.warnings)} warning(s): "
                 + verdict(report))
    return "\n".join(lines)


def verdict(report: Report) -> str:
    """The last word: whether the gate is whole, and that there is none without a host."""
    return ("the gate is NOT whole" if report.problems else "the gate is whole"
            if report.wirings else "no host is wired, so no agent's tool calls are checked "
            "yet (the hooks run only from `mcp-hooks fire`, `serve` and `proxy`)")


__all__ = ["Entry", "Finding", "Report", "Wiring", "format_report", "verdict"]
