"""The one cache folder of the test suite, and the one way anything gets installed into it.

Every download a test needs (the real agent hosts from npm and PyPI, the TypeScript MCP SDK,
``@modelcontextprotocol/server-filesystem``, and npm's and pip's download caches) lives under
one folder, outside the repository and shared by every checkout and run on the machine:

    $MCP_HOOKS_TEST_CACHE
      (else $MCP_HOOKS_E2E_CACHE, the old name, honoured for one release;
       else $XDG_CACHE_HOME/mcp-hooks-test; else ~/.cache/mcp-hooks-test)
        .locks/<name>.lock       one lock file per installed folder (fcntl.flock)
        <name>/                  a complete install, and only ever a complete one
        .<name>.partial-<pid>/   an install under way (or a dead one, removed next time)
        npm/  pip/               the installers' own download caches

The contract of :func:`ensure`, which every installer in ``tests/`` goes through:

* **The final folder is complete or absent.** An install runs in a fresh temporary sibling,
  is checked, gets a ``.mcp-hooks-complete`` marker and only then is renamed into place (one
  ``rename``, atomic on one file system). An interrupted install (Ctrl-C, a killed CI job, a
  full disk) leaves at most a ``.partial-<pid>`` folder, never a half-filled final one.
* **Concurrent installs of the same folder do the work once.** The install runs under an
  exclusive ``flock`` on ``.locks/<name>.lock``; whoever gets the lock second finds the
  finished folder and returns it. The kernel drops the lock of a process that dies, so a
  killed installer never blocks the next one.
* **Stale leftovers go.** Under the lock, every ``.partial-*`` sibling of the folder (no one
  else can be writing it) and a final folder without the marker (left by an older layout)
  are removed before a new install starts.

A folder is found complete without taking the lock, so a warm cache costs one ``stat``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

ENV = "MCP_HOOKS_TEST_CACHE"
OLD_ENV = "MCP_HOOKS_E2E_CACHE"  # the name before issue 11; read as a fallback for one release
COMPLETE = ".mcp-hooks-complete"


def default_root() -> Path:
    """``$XDG_CACHE_HOME/mcp-hooks-test``, or ``<home>/.cache/mcp-hooks-test``.

    The home comes from the password database, not ``$HOME``: tests point ``HOME`` at a path
    that cannot exist (``tests/conftest.py``), and the cache must be the same folder for every
    test and every run.
    """
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "mcp-hooks-test"
    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "mcp-hooks-test"


def cache_root() -> Path:
    """The cache folder: ``$MCP_HOOKS_TEST_CACHE``, else the old ``$MCP_HOOKS_E2E_CACHE``,
    else :func:`default_root`."""
    for var in (ENV, OLD_ENV):
        value = os.environ.get(var, "")
        if value:
            return Path(value)
    return default_root()


def is_complete(folder: Path) -> bool:
    """Whether ``folder`` is a finished install (it carries the marker)."""
    return (folder / COMPLETE).is_file()


@contextlib.contextmanager
def locked(name: str, root: Path | None = None) -> Iterator[None]:
    """Hold the exclusive install lock of ``name`` (a path relative to the cache root)."""
    root = root or cache_root()
    lock = root / ".locks" / (name.replace("/", "__") + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def relocate_scripts(folder: Path, old: Path, new: Path) -> None:
    """Rewrite ``old`` to ``new`` in the text scripts of ``folder/bin`` (a venv's console
    scripts name their interpreter by absolute path), so a venv built in a temporary folder
    runs once renamed into place."""
    before, after = os.fsencode(str(old)), os.fsencode(str(new))
    bin_dir = folder / "bin"
    if not bin_dir.is_dir():
        return
    for script in bin_dir.iterdir():
        if script.is_symlink() or not script.is_file() or script.stat().st_size > 1 << 20:
            continue
        data = script.read_bytes()
        if b"\0" in data or before not in data:
            continue
        mode = script.stat().st_mode
        script.write_bytes(data.replace(before, after))
        script.chmod(mode)


def ensure(
    name: str,
    install: Callable[[Path], object],
    *,
    root: Path | None = None,
    relocatable: bool = True,
) -> tuple[Path, bool]:
    """Return ``(folder, installed_now)``: ``<root>/<name>``, installed by ``install`` unless
    a complete one is there.

    ``install(tmp)`` fills the fresh, empty folder ``tmp`` and raises if anything failed
    (including its own check that what it installed runs); nothing it leaves behind on
    failure reaches the final path. With ``relocatable=False`` (a venv), the ``bin/`` scripts
    are rewritten from ``tmp`` to the final path before the rename.
    """
    root = root or cache_root()
    final = root / name
    if is_complete(final):
        return final, False
    final.parent.mkdir(parents=True, exist_ok=True)
    with locked(name, root):
        if is_complete(final):  # someone else finished it while we waited for the lock
            return final, False
        for stale in final.parent.glob(f".{final.name}.partial-*"):
            _remove(stale)  # a dead install's leftovers: under the lock, nobody writes them
        if final.exists() or final.is_symlink():
            _remove(final)  # no marker: not ours to trust (an older, in-place layout)
        tmp = final.parent / f".{final.name}.partial-{os.getpid()}"
        tmp.mkdir()
        try:
            install(tmp)
            if not relocatable:
                relocate_scripts(tmp, tmp, final)
            (tmp / COMPLETE).write_text(f"{name}\n")
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final, True


def npm_env(home: Path) -> dict[str, str]:
    """The environment of an ``npm install`` into the cache: the caller's (registry, proxy
    and CA settings apply), with ``HOME`` at ``home`` and npm's download cache and logs in
    the cache's ``npm/``, no update check, audit or funding messages."""
    npm = cache_root() / "npm"
    return {
        **os.environ,
        "HOME": str(home),
        "npm_config_cache": str(npm),
        "npm_config_logs_dir": str(npm / "_logs"),
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }


def npm_package(package: str, version: str, *, folder: str, timeout: float = 600) -> Path:
    """The ``node_modules`` folder of ``package@version``, installed once by npm into
    ``<cache>/node/<folder>-<version>`` (through :func:`ensure`).

    Raises ``RuntimeError`` with npm's output when the install fails; the caller skips first
    where ``npm`` is missing.
    """
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH")

    def install(tmp: Path) -> None:
        home = tmp / ".home"
        home.mkdir()
        (tmp / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            [npm, "install", "--prefix", str(tmp), "--no-save", "--no-package-lock",
             "--loglevel", "error", f"{package}@{version}"],
            capture_output=True, text=True, env=npm_env(home), timeout=timeout,
            stdin=subprocess.DEVNULL, cwd=tmp,
        )
        shutil.rmtree(home, ignore_errors=True)
        if done.returncode != 0:
            raise RuntimeError(
                f"npm install of {package}@{version} failed (exit {done.returncode}):\n"
                f"{done.stderr[-3000:]}"
            )
        manifest = tmp / "node_modules" / package / "package.json"
        if json.loads(manifest.read_text())["version"] != version:
            raise RuntimeError(f"npm installed another version of {package} than {version}")

    final, _ = ensure(f"node/{folder}-{version}", install)
    return final / "node_modules"
