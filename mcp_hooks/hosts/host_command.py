"""The command a host runs for us, and the checks that keep it working: never a path in a
throwaway environment, never one that loads code from the folder the host runs it in.

The command written must keep working (``install.bridge_prefix``): never a path inside a throwaway
environment (uv's cache or an ``archive-v0``/``.tmp`` folder, a ``pipx run`` cache, anything
under the temp dir), and never one that loads code from the folder the host runs it in (the
project: a clone's own ``mcp_hooks/`` must not answer for us). User scope gets an
``mcp-hooks`` found outside such places (this one, the one on PATH, the one beside this
Python), else ``<python> -I -m mcp_hooks.cli`` of a stable interpreter (``-P`` when only that
imports this package: ``python_prefix``), else (once the package is on PyPI: ``ON_PYPI``)
``uvx mcp-hooks==<version>``, else install refuses and says how to install mcp-hooks for
good. Project scope (a file teams commit) gets plain ``mcp-hooks``, found on PATH by the
host. ``--bridge-command`` (or ``MCP_HOOKS_BRIDGE_COMMAND``) overrides both, unless it would
load from the project folder (``configfile.cwd_import_reason``): refused.

Used by ``install`` (``install.py``) for every entry it writes.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp_hooks import __version__
from mcp_hooks.errors import ON_PYPI, install_command
from mcp_hooks.hosts.configfile import (
    SAFE_FLAGS,
    InstallError,
    InstallOptionError,
    cwd_import_reason,
)

BRIDGE_COMMAND_ENV = "MCP_HOOKS_BRIDGE_COMMAND"  # named in messages (Settings.bridge_command)
# How to put mcp-hooks on PATH for good: from a checkout today; the PyPI name once published.
HOW_TO_INSTALL = install_command(tool=True)
INSTALL_FOR_GOOD = (f"install mcp-hooks for good ({HOW_TO_INSTALL}) and run install again from "
                    "it, or pass --bridge-command")


def throwaway_reason(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` lies in an environment that may vanish (None: it does not).

    Throwaway: uv's cache (``$UV_CACHE_DIR``, ``~/.cache/uv``), any ``archive-v0`` or
    ``.tmp*`` folder, a ``pipx run`` cache (``~/.local/pipx/.cache``, ``pipx/.cache``),
    anything under the system temp dir (a venv made there included).
    """
    text = os.path.abspath(os.fspath(path))
    forms = {text, os.path.realpath(text)}
    caches: list[tuple[str, str]] = []
    if os.environ.get("UV_CACHE_DIR"):
        caches.append((os.environ["UV_CACHE_DIR"], "uv's cache ($UV_CACHE_DIR)"))
    xdg_cache = os.environ.get("XDG_CACHE_HOME")
    home = os.environ.get("HOME") or None
    if xdg_cache:
        caches.append((os.path.join(xdg_cache, "uv"), "uv's cache"))
        caches.append((os.path.join(xdg_cache, "pipx"), "pipx's cache"))
    if home:
        caches.append((os.path.join(home, ".cache", "uv"), "uv's cache"))
        caches.append((os.path.join(home, ".local", "pipx", ".cache"), "a `pipx run` cache"))
        caches.append((os.path.join(home, ".cache", "pipx"), "pipx's cache"))
    caches.append((tempfile.gettempdir(), "the temp dir"))
    for form in forms:
        parts = Path(form).parts
        for part in parts:
            if part == "archive-v0":
                return f"{form} is in uv's cache (archive-v0), which uv may clear"
            if part.startswith(".tmp"):
                return f"{form} is in a temporary folder ({part})"
        if "pipx" in parts and ".cache" in parts:
            return f"{form} is in a `pipx run` cache"
        for base, what in caches:
            for root in {os.path.abspath(base), os.path.realpath(base)}:
                if form == root or form.startswith(root.rstrip(os.sep) + os.sep):
                    return f"{form} is in {what} ({root}), which may be cleared"
    return None


# Whether ``mcp-hooks==<version>`` can be fetched from PyPI, for the ``uvx`` form: not until
# the package is published (a uvx command written before then fails at every hook call):
# errors.ON_PYPI, the one switch.


def _release_version() -> str | None:
    if not ON_PYPI:
        return None
    return __version__ if re.fullmatch(r"\d+(?:\.\d+)*", __version__) else None


def stable_prefix() -> list[str]:
    """An argv that starts ``mcp-hooks`` and keeps working after this process has gone, and
    never loads code from the folder the host runs it in (``python_prefix``).

    Raises:
        InstallError: only throwaway copies were found, or this Python imports mcp-hooks only
            from the current folder; says how to install for good.
    """
    seen: list[str] = []
    for candidate in _scripts():
        why = throwaway_reason(candidate)
        if why is None:
            return [os.path.abspath(candidate)]
        seen.append(why)
    package = Path(__file__).resolve().parent.parent
    why = throwaway_reason(sys.executable) or throwaway_reason(package)
    prefix = python_prefix(sys.executable) if why is None else None
    if prefix is not None:
        return prefix
    seen.append(why or f"{sys.executable} imports mcp-hooks ({package}) only from the current "
                "folder, not with -I or -P from any other")
    uvx = shutil.which("uvx")
    version = _release_version()
    if uvx and version and throwaway_reason(uvx) is None:
        return [os.path.abspath(uvx), f"mcp-hooks=={version}"]
    raise InstallError(
        "refusing to write a command that would stop working, or work only in one folder: "
        f"this mcp-hooks runs from a throwaway environment, or imports only from the current "
        f"folder ({'; '.join(dict.fromkeys(seen))}). To fix: "
        + INSTALL_FOR_GOOD + ".")


def _scripts() -> list[str]:
    """The ``mcp-hooks`` scripts to write, best first: the one running, the one on PATH, the
    one beside this Python (its environment's own)."""
    argv0 = sys.argv[0] if sys.argv else ""
    found = []
    if os.path.basename(argv0) in ("mcp-hooks", "mcp-hooks.exe") and os.path.isfile(argv0):
        found.append(argv0)
    on_path = shutil.which("mcp-hooks")
    if on_path:
        found.append(on_path)
    beside = Path(sys.executable).parent / "mcp-hooks"
    if os.access(beside, os.X_OK) and beside.is_file():
        found.append(str(beside))
    return found


# What python_prefix runs to see where a flag's import of mcp_hooks comes from.
_WHERE = "import mcp_hooks, sys; sys.stdout.write(mcp_hooks.__file__)"


def python_prefix(python: str) -> list[str] | None:
    """``<python> <flag> -m mcp_hooks.cli`` with the first flag of ``SAFE_FLAGS`` under which
    ``python``, started in an empty folder, imports this very package; None when neither does.

    ``-m`` alone puts the current folder first on ``sys.path``, and hosts run our command in
    the project: a cloned repository shipping ``mcp_hooks/__init__.py`` would run in our
    place. ``-I`` (isolated: no current or script folder, no ``PYTHON*`` variables, no user
    site-packages) is preferred; ``-P`` (Python 3.11+: only the folders left out) serves a
    package found through ``PYTHONPATH`` or the user site. Run once per install (~30 ms each).
    """
    here = Path(__file__).resolve().parent.parent / "__init__.py"
    with tempfile.TemporaryDirectory(prefix="mcp-hooks-install-") as empty:
        for flag in SAFE_FLAGS:
            try:
                done = subprocess.run([python, flag, "-c", _WHERE], cwd=empty, timeout=60,
                                      capture_output=True, text=True, env=_without_cwd_paths())
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0 and done.stdout and Path(done.stdout).resolve() == here:
                return [python, flag, "-m", "mcp_hooks.cli"]
    return None


def _without_cwd_paths() -> dict[str, str]:
    """This environment, with the empty and relative ``PYTHONPATH`` entries (which Python
    reads as the current folder) left out, so a check never passes through them."""
    env = dict(os.environ)
    if "PYTHONPATH" in env:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in env["PYTHONPATH"].split(os.pathsep) if os.path.isabs(p))
    return env


def explicit_prefix(given: str | None) -> list[str] | None:
    """``given``, the bridge command (``--bridge-command``, else ``$MCP_HOOKS_BRIDGE_COMMAND``:
    ``Settings.bridge_command``), split; None when not given.

    Raises:
        InstallOptionError: it would load code from the folder the host runs it in.
    """
    if not given:
        return None
    why = cwd_import_reason(given)
    if why:
        raise InstallOptionError(
            f"--bridge-command {given!r} (or ${BRIDGE_COMMAND_ENV}) would run code from the "
            f"project folder: {why}. Hosts run it there, so a cloned repository could stand in "
            "for mcp-hooks. Pass an absolute path, or start Python with -I (or -P on 3.11+): "
            "e.g. `python3 -I -m mcp_hooks.cli`")
    return shlex.split(given)


def forward_python(bridge: list[str]) -> str:
    """The interpreter that runs the forward script: the one of the stable ``mcp-hooks``
    (its script's ``#!`` line), else this one if stable, else ``python3`` on PATH."""
    first = bridge[0] if bridge else ""
    if first and os.path.basename(first).startswith("python"):
        return first
    try:
        with open(first, "rb") as f:
            line = f.readline(512)
    except OSError:
        line = b""
    if line.startswith(b"#!"):
        words = line[2:].decode(errors="replace").split()
        if len(words) == 1 and os.path.isabs(words[0]) and os.path.exists(words[0]) \
                and throwaway_reason(words[0]) is None:
            return words[0]
    if throwaway_reason(sys.executable) is None:
        return sys.executable
    return shutil.which("python3") or "python3"


__all__ = ["BRIDGE_COMMAND_ENV", "HOW_TO_INSTALL", "INSTALL_FOR_GOOD", "explicit_prefix",
           "forward_python", "python_prefix", "stable_prefix", "throwaway_reason"]
