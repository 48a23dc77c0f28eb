"""The Python examples of README.md and docs/ (Hooks, Engine, the adapters) deny ``rm -rf /``.

The examples are those of README.md, docs/python-api.md and docs/adapters.md, copied as written.

The setting is the one the issue found open: a project whose ``.agents/hooks`` holds the
bundled ``block-dangerous-commands`` guard, never trusted (a fresh clone, or hooks copied in),
a fresh ``HOME`` with no user hooks and an empty trust store. Each example trusts its own
project (``trust_project_hooks=True``), so the guard must run.

- The ``Hooks`` and ``Engine`` examples run with this checkout's Python and must print the deny
  (``tests/test_docs.py`` runs them too, in a folder with no hooks, where they allow).
- Each framework example (LangChain, OpenAI Agents SDK, AgentScope 1.0.x and 2.x) runs in the
  framework's venv (``tests/helpers/framework_venv.py``, the adapter tests' venvs) after a prelude
  that gives it what docs/adapters.md leaves to the reader: ``model`` (the scripted model of
  ``tests/helpers/scripted_model.py``, which calls the shell tool with ``rm -rf /``) and ``tools`` /
  ``toolkit`` / ``agent``, whose one tool is a shell (named as some host names it: ``Bash``,
  ``shell``, ``run_shell_command``) that only records the command it was given in ``ran.txt``.
  The deny must reach the model, and ``rm -rf /`` must never reach the tool.
- The same example with ``trust_project_hooks=False`` lets the call through (the test can
  fail) and the framework's logger says which hook was skipped and why, on stderr.

The prelude is the test's; the example's own text is taken from the doc each time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adapters import test_adapter_agentscope as agentscope_tests
from tests.adapters import test_adapter_langchain as langchain_tests
from tests.adapters import test_adapter_openai_agents as openai_tests
from tests.helpers.framework_venv import REPO, framework_python
from tests.helpers.scripted_model import ScriptedModel, Text, ToolCall

README = REPO / "README.md"
PYTHON_API = REPO / "docs" / "python-api.md"
ADAPTERS = REPO / "docs" / "adapters.md"
GUARD = REPO / "hooks" / "block-dangerous-commands"
DENIED = "Dangerous command blocked: rm -r on /"
SKIPPED = "not trusted, so not run: block-dangerous-commands"
TRUST = "trust_project_hooks=True"


def example(doc: Path, anchor: str) -> str:
    """The one ``python`` block of ``doc`` that contains ``anchor``, as written."""
    blocks = re.findall(r"^```python\n(.*?)^```", doc.read_text(), re.S | re.M)
    found = [b for b in blocks if anchor in b]
    assert len(found) == 1, f"{doc.name}: {len(found)} python blocks contain {anchor!r}"
    assert TRUST in found[0], f"{doc.name}: the example with {anchor!r} must trust its project"
    return found[0]


@pytest.fixture
def cloned(tmp_path: Path) -> Path:
    """A project holding the bundled guard that nobody trusted, and a fresh home."""
    project = tmp_path / "project"
    shutil.copytree(GUARD, project / ".agents" / "hooks" / GUARD.name)
    (tmp_path / "home").mkdir()
    return project


def env_for(project: Path) -> dict[str, str]:
    home = project.parent / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_HOOKS")}
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache")}


def run(python: Path, code: str, project: Path) -> subprocess.CompletedProcess[str]:
    script = project.parent / "example.py"
    script.write_text(code)
    return subprocess.run([str(python), str(script)], cwd=project, env=env_for(project),
                          capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


# -- the library: Hooks and Engine ---------------------------------------------------------


@pytest.mark.parametrize(("doc", "anchor"), [
    (README, "with Hooks(project_dir="), (PYTHON_API, "with Hooks(project_dir="),
    (PYTHON_API, "Engine(registry"),
])
def test_the_python_api_example_denies_rm_rf_root(cloned: Path, doc: Path,
                                                  anchor: str) -> None:
    code = example(doc, anchor)
    done = run(Path(sys.executable), code, cloned)
    assert done.returncode == 0, done.stderr
    assert DENIED in done.stdout, done.stdout
    assert SKIPPED not in done.stdout + done.stderr
    untrusting = run(Path(sys.executable), code.replace(TRUST, "trust_project_hooks=False"),
                     cloned)
    assert untrusting.returncode == 0, untrusting.stderr
    assert DENIED not in untrusting.stdout  # without the trust the guard does not run...
    if "warning" in code:  # ...and the example shows the reader why
        assert SKIPPED in untrusting.stdout, untrusting.stdout


# -- the framework adapters ------------------------------------------------------------------

PRELUDES = {
    "langchain": '''\
from pathlib import Path
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

@tool("shell")
def shell(command: str) -> str:
    """Run a shell command (here: only record it)."""
    with Path("ran.txt").open("a") as ran:
        ran.write(command + "\\n")
    return "ran " + command

model = ChatOpenAI(model="scripted", base_url=BASE_URL, api_key="test", max_retries=0)
tools = [shell]
''',
    "openai-agents": '''\
from pathlib import Path
from agents import AsyncOpenAI, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled

set_tracing_disabled(True)

@function_tool(name_override="Bash")
def shell(command: str) -> str:
    """Run a shell command (here: only record it)."""
    with Path("ran.txt").open("a") as ran:
        ran.write(command + "\\n")
    return "ran " + command

model = OpenAIChatCompletionsModel(
    model="scripted", openai_client=AsyncOpenAI(base_url=BASE_URL, api_key="test", max_retries=0))
tools = [shell]
''',
    "agentscope1": '''\
from pathlib import Path
import mcp_hooks.adapters.agentscope  # before agentscope: its mcp shim (as the example says)
from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.memory import InMemoryMemory
from agentscope.message import TextBlock
from agentscope.model import OpenAIChatModel
from agentscope.tool import Toolkit, ToolResponse

def run_shell_command(command: str) -> ToolResponse:
    """Run a shell command (here: only record it).

    Args:
        command (str): the command.
    """
    with Path("ran.txt").open("a") as ran:
        ran.write(command + "\\n")
    return ToolResponse(content=[TextBlock(type="text", text="ran " + command)])

toolkit = Toolkit()
toolkit.register_tool_function(run_shell_command)
agent = ReActAgent(name="dev", sys_prompt="You tidy repositories.", formatter=OpenAIChatFormatter(),
                   model=OpenAIChatModel("scripted", api_key="test", stream=False,
                                         client_kwargs={"base_url": BASE_URL}),
                   toolkit=toolkit, memory=InMemoryMemory())
agent.set_console_output_enabled(False)
''',
    "agentscope2": '''\
from pathlib import Path
from agentscope.credential import OpenAICredential
from agentscope.model import OpenAIChatModel
from agentscope.tool import FunctionTool, Toolkit

def shell(command: str) -> str:
    """Run a shell command (here: only record it).

    Args:
        command (str): the command.
    """
    with Path("ran.txt").open("a") as ran:
        ran.write(command + "\\n")
    return "ran " + command

model = OpenAIChatModel(OpenAICredential(api_key="test", base_url=BASE_URL), "scripted",
                        stream=False)
toolkit = Toolkit(tools=[FunctionTool(shell, name="Bash")])  # a plain tool: AgentScope asks
''',
}
ANCHORS = {
    "langchain": "from mcp_hooks.adapters.langchain import HooksMiddleware",
    "openai-agents": "from mcp_hooks.adapters.openai_agents import AgentsHooks",
    "agentscope1": "from mcp_hooks.adapters.agentscope import AgentScopeHooks",
    "agentscope2": "from mcp_hooks.adapters.agentscope_middleware import HooksMiddleware",
}
SHELL_NAME = {"langchain": "shell", "openai-agents": "Bash", "agentscope1": "run_shell_command",
              "agentscope2": "Bash"}


def framework(name: str) -> Path:
    if name == "langchain":
        return framework_python("langchain", langchain_tests.PINS, langchain_tests.CHECK)
    if name == "openai-agents":
        return framework_python("openai-agents", openai_tests.PINS, openai_tests.CHECK)
    if name == "agentscope1":
        return framework_python("agentscope1", agentscope_tests.V1_PINS,
                                agentscope_tests.V1_CHECK)
    return framework_python("agentscope2", agentscope_tests.V2_PINS, agentscope_tests.V2_CHECK)


def run_example(name: str, project: Path, *, trusted: bool) -> tuple[
        subprocess.CompletedProcess[str], ScriptedModel]:
    code = example(ADAPTERS, ANCHORS[name])
    if not trusted:
        code = code.replace(TRUST, "trust_project_hooks=False")
    script = [ToolCall(SHELL_NAME[name], {"command": "rm -rf /"}), Text("the repo is tidy")]
    with ScriptedModel(script) as model:
        prelude = f"BASE_URL = {json.dumps(model.base_url)}\n" + PRELUDES[name]
        done = run(framework(name), prelude + "\n# -- the example, as written --\n" + code,
                   project)
    return done, model


@pytest.mark.parametrize("name", list(PRELUDES))
def test_each_adapter_example_denies_rm_rf_root(cloned: Path, name: str) -> None:
    done, model = run_example(name, cloned, trusted=True)
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert not (cloned / "ran.txt").exists()  # rm -rf / never reached the tool
    calls = model.completions()
    assert len(calls) == 2, "the agent did not go on after the refused call"
    assert DENIED in calls[1].tool_results()[-1]  # the model read why
    assert SKIPPED not in done.stderr


@pytest.mark.parametrize("name", list(PRELUDES))
def test_an_untrusted_project_guard_is_logged_through_the_framework(cloned: Path,
                                                                    name: str) -> None:
    done, model = run_example(name, cloned, trusted=False)
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stderr.count(SKIPPED) == 1, done.stderr  # once in the session, where seen
    assert f"mcp-hooks trust {cloned}" in done.stderr
    if name == "agentscope2":  # a plain FunctionTool: AgentScope asks the user first
        assert not (cloned / "ran.txt").exists() and len(model.completions()) == 1
    else:  # nothing stood in the way: the tool got the command (recorded, not run)
        assert (cloned / "ran.txt").read_text() == "rm -rf /\n"
