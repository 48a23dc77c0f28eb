"""``mcp-hooks doctor``'s look at what a host runs, beyond whether it answers the probe:

- a written command that would load code from the folder the host runs it in (the project):
  ``python -m`` or ``-c`` without ``-I``/``-P``, a relative path (``configfile.
  cwd_import_reason``), in the entry itself or as the bridge a forward script falls back to;
  a cloned repository that ships ``mcp_hooks/`` would answer in our place, before any trust;
- a ``PATH`` or ``PYTHONPATH`` with an empty or relative entry, which the system reads as the
  current folder (the same hole, opened by the environment);
- a file we generate whole (OpenCode's plugin, Cline's scripts) that is not byte for byte
  what this mcp-hooks writes for the commands it declares: forged, edited, or written by
  another version. The probe runs the commands such a file names, not the file, so a forged
  plugin that names our commands and allows everything would otherwise pass.

Each finding is a problem naming the file and the fix (``mcp-hooks install <host>``).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from pathlib import Path

from mcp_hooks.hosts.base import Host
from mcp_hooks.hosts.configfile import (
    FORWARD_STEM,
    Target,
    cwd_import_reason,
    generated,
    our_files,
)
from mcp_hooks.hosts.doctor_server import Findings

_BRIDGE_LINE = re.compile(r"^BRIDGE = (\[.*\])$", re.MULTILINE)


def _reinstall(host: Host, scope: str, via: str = "") -> str:
    return (f"mcp-hooks install {host.name}{via} --scope {scope} (from an mcp-hooks installed "
            "for good: it rewrites the entries, and the forward script, with a command that "
            "never imports from the current folder)")


def forward_words(words: list[str]) -> tuple[int, str] | None:
    """Where a ``--via server`` command names our forward script, and the server's URL
    (the word after it); None: no forward script in it."""
    for at, word in enumerate(words):
        if os.path.basename(word).startswith(FORWARD_STEM + "."):
            return at, (words[at + 1] if at + 1 < len(words) else "")
    return None


def forward_bridge(script: Path) -> str | None:
    """The bridge command a forward script falls back to (its ``BRIDGE`` line), or None."""
    try:
        found = _BRIDGE_LINE.search(script.read_text(encoding="utf-8", errors="replace"))
        argv = ast.literal_eval(found.group(1)) if found else None
    except (OSError, ValueError, SyntaxError):
        return None
    if not isinstance(argv, list) or not all(isinstance(w, str) for w in argv):
        return None
    return shlex.join(argv)


def _fallback(command: str) -> tuple[Path, str] | None:
    """The forward script a command runs and the bridge command it falls back to."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None  # reported as unparsable by the caller
    found = forward_words(words)
    script = Path(words[found[0]]) if found else None
    bridge = forward_bridge(script) if script is not None else None
    return (script, bridge) if script is not None and bridge else None


def check_cwd_imports(report: Findings, host: Host, scope: str, file: Path,
                      commands: dict[str, str]) -> None:
    """One problem per file whose commands (event -> command line) would load code from the
    project folder, directly or through a forward script's fallback bridge."""
    for event, command in commands.items():
        why, where = cwd_import_reason(command), f"{file}: the {event} command"
        fallback = _fallback(command) if why is None else None
        if fallback is not None:
            script, bridge = fallback
            why = cwd_import_reason(bridge)
            where = (f"{script}, the forward script the {event} command of {file} runs, falls "
                     f"back to `{bridge}`, which")
        if why:
            report.problem(f"{where} would load code from the project folder the host runs "
                           f"it in: {why}", _reinstall(
                               host, scope, " --via server" if fallback else ""), host.name)
            return


def check_environment(report: Findings) -> None:
    """``PATH`` and ``PYTHONPATH`` entries read as the current folder (empty or relative)."""
    for name, value, what in (
            ("PATH", os.environ.get("PATH"), "a command named without a path (such as "
             "`mcp-hooks`) is looked up in the folder the host runs it in first"),
            ("PYTHONPATH", os.environ.get("PYTHONPATH"), "every Python the hosts start "
             "(mcp-hooks included, unless run with -I) imports the project's own modules "
             "first")):
        if value is None:
            continue
        odd = [entry for entry in value.split(os.pathsep) if not os.path.isabs(entry)]
        if odd:
            shown = ", ".join(repr(e) for e in dict.fromkeys(odd))
            report.problem(f"{name} has an entry read as the current folder ({shown}): {what}",
                           f"remove the empty or relative entries from {name} (a leading, "
                           "trailing or doubled ':' is an empty one), e.g. in your shell "
                           "profile")


def check_generated(report: Findings, host: Host, scope: str, where: Target,
                    text: str) -> None:
    """A generated file (``module``) or folder of them (``files``) that differs from what
    install writes for the commands it names."""
    if where.format == "module":
        commands = generated(host).config_commands(text) or {}
        files = {where.path: (text, commands)}
    elif where.format == "files":
        files = {path: (body, {event: command}) for event, (path, body, command)
                 in our_files(where.path, host).items()}
    else:
        return
    for path, (body, commands) in files.items():
        if commands and body != generated(host).config_text(commands):
            report.problem(
                f"{path} names our commands but is not what `mcp-hooks install {host.name}` "
                f"writes: it was forged, edited, or written by another version of mcp-hooks, "
                f"and {host.title} runs the file, not just the commands doctor probes",
                f"read it (who changed it?), then mcp-hooks install {host.name} --scope "
                f"{scope}, which rewrites it",
                host.name)


__all__ = ["check_cwd_imports", "check_environment", "check_generated", "forward_bridge",
           "forward_words"]
