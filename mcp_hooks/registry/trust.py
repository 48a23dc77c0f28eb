"""Project-hook trust: the store of the digests users trusted.

A cloned repository's ``.agents/hooks`` may hold anything; its scripts run only after the
user trusted their exact content (``mcp-hooks trust``). Trust is recorded per project (its
resolved path) and hook name as the SHA-256 of the whole hook folder (``digest.py``'s
``hook_digest``): any change to HOOK.md, a script, a mode bit or the set of files makes the
hook "changed" until trusted again.

The store is one JSON file, ``Settings.trust_store`` (``$MCP_HOOKS_TRUST_STORE`` or
``$XDG_STATE_HOME/mcp-hooks/trust.json``; a door passes it, a library caller's ``TrustStore()``
takes the environment's)::

    {"version": 1,
     "projects": {"/abs/project": {"hook-name": {"sha256": "<hex>", "trusted_at": "<ISO 8601>"}}}}

Reading is cheap (one ``stat`` per query once loaded) and tolerant: a missing file is an empty
store, a corrupt one is an empty store plus ``TrustStore.problem``. Writers lock a sibling
``.lock`` file, re-read, merge and replace the file atomically, so concurrent ``trust`` runs
lose nothing; a corrupt file is never overwritten.

Shared (``--state redis://...|postgresql://...``): ``TrustStore(shared=...)`` keeps the same
entries in a shared state store instead (anything with the ``SharedDigests`` methods; the
room above both hands the store in, so this module imports no state backend), so trusting
once on one machine serves every replica on that store. Entries are read again at most every
``SHARED_REFRESH`` seconds; a store that cannot be read reads as empty plus ``problem``
(every project hook untrusted: skipped with the reason, never run), or, once it was read,
as its last reading plus ``problem`` (an outage neither revokes nor grants: the project's
guards keep running); ``trust`` and ``revoke`` write one hook entry each, so concurrent runs
lose nothing. With a trust key (``key``, ``MCP_HOOKS_TRUST_KEY``) every entry written is
signed and an entry read counts only when its signature matches (``signing.py``).

Standard library only, and cheap to import: the host bridges import it on every tool call.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from mcp_hooks.errors import RunError
from mcp_hooks.paths import read_plain
from mcp_hooks.registry.digest import UNVERIFIABLE_DIGEST, TrustError, is_digest
from mcp_hooks.registry.signing import Signatures
from mcp_hooks.settings import trust_store_path

TRUST_ALL_ENV = "MCP_HOOKS_TRUST_PROJECT_HOOKS"
STORE_ENV = "MCP_HOOKS_TRUST_STORE"
STORE_VERSION = 1

LOCK_TIMEOUT = 10.0
SHARED_REFRESH = 1.0  # seconds a shared store's entries are used before being read again

Status = Literal["trusted", "untrusted", "changed"]


class TrustStoreError(TrustError):
    """The trust store file cannot be read, locked or written; the message says how to fix it.

    Attributes:
        path: the store file (or its lock file / folder) at fault.
    """

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@runtime_checkable
class SharedDigests(Protocol):
    """Trusted digests kept in a shared state store (``state/redis.py``, ``postgres.py``)."""

    def trust_entries(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every entry: project -> hook name -> entry; raises a ``RunError`` when lost."""
        ...

    def trust_put(self, project: str, entries: dict[str, dict[str, Any]]) -> None:
        """Record (or replace) some hooks' entries of a project."""
        ...

    def trust_drop(self, project: str, names: list[str]) -> None:
        """Forget some hooks' entries of a project."""
        ...


# -- the store --------------------------------------------------------------------------

MAX_STORE_BYTES = 64 << 20  # a project's entry is a few hundred bytes: past this, not a store


_Data = dict[str, Any]
_HOW_TO_FIX = ("fix it by hand, or move it away to start over (every project hook will "
               "then need `mcp-hooks trust` again)")


def _empty() -> _Data:
    return {"version": STORE_VERSION, "projects": {}}


def _check_shape(data: Any) -> str | None:
    """Why ``data`` is not a trust store of our version, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    version = data.get("version")
    if version != STORE_VERSION:
        if isinstance(version, int) and not isinstance(version, bool) and version > 1:
            return f"version {version} was written by a newer mcp-hooks; upgrade mcp-hooks"
        return f"version must be {STORE_VERSION}, got {version!r}"
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return "projects must be a JSON object"
    for project, hooks in projects.items():
        if not isinstance(hooks, dict):
            return f"projects[{project!r}] must be a JSON object"
        for name, entry in hooks.items():
            if not isinstance(entry, dict) or not is_digest(entry.get("sha256")):
                return f"projects[{project!r}][{name!r}] must hold a sha256 of 64 hex digits"
    return None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class TrustStore:
    """The trusted digests of project hooks, in one JSON file.

    Args:
        path: the store file (a door's ``Settings.trust_store``); None, for a library
            caller who says nothing: ``$MCP_HOOKS_TRUST_STORE``, else the default file.

    Attributes:
        path: the store file.
        problem: why the file could not be read (it then reads as empty), or None.
    """

    @classmethod
    def over(cls, store: object, where: str, key: str | None = None) -> TrustStore | None:
        """The trust store kept in a shared state ``store`` (named ``where`` in messages),
        its records signed and checked with ``key`` (None: unsigned); None for a store that
        keeps no digests (the file store: the trust file, as before)."""
        return cls(shared=store, where=f"the state store {where}", key=key) \
            if isinstance(store, SharedDigests) else None

    def __init__(self, path: Path | None = None, *, shared: SharedDigests | None = None,
                 where: str | None = None, key: str | None = None) -> None:
        if path is None and shared is None:  # a library caller's TrustStore(): its door
            path = trust_store_path()
        self.path = Path(path) if path is not None else Path(os.devnull)  # shared: no file
        self.shared = shared
        self.where = where or str(self.path)  # how messages name the store
        # a shared store's records count only when signed with the key (signing.py)
        self.signatures = Signatures(key, self.where) if key and shared is not None else None
        self._data: _Data = _empty()
        self._problem: str | None = None
        self._signature: object = ()  # never a real signature: the first query reads
        self._fetched: tuple[float, _Data, str | None, object] | None = None  # shared store

    # -- reading -------------------------------------------------------------------------

    @property
    def problem(self) -> str | None:
        self._current()
        return self._problem

    def _read(self) -> tuple[_Data, str | None]:
        try:
            raw = read_plain(self.path, MAX_STORE_BYTES)
        except FileNotFoundError:
            return _empty(), None
        except OSError as exc:
            return _empty(), (f"{self.path}: cannot be read ({exc.strerror}); fix its "
                              "permissions or move it away")
        except ValueError as exc:  # a FIFO, a device, a folder, a huge file: never waited on
            return _empty(), f"{self.path}: {exc}, not read; {_HOW_TO_FIX}"
        if not raw.strip():
            return _empty(), None
        try:
            data = json.loads(raw)
        except ValueError as exc:  # UnicodeDecodeError is one
            return _empty(), f"{self.path}: not valid JSON ({exc}); {_HOW_TO_FIX}"
        why = _check_shape(data)
        if why is not None:
            return _empty(), f"{self.path}: not a trust store: {why}; {_HOW_TO_FIX}"
        return data, None

    def _shared_state(self, shared: SharedDigests) -> tuple[_Data, str | None, object]:
        """A shared store's entries, problem and signature, read at most every
        ``SHARED_REFRESH`` seconds (one tuple swapped whole: threads see one reading)."""
        now = time.monotonic()
        fetched = self._fetched
        if fetched is not None and now - fetched[0] < SHARED_REFRESH:
            return fetched[1], fetched[2], fetched[3]
        try:
            data: _Data = {"version": STORE_VERSION, "projects": shared.trust_entries()}
            if self.signatures is not None:  # an unsigned or forged record counts as none
                data["projects"] = self.signatures.check(data["projects"])
            why = _check_shape(data)
            problem = None if why is None else f"{self.where}: not a trust store: {why}"
        except (RunError, OSError) as exc:
            problem = f"{self.where}: cannot be read ({exc})"
            if fetched is not None:  # lost for now: the last reading stands (revokes nothing,
                # trusts nothing new), so a store outage does not turn the project's guards off
                self._fetched = (now, fetched[1], problem, fetched[3])
                return fetched[1], problem, fetched[3]
        if problem is not None:  # never read: every project hook untrusted, never run
            data = _empty()
        signature = json.dumps([data, problem], sort_keys=True)
        self._fetched = (now, data, problem, signature)
        return data, problem, signature

    def signature(self) -> object:
        """The store file's stat, a value that moves whenever the file does: None for no
        file, ``()`` when it cannot be looked at (then it is read again every time). For a
        shared store, its entries as last read (at most ``SHARED_REFRESH`` seconds old)."""
        if self.shared is not None:
            return self._shared_state(self.shared)[2]
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError:
            return ()
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _current(self) -> _Data:
        if self.shared is not None:
            self._data, self._problem, _ = self._shared_state(self.shared)
            return self._data
        signature = self.signature()
        if signature != self._signature or signature == ():
            self._data, self._problem = self._read()
            self._signature = signature
        return self._data

    @staticmethod
    def project_key(project_dir: Path) -> str:
        """How a project is named in the store: its resolved absolute path."""
        return str(Path(project_dir).resolve())

    def status(self, project_dir: Path, name: str, digest: str) -> Status:
        """``trusted`` (this exact digest), ``changed`` (trusted with another digest) or
        ``untrusted`` (no entry). ``UNVERIFIABLE_DIGEST`` is never trusted."""
        hooks = self._current()["projects"].get(self.project_key(project_dir))
        entry = hooks.get(name) if hooks else None
        if entry is None:
            return "untrusted"
        if entry.get("sha256") == digest and digest != UNVERIFIABLE_DIGEST:
            return "trusted"
        return "changed"

    def entries(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every entry: project path -> hook name -> {"sha256", "trusted_at", ...} (a copy)."""
        projects: dict[str, dict[str, dict[str, Any]]] = self._current()["projects"]
        return {p: {n: dict(e) for n, e in hooks.items()} for p, hooks in projects.items()}

    # -- writing -------------------------------------------------------------------------

    def trust(self, project_dir: Path, digests: Mapping[str, str]) -> None:
        """Record ``{hook name: digest}`` as trusted for a project (replacing older digests).

        Raises:
            TrustError: a digest is not 64 hex digits, or is ``UNVERIFIABLE_DIGEST``.
            TrustStoreError: the store is corrupt (never overwritten), or cannot be written.
        """
        for name, digest in digests.items():
            if not isinstance(name, str) or not name:
                raise TrustError(f"{name!r}: a hook name must be a non-empty string")
            if not is_digest(digest):
                raise TrustError(f"{name}: {digest!r} is not a hex SHA-256 from hook_digest")
            if digest == UNVERIFIABLE_DIGEST:
                raise TrustError(f"{name}: its folder cannot be hashed in full (too many "
                                 "entries, a file too large, or unreadable), so it cannot be "
                                 "trusted; see `mcp-hooks trust` for why")
        if not digests:
            return
        key = self.project_key(project_dir)
        when = _now()
        if self.shared is not None:
            sign = self.signatures.sign if self.signatures is not None else (
                lambda project, name, entry: entry)
            self.shared.trust_put(key, {name: sign(key, name, {"sha256": digest,
                                                               "trusted_at": when})
                                        for name, digest in digests.items()})
            self._fetched = None  # read as written on the next query
            return

        def change(data: _Data) -> bool:
            hooks = data["projects"].setdefault(key, {})
            for name, digest in digests.items():
                hooks[name] = {"sha256": digest, "trusted_at": when}
            return True

        self._update(change)

    def revoke(self, project_dir: Path, names: Iterable[str] | None = None) -> list[str]:
        """Forget trust for some hooks of a project (None: all of them).

        Returns:
            The names whose trust was removed, sorted (names never trusted are skipped).

        Raises:
            TrustStoreError: the store is corrupt (never overwritten), or cannot be written.
        """
        key = self.project_key(project_dir)
        wanted = None if names is None else set(names)
        removed: list[str] = []
        if self.shared is not None:
            hooks = self.shared.trust_entries().get(key) or {}
            removed = sorted(hooks) if wanted is None else sorted(wanted & set(hooks))
            self.shared.trust_drop(key, removed)
            self._fetched = None
            return removed

        def change(data: _Data) -> bool:
            hooks = data["projects"].get(key)
            if not hooks:
                return False
            gone = sorted(hooks) if wanted is None else sorted(wanted & set(hooks))
            for name in gone:
                del hooks[name]
            if not hooks:
                del data["projects"][key]
            removed.extend(gone)
            return bool(gone)

        self._update(change)
        return removed

    def _update(self, change: Callable[[_Data], bool]) -> None:
        """Lock, re-read, apply ``change`` (False: nothing to write), replace atomically."""
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise TrustStoreError(folder, f"cannot create the folder ({exc.strerror}); "
                                  f"create it, or set {STORE_ENV} to a writable file") from None
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise TrustStoreError(lock, f"cannot open the lock file ({exc.strerror}); fix the "
                                  f"folder's permissions or set {STORE_ENV}") from None
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TrustStoreError(
                            lock, f"still locked by another process after {LOCK_TIMEOUT:g} s; "
                            "try again, or end the process that holds it") from None
                    time.sleep(0.01)
            data, problem = self._read()
            if problem is not None:
                self._problem = problem
                raise TrustStoreError(self.path, "refusing to overwrite a store that cannot "
                                      f"be read: {problem.removeprefix(f'{self.path}: ')}")
            if not change(data):
                return
            self._write(data)
        finally:
            os.close(fd)  # releases the lock
        self._signature = ()  # read the file as written on the next query

    def _write(self, data: _Data) -> None:
        # lazy: 13 ms of cold start (tempfile), only when the trust store is written
        import tempfile

        folder = self.path.parent
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".tmp")
        except OSError as exc:
            raise TrustStoreError(folder, f"cannot write there ({exc.strerror}); fix its "
                                  f"permissions or set {STORE_ENV}") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp made it 0600
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise TrustStoreError(self.path, f"cannot be written ({exc.strerror}); fix the "
                                  f"folder's permissions or set {STORE_ENV}") from None
        try:
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
