"""Start what runs after the reply: one ``Launcher`` per engine, chosen once by ``launcher``.

Two kinds of background work leave an event's chain: its async hooks (scripts started with the
event's original payload, ``AsyncJob``; they cannot block or modify, and their results go to
the event log, ``async_record``, and their aid to the inbox) and its hooks.yaml ``async:
true`` entries (``run_background``). Both go through the same launcher, whose
strategy the engine picks once, at construction (``make_launcher(log, detached=...)``), never
tested per event. With a shared state store (``--state redis://...``), results, aid and signals
go to that store (the engine's, or in a detached process the one its URL names), so the
session's next event finds them on any replica:

- ``InProcessLauncher`` (a long-lived engine on an event loop: the MCP server, the proxy):
  async hooks are tasks of the engine's own task group (leaving ``async with engine`` waits
  for them, each bounded by its own timeout); hooks.yaml entries run in a daemon thread
  (their oracles block).
- ``DetachedLauncher`` (a process that fires one event and exits: ``mcp-hooks fire``, the
  host bridges): the work goes to ``python -m mcp_hooks.engine.launch`` in a session of its
  own (``spawn``), with the job as JSON on stdin, so the caller exits at once and the work
  neither holds it up nor dies with it. That process runs the hooks exactly as the engine
  would (same runner, timeouts, process-group kills) and logs their results.

This module never imports ``engine`` (which imports it): the detached process stays light.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mcp_hooks.engine.offloop import call_off_loop
from mcp_hooks.errors import ConfigError
from mcp_hooks.registry.managed import managed_layer
from mcp_hooks.runner import RunResult, run_hook
from mcp_hooks.runner import spawn as strategy
from mcp_hooks.runner.hookenv import hook_environment
from mcp_hooks.settings import DEFAULT_ENVIRONMENT
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.limits import Limits
from mcp_hooks.spec.signals import Signal
from mcp_hooks.state.eventlog import EventLog, now
from mcp_hooks.state.files import FileStore
from mcp_hooks.state.inbox import AidInbox, deliver_async
from mcp_hooks.state.signallog import SignalLog, signal_record
from mcp_hooks.state.store import StateStore, StateUnavailable

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from mcp_hooks.control.config import ControlConfig
    from mcp_hooks.control.ladder import Ladder

__all__ = ["AsyncJob", "DetachedLauncher", "InProcessLauncher", "Launcher", "async_record",
           "make_launcher", "run_background", "spawn"]

_MODULE = "mcp_hooks.engine.launch"


@dataclass(frozen=True, slots=True)
class AsyncJob:
    """One async hook to start: the hook, its stdin, its cwd and its whole environment."""

    hook: HookSpec
    stdin: bytes
    cwd: str
    env: dict[str, str]


class Launcher(Protocol):
    """Starts an event's background work; never waits for it."""

    async def open(self) -> None:
        """Called when the engine is entered."""

    async def close(self, exc: BaseException | None) -> None:
        """Called when the engine is left (``exc``: the caller's error, if any)."""

    def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
        """Start ``jobs`` (the async hooks ``event`` woke, in run order)."""

    def launch_entries(self, job: dict[str, Any], here: Callable[[], object]) -> None:
        """Start an event's hooks.yaml ``async: true`` entries: ``here`` runs them in this
        process; ``job`` (JSON) is what ``run_background`` needs in another."""


def make_launcher(log: EventLog | None, *, detached: bool, store: StateStore | None = None,
                  state: str = "file:", replica: str | None = None) -> Launcher:
    """The launcher of an engine: in its own process, or ``detached`` (a one-shot caller).
    ``store``: the engine's; a shared one (not the file store) gets the results, aid and
    signals; ``state``: its URL, which a detached process opens again."""
    if detached:
        return DetachedLauncher(log, state=state, replica=replica)
    return InProcessLauncher(log, store=_shared(store), replica=replica)


def _shared(store: StateStore | None) -> StateStore | None:
    """``store`` when it is a shared one; None for the file store (its files are the log's
    and the inbox's own, written as before ``--state``)."""
    return None if store is None or isinstance(store, FileStore) else store


class InProcessLauncher:
    """Async hooks in a task group the engine opens (``async with engine``); hooks.yaml
    entries in a daemon thread.

    Args:
        log: where each finished hook's record goes; None for no log.
        store: a shared state store: the records, aid and signals go there instead.
        replica: stamped as ``replica`` on every record (``--replica-id``); None: none.
    """

    def __init__(self, log: EventLog | None, store: StateStore | None = None,
                 replica: str | None = None) -> None:
        self.log = log
        self.store = store
        self.replica = replica
        self._tg: TaskGroup | None = None

    async def open(self) -> None:
        import anyio  # lazy: 2.2 ms of a one-shot `fire`, which never opens one (-X importtime)

        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()

    async def close(self, exc: BaseException | None) -> None:
        tg, self._tg = self._tg, None
        if tg is None:
            return
        if exc is None:
            await tg.__aexit__(None, None, None)
            return
        # The caller's own error wins: stop the async hooks (their groups are killed) and
        # let it propagate as it was, not wrapped in an exception group.
        tg.cancel_scope.cancel()
        with contextlib.suppress(BaseException):
            await tg.__aexit__(None, None, None)

    def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
        if self._tg is None:
            raise RuntimeError("an Engine must be entered (async with engine:) to run async hooks")
        for job in jobs:
            self._tg.start_soon(self._run, event, session_id, job)

    def launch_entries(self, job: dict[str, Any], here: Callable[[], object]) -> None:
        job["replica"] = self.replica  # run_background stamps the signals it logs
        threading.Thread(target=here, name="mcp-hooks-aid", daemon=True).start()

    async def _run(self, event: str, session_id: str | None, job: AsyncJob) -> None:
        hook = job.hook
        result = await run_hook(hook.entry, job.stdin, cwd=job.cwd, env=job.env,
                                timeout=hook.timeout / 1000, limits=hook.limits)
        await call_off_loop(functools.partial(  # the store's calls: off the event loop
            _finished, self.log, event, session_id,
            {"name": hook.name, "scope": hook.scope, "priority": hook.priority}, result,
            self.store, self.replica))


class DetachedLauncher:
    """The launcher of a one-shot engine: one detached process per event and kind of work.

    Only the ``AGENT_HOOKS_*`` variables travel in a hooks job: the detached process starts
    from its own environment (the caller's, inherited), less the secrets, as the engine does.

    Args:
        log: the event log the detached process appends to; None for no log.
        state: the state store's URL; the detached process opens a shared one again.
        replica: stamped as ``replica`` on every record the detached process writes.
    """

    def __init__(self, log: EventLog | None, state: str = "file:",
                 replica: str | None = None) -> None:
        self.log = log
        self.state = state if state != "file:" else None
        self.replica = replica

    async def open(self) -> None:
        return None

    async def close(self, exc: BaseException | None) -> None:
        return None

    def launch(self, event: str, session_id: str | None, jobs: list[AsyncJob]) -> None:
        spawn({
            "kind": "hooks",
            "event": event,
            "session_id": session_id,
            "log": str(self.log.path) if self.log is not None else None,
            "state": self.state,
            "replica": self.replica,
            "runner": strategy.current.words,  # the spawn strategy in force here
            "jobs": [{
                "hook": {"name": job.hook.name, "scope": job.hook.scope,
                         "priority": job.hook.priority},
                "argv": list(job.hook.entry),
                "stdin": job.stdin.decode(),
                "cwd": job.cwd,
                "env": {k: v for k, v in job.env.items() if k.startswith("AGENT_HOOKS_")},
                "timeout": job.hook.timeout / 1000,
                "limits": dataclasses.asdict(job.hook.limits),
            } for job in jobs],
        })

    def launch_entries(self, job: dict[str, Any], here: Callable[[], object]) -> None:
        spawn({**json.loads(json.dumps(job, default=str)), "kind": "entries",
               "state": self.state, "replica": self.replica})


def child_argv() -> list[str]:
    """This interpreter on ``_MODULE``, never importing from the current folder: the caller
    runs in the host's project folder, where ``python -m`` alone would put a cloned
    repository's own ``mcp_hooks/`` first. ``-I`` if this process runs isolated (its
    environment then imports us so too), else ``-P`` (3.11+), else (3.10) ``-c`` dropping the
    current folder's entry before importing the module."""
    if sys.flags.isolated:
        return [sys.executable, "-I", "-m", _MODULE]
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", _MODULE]
    return [sys.executable, "-c", "import sys\nif sys.path and sys.path[0] == '':\n"
            f"    del sys.path[0]\nimport runpy\nrunpy.run_module({_MODULE!r}, "
            "run_name='__main__')"]


def spawn(job: dict[str, Any]) -> None:
    """Start ``python -P -m mcp_hooks.engine.launch`` (``child_argv``) detached with ``job``
    as JSON on stdin; never waits for it, never raises."""
    try:
        read_fd, write_fd = os.pipe()
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.posix_spawn(
                sys.executable,
                child_argv(),
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read_fd, 0),
                    (os.POSIX_SPAWN_DUP2, devnull, 1),
                    (os.POSIX_SPAWN_DUP2, devnull, 2),
                    (os.POSIX_SPAWN_CLOSE, write_fd),
                ],
                setsid=True,
            )
        finally:
            os.close(read_fd)
            os.close(devnull)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(json.dumps(job).encode())
    except OSError as exc:
        print(f"mcp-hooks: could not start background work: {exc}", file=sys.stderr)


def _finished(log: EventLog | None, event: str, session_id: str | None, hook: dict[str, Any],
              result: RunResult, store: StateStore | None = None,
              replica: str | None = None) -> None:
    """Log one finished async hook and leave its aid for the session's next event (in
    ``store`` when shared, else the log and the file inbox); ``replica``: its stamp."""
    record = async_record(event, session_id, hook, result)
    if replica is not None:
        record["replica"] = replica
    if store is not None:
        store.append("events", record)
    elif log is not None:
        log.append(record)
    deliver_async(event, session_id, hook["name"], result.stdout, result.exit_code,
                  log.path if log is not None else None, store=store, replica=replica)


def async_record(
    event: str, session_id: str | None, hook: dict[str, Any], result: RunResult
) -> dict[str, Any]:
    """The log record of one finished async hook.

    Args:
        event: the canonical event that started it.
        session_id: the event's session.
        hook: ``name``, ``scope`` and ``priority`` of the hook.
        result: what the runner saw.
    """
    if result.timed_out:
        status = "timeout"
    elif result.exit_code == 0:
        status = "allow"
    else:
        status = "error"
    record: dict[str, Any] = {
        **hook, "mode": "async", "status": status, "exit_code": result.exit_code,
        "duration_ms": round(result.duration_ms, 3), "message": result.spawn_error,
    }
    if result.stdout:
        record["stdout"] = result.stdout.decode("utf-8", errors="replace")
    if result.stderr:
        record["stderr"] = result.stderr.decode("utf-8", errors="replace")
    return {"ts": now(), "kind": "async_result", "event": event, "session_id": session_id,
            "hook": record}


async def _run_hooks(job: dict[str, Any], store: StateStore | None = None) -> None:
    """A detached hooks job: its async hooks side by side, each logged when it ends."""
    # lazy: 1.3 ms of cold fire (python -X importtime)
    import anyio  # lazy: only the detached process runs this (see InProcessLauncher.open)

    log = EventLog(job["log"]) if job.get("log") else None
    # the secrets stay out here too; the store's URL (it may hold the password) by its value
    base_env = hook_environment(os.environ, [job.get("state") or ""])

    async def one(spec: dict[str, Any]) -> None:
        result = await run_hook(
            spec["argv"], spec["stdin"].encode(), cwd=spec["cwd"],
            env={**base_env, **spec["env"]}, timeout=spec["timeout"],
            limits=Limits(**spec.get("limits", {})),
        )
        _finished(log, job["event"], job.get("session_id"), spec["hook"], result, store,
                  job.get("replica"))

    async with anyio.create_task_group() as tg:
        for spec in job["jobs"]:
            tg.start_soon(one, spec)


def run_background(job: dict[str, Any], config: ControlConfig | None = None,
                   ladder: Ladder | None = None, secrets: Collection[str] = (),
                   store: StateStore | None = None) -> list[Signal]:
    """Run one event's hooks.yaml ``async: true`` entries (``entries.ControlLayer.background``
    made ``job``); log their aid and leave it in the inbox (of ``store``, else of the
    ladder's store when shared, else the file inbox and the signal log beside the job's
    log). Never raises."""
    # an engine imports the control layer only when a hooks.yaml exists (entries.py).
    # lazy: the control layer, 42 ms of cold fire (python -X importtime)
    from mcp_hooks.control.config import load_config
    from mcp_hooks.control.evaluation import evaluate  # lazy: 44 ms of cold fire, as above
    from mcp_hooks.control.trust import TRUSTED_ALL, TrustedDigest  # lazy: as above

    project = Path(job["project_dir"]) if job.get("project_dir") else None
    try:
        if config is None:
            managed = job.get("managed_dir")  # its managed layer, as the engine read it
            found = job.get("trust")  # and its project's trust, as the engine found it
            config = load_config(project, user_file=Path(job["user_file"]),
                                 trust_project=found == TRUSTED_ALL,
                                 trust_store=TrustedDigest(None if found == TRUSTED_ALL
                                                           else found),
                                 **managed_layer(Path(managed) if managed else None))
        signals = evaluate(job["trigger"], job["payload"], config=config, ladder=ladder,
                           project_dir=project, background=True,
                           correlation_id=job.get("correlation_id"), secrets=secrets,
                           environment=job.get("environment") or DEFAULT_ENVIRONMENT)
    except Exception as exc:  # a background fault is reported, never raised
        print(f"mcp-hooks: background hooks.yaml entries failed: {exc}", file=sys.stderr)
        return []
    store = store if store is not None else _shared(ladder.store if ladder else None)
    if store is not None:
        AidInbox(store=store).put(job.get("session_id"), signals)  # first, as below
        for signal in signals:
            store.append("signals", signal_record(signal, job.get("session_id")))
        return signals
    AidInbox().put(job.get("session_id"), signals)  # first: once logged, it is waiting
    if signals and job.get("log"):
        SignalLog.beside(Path(job["log"])).record(signals, job.get("session_id"),
                                                  replica=job.get("replica"))
    return signals


def main() -> None:
    """``python -m mcp_hooks.engine.launch``: one background job as JSON on stdin."""
    job = json.loads(sys.stdin.buffer.read())
    strategy.adopt(job.get("runner") or "")
    store: StateStore | None = None
    if job.get("state"):  # a shared store, opened again here (the caller has exited)
        # lazy: only a job with a shared store opens one (the backend's own import, 31 ms)
        from mcp_hooks.state.url import close_store, open_store, replica_name

        try:
            store = open_store(job["state"], replica=job.get("replica") or replica_name())
        except (ConfigError, StateUnavailable) as exc:  # unreachable, or its extra missing
            print(f"mcp-hooks: background work cannot reach its state store: {exc}",
                  file=sys.stderr)
            return
    try:
        if job.get("kind") == "entries":
            run_background(job, store=store, secrets=[job.get("state") or ""])
            return
        # lazy: 1.3 ms of cold fire (python -X importtime)
        import anyio  # lazy: see InProcessLauncher.open

        anyio.run(_run_hooks, job, store)
    finally:
        if store is not None:
            close_store(store)


if __name__ == "__main__":
    main()
