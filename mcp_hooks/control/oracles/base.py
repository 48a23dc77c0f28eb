"""The oracle contract: ``Oracle(config).evaluate(context) -> Signal | None``.

An oracle is a class built once per hooks.yaml entry from the entry's ``config`` mapping
and asked, for each event the entry matches, for one signal (or None: nothing to say, the
seed's ``Signal.accept()``). Built-in oracles declare their options in ``options``; building
one checks the config against that table and raises ``OracleConfigError`` naming the key,
which the hooks.yaml loader turns into an error naming the file and the entry.

Every oracle, custom ones included, takes ``config.timeout``: the seconds one evaluation may
take, every command it runs included (``default_timeout`` of its class: 5 s for most, more
for those that run a project's tools; from 0 to ``runtime.MAX_TIMEOUT``, the 600 s a host
gives a whole event). ``evaluation`` enforces it.

``runs_commands()`` says whether the entry runs or writes anything outside this process (a
test command, a linter, a configured notification command, custom code, a change log, an
archive): such entries from a project's hooks.yaml run only once the project's ``.ahp``
folder is trusted.

``run_command`` is the one way oracles run a command: argv or a shell string, in the
project folder, through ``runtime.run`` (its own process group, a hook's environment
without our secrets, output captured and capped, a deadline after which the group is
killed, nothing left behind); a command that cannot start or times out is a result, not an
exception.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mcp_hooks.control import runtime
from mcp_hooks.control.context import OracleContext
from mcp_hooks.errors import ConfigError
from mcp_hooks.spec.signals import Signal

DEFAULT_TIMEOUT = 600.0  # the oracles that run a project's tools (a test suite)
EVALUATION_TIMEOUT = 5.0  # every other oracle's default ``config.timeout``
MAX_OUTPUT = runtime.OUTPUT_CAP
TIMEOUT_WORDS = f"seconds, more than 0 and at most {runtime.MAX_TIMEOUT:g}"


class OracleConfigError(ConfigError):
    """An oracle's ``config`` that cannot be used: ``key`` (under ``config``) and ``reason``;
    ``also``: the further (key, reason) problems found in the same pass (``parse_options``
    reports every option at fault)."""

    def __init__(self, key: str, reason: str,
                 also: Sequence[tuple[str, str]] = ()) -> None:
        self.key = key
        self.reason = reason
        self.also = tuple(also)
        super().__init__(f"{key}: {reason}")

    def every(self) -> list[tuple[str, str]]:
        """Every (key, reason) of this error, its own first."""
        return [(self.key, self.reason), *self.also]


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
        OracleConfigError: an unknown key (unless ``open_ended``) or a value of the wrong type;
            every such key is in it (``every()``), in the config's order.
    """
    out = {name: opt.default for name, opt in options.items()}
    found: list[tuple[str, str]] = []
    for key, value in config.items():
        opt = options.get(key)
        if opt is None and open_ended:
            out[key] = value
            continue
        problem = _option_problem(options, key, value)
        if problem is not None:
            found.append((key, problem))
            continue
        out[key] = value
    if found:
        raise OracleConfigError(*found[0], also=found[1:])
    return out


def _option_problem(options: Mapping[str, Option], key: str, value: Any) -> str | None:
    """What is wrong with one config option, or None."""
    opt = options.get(key)
    if opt is None:
        return f"unknown option; this oracle takes {', '.join(options) or 'none'}"
    if not _is(value, opt.kinds):
        return f"must be {opt.words}, got {value!r}"
    if list in opt.kinds and isinstance(value, list) and not all(
            isinstance(v, str) for v in value):
        return f"must be {opt.words} (a list of strings)"
    return None


def check_timeout(value: Any) -> float:
    """``config.timeout`` as seconds.

    Raises:
        OracleConfigError: not a number in (0, ``runtime.MAX_TIMEOUT``].
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0 < value <= runtime.MAX_TIMEOUT):
        raise OracleConfigError("timeout", f"must be {TIMEOUT_WORDS}, got {value!r}")
    return float(value)


def checked_path(key: str, value: Any) -> str | None:
    """A config path that must stay inside the project: relative, no ``..``, no ``~``.

    Raises:
        OracleConfigError: naming ``key``.
    """
    if value is None:
        return None
    try:
        runtime.relative_parts(str(value), key)
    except runtime.FileRefused as exc:
        raise OracleConfigError(key, str(exc).split(": ", 1)[1]) from None
    return str(value)


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
    default_timeout: ClassVar[float] = EVALUATION_TIMEOUT

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        options = dict(self.options)
        options.setdefault("timeout", Option((int, float), self.default_timeout, TIMEOUT_WORDS))
        self.config = parse_options(options, config or {}, open_ended=self.open_ended)
        self.timeout = check_timeout(self.config.get("timeout", self.default_timeout))

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
    """Run one command in ``work_dir`` (see the module docstring); never raises for the
    command's own failure. ``timeout`` is cut to what is left of the evaluation's deadline."""
    argv = command_argv(command)
    if not argv:
        return CommandResult((), None, "", "", "the command is empty")
    done = runtime.run(argv, work_dir, timeout=timeout, env=env,
                       stdin=(stdin or "").encode("utf-8", "surrogateescape"))
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    if done.spawn_error is not None:
        return CommandResult(tuple(argv), None, out, err, done.spawn_error)
    if done.timed_out:
        scope = runtime.current()
        limit = min(timeout, scope.timeout) if scope is not None else timeout
        return CommandResult(tuple(argv), None, out, err,
                             f"{shlex.join(argv)}: no answer within {limit:g} s; killed")
    return CommandResult(tuple(argv), done.exit_code, out, err)
