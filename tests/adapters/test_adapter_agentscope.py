"""The AgentScope adapters in real agent loops: 1.0.x hooks (``mcp_hooks.adapters.agentscope``)
and the 2.x middleware (``mcp_hooks.adapters.agentscope_middleware``).

Each generation has its own cached venv (the two cannot share one), AgentScope from PyPI
pinned, this checkout editable; the scenario (``tests/scenarios/agentscope_agent.py``) runs
there as a subprocess against the scripted model on loopback (``tests/helpers/scripted_model.py``),
with real HOOK.md hooks in a temporary user hooks folder. One run covers the three promises: a
``before_tool`` hook refuses ``danger.txt`` (the file is never written, and the next model
request carries the reason as the tool result), rewrites ``draft.txt`` to ``final.txt`` (the
tool writes ``final.txt``), and a ``before_stop`` gate refuses the first stop (the model is
asked again with the gate's words, does more work, and its second stop passes).

Why the venvs differ: 1.0.x and 2.x cannot share one. AgentScope 2.0.11 is the first 2.x
on mcp 2 (2.0.0-2.0.10 pin ``mcp<2``, which mcp-hooks cannot run with), so the
``agentscope2`` extra asks for it and the 2.x venv installs exactly that, the ordinary way.
AgentScope 1.0.21 runs with mcp 2 through the adapter's import shim (import the adapter
first), and needs ``openai<3`` (3.x streams ``delta.audio = None``, which 1.0.21 cannot read)
and ``greenlet``/``tqdm`` it does not declare: the ``agentscope`` extra lists them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_hook
from tests.helpers.framework_venv import (
    ASKS_FOR_DANGER,
    REPO,
    SCENARIOS,
    broken_stop_hook,
    framework_python,
)
from tests.helpers.scripted_model import ScriptedModel, Text, ToolCall

V1_PINS = ("agentscope==1.0.21", "openai==2.54.0", "greenlet", "tqdm")
V1_CHECK = "import mcp_hooks.adapters.agentscope, agentscope.agent"  # the adapter first: its shim
V2_PINS = ("agentscope==2.0.11",)  # the agentscope2 extra's lowest: the first on mcp 2
V2_CHECK = "import agentscope.agent, mcp_hooks.adapters.agentscope_middleware"

GUARD = """\
import json, sys
event = json.load(sys.stdin)
args = event.get("tool_input") or {}
if event.get("tool_name") == "write_file":
    if "danger" in str(args.get("path")):
        sys.stderr.write("policy P-7: danger.txt may not be written; write safe files only")
        sys.exit(2)
    if args.get("path") == "draft.txt":
        print(json.dumps({"modified_input": {**args, "path": "final.txt"}}))
"""
GATE = """\
cat >/dev/null
if [ -e gate-passed ]; then exit 0; fi
: > gate-passed
echo "gate G-3: not done yet, write notes.txt before you stop" >&2
exit 2
"""
SCRIPT = [
    ToolCall("write_file", {"path": "danger.txt", "text": "boom"}),
    ToolCall("write_file", {"path": "draft.txt", "text": "draft"}),
    Text("all written"),
    ToolCall("write_file", {"path": "notes.txt", "text": "notes"}),
    Text("notes written too"),
]


@pytest.fixture(scope="module")
def v1_python() -> Path:
    return framework_python("agentscope1", V1_PINS, V1_CHECK)


@pytest.fixture(scope="module")
def v2_python() -> Path:
    return framework_python("agentscope2", V2_PINS, V2_CHECK)


def run_scenario(python: Path, generation: str, install: str, stream: str,
                 tmp_path: Path) -> tuple[dict[str, Any], ScriptedModel, Path]:
    hooks, work = tmp_path / "hooks", tmp_path / "work"
    work.mkdir()
    write_hook(hooks, "guard-files", entry="scripts/run.py",
               script=f"#!{sys.executable}\n{GUARD}")
    write_hook(hooks, "finish-gate", trigger="before_stop", script=GATE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS")}
    with ScriptedModel(SCRIPT) as model:
        done = subprocess.run(
            [str(python), str(SCENARIOS / "agentscope_agent.py"), generation, install, stream,
             model.base_url, str(hooks), str(work)],
            capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"scenario failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result, model, work


def check_promises(result: dict[str, Any], model: ScriptedModel, work: Path) -> None:
    # the refused call did not happen, and the model read why in its tool result
    assert not (work / "danger.txt").exists()
    calls = model.completions()
    assert len(calls) == len(SCRIPT)
    assert "policy P-7: danger.txt may not be written" in calls[1].tool_results()[-1]
    # the rewrite reached the tool: it wrote final.txt, never draft.txt
    assert (work / "final.txt").read_text() == "draft"
    assert not (work / "draft.txt").exists()
    assert calls[2].tool_results()[-1] == "wrote final.txt"
    # the stop gate kept the agent working: the model was asked again with the gate's words,
    # worked on, and the second stop passed
    assert "gate G-3: not done yet" in calls[3].text()
    assert "gate G-3" not in calls[2].text()
    assert (work / "notes.txt").read_text() == "notes"
    assert result == {"reply": "notes written too", "written": ["final.txt", "notes.txt"]}


@pytest.mark.parametrize(("install", "stream"), [("instance", "stream"), ("class", "whole")])
def test_agentscope_1_hooks(v1_python: Path, tmp_path: Path, install: str, stream: str) -> None:
    check_promises(*run_scenario(v1_python, "1", install, stream, tmp_path))


@pytest.mark.parametrize("stream", ["stream", "whole"])
def test_agentscope_2_middleware(v2_python: Path, tmp_path: Path, stream: str) -> None:
    check_promises(*run_scenario(v2_python, "2", "-", stream, tmp_path))


@pytest.mark.parametrize("generation", ["1", "2"])
def test_the_engines_loop_guard_ends_a_stop_gate_that_keeps_failing(
        request: pytest.FixtureRequest, tmp_path: Path, generation: str) -> None:
    """Neither generation keeps a stop count of its own: a stop denied every time (a fault
    of ours) is let through by the engine's loop guard at its cap (2 here)."""
    hooks, work = tmp_path / "hooks", tmp_path / "work"
    work.mkdir()
    broken_stop_hook(hooks)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS")}
    python: Path = request.getfixturevalue(f"v{generation}_python")
    script = [Text("stop one"), Text("stop two"), Text("stop three"), Text("never asked")]
    with ScriptedModel(script) as model:
        done = subprocess.run(
            [str(python), str(SCENARIOS / "agentscope_agent.py"), generation, "instance",
             "whole", model.base_url, str(hooks), str(work), "2"],
            capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"scenario failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert model.turns_used == 3  # asked again twice, then the third stop passed
    assert "failed to load" in model.completions()[1].text()
    assert json.loads(done.stdout.strip().splitlines()[-1])["reply"] == "stop three"


DANGER = [ToolCall("write_file", {"path": "danger.txt", "text": "boom"}), Text("done")]


def run_asked(python: Path, generation: str, tmp_path: Path, **switch: str
              ) -> tuple[dict[str, Any], ScriptedModel, Path]:
    """The scenario with a hook that asks before ``danger.txt``, the scripted model asking
    for it once, and ``switch`` (``SCENARIO_APPROVE`` or ``SCENARIO_NATIVE``) in its
    environment: its result, the model, the work folder."""
    hooks, work = tmp_path / "hooks", tmp_path / "work"
    work.mkdir()
    write_hook(hooks, "asker", script=ASKS_FOR_DANGER)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS")}, **switch}
    with ScriptedModel(DANGER) as model:
        done = subprocess.run(
            [str(python), str(SCENARIOS / "agentscope_agent.py"), generation, "instance",
             "whole", model.base_url, str(hooks), str(work)],
            capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"scenario failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1]), model, work


@pytest.mark.parametrize("approved", [True, False])
@pytest.mark.parametrize("generation", ["1", "2"])
def test_an_ask_goes_to_the_approve_callback(
        request: pytest.FixtureRequest, tmp_path: Path, generation: str, approved: bool) -> None:
    """A hook's ask, answered by ``Hooks(approve=callback)`` given to the adapter: approved,
    the call runs; refused, it never runs and the model reads the refusal as its result."""
    python: Path = request.getfixturevalue(f"v{generation}_python")
    result, model, work = run_asked(python, generation, tmp_path,
                                    SCENARIO_APPROVE="yes" if approved else "no")
    assert result["asked"] == ["danger files need a person"]
    assert (work / "danger.txt").exists() is approved
    if not approved:
        assert "refused by the approve callback" in model.completions()[1].tool_results()[-1]


def test_import_mcp_hooks_loads_no_framework() -> None:
    code = ("import sys, mcp_hooks, mcp_hooks.adapters; mcp_hooks.Engine; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'agentscope'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=REPO)
    assert done.stdout.strip() == "[]"


def test_the_extras_ask_for_the_pins() -> None:
    """Each generation is tested at the lowest release its extra lets pip install."""
    project = (REPO / "pyproject.toml").read_text()
    for extra, pins in (("agentscope", V1_PINS), ("agentscope2", V2_PINS)):
        line = re.search(rf'^{extra} = \[.*?"agentscope>=([\w.]+),', project, re.M)
        assert line, f"pyproject.toml: no agentscope>=X in the {extra} extra"
        assert f"agentscope=={line[1]}" in pins, (extra, line[1], pins)


def _documented_imports(keep: tuple[str, ...] = ()) -> list[tuple[str, list[str]]]:
    """The import lines of the AgentScope 1.0.x examples: docs/adapters.md's and the adapter's
    (and the lines starting with one of ``keep``, such as isort's action comments)."""
    readme = (REPO / "docs" / "adapters.md").read_text()
    block = re.search(r"```python\n(from mcp_hooks\.adapters\.agentscope import .*?)```",
                      readme, re.S)
    adapter = (REPO / "mcp_hooks" / "adapters" / "agentscope.py").read_text()
    docstring = adapter.split('"""')[1]
    found = []
    for where, text in (("docs/adapters.md", block[1] if block else ""),
                        ("the adapter", docstring)):
        lines = [line.strip() for line in text.splitlines()
                 if line.strip().startswith(("from ", "import ", *keep))]
        assert lines and "mcp_hooks" in lines[0], (where, lines)  # the adapter first
        found.append((where, lines))
    return found


def test_the_documented_import_order_works(v1_python: Path) -> None:
    """AgentScope 1.0.x cannot be imported on its own beside mcp 2; the documented order (the
    adapter first) can. If the first run ever passes, the docs' advice can go."""
    alone = subprocess.run([str(v1_python), "-c", "import agentscope.agent"],
                           capture_output=True, text=True, timeout=300)
    assert alone.returncode != 0 and "streamablehttp_client" in alone.stderr
    for where, lines in _documented_imports():
        done = subprocess.run([str(v1_python), "-c", "\n".join(lines)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (where, lines, done.stderr[-2000:])


def test_the_documented_imports_survive_import_sorting(v1_python: Path, tmp_path: Path) -> None:
    """isort and ruff sort ``agentscope`` before ``mcp_hooks``, which breaks AgentScope 1.0.x
    beside mcp 2: the documented imports, sorted by ruff's isort rules in a project of the
    reader's, keep the adapter first and still run; the same imports without the docs'
    ``# isort: split`` come out agentscope first and fail, naming what is missing."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff (the dev extra) is needed to sort the imports"
    for where, lines in _documented_imports(keep=("# isort:",)):
        for split, runs in ((True, True), (False, False)):
            source = tmp_path / "reader.py"
            source.write_text("".join(f"{line}\n" for line in lines
                                      if split or not line.startswith("# isort:")))
            subprocess.run([ruff, "check", "--isolated", "--select", "I", "--fix", "--quiet",
                            str(source)], capture_output=True, text=True, cwd=tmp_path,
                           timeout=120)
            text = source.read_text()
            first = next(line for line in text.splitlines() if "agentscope" in line)
            assert ("mcp_hooks" in first) is split, (where, split, text)
            done = subprocess.run([str(v1_python), str(source)], capture_output=True, text=True,
                                  timeout=300, cwd=tmp_path)
            assert (done.returncode == 0) is runs, (where, split, text, done.stderr[-2000:])
            if not runs:
                assert "streamablehttp_client" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("confirmed", [True, False])
def test_native_approval_is_agentscopes_user_confirmation(
        v2_python: Path, tmp_path: Path, confirmed: bool) -> None:
    """2.x ``native_approval=True``: a hook's ask is an ``ASK`` permission decision, so the
    reply stops with ``RequireUserConfirmEvent``; confirmed, exactly that call runs (the
    approval stored on the ask); rejected, it never runs."""
    result, _, work = run_asked(v2_python, "2", tmp_path,
                                SCENARIO_NATIVE="yes" if confirmed else "no")
    [asked] = result["asked"]  # the user was asked once, for that call
    assert json.loads(asked) == {"path": "danger.txt", "text": "boom"}
    assert (work / "danger.txt").exists() is confirmed
    assert result["reply"] == "done"
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    answers = [r["channel"] for r in records
               if r.get("kind") == "ask_answer" and r["channel"] != "host"]
    assert answers == (["agentscope2"] if confirmed else [])  # the confirmation, on the ask


def test_native_approval_never_runs_a_call_whose_ask_the_user_was_not_shown(
        v2_python: Path, tmp_path: Path) -> None:
    """A middleware outside ours answers the permission step itself (ALLOW), so ours never
    turns the ask into AgentScope's confirmation: the call is refused when it is acted on,
    never run on the ask deferred to a step that did not happen."""
    result, model, work = run_asked(v2_python, "2", tmp_path, SCENARIO_NATIVE="outer")
    assert result["asked"] == []  # AgentScope never asked the user
    assert not (work / "danger.txt").exists()
    assert "a person must approve this call" in model.completions()[1].tool_results()[-1]

