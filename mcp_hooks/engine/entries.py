"""What an engine holds of the control layer: its project's hooks.yaml, kept current.

``ControlLayer.config()`` is the merged hooks.yaml (``config.load_config``) of the engine's
project, or None when no layer exists: then nothing of the control layer is imported and an
event pays three ``stat`` calls (one-shot) or one non-blocking ``read`` (a long-lived engine
watching ``~/.ahp``, the project's ``.ahp`` and the trust store with inotify).

Reading the layers has a deadline too (``LOAD_TIMEOUT``, in a worker thread): a layer that
cannot be read in time (a FIFO among the ``.py`` files the trust digest reads) is a problem
of every trigger, so events that can block are denied saying so, never hung.

The entries are the last links of the event's one chain, after the HOOK.md hooks:
``ControlLayer.decide`` runs one event's sync entries (``evaluation.evaluate``) and returns
one ``judge.Verdict`` per signal, the type a hook run gives, which the chain's one loop
applies in order until one blocks (``links.HooksYaml``, ``Chain.apply``, ``Chain.stopped``).
``ControlLayer.background`` hands the ``async: true`` entries to the engine's launcher
(``launch.py``: a thread in a long-lived engine, a detached process for a one-shot caller),
which runs them beside the chain and the reply (``run_background``), logging their aid
signals and leaving them in the session's inbox (``inbox.py``) for its next event.

How a signal acts on the event (``_verdict``, in one place):

- **block**: a deny with the signal's reason and resolution path, ``blocked_by`` the
  entry's source. On an event that cannot block, a warning.
- **prompt**: the message (and suggestions) in ``additional_context``; the event goes on.
  A prompt of type ``oracle_fault`` (an oracle that raised) and the block signals of a broken
  hooks.yaml (``config_error``) are faults of the control layer: under ``on_fault: block`` a
  deny saying what broke, under ``warn`` (or on an event that cannot block) a warning, its
  block signal turned into a prompt (as a broken HOOK.md hook is). A never-trusted project's
  problems (``ControlConfig.skipped_for``) are only a warning, in every mode.
- **control**: a modification of ``field: tool_input`` with a ``to`` object rewrites the tool
  input (``modified_input``) on ``before_tool``; any other adjustment (a batch split, lint
  fixes already applied) is described in ``additional_context``.
- **aid**: in ``additional_context``.

Threads: a long-lived engine calls ``decide`` from several worker threads at once. What the
layer keeps between events (the configuration, the watcher, the signatures, the ladder) is
read and refreshed under one lock; an event's evaluation itself shares nothing mutable
(each oracle runs in a thread of its own, ``evaluation.run_oracle``), and the ladder's
updates lock its file.
"""

from __future__ import annotations

import functools
import shlex
import threading
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_hooks.engine.audit import audited_entries
from mcp_hooks.engine.judge import Verdict
from mcp_hooks.engine.launch import Launcher, run_background
from mcp_hooks.paths import ahp_user_file
from mcp_hooks.registry.digest import set_digest
from mcp_hooks.registry.managed import managed_layer
from mcp_hooks.settings import DEFAULT_ENVIRONMENT
from mcp_hooks.spec.signals import Signal

if TYPE_CHECKING:
    from mcp_hooks.control.config import ControlConfig, Entry, HooksYamlError
    from mcp_hooks.control.ladder import Ladder
    from mcp_hooks.registry.trust import TrustStore
    from mcp_hooks.registry.watch import ChangeWatcher

LOAD_TIMEOUT = 10.0  # seconds reading the hooks.yaml layers may take
_FAULTS = ("oracle_fault", "config_error")  # the control layer's own, under on_fault


def _rewrite(signal: Signal) -> dict[str, Any] | None:
    for change in signal.payload.get("modifications") or ():
        if (isinstance(change, dict) and change.get("field") == "tool_input"
                and isinstance(change.get("to"), dict)):
            return dict(change["to"])
    return None


def _untrusted_note(entries: list[Entry], project_dir: Path | None) -> str:
    which = ", ".join(sorted({f"{e.id} ({e.trigger})" for e in entries}))
    where = shlex.quote(str(project_dir)) if project_dir is not None else "PROJECT"
    return (f"project hooks.yaml entries that run commands or write files are not trusted, "
            f"so not run: {which}. Read .ahp/, then trust it with: mcp-hooks trust {where}")


class ControlLayer:
    """The hooks.yaml of one project, read again when it changes.

    Args:
        project_dir: the project whose ``.ahp`` layers apply; None for the user layer only.
        user_file: the user layer; None for ``paths.ahp_user_file()``.
        ladder: the escalation store; None for the default file.
        watch: keep watching for changes (a long-lived engine); False reads once (a one-shot
            process).
        secrets: values no oracle's command may see in its environment (a server's token);
            ``MCP_HOOKS_TOKEN`` is always left out, as for hooks (``hookenv``).
        load_timeout: seconds reading the layers may take (``_load``).
        trust_project: trust the project layers without the store (``--trust-project-hooks``,
            as the registry's project hooks); None reads ``MCP_HOOKS_TRUST_PROJECT_HOOKS``.
        environment: the deployment environment (``Settings.environment``) a
            ``when.environment`` tests when the payload names none.
    """

    def __init__(self, project_dir: Path | None, *, user_file: Path | None = None,
                 ladder: Ladder | None = None, watch: bool = True,
                 secrets: Collection[str] = (), load_timeout: float = LOAD_TIMEOUT,
                 trust_project: bool | None = None,
                 trust_store: TrustStore | None = None, managed_dir: Path | None = None,
                 mode: str = "enforce", environment: str = DEFAULT_ENVIRONMENT) -> None:
        self.environment = environment  # Settings.environment, for when.environment
        self.mode = mode  # audit: every entry but the managed ones is audited (audit.py)
        self.managed_dir = managed_dir  # its hooks.yaml is read first (control/config.py)
        self.project_dir = Path(project_dir) if project_dir is not None else None
        self.user_file = Path(user_file) if user_file is not None else ahp_user_file()
        self._ladder = ladder
        self._watch = watch
        self._watcher: ChangeWatcher | None = None
        self._config: ControlConfig | None = None
        self._loaded = False
        self._seen: tuple[tuple[str, int, int, int], ...] = ()
        self._trust_seen: tuple[int, int] | None = None
        self._woken: tuple[ControlConfig | None, frozenset[str | None] | None] = (None, None)
        self._secrets = tuple(secrets)
        self._load_timeout = load_timeout
        self._trust_project = trust_project
        self._trust_store = trust_store  # the registry's: the trust file or a shared store
        self._lock = threading.RLock()
        self._digested: tuple[str, ControlConfig | None, str] = ("", None, "")

    def digest(self, hooks: str) -> str:
        """``hooks`` (the hook folders' ``Registry.hooks_digest``) with the hooks.yaml files
        as last read folded in (``digest.set_digest``); ``hooks`` alone when none was read.
        Made once per load: the event log's ``hooks_digest``."""
        config, cached = self._config, self._digested
        if config is None or not config.sources:
            return hooks
        if cached[0] != hooks or cached[1] is not config:
            cached = (hooks, config, set_digest([("hooks", "", hooks)], *config.sources))
            self._digested = cached
        return cached[2]

    def layer_digests(self) -> dict[str, str]:
        """``{"hooks.yaml": digest}`` of the hooks.yaml files as last read (none: {}): the
        event log's ``layer_digests`` entry of the control layer."""
        config = self._config
        return {"hooks.yaml": set_digest([], *config.sources)} if config and config.sources \
            else {}

    # -- the configuration -----------------------------------------------------------------

    def _files(self) -> list[Path]:
        files = [self.user_file]
        if self.project_dir is not None:
            files += [self.project_dir / ".ahp" / "hooks.yaml",
                      self.project_dir / ".ahp" / "hooks.local.yaml"]
        if self.managed_dir is not None:  # last here, first when merged
            files.append(self.managed_dir / "hooks.yaml")
        return files

    def _watched(self) -> tuple[list[Path], list[Path]]:
        """The folders a change of the configuration shows up in (the trust store is checked
        by ``stat`` instead: its folder also holds the event log, written every event)."""
        dirs = [self.user_file.parent]
        if self.managed_dir is not None:
            dirs.append(self.managed_dir)
        if self.project_dir is not None:
            root = self.project_dir / ".ahp"
            dirs.append(root)
            if root.is_dir():  # custom oracles' .py files are part of what is trusted
                dirs += [p for p in root.rglob("*") if p.is_dir()][:200]
        # a missing folder is watched through its parent (its creation is a change there):
        # asking the watcher stays one non-blocking read, with no stat per event
        watched = {d if d.is_dir() else d.parent for d in dirs}
        return sorted(d for d in watched if d.is_dir()), []

    def _signature(self) -> tuple[tuple[str, int, int, int], ...]:
        """What the configuration and its trust rest on, by ``stat``: the layers, the trust
        store, and every file and folder under the project's ``.ahp``."""
        names = self._files()
        if self.project_dir is not None and (self.project_dir / ".ahp").is_dir():
            names += sorted((self.project_dir / ".ahp").rglob("*"))[:1000]
        out = []
        for name in names:
            try:
                st = name.stat()
            except (OSError, ValueError):
                continue
            out.append((str(name), st.st_mtime_ns, st.st_ctime_ns, st.st_size))
        if self._trust_store is not None:  # the trust file's stat, or a shared store's state
            out.append(("<trust>", hash(str(self._trust_store.signature())), 0, 0))
        return tuple(out)

    def config(self) -> ControlConfig | None:
        """The merged configuration, or None when no hooks.yaml layer exists.

        A long-lived layer asks its watcher first (one non-blocking ``read``), and, while a
        project layer is read, the trust store's ``stat``; only when one of them moved does it
        compare the whole ``stat`` signature, and it reads the files again only if that moved.
        An unwatched layer (``--no-watch``, a one-shot caller) compares the signature on every
        call: what runs is checked, watched or not. All of it under the layer's lock: the
        watcher and the signatures are shared by the threads that decide events.
        """
        with self._lock:
            if self._loaded and self._watcher is not None and not (
                    self._watcher.changed() or self._trust_moved()):
                return self._config
            if self._watch and self._watcher is None:
                # for a long-lived engine with a hooks.yaml only.
                # lazy: 2.8 ms of cold fire (python -X importtime)
                from mcp_hooks.registry.watch import ChangeWatcher

                self._watcher = ChangeWatcher()
            if self._watcher is not None:
                self._watcher.watch(*self._watched())
            signature = self._signature()  # unwatched (--no-watch) too: what runs is checked
            if self._loaded and signature == self._seen:
                return self._config
            if any(f.is_file() for f in self._files()):
                self._config = self._load()
            else:
                self._config = None
            self._seen, self._loaded = signature, True
            self._trust_seen = self._trust_stat()
            return self._config

    def _load(self) -> ControlConfig:
        """``load_config`` within ``load_timeout`` seconds (a worker thread, abandoned past
        it): a hooks.yaml layer that cannot be read in time (a FIFO or a huge file under
        ``.ahp``) or whose reading raised is a problem of every trigger, failing closed."""
        # paid only when a hooks.yaml exists (the module doc's promise). lazy: the control
        # layer, 42 ms of cold fire (python -X importtime)
        from mcp_hooks.control.config import ControlConfig, HooksYamlError, load_config

        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["config"] = load_config(self.project_dir, user_file=self.user_file,
                                            trust_project=self._trust_project,
                                            trust_store=self._trust_store,
                                            **managed_layer(self.managed_dir))
            except BaseException as exc:  # reported below, never raised in the thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="mcp-hooks-hooks-yaml", daemon=True)
        worker.start()
        worker.join(self._load_timeout)
        if "config" in box:
            config: ControlConfig = box["config"]
            return config
        if worker.is_alive():
            why = (f"could not be read within {self._load_timeout:g} s (a FIFO or a huge file "
                   "under .ahp?); make its files plain and small")
        else:
            exc = box.get("error")
            why = f"could not be read: {type(exc).__name__}: {exc}"
        files = self._files()
        where = files[1] if self.project_dir is not None else files[0]
        return ControlConfig(problems=[HooksYamlError(where, None, None, why)],
                             files=[f for f in files if f.is_file()])

    def _trust_stat(self) -> tuple[int, int] | None:
        """The trust store's (mtime, size) while a project layer is read, else None."""
        if self._config is None or self._config.trust is None:
            return None
        if self._trust_store is None:  # load_config's own (a library caller's): not watched
            return (0, 0)
        return (hash(str(self._trust_store.signature())), 0)

    def _trust_moved(self) -> bool:
        return self._trust_seen is not None and self._trust_stat() != self._trust_seen

    def wakes(self, trigger: str) -> bool:
        """Whether ``trigger`` (canonical) has anything to run or report in hooks.yaml."""
        config = self.config()
        if config is None:
            return False
        woken = self._woken
        if woken[0] is not config:
            every = any(p.trigger is None for p in config.problems)
            woken = self._woken = (config, None if every else frozenset(
                {*config.triggers, *(p.trigger for p in config.problems),
                 *(e.trigger for e in config.untrusted)}))
        triggers = woken[1]
        return triggers is None or trigger in triggers

    @property
    def ladder(self) -> Ladder:
        with self._lock:
            if self._ladder is None:
                from mcp_hooks.control.ladder import Ladder  # lazy: 35 ms (-X importtime)

                self._ladder = Ladder()
            return self._ladder

    # -- one event ---------------------------------------------------------------------------

    def decide(self, trigger: str, payload: Mapping[str, Any], *, can_block: bool,
               fail_closed: bool, correlation_id: str | None = None,
               deadline: float | None = None) -> list[Verdict]:
        """Run ``trigger``'s sync entries on ``payload`` (the payload hooks get, as the
        HOOK.md links left it): one ``Verdict`` per note and signal, in order, for the chain
        to apply (``links.HooksYaml``; see the module doc). ``deadline``: the event's chain
        deadline (``time.monotonic()``), which the oracles share with the HOOK.md links."""
        # lazy: 44 ms of cold fire (python -X importtime), as in ``_load``
        from mcp_hooks.control.evaluation import evaluate, source_name  # lazy: as in ``_load``

        config = self.config()
        if config is None:
            return []
        # lazy: 35 ms of cold fire (python -X importtime); evaluation above imports it anyway
        from mcp_hooks.control.ladder import convert

        held = config.untrusted_for(trigger)
        notes = [_untrusted_note(held, self.project_dir)] if held else []
        notes += [str(note) for note in config.notes_for(trigger)]
        skipped = config.skipped_for(trigger)
        if skipped:
            notes.append(_skipped_note(skipped, self.project_dir))
        signals = evaluate(trigger, payload, config=config, ladder=self.ladder,
                           project_dir=self.project_dir, correlation_id=correlation_id,
                           secrets=self._secrets, deadline=deadline,
                           environment=self.environment)
        rewrites = trigger == "before_tool"
        verdicts = [_verdict(s, can_block=can_block, fail_closed=fail_closed, rewrites=rewrites)
                    for s in signals]
        for verdict in verdicts:  # a fault let through is a warning: its signal a prompt
            signal = verdict.signal
            if signal is not None and signal.blocks and not verdict.deny and (
                    signal.header.type in _FAULTS):
                verdict.signal = convert(signal, "prompt")
        if can_block:
            _asks(verdicts, {source_name(e) for e in config.for_trigger(trigger) if e.ask})
        verdicts = audited_entries(trigger, verdicts, config.for_trigger(trigger), self.mode)
        return [*map(_warning, notes), *verdicts]

    def background(self, trigger: str, payload: Mapping[str, Any], *, session_id: str | None,
                   log_path: Path | None, correlation_id: str | None,
                   launcher: Launcher) -> None:
        """Hand ``trigger``'s ``async: true`` entries to the engine's ``launcher`` (a thread
        here, or a detached process for a one-shot caller); never raises."""
        config = self.config()
        if config is None or not any(e.async_ for e in config.for_trigger(trigger)):
            return
        from mcp_hooks.control.trust import trust_found  # lazy: 0 ms, config() imported it
        job = {"trigger": trigger, "payload": dict(payload), "session_id": session_id,
               "project_dir": str(self.project_dir) if self.project_dir else None,
               "user_file": str(self.user_file), "correlation_id": correlation_id,
               "managed_dir": str(self.managed_dir) if self.managed_dir else None,
               "log": str(log_path) if log_path is not None else None,
               "environment": self.environment,
               "trust": trust_found(config)}  # the process trusts what this one found
        launcher.launch_entries(job, functools.partial(run_background, job, config, self.ladder,
                                                       self._secrets))


def _skipped_note(problems: list[HooksYamlError], project_dir: Path | None) -> str:
    where = shlex.quote(str(project_dir)) if project_dir is not None else "PROJECT"
    shown = "; ".join(str(p) for p in problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return (f"the project's hooks.yaml is not trusted and has problems, so they were skipped "
            f"(no deny): {shown}{more}. Fix them (`mcp-hooks validate`), read .ahp/, then "
            f"trust it with: mcp-hooks trust {where}")


def _asks(verdicts: list[Verdict], asking: set[str]) -> None:
    """An ``ask: true`` entry's prompt asks a person (``engine/asking.py``) instead of only
    telling the agent: its text is what the person is shown."""
    for verdict in verdicts:
        signal = verdict.signal
        if (signal is not None and signal.source in asking and signal.intensity == "prompt"
                and signal.header.type not in _FAULTS):
            verdict.ask, verdict.blocked_by = signal.text(), signal.source


def _warning(note: str) -> Verdict:
    verdict = Verdict("allow")
    verdict.warning = note
    return verdict


def _verdict(signal: Signal, *, can_block: bool, fail_closed: bool, rewrites: bool) -> Verdict:
    """One entry's signal as the verdict the chain applies (the rules of the module doc)."""
    text = f"[{signal.source}] {signal.text()}"
    fault = signal.header.type in _FAULTS
    denies = (signal.blocks and not fault) or (fault and fail_closed)
    verdict = Verdict("deny" if denies and can_block else "error" if fault else "allow")
    verdict.signal = signal
    if denies and can_block:
        verdict.deny, verdict.blocked_by = True, signal.source
        verdict.reason = signal.text() if not fault else (
            f"the control layer could not decide: {signal.text()}")
    elif denies or fault:  # an event that cannot block; on_fault: warn, as a broken hook
        verdict.warning = text
    else:
        verdict.context = text
        if rewrites and signal.intensity == "control":
            verdict.modified_input = _rewrite(signal)
    return verdict
