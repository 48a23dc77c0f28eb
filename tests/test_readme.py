"""Every shell snippet of README.md that needs no outside service runs, as written.

A snippet is a fenced block marked ``sh``, ``bash`` or ``console``. Each one runs with bash
(``set -e``, so every line counts), in a fresh folder of its own, with a fresh ``HOME`` and
``XDG_CONFIG_HOME``/``XDG_STATE_HOME``/``XDG_CACHE_HOME`` at their defaults under it (so
``~/.config/agents/hooks`` in a snippet is the folder mcp-hooks uses), ``EDITOR=true`` (a
snippet that opens an editor goes on), stdin empty, and this checkout's venv first on PATH.
It must exit 0.

The rule for the rest, so no snippet is left out by accident:

- an HTML comment on the line before the block says otherwise:
  ``<!-- readme-test: skip (REASON) -->`` (it needs a network, an agent host, or runs until
  stopped; the reason is required) or ``<!-- readme-test: exit N (REASON) -->`` (it is meant
  to end with N, say the example hook that denies);
- ``make test``, ``make bench`` and ``make e2e`` lines are left out of any block (the
  whole suite inside the suite, or minutes of benchmarks on a shared machine), and
  ``make demo`` runs as what it runs once ``.venv`` exists, ``python examples/demo.py``
  (the target's first step, a ``pip install`` into the shared venv, is not this test's to
  take).

At least ``MIN_RUN`` snippets must run, so the test cannot pass by skipping everything.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
BIN = Path(sys.executable).parent
MIN_RUN = 3  # the two commands, the quick start, the example hook, the install lines
TIMEOUT = 60  # seconds per snippet; the demo takes a few

_BLOCK = re.compile(
    r"(?:<!-- readme-test: (?P<mark>skip|exit) ?(?P<code>\d+)? ?(?P<reason>\(.*?\))? -->\n)?"
    r"^```(?P<lang>sh|bash|console)\n(?P<body>.*?)^```$",
    re.S | re.M)
_LEFT_OUT = re.compile(r"^\s*make (test|bench|e2e)\b.*$", re.M)
_DEMO = re.compile(r"^(\s*)make demo\b", re.M)


@dataclass(frozen=True)
class Snippet:
    line: int  # where the block starts in README.md
    body: str
    skip: str | None  # the reason, when marked skip
    expect: int


def snippets() -> list[Snippet]:
    text = README.read_text(encoding="utf-8")
    found = []
    for block in _BLOCK.finditer(text):
        mark, reason = block["mark"], block["reason"]
        if mark is not None and not reason:
            raise AssertionError(f"README.md: a readme-test {mark} mark without a (reason)")
        body = _DEMO.sub(r"\1python examples/demo.py  # make demo",
                         _LEFT_OUT.sub("", block["body"]))
        if block["lang"] == "console":  # `$ command` lines; the rest is output
            body = "\n".join(line[2:] for line in body.splitlines() if line.startswith("$ "))
        found.append(Snippet(
            line=text.count("\n", 0, block.start("lang")) + 1,
            body=body,
            skip=reason.strip("()") if mark == "skip" else None,
            expect=int(block["code"] or 0) if mark == "exit" else 0,
        ))
    return found


SNIPPETS = snippets()


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MCP_HOOKS_", "AGENT_HOOKS_", "XDG_", "CODEX_", "CLAUDE_",
                                "GEMINI_", "COPILOT_", "KIMI_"))}
    env.update(
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"), XDG_CACHE_HOME=str(home / ".cache"),
        EDITOR="true", VISUAL="true", PYTHONDONTWRITEBYTECODE="1",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
    )
    return env


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"README.md:{s.line}" for s in SNIPPETS])
def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    if snippet.skip:
        pytest.skip(snippet.skip)
    if not snippet.body.strip():
        pytest.skip("only make test/bench/e2e lines, which are left out")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    # examples/demo.py is named relative to the checkout, as `make demo` runs it.
    body = snippet.body.replace("python examples/demo.py",
                                f"{BIN / 'python'} {REPO / 'examples' / 'demo.py'}")
    done = subprocess.run(
        ["bash", "-e", "-c", body], cwd=work, env=clean_env(home), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == snippet.expect, (
        f"README.md:{snippet.line} exited {done.returncode}, expected {snippet.expect}\n"
        f"--- snippet ---\n{snippet.body}\n--- stdout ---\n{done.stdout[-3000:]}\n"
        f"--- stderr ---\n{done.stderr[-3000:]}")


def test_enough_snippets_run() -> None:
    runnable = [s for s in SNIPPETS if not s.skip and s.body.strip()]
    assert len(runnable) >= MIN_RUN, [s.line for s in runnable]
    # The first block is the README's first two commands, and they stay first.
    first = _BLOCK.search(README.read_text(encoding="utf-8"))
    assert first is not None
    assert [line.split("#")[0].strip() for line in first["body"].splitlines()] == [
        "make demo", "make test"]
