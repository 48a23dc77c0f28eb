"""The state store's once-only names (``StateStore.claim``, ``mcp_hooks/state/store.py``) on
every backend of ``conftest.BACKENDS``: the first claim wins until it expires, exactly one of
16 threads or two processes racing wins, and a store that cannot answer raises rather than
guess (a forwarded request's nonce is claimed there: ``server/forward.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcp_hooks.state.files import FileStore
from mcp_hooks.state.store import StateStore, StateUnavailable
from tests.state.conftest import Backend

ROOT = Path(__file__).resolve().parents[2]
TEN_MINUTES = 600.0


def test_the_first_claim_wins_until_it_expires(backend: Backend) -> None:
    store, other = backend.store, backend.another()
    assert store.claim("forward-nonce:a", ttl=0.5) is True
    assert store.claim("forward-nonce:a", ttl=0.5) is False
    assert other.claim("forward-nonce:a", ttl=0.5) is False  # another engine, same state
    assert other.claim("forward-nonce:b", ttl=TEN_MINUTES) is True  # names are apart
    assert store.claim("forward-nonce:\u00e9 \ud800/..", ttl=TEN_MINUTES) is True  # any text
    time.sleep(1.5)
    assert other.claim("forward-nonce:a", ttl=TEN_MINUTES) is True  # expired: claimed anew
    assert store.claim("forward-nonce:a", ttl=TEN_MINUTES) is False
    assert store.claim("forward-nonce:b", ttl=TEN_MINUTES) is False


def test_16_threads_racing_claim_once(backend: Backend) -> None:
    won: list[int] = []

    def work(i: int) -> None:
        store = backend.another() if i % 2 else backend.store
        if store.claim("race", ttl=TEN_MINUTES):
            won.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1


def test_two_processes_racing_claim_once(backend: Backend) -> None:
    backend.processes()
    script = ("import json\nfrom tests.state.conftest import build\n"
              f"store = build({backend.name!r}, {backend.where!r})\n"
              "print(json.dumps([store.claim(f'n{i}', ttl=600.0) for i in range(30)]))")
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert [a + b for a, b in zip(*results, strict=True)] == [1] * 30  # each name won once


def test_expired_claims_are_removed_from_the_state_folder(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    for i in range(5):
        assert store.claim(f"n{i}", ttl=0.2)
    assert len(os.listdir(tmp_path / "state" / "once")) == 5
    time.sleep(0.5)
    store._purged = 0.0  # the next claim purges (once a minute otherwise)
    assert store.claim("n-live", ttl=TEN_MINUTES)
    assert len(os.listdir(tmp_path / "state" / "once")) == 1
    assert not store.claim("n-live", ttl=TEN_MINUTES)
    assert store.claim("n0", ttl=TEN_MINUTES)


def test_a_state_folder_that_cannot_keep_a_claim_raises(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "once").write_text("a file where the folder belongs")
    store: StateStore = FileStore(tmp_path / "state")
    with pytest.raises(StateUnavailable, match="cannot keep a claim"):
        store.claim("n", ttl=TEN_MINUTES)
