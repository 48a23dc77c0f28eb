"""Every error mcp-hooks raises on purpose, in one tree, and the exit code each one means.

::

    MCPHooksError                 exit 1   base: something we could not do
    ├── ConfigError               exit 64  the caller's input is wrong; fix it and retry
    │   ├── UsageError                     a command line: missing or clashing arguments
    │   ├── UnknownEventError              an event name neither canonical nor an alias
    │   ├── InvalidEventError              an event whose fields are malformed
    │   ├── HookFileError                  a HOOK.md that cannot be loaded (file, field, reason)
    │   │   └── HookFileProblems           all of its problems, when it has more than one
    │   ├── CallableHookError              a Python callable hook that cannot be registered
    │   ├── MatcherError                   a matcher RE2 cannot compile
    │   ├── UnknownHostError               an agent host we have no bridge for
    │   ├── UnknownBundledHookError        `add`: a name not in the bundled hook library
    │   ├── InstallOptionError             install options the host cannot take (an event,
    │   │                                  a --via, a scope it has not; no token)
    │   ├── TransportConfigError           --transport/--host/--port/--token that clash
    │   ├── BadRequest                     a service call: work_dir outside the roots, no such hook
    │   │   └── RoundRefused               an input_required retry's approval that cannot be
    │   │                                  taken (unknown, expired, answered already)
    │   ├── ProxyConfigError               a proxy config file (file, field, reason)
    │   ├── HooksYamlError                 a hooks.yaml problem (file, entry, key, reason)
    │   ├── OracleConfigError              an oracle's config (key, reason)
    │   ├── UnknownOracleError             an oracle name nothing resolves
    │   ├── LayerFileError                 a control-layer file not read (not regular, too
    │   │                                  large, a link out of its folder, unreadable)
    │   ├── FileRefused                    a file an oracle or the ladder may not read or write
    │   ├── BadRevisionError               a configured git revision that names no commit
    │   ├── UnknownSignal                  answer-once: no signal sent with that id
    │   ├── AlreadyAnswered                answer-once: answered first with another action
    │   ├── UnknownAsk                     an ask id never put, or forgotten
    │   ├── AskExpired                     an ask answered after its expiry
    │   ├── AskAnswered                    an ask answered already (the first answer stands)
    │   ├── _Unbuilt                       a hooks.yaml entry's oracle with every problem found
    │   ├── _Unreadable                    a host config too odd to edit in place (written whole)
    │   ├── ParamError                     a dashboard query parameter it does not take
    │   └── MissingExtraError              an adapter or a state store without its extra's
    │                                      packages (also a ModuleNotFoundError; names the
    │                                      extra to install)
    └── RunError                  exit 1   the input was fine; the world was not
        ├── AddressInUseError              serve/proxy: the port is taken
        ├── ServiceUnavailable             a project's hooks cannot be read right now
        ├── UpstreamError                  a proxied MCP server failed or went away
        ├── InstallError                   a host config we cannot read or write, or only
        │                                  a throwaway mcp-hooks to point it at
        ├── TrustError                     trust cannot be recorded (run time: the folder
        │   │                              or the store, not the user's input, is at fault)
        │   ├── UnhashableError            a hook folder that cannot be hashed in full
        │   └── TrustStoreError            the trust store cannot be read, locked or written
        ├── BridgeInputError               a host handed a bridge a payload it cannot read
        ├── StateUnavailable               the state store cannot be read or written
        ├── SourceError                    the dashboard cannot read its store (says the fix)
        ├── Held                           a store call not sent: the store timed out just now
        ├── ReentryError                   a hook called back into the Hooks running it
        │                                  (fire on its worker thread, close inside a hook)
        └── RewriteError                   a hook's rewrite the host's tool cannot take

Denials are not errors: a hook that decides "no" yields an ``Outcome`` with
``decision="deny"``, and the commands that report it (``fire``, the bridges) exit 2
(:data:`EXIT_DENIED`). A hook that crashes, times out or prints garbage is not an exception
either: it is a ``HookRun`` with ``status="error"`` or ``"timeout"``.

The control layer's are defined beside what they check: ``HooksYamlError`` in
``control/schema.py``, ``OracleConfigError`` in ``control/oracles/base.py``,
``UnknownOracleError`` in ``control/oracles/__init__.py``, ``LayerFileError`` in
``control/files.py``, ``FileRefused`` in ``control/runtime.py`` and ``BadRevisionError`` in
``control/context.py``; ``UnknownSignal``, ``AlreadyAnswered``, ``UnknownAsk``,
``AskExpired``, ``AskAnswered`` and ``StateUnavailable`` in ``state/store.py``; ``ParamError``
and ``SourceError`` in ``dashboard/``; ``signals.py`` and
``signallog.py`` raise ``ConfigError`` itself (a malformed signal, an action that does not fit
the signal's intensity, an unknown or already answered signal id: exit 64).

Each class here is defined where its knowledge lives when it needs more than a message
(``HookFileError`` here, ``HookFileProblems`` in ``hookfields.py``, ``ProxyConfigError`` in
the proxy's config); all of them derive from
:class:`ConfigError` or :class:`RunError`, so a command boundary maps any of them to an exit
code with :func:`exit_code` and never prints a traceback for one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

EXIT_OK = 0
EXIT_FAILURE = 1  # a run-time error; also `validate`/`doctor` finding problems
EXIT_DENIED = 2  # a hook (or our fail-closed rule) denied the event
EXIT_USAGE = 64  # EX_USAGE: the caller's arguments or files are wrong


# Whether mcp-hooks can be installed from PyPI by name. Until it is published, every message
# that says how to install it (``install_command``: MissingExtraError, install, doctor) gives
# the form that works today, from a checkout or a built wheel; README.md's "Install" is the
# one doc paragraph that says the same, and every other doc links to it.
ON_PYPI = False


def install_command(extra: str = "", *, tool: bool = False) -> str:
    """How to install mcp-hooks (with ``extra``), as a message gives it: into the current
    Python with pip, or (``tool``) for good as a command with uv or pipx."""
    if ON_PYPI:
        if tool:
            return "uv tool install mcp-hooks (or pipx install mcp-hooks)"
        return f"pip install 'mcp-hooks[{extra}]'" if extra else "pip install mcp-hooks"
    if tool:
        return ("uv tool install . (or pipx install .) in a checkout of mcp-hooks; it is not "
                "on PyPI yet")
    spec = f"[{extra}]" if extra else ""
    return (f"pip install '.{spec}' in a checkout of mcp-hooks, or pip install "
            f"'./dist/mcp_hooks-<version>-py3-none-any.whl{spec}' from a wheel built there (it "
            "is not on PyPI yet)")


class MCPHooksError(Exception):
    """Base class of every error raised by mcp-hooks."""

    exit_code: int = EXIT_FAILURE


class ConfigError(MCPHooksError):
    """The caller's input (arguments, files, config) is wrong: exit 64."""

    exit_code = EXIT_USAGE


class RunError(MCPHooksError):
    """The input was fine but the operation failed at run time: exit 1."""

    exit_code = EXIT_FAILURE


class MissingExtraError(ConfigError, ModuleNotFoundError):
    """A module used where the packages of its extra are not installed.

    A ``ModuleNotFoundError`` (so an ``ImportError``: ``except ImportError`` still catches
    it) whose message says which extra to install; ``name`` is the module that was not
    found, ``extra`` the extra.
    """

    def __init__(self, module: str, missing: ModuleNotFoundError, extra: str,
                 needs: str) -> None:
        self.extra = extra
        install = install_command(extra) if extra else "install its framework"
        super().__init__(
            f"{module} needs {needs}, which is not installed here (no module named "
            f"{missing.name!r}): {install}", name=missing.name)


class UsageError(ConfigError):
    """A command line that cannot be carried out as written."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``did you mean 'x'?`` for the choice closest to a mistyped ``word``, or ``""`` when
    none is close (``difflib``'s ratio under 0.6)."""
    # lazy: 1.1 ms of cold fire (python -X importtime)
    import difflib  # only on an error's path: the commands hosts run start without it

    close = difflib.get_close_matches(word, list(dict.fromkeys(choices)), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


class UnknownEventError(ConfigError, ValueError):
    """An event type that is not in the catalogue, under any spelling.

    ``spellings`` (canonical names and aliases) are searched for a "did you mean"; the
    message lists ``known`` (the canonical names).
    """

    def __init__(self, name: str, known: list[str], spellings: Iterable[str] = ()) -> None:
        self.name = name
        hint = did_you_mean(name, [*known, *spellings])
        super().__init__(
            f"unknown event type {name!r}{f' ({hint})' if hint else ''}; use one of: "
            f"{', '.join(known)} (or an alias listed by `mcp-hooks events`)"
        )


class InvalidEventError(ConfigError, ValueError):
    """An event whose fields have the wrong shape."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


class HookFileError(ConfigError):
    """A HOOK.md (or its folder) that cannot be loaded.

    Attributes:
        file: the HOOK.md, or the hook folder when the file itself is missing.
        field: the frontmatter field at fault, or None when the whole file is.
        reason: what is wrong and how to fix it.
    """

    def __init__(self, file: Path, field: str | None, reason: str) -> None:
        self.file = file
        self.field = field
        self.reason = reason
        self.trigger: str | None = None  # the trigger it seems to name, when one can be read
        where = f"{file}: {field}" if field else str(file)
        super().__init__(f"{where}: {reason}")


class AddressInUseError(RunError):
    """``serve`` or ``proxy`` cannot listen: the host and port are taken."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        super().__init__(
            f"cannot listen on {host}:{port}: the address is already in use; "
            "stop the other server or pass another --port"
        )


def exit_code(exc: BaseException) -> int:
    """The exit code a command ends with for ``exc`` (1 for anything not ours)."""
    return exc.exit_code if isinstance(exc, MCPHooksError) else EXIT_FAILURE
