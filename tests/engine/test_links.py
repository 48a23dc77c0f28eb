"""The chain's one loop (``mcp_hooks/engine/links.py``): HOOK.md scripts, Python callables
and hooks.yaml entries are links of one ordered chain; the first block of any of them stops
every later link of any kind, and a rewrite reaches every later link through the payload the
chain owns (``Chain.payload``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import AskAnswer, AskRequest, Engine, Hooks
from mcp_hooks.engine.chain import Chain
from mcp_hooks.engine.judge import Verdict
from mcp_hooks.engine.payload import event_payload
from mcp_hooks.settings import Settings
from mcp_hooks.spec.hookfile import HookSpec
from mcp_hooks.spec.outcome import Event
from mcp_hooks.state.files import FileStore
from tests.conftest import write_hook
from tests.helpers.control_helpers import write
from tests.helpers.issue_asks import issue_that_asks

# the chain, in run order: HOOK.md scripts and callables by priority, then the entries
CHAIN = ["s1", "c1", "s2", "c2", "e1", "e2"]
HOOK_MD = CHAIN[:4]  # the links run one by one; the entries are decided as a group

SCRIPT = """#!{python}
import json, sys
cmd = json.load(sys.stdin)["tool_input"]["command"]
with open({log!r}, "a") as seen:
    seen.write({name!r} + " " + cmd + "\\n")
if "block:{name}" in cmd:
    sys.stderr.write("{name} blocks")
    sys.exit(2)
print(json.dumps({{"modified_input": {{"command": cmd + " {name}"}}}}))
"""

ORACLES = """
from pathlib import Path
from mcp_hooks.spec.signals import Signal

class Tagger:
    def __init__(self, config):
        self.name, self.log = config["name"], Path(config["log"])
    def evaluate(self, context):
        cmd = context.tool_input["command"]
        (self.log / self.name).write_text(cmd)  # a file each: the group's oracles may overlap
        if "block:" + self.name in cmd:
            return Signal.block(self.name + " blocks")
        return Signal.control([{"field": "tool_input", "from": {"command": cmd},
                                "to": {"command": cmd + " " + self.name},
                                "description": "tagged by " + self.name}])
"""


def _chain_of_every_kind(hooks: Hooks, user_dir: Path, project: Path, log: Path) -> None:
    """s1 and s2 HOOK.md scripts, c1 and c2 callables, interleaved by priority; e1 and e2
    hooks.yaml entries. Each link logs the command it saw, blocks when the command says
    ``block:<its name>``, and else appends its name to the command."""
    for name, priority in (("s1", 900), ("s2", 700)):
        write_hook(user_dir, name, extra=f"priority: {priority}\n",
                   script=SCRIPT.format(python=sys.executable, log=str(log), name=name))
    for name, priority in (("c1", 800), ("c2", 600)):
        hooks.before_tool(_callable(name, log), priority=priority)
    entries = "".join(
        f"    - {{id: {name}, oracle: 'oracles.py:Tagger', priority: {priority}, "
        f"config: {{name: {name}, log: {json.dumps(str(log.parent))}}}}}\n"
        for name, priority in (("e1", 1), ("e2", 2)))
    write(project, ".ahp/oracles.py", ORACLES)
    write(project, ".ahp/hooks.yaml", "hooks:\n  pre-tool-use:\n" + entries)


def _callable(name: str, log: Path) -> Any:
    def link(tool_input: dict[str, Any]) -> dict[str, Any]:
        with log.open("a") as seen:
            seen.write(f"{name} {tool_input['command']}\n")
        if f"block:{name}" in tool_input["command"]:
            raise PermissionError(f"{name} blocks")
        return {"command": f"{tool_input['command']} {name}"}

    link.__qualname__ = name
    return link


def _seen(log: Path) -> dict[str, str]:
    """Each link that ran -> the command it saw."""
    lines = log.read_text().splitlines() if log.exists() else []
    seen = dict(line.split(" ", 1) for line in lines)
    for entry in ("e1", "e2"):
        if (log.parent / entry).exists():
            seen[entry] = (log.parent / entry).read_text()
    return seen


@pytest.fixture
def chain(user_dir: Path, project: Path, tmp_path: Path) -> Any:
    log = tmp_path / "links" / "seen.log"
    log.parent.mkdir()
    with Hooks(project, user_dir=user_dir, trust_project_hooks=True, watch=False) as hooks:
        _chain_of_every_kind(hooks, user_dir, project, log)
        yield hooks, log


@pytest.mark.parametrize("blocker", CHAIN[:5])
def test_a_block_by_any_link_stops_every_later_link_of_any_kind(chain: Any, tmp_path: Path,
                                                                blocker: str) -> None:
    hooks, log = chain
    outcome = hooks.fire("before_tool", tool_name="Shell",
                         tool_input={"command": f"go block:{blocker}"}, work_dir=str(tmp_path))
    assert outcome.denied and outcome.blocked_by == blocker, outcome
    assert (outcome.reason or "").endswith(f"{blocker} blocks")
    ran = CHAIN[:CHAIN.index(blocker) + 1]  # e2 too: its group stops at e1's block
    assert list(_seen(log)) == ran
    assert [run.name for run in outcome.hooks] == [n for n in ran if n in HOOK_MD]


def test_a_rewrite_by_any_hook_md_link_reaches_every_later_link(chain: Any,
                                                                tmp_path: Path) -> None:
    hooks, log = chain
    outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "go"},
                         work_dir=str(tmp_path))
    assert not outcome.denied, outcome
    # each link saw the rewrites of the HOOK.md links before it, whatever their kind; the
    # entries, decided as a group, saw the payload as the HOOK.md links left it
    assert _seen(log) == {"s1": "go", "c1": "go s1", "s2": "go s1 c1", "c2": "go s1 c1 s2",
                          "e1": "go s1 c1 s2 c2", "e2": "go s1 c1 s2 c2"}
    assert [c for c in outcome.additional_context if "tagged by" in c] == [
        "[e1] tagged by e1", "[e2] tagged by e2"]


def test_a_callable_sees_the_canonical_event_type_after_a_script(hooks_dir: Path,
                                                                 project: Path,
                                                                 tmp_path: Path) -> None:
    """The payload's ``event_type`` is the chain's, the canonical name: a script before the
    callable gets its own spelling on its stdin, the shared payload keeps its own."""
    stdin = tmp_path / "stdin.json"
    write_hook(hooks_dir, "spelled", trigger="pre-tool-use", extra="priority: 900\n",
               script=f"cat > {stdin}\n")
    seen: list[str] = []
    with Hooks(project, user_dir=hooks_dir, watch=False) as hooks:
        hooks.before_tool(lambda value, payload: seen.append(payload["event_type"]))
        hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"},
                   work_dir=str(tmp_path))
    assert json.loads(stdin.read_text())["event_type"] == "pre-tool-use"
    assert seen == ["before_tool"]


@pytest.fixture
def hooks_dir(tmp_path: Path) -> Path:
    made = tmp_path / "spelled-hooks"
    made.mkdir()
    return made


def test_the_chain_owns_the_payload_and_carries_each_rewrite(tmp_path: Path) -> None:
    """A rewrite applied by the chain (``Chain.apply``, whatever link gave it) is in the
    payload the next link reads and on the next script's stdin."""
    event = Event.create(event_type="before_tool", tool_name="Shell",
                         tool_input={"command": "ls"})
    payload = event_payload("before_tool", event, str(tmp_path))
    chain = Chain("before_tool", event, [], [], payload=payload)
    script = HookSpec(name="s", description="d", trigger="pre-tool-use", event="before_tool",
                      scope="user", dir=tmp_path, hook_file=tmp_path / "HOOK.md",
                      entry=("true",))
    assert json.loads(chain.stdin(script))["tool_input"] == {"command": "ls"}
    rewrite = Verdict("allow")
    rewrite.modified_input = {"command": "ls -l"}
    chain.apply(rewrite, "e1")
    assert chain.payload is payload and payload["tool_input"] == {"command": "ls -l"}
    assert json.loads(chain.stdin(script)) == {**payload, "event_type": "pre-tool-use"}
    assert payload["event_type"] == "before_tool"  # a script's spelling stays on its stdin


THEN_ADVICE = "    - {oracle: 'oracles.py:Advice', priority: 2}\n"

ADVICE = """
from mcp_hooks.spec.signals import Signal

class Advice:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        return Signal.aid("remember the changelog")
"""


@pytest.mark.anyio
async def test_an_entry_after_an_ask_is_heard_and_applied_only_if_approved(
        tmp_path: Path) -> None:
    """The entries are decided as a group: one after an entry that asks ran, so its signal is
    recorded however the person answers; its effect (here, context) waits for its turn in
    the loop, which a refusal never gives it (before, a refusal dropped its signal too)."""
    made = issue_that_asks(tmp_path, then=THEN_ADVICE, files={".ahp/oracles.py": ADVICE})

    def answering(given: AskAnswer) -> Any:
        async def approve(request: AskRequest) -> AskAnswer:
            return given
        return approve

    async with Engine(made.registry, Settings(), store=FileStore(tmp_path / "state"),
                      control=made.control) as engine:
        refused = await engine.fire(made.event,
                                    approve=answering(AskAnswer(False, reason="split")))
        approved = await engine.fire(made.event, approve=answering(AskAnswer(True)))
    assert refused.denied and refused.blocked_by == "file-change-limiter"
    assert [s.source for s in refused.signals] == ["file-change-limiter", "advice"]
    assert not any("changelog" in c for c in refused.additional_context)
    assert approved.decision == "allow"
    assert [s.source for s in approved.signals] == ["file-change-limiter", "advice"]
    assert any("changelog" in c for c in approved.additional_context)
