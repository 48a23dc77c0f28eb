"""What each page shows, as JSON-ready data computed from the store's records.

Pure functions over the records ``source.Source`` reads (no I/O but ``hook_table``'s
registries, which the caller builds): the Activity rows, the Hooks table with counts and
p50/p95, the decisions-over-time series the Hooks chart draws, the Fleet's replicas, the
Pending signals and one session's timeline. Every value comes out as data; the page's script
puts it in the document as text (never as HTML).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mcp_hooks.registry.discovery import Registry
from mcp_hooks.spec.asking import AskRequest, canonical_json
from mcp_hooks.spec.hookfile import HookSpec

OPEN_INTENSITIES = ("block", "prompt")  # the signals that wait for a person's answer
BUCKETS = 24  # points of the decisions-over-time chart
MAX_TEXT = 2000  # characters of one value a row carries (a huge tool input is cut)


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def duration_ms(record: dict[str, Any]) -> float:
    """The time an event's sync hooks took together (ms)."""
    total = 0.0
    for run in record.get("hooks") or ():
        if isinstance(run, dict) and isinstance(run.get("duration_ms"), int | float):
            total += float(run["duration_ms"])
    return round(total, 3)


def activity_row(record: dict[str, Any]) -> dict[str, Any]:
    """One Activity row: the fields a person scans, as text (numbers as numbers)."""
    return {
        "ts": _text(record.get("ts")), "session": _text(record.get("session_id")),
        "door": _text(record.get("door")), "replica": _text(record.get("replica")),
        "event": _text(record.get("event") or record.get("event_type")),
        "tool": _text(record.get("tool_name")), "decision": _text(record.get("decision")),
        "blocked_by": _text(record.get("blocked_by")), "reason": _text(record.get("reason")),
        "tool_input": _text(record.get("tool_input")),
        "fail_open": [_text(n) for n in record.get("fail_open") or ()],
        "duration_ms": duration_ms(record),
    }


def percentile(values: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(share * len(ordered)) - 1)], 3)


def _hook_counts(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    stats: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "runs": 0, "denies": 0, "asks": 0, "failures": 0, "timeouts": 0, "durations": []})
    for record in records:
        for run in record.get("hooks") or ():
            if not isinstance(run, dict):
                continue
            entry = stats[str(run.get("name"))]
            entry["runs"] += 1
            status = run.get("status")
            entry["denies"] += status == "deny"
            entry["asks"] += status == "ask"
            entry["failures"] += status == "error"
            entry["timeouts"] += status == "timeout"
            if isinstance(run.get("duration_ms"), int | float):
                entry["durations"].append(float(run["duration_ms"]))
    return stats


def _spec_row(spec: HookSpec, root: Path, trusted: bool) -> dict[str, Any]:
    return {"name": spec.name, "root": str(root), "scope": spec.scope, "event": spec.event,
            "trusted": trusted, "error": "",
            "mode": _text(spec.metadata.get("mode", "enforce"))}


def hook_table(registries: Sequence[tuple[Path, Registry]],
               records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every hook in scope per project root (loaded, untrusted, broken), with the counts and
    p50/p95 duration of its runs among ``records``; hooks only the log knows come last."""
    stats = _hook_counts(records)
    rows: list[dict[str, Any]] = []
    for root, registry in registries:
        rows += [_spec_row(h, root, True) for h in registry.hooks()]
        rows += [_spec_row(u.spec, root, False) for u in registry.untrusted]
        rows += [{"name": i.name, "root": str(root), "scope": i.scope, "event": i.event or "",
                  "trusted": i.in_scope, "error": _text(i.reason), "mode": ""}
                 for i in registry.invalid]
    known = {r["name"] for r in rows}
    rows += [{"name": n, "root": "", "scope": "", "event": "", "trusted": True,
              "error": "", "mode": ""} for n in sorted(stats) if n not in known]
    for row in rows:
        entry = stats.get(row["name"])
        durations = entry.pop("durations") if entry else []
        row.update({k: (entry or {}).get(k, 0)
                    for k in ("runs", "denies", "asks", "failures", "timeouts")})
        row["p50_ms"] = percentile(durations, 0.5)
        row["p95_ms"] = percentile(durations, 0.95)
        if entry:
            entry["durations"] = durations
    return rows


def decisions_over_time(records: Sequence[dict[str, Any]],
                        buckets: int = BUCKETS) -> dict[str, Any]:
    """Decisions counted in ``buckets`` equal slices of the records' time span (the Hooks
    chart): ``{"start", "end", "series": {decision: [count per slice]}}``."""
    stamps = [str(r.get("ts", "")) for r in records]
    if not stamps:
        return {"start": "", "end": "", "series": {}}
    first, last = min(stamps), max(stamps)
    order = sorted(set(stamps))
    rank = {ts: i for i, ts in enumerate(order)}  # slices by rank: robust to odd stamps
    series: dict[str, list[int]] = defaultdict(lambda: [0] * buckets)
    for record, ts in zip(records, stamps, strict=True):
        index = min(buckets - 1, rank[ts] * buckets // max(1, len(order)))
        series[_text(record.get("decision")) or "none"][index] += 1
    return {"start": first, "end": last, "series": dict(series)}


def fleet(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The replicas seen in ``records``: last event time, hooks digest, events; and whether
    they run different digests."""
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        name = _text(record.get("replica")) or "(this machine)"
        entry = seen.setdefault(name, {"replica": name, "last": "", "digest": "", "events": 0})
        entry["events"] += 1
        ts = _text(record.get("ts"))
        if ts >= entry["last"]:
            entry["last"] = ts
            entry["digest"] = _text(record.get("hooks_digest"))
    digests = {e["digest"] for e in seen.values() if e["digest"]}
    return {"replicas": sorted(seen.values(), key=lambda e: e["replica"]),
            "mismatch": len(digests) > 1}


def pending(signals: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The block and prompt signals no response answers yet, oldest first."""
    answered = {r.get("signal_id") for r in signals if r.get("kind") == "response"}
    return [_signal_row(r) for r in signals
            if r.get("kind") == "signal" and r.get("signal_id") not in answered
            and r.get("intensity") in OPEN_INTENSITIES]


def ask_row(request: AskRequest, at: float) -> dict[str, Any]:
    """A waiting ask as the Pending page shows it: the exact call (its whole input, never
    cut: a person approves what they read), who asked and why, how old it is and how long
    it can still be answered (seconds)."""
    return {"id": request.id, "session": _text(request.session_id),
            "event": request.event_type, "tool": _text(request.tool_name),
            "tool_input": canonical_json(request.tool_input),
            "hook": _text(request.hook), "reason": _text(request.reason),
            "age_seconds": round(max(at - request.created, 0.0), 1),
            "expires_in_seconds": round(max(request.expires - at, 0.0), 1)}


def _signal_row(record: dict[str, Any]) -> dict[str, Any]:
    payload = (record.get("signal") or {}).get("payload") or {}
    return {"id": _text(record.get("signal_id")), "ts": _text(record.get("timestamp")),
            "session": _text(record.get("session_id")), "hook": _text(record.get("hook")),
            "intensity": _text(record.get("intensity")), "source": _text(record.get("source")),
            "reason": _text(payload.get("reason") or payload.get("question")
                            or payload.get("message")),
            "replica": _text(record.get("replica"))}


def _event_item(record: dict[str, Any], rounds: Counter[str]) -> dict[str, Any]:
    """An event of the timeline: its row, its hooks, its rewrite (before/after) and, for a
    stop the stop gate held back, which round that was."""
    item = {"kind": "event", **activity_row(record), "rewrite": bool(
        record.get("modified_input")), "hooks": [
        {"name": _text(h.get("name")), "status": _text(h.get("status")),
         "duration_ms": h.get("duration_ms")}
        for h in record.get("hooks") or () if isinstance(h, dict)]}
    if item["rewrite"]:
        before = (record.get("event_fields") or {}).get("tool_input")
        item["before"] = _text(before) if before is not None else ""
        item["after"] = _text(record.get("input_after")) if "input_after" in record \
            else f"(not logged: {_text(record.get('input_after_dropped'))})"
    if item["event"] == "before_stop" and record.get("continue_working"):
        rounds[item["session"]] += 1
        item["stop_round"] = rounds[item["session"]]
    return item


def _ask_item(record: dict[str, Any]) -> dict[str, Any]:
    """An ask of the timeline: made (the call and the reason), answered (how, by whom),
    timed out (the fallback) or presented for another call."""
    kind = str(record.get("kind"))
    approved = record.get("approved")
    what = {"ask": "asked a person", "ask_timeout": "nobody answered in time",
            "ask_mismatch": "an approval for another call was presented",
            "ask_answer": "approved" if approved else "refused" if approved is False
            else "the host asks the person"}.get(kind, kind)
    return {"kind": "ask", "ts": _text(record.get("ts")), "id": _text(record.get("ask_id")),
            "what": what, "hook": _text(record.get("hook")), "tool": _text(
                record.get("tool_name")), "by": _text(record.get("by")),
            "channel": _text(record.get("channel")),
            "detail": _text(record.get("reason") or record.get("fallback")
                            or record.get("tool_input"))}


def timeline(events: Sequence[dict[str, Any]],
             signals: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One session's events (with their rewrites and stop-gate rounds), asks and who
    answered them, signals and their answers, in time order (the Sessions page)."""
    rounds: Counter[str] = Counter()
    items = [_event_item(r, rounds) if r.get("kind", "event") == "event" else _ask_item(r)
             for r in sorted(events, key=lambda r: str(r.get("ts", "")))]
    for record in signals:
        if record.get("kind") == "response":
            items.append({"kind": "response", "ts": _text(record.get("timestamp")),
                          "id": _text(record.get("signal_id")),
                          "action": _text(record.get("action")),
                          "details": _text(record.get("details"))})
        elif record.get("kind") == "signal":
            items.append({"kind": "signal", **_signal_row(record)})
    return sorted(items, key=lambda i: str(i.get("ts", "")))


def counts(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Events by decision (the Activity page's summary)."""
    return dict(Counter(_text(r.get("decision")) or "none" for r in records))


__all__ = ["activity_row", "counts", "decisions_over_time", "duration_ms", "fleet",
           "hook_table", "pending", "percentile", "timeline"]
