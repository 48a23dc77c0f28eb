"""The loop guard while a shared store is lost (``state/remote.py``, ``engine/stopguard.py``).

Under ``on_fault: block`` every ``before_stop`` is denied while the store is lost, and the
store cannot count those denials. The guard must still let the stop through at the cap
(DESIGN.md: after N consecutive blocks the stop is allowed), never an endless "keep
working". A real Redis and PostgreSQL, stopped mid-test (``tests/helpers/restartable.py``).
"""

from __future__ import annotations

import pytest

from mcp_hooks.engine.stopguard import StopGuard
from mcp_hooks.spec.outcome import Event, fault_outcome
from mcp_hooks.state.spool import store_fault
from mcp_hooks.state.url import open_store
from tests.helpers.restartable import restartable


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_a_lost_store_still_lets_the_stop_through_at_the_cap(kind: str) -> None:
    with restartable(kind) as server:
        store = open_store(server.url, replica="a")
        guard = StopGuard(cap=3, store=store)
        server.stop()
        answers = []
        for _ in range(8):  # what Engine._fire does for a before_stop while the store is lost
            event = Event(event_type="before_stop", session_id="s")
            ticket = guard.before(event, {})
            lost = store_fault(store)
            assert lost is not None
            answers.append(guard.after(ticket, fault_outcome("before_stop", lost)))
        kept_working = [a.continue_working for a in answers]
        assert kept_working[:3] == [True, True, True]
        assert kept_working[3] is False, "the agent was told to keep working past the cap"
        assert "loop guard" in " ".join(answers[3].warnings)
