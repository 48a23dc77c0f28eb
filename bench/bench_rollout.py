"""Benchmark of rolling a policy out (issue 32, Figures).

- (a) ``mcp-hooks replay`` of 10,000 logged events against one persistent hook (a Python loop
  over stdin that denies ``rm`` and allows the rest): events per second, replay's whole work
  (reading nothing: the records are handed in; scratch copy, engine, comparison).
- (b) audit mode's cost: Python function calls per event (``compare.acalls_per_event``) of an
  engine with one matching sh hook, in enforce and in audit mode, for a hook that allows and
  one that denies. Target: audit adds at most 2% calls per event over enforce.

Run: ``.venv/bin/python bench/bench_rollout.py [--events N]``. Prints the figures and
replaces the ``## rollout`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import acalls_per_event  # noqa: E402
from results import make_hook, say, verdict, write_section  # noqa: E402

DENY_RM = """\
import json, os, sys
def answer(event):
    command = str((event.get("tool_input") or {}).get("command", ""))
    return {"decision": "deny", "reason": "rm is refused"} if command.startswith("rm") else {}
if os.environ.get("MCP_HOOKS_PERSISTENT") == "1":
    for line in sys.stdin:
        event = json.loads(line)
        event_id = event.pop("_mcp_hooks_event_id", None)
        sys.stdout.write(json.dumps({**answer(event), "_mcp_hooks_event_id": event_id}) + "\\n")
        sys.stdout.flush()
else:
    print(json.dumps(answer(json.load(sys.stdin))))
"""


def persistent_hook(root: Path) -> None:
    hook = root / "py-guard"
    (hook / "scripts").mkdir(parents=True)
    (hook / "HOOK.md").write_text(
        "---\nname: py-guard\ndescription: denies rm\ntrigger: before_tool\n"
        "metadata:\n  persistent: true\n---\n")
    (hook / "scripts" / "run.py").write_text(DENY_RM)


def logged(n: int, work: Path) -> list[dict[str, Any]]:
    """``n`` event records as the engine logs them, every fifth an ``rm`` it denied."""
    out = []
    for i in range(n):
        command = "rm x" if i % 5 == 0 else f"ls {i}"
        denied = i % 5 == 0
        out.append({"ts": f"2026-01-01T00:00:{i % 60:02d}.000Z", "kind": "event",
                    "event": "before_tool", "session_id": "bench", "tool_name": "Shell",
                    "decision": "deny" if denied else "allow",
                    "hooks": [{"name": "py-guard", "scope": "user", "mode": "sync",
                               "status": "deny" if denied else "allow"}],
                    "event_fields": {"event_type": "before_tool", "session_id": "bench",
                                     "work_dir": str(work), "tool_name": "Shell",
                                     "tool_input": {"command": command}}})
    return out


async def replay_rate(events: int) -> tuple[float, int]:
    from mcp_hooks.cli.replay import replay

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        hooks, work, scratch = root / "hooks", root / "work", root / "scratch"
        work.mkdir()
        scratch.mkdir()
        persistent_hook(hooks)
        records = logged(events, work)
        start = time.perf_counter()
        report = await replay(records, hooks, scratch)
        took = time.perf_counter() - start
    return events / took, len(report.changes)


async def audit_calls(deny: bool, mode: str, events: int = 200) -> float:
    from mcp_hooks import Engine, Event, Registry
    from mcp_hooks.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_hook(root / "hooks", "guard",
                  script="cat >/dev/null\n" + ("echo no >&2\nexit 2\n" if deny else "exit 0\n"))
        registry = Registry(root / "hooks", None, watch=False, managed_dir=root / "none")
        event = Event.create(event_type="before_tool", tool_name="Shell",
                             tool_input={"command": "rm x"}, work_dir=str(root))
        async with Engine(registry, Settings(mode=mode)) as engine:  # type: ignore[arg-type]
            await engine.fire(event)  # warm
            return await acalls_per_event(lambda: engine.fire(event), events)


async def main_async(events: int) -> str:
    rate, changes = await replay_rate(events)
    say(f"replay: {events} events, {rate:.0f} events/s, {changes} changes")
    rows = [f"| replay of {events:,} logged events against one persistent hook | "
            f"{rate:,.0f} events/s | | ({changes} changed: none expected) |"]
    for deny in (False, True):
        enforce = await audit_calls(deny, "enforce")
        audit = await audit_calls(deny, "audit")
        ratio = audit / enforce
        what = "denies" if deny else "allows"
        say(f"calls per event, a hook that {what}: enforce {enforce:.0f}, audit {audit:.0f}, "
            f"ratio {ratio:.4f}")
        rows.append(f"| calls per event, one sh hook that {what}: enforce / audit | "
                    f"{enforce:.0f} / {audit:.0f} (ratio {ratio:.4f}) | <= 1.02 | "
                    f"{verdict(ratio <= 1.02)} |")
    return ("| measure | result | target | |\n|---|---|---|---|\n" + "\n".join(rows)
            + "\n\nAudit mode wraps the verdict where it is judged (`engine/audit.py`); the "
            "deny it holds back makes no signal, so a denying hook costs fewer calls in audit.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    body = asyncio.run(main_async(args.events))
    print(body)
    write_section("rollout", body)


if __name__ == "__main__":
    main()
