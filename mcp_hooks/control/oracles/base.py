"""The oracle contract: ``Oracle(config).evaluate(context) -> Signal | None``.

An oracle is a class built once per hooks.yaml entry from the entry's ``config`` mapping
and asked, for each event the entry matches, for one signal (or None: nothing to say, the
seed's ``Signal.accept()``). Built-in oracles declare their options in ``options``; building
one checks the config against that table and raises ``OracleConfigError`` naming the key,
which the hooks.yaml loader turns into an error naming the file and the entry.

``runs_commands()`` says whether the entry runs anything outside this process (a test
command, a linter, a configured notification command, custom code): such entries from a
project's hooks.yaml run only once the project's ``.ahp`` folder is trusted.

``run_command`` is the one way oracles run a command: argv or a shell string, in the
project folder, stdin closed, output captured and capped, a deadline after which the
process group is killed; a command that cannot start or times out is a result, not an
exception.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mcp_hooks.control.context import OracleContext
from mcp_hooks.errors import ConfigError
from mcp_hooks.signals import Signal

DEFAULT_TIMEOUT = 600.0
MAX_OUTPUT = 256 * 1024


class OracleConfigError(ConfigError):
    """An oracle's ``config`` that cannot be used: ``key`` (under ``config``) and ``reason``."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True)
class Option:
    """One config option: accepted types, default, and what it means (for errors)."""

    kinds: tuple[type, ...]
    default: Any
    words: str


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in kinds:
        return False  # YAML's true is not a number
    return isinstance(value, kinds)


def parse_options(options: Mapping[str, Option], config: Mapping[str, Any],
                  *, open_ended: bool = False) -> dict[str, Any]:
    """``config`` checked against ``options``, defaults filled in.

    Raises:
        OracleConfigError: an unknown key (unless ``open_ended``) or a value of the wrong type.
    """
    out = {name: opt.default for name, opt in options.items()}
    for key, value in config.items():
        opt = options.get(key)
        if opt is None:
            if open_ended:
                out[key] = value
                continue
            known = ", ".join(options) or "none"
            raise OracleConfigError(key, f"unknown option; this oracle takes {known}")
        if not _is(value, opt.kinds):
            raise OracleConfigError(key, f"must be {opt.words}, got {value!r}")
        if list in opt.kinds and isinstance(value, list) and not all(
                isinstance(v, str) for v in value):
            raise OracleConfigError(key, f"must be {opt.words} (a list of strings)")
        out[key] = value
    return out


def str_list(value: Any) -> list[str]:
    """A string or a list of strings, as a list."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


class Oracle:
    """Base class of the oracles (the seed's ``Oracle`` ABC).

    Subclasses set ``name``, ``options`` and ``default_intensity`` and implement
    ``evaluate``. ``self.config`` holds the checked options with defaults filled in.
    """

    name: ClassVar[str] = ""
    options: ClassVar[Mapping[str, Option]] = {}
    open_ended: ClassVar[bool] = False  # accept keys beyond ``options`` (kept as given)

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.config = parse_options(self.options, config or {}, open_ended=self.open_ended)

    def runs_commands(self) -> bool:
        """Whether evaluating runs anything outside this process (needs project trust)."""
        return False

    def evaluate(self, context: OracleContext) -> Signal | None:  # pragma: no cover
        raise NotImplementedError


@dataclass(frozen=True)
class CommandResult:
    """What a command did: ``returncode`` None when it could not start or timed out."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    problem: str | None = None  # why it did not run to the end

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def summary(self, limit: int = 2000) -> str:
        text = (self.problem or (self.stdout + self.stderr)).strip()
        return text[-limit:]


def command_argv(command: str | Sequence[str]) -> list[str]:
    """A configured command: a list is argv as written; a string is split like a shell
    would (``shlex``), and run through ``sh -c`` when it holds shell syntax (pipes, ``&&``)."""
    if isinstance(command, str):
        if any(ch in command for ch in "|&;<>()$`\n*?"):
            return ["/bin/sh", "-c", command]
        return shlex.split(command)
    return [str(c) for c in command]


def run_command(command: str | Sequence[str], work_dir: Path, *,
                timeout: float = DEFAULT_TIMEOUT, env: Mapping[str, str] | None = None,
                stdin: str | None = None) -> CommandResult:
    """Run one command in ``work_dir``; never raises for the command's own failure."""
    argv = command_argv(command)
    if not argv:
        return CommandResult((), None, "", "", "the command is empty")
    full_env = {**os.environ, **(env or {})}
    try:
        proc = subprocess.Popen(
            argv, cwd=work_dir, env=full_env, text=True, start_new_session=True,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        return CommandResult(tuple(argv), None, "", "",
                             f"{argv[0]}: cannot run ({exc.strerror or exc})")
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return CommandResult(tuple(argv), None, out[-MAX_OUTPUT:], err[-MAX_OUTPUT:],
                             f"{shlex.join(argv)}: no answer within {timeout:g} s; killed")
    return CommandResult(tuple(argv), proc.returncode, out[-MAX_OUTPUT:], err[-MAX_OUTPUT:])


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
