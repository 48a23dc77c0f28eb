"""Every fenced block of README.md and docs/*.md runs, is checked for what it is, or says why not.

What happens to a block depends on its language and, where the language says too little, on
its content:

- ``sh``, ``bash``, ``console``: run with bash (``set -e``, so every line counts), in a fresh
  folder of its own, with a fresh ``HOME`` and ``XDG_CONFIG_HOME``/``XDG_STATE_HOME``/
  ``XDG_CACHE_HOME`` at their defaults under it (so ``~/.config/agents/hooks`` in a block is
  the folder mcp-hooks uses), ``$EDITOR`` writing what the page shows for the file it is
  given, as a reader does (``reader_editor``; any other file is left as it is), stdin
  empty, no ``MCP_HOOKS_*`` variable of ours, and this checkout's venv first on PATH. It must
  exit 0. A ``console`` block runs its ``$ `` lines; the rest is their output. ``make test``,
  ``make bench`` and ``make e2e`` lines are left out (the whole suite inside the suite, or
  minutes of benchmarks on a shared machine), and ``make demo`` runs as what it runs once
  ``.venv`` exists, ``python examples/demo.py`` (the target's first step, a ``pip install``
  into the shared venv, is not this test's to take).
- ``python``: run with the venv's python as a script (``python block.py``, as a reader
  runs it: a top-level ``await``/``async with`` is the SyntaxError it is there), in the same
  fresh folder and environment.
- A page a reader follows from the top, each step building on the last, says so on a line
  of its own: ``<!-- reader: after PAGE#SECTION -->``. Its runnable blocks then run in
  order, in one folder and one home, after PAGE's runnable blocks up to the end of SECTION
  (``test_a_reader_follows_the_page``): a reader who did the README's steps first has their
  hooks installed, and the page's examples must hold with them.
- ``markdown`` starting with ``---``: a HOOK.md, loaded with mcp_hooks' own parser
  (``hookfile.load_hook``, strict) from a folder of its ``name``.
- ``yaml``: a hooks.yaml (``hooks:``, a trigger with its entries, or one entry) is loaded
  with ``mcp_hooks.control.config.load_config``, trusted, and must have no problem; any other
  mapping is a HOOK.md frontmatter fragment (``metadata: ...``), loaded inside a minimal
  HOOK.md.
- ``json`` (``//`` comment lines dropped): an ``mcpServers``/``servers`` file is read by the
  proxy's config loader, each server that runs ``mcp-hooks`` has its arguments parsed by our
  own command line, and a URL server must be ``/mcp`` with a bearer header; an outcome is
  read back with ``Outcome.from_dict``; a signal with ``Signal.from_dict``; a hook's payload
  must name a known event and build an ``Event``.
- ``xml`` with a ``<dependency>``: the coordinates are java/agentscope/pom.xml's.
- a block without a language whose lines are ``mcp-hooks COMMAND [--option ...]`` synopses:
  the command exists, and each option is in its ``--help`` or the global ``mcp-hooks --help``.

Anything else must say what it is, in an HTML comment on the line before the block (one
mark per block; the text in parentheses is required):

- ``<!-- readme-test: skip (REASON) -->``: it needs a network, an agent host, a framework and
  a model, or runs until stopped;
- ``<!-- readme-test: exit N (REASON) -->``: a run that is meant to end with N;
- ``<!-- readme-test: run-by (tests/test_x.py::name) -->``: another test runs it as written
  (the file must exist and define that test; more text may follow the name);
- ``<!-- readme-test: illustration (REASON) -->``: a picture (a folder tree, a diagram, a
  shortened shape with ``...``), nothing to run;
- ``<!-- readme-test: output (WHAT PRINTS IT) -->``: what a command prints.

``MIN_CHECKED`` is how many blocks of each file must run or be checked (not marked), so no
file can pass by marking everything; a new docs page must be added to it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks.control.config import load_config as load_hooks_yaml
from mcp_hooks.errors import ON_PYPI, install_command
from mcp_hooks.proxy.config import load_config as load_proxy_config
from mcp_hooks.proxy.config import parse_upstream
from mcp_hooks.spec.events import canonical_event
from mcp_hooks.spec.hookfile import load_hook
from mcp_hooks.spec.outcome import Event, Outcome
from mcp_hooks.spec.signals import Signal

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
TIMEOUT = 120  # seconds per block, to stop a hang; the demo takes a few

# Blocks each file must run or check (not counting marked ones): the count today; raise it
# when a page gains one, never lower it to let a mark in. (README.md went from 12 to 11 when
# its reference moved into docs/writing-hooks.md, docs/events.md and docs/adapters.md.)
MIN_CHECKED = {
    "README.md": 11,
    "docs/adapters.md": 0,
    "docs/agentscope-java.md": 1,
    "docs/ask.md": 0,
    "docs/bridges.md": 1,
    "docs/cli.md": 3,
    "docs/control.md": 19,
    "docs/dashboard.md": 0,
    "docs/deploy.md": 1,
    "docs/design-notes.md": 0,
    "docs/development.md": 0,
    "docs/e2e.md": 0,
    "docs/events.md": 1,
    "docs/hookkit.md": 1,
    "docs/proxy.md": 4,
    "docs/policy.md": 3,
    "docs/python-api.md": 6,
    "docs/safety.md": 1,
    "docs/server.md": 6,
    "docs/settings.md": 1,
    "docs/speed.md": 0,
    "docs/writing-hooks.md": 3,
}
README_MAX_LINES = 300  # the front door: what it is, install, quick start, a door each, links

MARKS = ("skip", "exit", "run-by", "illustration", "output")
_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
_COMMENT_BEFORE = re.compile(r"<!--(?P<inside>(?:(?!<!--).)*?)-->[ \t]*\n\Z", re.S)
_MARK = re.compile(r"\s*readme-test:\s*(?P<kind>[\w-]+)(?:\s+(?P<code>\d+))?"
                   r"(?:\s*\((?P<reason>.*)\))?\s*\Z", re.S)
_RUN_BY = re.compile(r"(?P<file>[\w./-]+)::(?P<name>\w+)")
_LEFT_OUT = re.compile(r"^\s*make (test|bench|e2e)\b.*$", re.M)
_DEMO = re.compile(r"^(\s*)make demo\b", re.M)


@dataclass(frozen=True)
class Block:
    doc: str  # relative to the checkout: README.md, docs/x.md
    line: int  # of the opening fence
    lang: str
    body: str
    mark: str | None = None  # one of MARKS
    reason: str = ""
    code: int = 0  # the exit status an `exit` mark expects

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks_of(doc: Path) -> list[Block]:
    return parse_blocks(str(doc.relative_to(REPO)), doc.read_text(encoding="utf-8"))


def parse_blocks(name: str, text: str) -> list[Block]:
    """The fenced blocks of one page, each with its mark; a malformed or stray mark raises."""
    found = []
    for fence in _FENCE.finditer(text):
        line = text.count("\n", 0, fence.start()) + 1
        mark, reason, code = None, "", 0
        comment = _COMMENT_BEFORE.search(text, 0, fence.start())
        if comment and "readme-test:" in comment["inside"]:
            parsed = _MARK.match(comment["inside"])
            reason = (parsed["reason"] or "").strip() if parsed else ""
            if parsed is None or parsed["kind"] not in MARKS or not reason:
                raise AssertionError(
                    f"{name}:{line}: the mark <!--{comment['inside']}--> is not "
                    f"readme-test: {'|'.join(MARKS)} [N] (REASON); the reason is required")
            mark, reason = parsed["kind"], " ".join(parsed["reason"].split())
            if (parsed["code"] is not None) != (mark == "exit"):
                raise AssertionError(f"{name}:{line}: only an exit mark takes a number (exit N)")
            code = int(parsed["code"] or 0)
        found.append(Block(name, line, fence["lang"], fence["body"], mark, reason, code))
    marks = text.count("readme-test:")
    if marks != sum(1 for b in found if b.mark):
        raise AssertionError(f"{name}: a readme-test mark is not on the line before a block")
    return found


ALL = [block for doc in DOCS for block in blocks_of(doc)]


# -- running: shell and Python --------------------------------------------------------------


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
    # The test cache stays where the suite keeps it, so a block never downloads it again.
    if "MCP_HOOKS_TEST_CACHE" in os.environ:
        env["MCP_HOOKS_TEST_CACHE"] = os.environ["MCP_HOOKS_TEST_CACHE"]
    return env


def shell_script(block: Block) -> str:
    body = _DEMO.sub(r"\1python examples/demo.py  # make demo", _LEFT_OUT.sub("", block.body))
    if block.lang == "console":  # `$ command` lines; the rest is output
        body = "\n".join(line[2:] for line in body.splitlines() if line.startswith("$ "))
    # examples/demo.py is named relative to the checkout, as `make demo` runs it.
    return body.replace("python examples/demo.py",
                        f"{BIN / 'python'} {REPO / 'examples' / 'demo.py'}")


def run_block(block: Block, tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = clean_env(home)
    env["EDITOR"] = env["VISUAL"] = str(
        reader_editor([b for b in ALL if b.doc == block.doc], tmp_path))
    run_in(block, tmp_path, home, work, env)
    if _DEMO.search(block.body):  # the demo keeps its state in its own temporary folder
        left = sorted(p.relative_to(home).as_posix() for p in home.rglob("*mcp-hooks*"))
        assert not left, f"make demo wrote into the reader's home: {left}"


def run_in(block: Block, tmp_path: Path, home: Path, work: Path, env: dict[str, str]) -> None:
    """Run one block in ``work`` with ``env``, as a reader would; it must exit as marked."""
    if block.lang == "python":
        script = tmp_path / f"block-{block.line}.py"
        script.write_text(block.body, encoding="utf-8")
        argv = [str(BIN / "python"), str(script)]
    else:
        argv = ["bash", "-e", "-c", shell_script(block)]
    done = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == block.code, (
        f"{block.where} exited {done.returncode}, expected {block.code}\n"
        f"--- block ---\n{block.body}\n--- stdout ---\n{done.stdout[-3000:]}\n"
        f"--- stderr ---\n{done.stderr[-3000:]}")


# -- a reader following a page from the top ---------------------------------------------------

_AFTER = re.compile(r"^<!--\s*reader:\s*after\s+(?P<page>[\w./-]+)#(?P<section>[\w-]+)\s*-->$",
                    re.M)


def slug(heading: str) -> str:
    """A heading's anchor, as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def section_end(doc: str, section: str) -> int:
    """The line where ``section`` of ``doc`` ends (the next heading of its level or above)."""
    text = (REPO / doc).read_text(encoding="utf-8")
    prose = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    lines = prose.splitlines()
    heads = [(i + 1, len(m[1]), slug(m[2])) for i, line in enumerate(lines)
             if (m := re.match(r"(#+)\s+(.*)", line))]
    start = [(n, level) for n, level, name in heads if name == section]
    assert start, f"{doc} has no section #{section}"
    line, level = start[0]
    return next((n for n, lv, _ in heads if n > line and lv <= level), len(lines) + 1)


def readers_pages() -> list[tuple[str, str, str]]:
    """(page, the page it follows, up to which section) for every page that says so."""
    found = []
    for doc in DOCS:
        for mark in _AFTER.finditer(doc.read_text(encoding="utf-8")):
            found.append((str(doc.relative_to(REPO)), mark["page"], mark["section"]))
    return found


READERS = readers_pages()


def reader_editor(blocks: list[Block], folder: Path) -> Path:
    """An ``$EDITOR`` that writes what the pages show for the file it is given: for
    ``NAME/scripts/run``, the block opening with ``#!`` that follows the HOOK.md of NAME."""
    shown: dict[str, str] = {}
    for before, after in itertools.pairwise(blocks):
        name = re.search(r"^name:\s*(\S+)", before.body, re.M)
        if before.lang in ("markdown", "md") and name and after.body.startswith("#!"):
            shown[f"{name[1]}/scripts/run"] = after.body
    table = folder / "shown.json"
    table.write_text(json.dumps(shown), encoding="utf-8")
    editor = folder / "editor"
    editor.write_text(f"#!{BIN / 'python'}\nimport json, pathlib, sys\n"
                      f"shown = json.loads(pathlib.Path({str(table)!r}).read_text())\n"
                      "for arg in sys.argv[1:]:\n"
                      "    path = pathlib.Path(arg)\n"
                      "    key = f'{path.parent.parent.name}/{path.parent.name}/{path.name}'\n"
                      "    if key in shown:\n"
                      "        path.write_text(shown[key])\n", encoding="utf-8")
    editor.chmod(0o755)
    return editor


# -- checking: what a block is --------------------------------------------------------------

Check = Callable[[Block, Path], None]

_FRONTMATTER_KEYS = {"name", "description", "trigger", "matcher", "timeout", "async",
                     "priority", "metadata"}


def check_hook_md(block: Block, tmp_path: Path) -> None:
    frontmatter = re.match(r"---\n(.*?)^---\n", block.body, re.S | re.M)
    assert frontmatter, f"{block.where}: a HOOK.md opens with --- frontmatter ---"
    name = re.search(r"^name:\s*(\S+)", frontmatter[1], re.M)
    assert name, f"{block.where}: the HOOK.md has no name"
    folder = tmp_path / name[1]
    (folder / "scripts").mkdir(parents=True)
    (folder / "HOOK.md").write_text(block.body, encoding="utf-8")
    run = folder / "scripts" / "run"
    run.write_text("#!/bin/sh\nexit 0\n")
    run.chmod(0o755)
    spec, warnings = load_hook(folder, "user", strict=True)
    assert spec.name == name[1] and not warnings, (block.where, warnings)


def check_frontmatter_fragment(block: Block, tmp_path: Path) -> None:
    """A piece of HOOK.md frontmatter (``metadata: ...``), inside a minimal HOOK.md."""
    head = "name: fragment\ndescription: the docs' fragment\ntrigger: before_tool\n"
    check_hook_md(Block(block.doc, block.line, "markdown",
                        f"---\n{head}{block.body}---\n"), tmp_path)


def check_hooks_yaml(block: Block, tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(block.body)
    if isinstance(data, list):  # one trigger's entries, shown without the trigger
        data = {"hooks": {"before_tool": data}}
    elif "hooks" not in data:
        data = {"hooks": data}
    project = tmp_path / "project"
    (project / ".ahp").mkdir(parents=True)
    (project / ".ahp" / "hooks.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    config = load_hooks_yaml(project, user_file=tmp_path / "no-user-layer.yaml",
                             trust_project=True)
    assert not config.problems, (block.where, [str(p) for p in config.problems])
    written = sum(len(v) if isinstance(v, list) else 1 for v in data["hooks"].values())
    assert len(config.entries) == written, (block.where, config.entries)


def is_hooks_yaml(body: str) -> bool:
    import yaml

    data = yaml.safe_load(body)
    if isinstance(data, list):
        return all(isinstance(e, dict) and "oracle" in e for e in data)
    return isinstance(data, dict) and not set(data) <= _FRONTMATTER_KEYS


def json_of(block: Block) -> Any:
    text = "\n".join(line for line in block.body.splitlines()
                     if not line.lstrip().startswith("//"))
    return json.loads(text)


def check_servers_json(block: Block, tmp_path: Path) -> None:
    """A host's (or the proxy's) server list, read as the proxy reads it; our own entries'
    arguments parsed by our command line, a remote one pointed at ``/mcp`` with a bearer."""
    from mcp_hooks.cli import build_parser

    data = json_of(block)
    servers = data.get("mcpServers", data.get("servers"))
    assert isinstance(servers, dict) and servers, block.where
    file = tmp_path / "servers.json"
    file.write_text(json.dumps(data), encoding="utf-8")
    # Hosts substitute their own ${...} (VS Code's workspaceFolder, input:...), and the proxy
    # expands environment variables: give each name it meets a value.
    names = set(re.findall(r"\$\{(?:env:)?([^}:]+)", block.body))
    specs = load_proxy_config(file, environ={n: f"/value/of/{n}" for n in names})
    assert len(specs) == len(servers), (block.where, specs)
    for name, entry in servers.items():
        if entry.get("command") == "mcp-hooks":
            args = build_parser(entry["args"]).parse_args(entry["args"])
            for upstream in getattr(args, "upstream", None) or ():
                parse_upstream(upstream)
        if name == "hooks" and "url" in entry:  # the docs' name for our own server
            auth = entry.get("headers", {}).get("Authorization", "")
            assert entry["url"].endswith("/mcp") and auth.startswith("Bearer "), (
                f"{block.where}: {name}: our server is at /mcp and takes a bearer token")
        elif name == "hooks":
            assert entry.get("command") == "mcp-hooks", (block.where, name)


def check_outcome_json(block: Block, tmp_path: Path) -> None:
    data = json_of(block)
    outcome = Outcome.from_dict(data)
    assert outcome.as_dict().keys() >= data.keys(), block.where


def check_signal_json(block: Block, tmp_path: Path) -> None:
    data = json_of(block)
    signal = Signal.from_dict(data)
    assert signal.as_dict().keys() == data.keys(), block.where


def check_payload_json(block: Block, tmp_path: Path) -> None:
    """A hook's stdin: a known event, and the fields of ours an ``Event`` takes."""
    data = json_of(block)
    canonical_event(data["event_type"])
    ours = {k: data[k] for k in ("event_type", "session_id", "work_dir", "tool_name",
                                 "tool_input", "tool_use_id", "context") if k in data}
    Event.create(**ours)


def check_dependency_xml(block: Block, tmp_path: Path) -> None:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    pom = ET.parse(REPO / "java" / "agentscope" / "pom.xml").getroot()  # the adapter's
    shown = ET.fromstring(block.body)
    for key in ("groupId", "artifactId", "version"):  # groupId, version: from its parent
        mine = pom.findtext(f"m:{key}", namespaces=ns) or pom.findtext(f"m:parent/m:{key}",
                                                                      namespaces=ns)
        assert shown.findtext(key) == mine, (block.where, key)


@cache
def help_text(command: str) -> str:
    argv = [str(BIN / "mcp-hooks"), *([command] if command else []), "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (command, done.stderr)
    return done.stdout


def check_synopsis(block: Block, tmp_path: Path) -> None:
    command = ""
    for line in block.body.splitlines():
        if line.startswith("mcp-hooks "):
            command = line.split()[1]
        for option in re.findall(r"(?<![\w-])--[a-z][\w-]*", line.split("  ")[0] if
                                 line.startswith("mcp-hooks ") else line):
            assert option in help_text(command) or option in help_text(""), (
                f"{block.where}: mcp-hooks {command} has no {option}")


def is_synopsis(body: str) -> bool:
    lines = [line for line in body.splitlines() if line.strip()]
    return bool(lines) and lines[0].startswith("mcp-hooks ") and all(
        line.startswith(("mcp-hooks ", " ")) for line in lines)


def checker(block: Block) -> Check | None:
    """How a block that is not run is checked, or None when nothing fits."""
    lang, body = block.lang, block.body
    if lang in ("markdown", "md") and body.startswith("---\n"):
        return check_hook_md
    if lang == "yaml":
        return check_hooks_yaml if is_hooks_yaml(body) else check_frontmatter_fragment
    if lang == "json":
        data = json_of(block)
        if isinstance(data, dict) and ("mcpServers" in data or "servers" in data):
            return check_servers_json
        if isinstance(data, dict) and "decision" in data:
            return check_outcome_json
        if isinstance(data, dict) and {"header", "payload"} <= data.keys():
            return check_signal_json
        if isinstance(data, dict) and "event_type" in data:
            return check_payload_json
    if lang == "xml" and "<dependency>" in body:
        return check_dependency_xml
    if lang == "" and is_synopsis(body):
        return check_synopsis
    return None


RUNS = ("sh", "bash", "console", "python")


def disposition(block: Block) -> str:
    """run, check, or the block's mark."""
    if block.mark in ("exit", None) and block.lang in RUNS:
        return "run"
    if block.mark is None:
        return "check"
    return block.mark


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("block", ALL, ids=[b.where for b in ALL])
def test_block(block: Block, tmp_path: Path) -> None:
    what = disposition(block)
    if what == "run":
        body = shell_script(block) if block.lang != "python" else block.body
        if not body.strip():
            pytest.skip("only make test/bench/e2e lines, which are left out")
        if any(block.doc == page for page, _, _ in READERS):
            pytest.skip("run in order with its page: test_a_reader_follows_the_page")
        run_block(block, tmp_path)
    elif what == "check":
        check = checker(block)
        assert check is not None, (
            f"{block.where}: a ```{block.lang} block nothing here can check: check it in "
            f"{__file__} or mark it (<!-- readme-test: illustration|output|skip|run-by (...) -->)")
        check(block, tmp_path)
    elif what == "run-by":
        ref = _RUN_BY.match(block.reason)
        assert ref, f"{block.where}: run-by (FILE::TEST), got ({block.reason})"
        source = (REPO / ref["file"]).read_text(encoding="utf-8")
        assert re.search(rf"\b(def|void) {ref['name']}\(", source), (
            f"{block.where}: {ref['file']} has no test {ref['name']}")
    elif what == "skip":
        pytest.skip(block.reason)
    # illustration and output: the mark and its reason are the whole rule


@pytest.mark.parametrize(("page", "after", "section"), READERS,
                         ids=[f"{page}-after-{after}#{section}" for page, after, section
                              in READERS])
def test_a_reader_follows_the_page(page: str, after: str, section: str, tmp_path: Path) -> None:
    """The steps of ``after`` up to the end of ``section``, then every runnable block of
    ``page``, in order, in one folder and one home: as a reader goes through them."""
    end = section_end(after, section)
    steps = [b for b in ALL if b.doc == after and b.line < end]
    steps += [b for b in ALL if b.doc == page]
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = clean_env(home)
    env["EDITOR"] = env["VISUAL"] = str(reader_editor(steps, tmp_path))
    ran = 0
    for step in steps:
        if disposition(step) != "run" or not (
                step.body if step.lang == "python" else shell_script(step)).strip():
            continue
        run_in(step, tmp_path, home, work, env)
        ran += 1
    assert ran > 1, f"{page}: nothing ran after {after}#{section}"


def test_the_reader_run_uses_what_the_page_shows(tmp_path: Path) -> None:
    """The reader's ``$EDITOR`` writes the README's denying script into the scaffold, so the
    README's own user hook denies after its steps (as it does for a reader)."""
    readme = [b for b in ALL if b.doc == "README.md"]
    editor = reader_editor(readme, tmp_path)
    run = tmp_path / "no-force-push" / "scripts" / "run"
    run.parent.mkdir(parents=True)
    run.write_text("#!/bin/sh\nexit 0\n")
    subprocess.run([str(editor), str(run)], check=True, timeout=TIMEOUT)
    assert "exit 2" in run.read_text()
    assert ("docs/python-api.md", "README.md", "your-own-hook") in READERS


def test_enough_blocks_run_or_are_checked() -> None:
    counted = {str(doc.relative_to(REPO)): 0 for doc in DOCS}
    for block in ALL:
        if disposition(block) in ("run", "check"):
            counted[block.doc] += 1
    assert counted.keys() == MIN_CHECKED.keys(), "add the new page to MIN_CHECKED"
    short = {doc: (n, MIN_CHECKED[doc]) for doc, n in counted.items() if n < MIN_CHECKED[doc]}
    assert not short, f"fewer blocks run or checked than before (now, then): {short}"


@pytest.mark.parametrize(("page", "error"), [
    ("<!-- readme-test: skip -->\n```sh\nls\n```\n", "the reason is required"),
    ("<!-- readme-test: skip () -->\n```sh\nls\n```\n", "the reason is required"),
    ("<!-- readme-test: maybe (why) -->\n```sh\nls\n```\n", "the reason is required"),
    ("<!-- readme-test: skip 2 (why) -->\n```sh\nls\n```\n", "only an exit mark"),
    ("<!-- readme-test: skip (why) -->\n\nprose\n```sh\nls\n```\n", "not on the line"),
])
def test_a_mark_says_what_and_why_on_the_line_before_its_block(page: str, error: str) -> None:
    with pytest.raises(AssertionError, match=re.escape(error)):
        parse_blocks("page.md", page)


def test_marks_are_read() -> None:
    page = ("<!-- readme-test: exit 2 (it denies) -->\n```sh\nexit 2\n```\n\n"
            "<!-- readme-test: run-by (tests/test_x.py::test_y, as written\n  there) -->\n"
            "```java\nx();\n```\n\n```yaml\na: 1\n```\n")
    exit_, run_by, plain = parse_blocks("page.md", page)
    assert (exit_.mark, exit_.code, exit_.reason, exit_.line) == ("exit", 2, "it denies", 2)
    assert (run_by.mark, run_by.reason) == ("run-by", "tests/test_x.py::test_y, as written there")
    assert (plain.mark, plain.lang, plain.body) == (None, "yaml", "a: 1\n")
    assert [disposition(b) for b in (exit_, run_by, plain)] == ["run", "run-by", "check"]


def test_the_readme_is_a_front_door_not_the_reference() -> None:
    """README.md stays short (the reference lives in docs/) and opens with what it is: prose
    before its first block, the make-target table after it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines, more than {README_MAX_LINES}: move the reference "
        f"into docs/ (a page named for what it holds) and link it")
    pitch = " ".join(text.split("```", 1)[0].split())
    assert "decision the agent must follow" in pitch, "README.md: the pitch comes first"
    assert "| target |" not in pitch, "README.md: the make-target table comes after the pitch"


def test_the_readme_opens_with_its_two_commands() -> None:
    first = ALL[0]
    assert first.doc == "README.md" and first.lang == "sh"
    assert [line.split("#")[0].strip() for line in first.body.splitlines()] == [
        "make demo", "make test"]


# -- blocks other tests run, and what the prose says ------------------------------------------


def block(doc: str, starts: str) -> Block:
    """The block of ``doc`` whose body starts with ``starts``."""
    found = [b for b in ALL if b.doc == doc and b.body.startswith(starts)]
    assert len(found) == 1, f"{doc}: {len(found)} blocks start with {starts!r}"
    return found[0]


def mcp_hooks(home: Path, cwd: Path, *args: str,
              stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "mcp-hooks"), *args], cwd=cwd, env=clean_env(home),
                          input=stdin, capture_output=True, text=True, timeout=TIMEOUT)


def test_the_validation_line_is_what_validate_prints(tmp_path: Path) -> None:
    """docs/control.md's example line, from a hooks.local.yaml with that typo."""
    shown = block("docs/control.md", ".ahp/hooks.local.yaml: ").body.strip()
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".ahp").mkdir(parents=True)
    home.mkdir()
    (project / ".ahp" / "hooks.local.yaml").write_text(
        "hooks:\n  pre-issue-submit:\n    - oracle: FileChangeLimiter\n"
        "      config: {max_file: 40}\n")
    done = mcp_hooks(home, project, "validate")
    assert done.returncode == 1
    assert f"{project}/{shown}" in done.stderr.splitlines(), (shown, done.stderr)


def test_the_custom_oracle_example(tmp_path: Path) -> None:
    """docs/control.md's ApiDocs class, as .ahp/oracles/api_docs.py, named by the first entry
    of the block above it: a changed API without its docs is a prompt naming the file."""
    import yaml

    entries = yaml.safe_load(block("docs/control.md", "pre-issue-submit:\n  - oracle: oracles/"
                                   ).body)
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".ahp" / "oracles").mkdir(parents=True)
    home.mkdir()
    (project / ".ahp" / "oracles" / "api_docs.py").write_text(
        block("docs/control.md", "from mcp_hooks.spec.signals import Signal").body)
    first = {"pre-issue-submit": entries["pre-issue-submit"][:1]}
    (project / ".ahp" / "hooks.yaml").write_text(yaml.safe_dump({"hooks": first}))
    for changed, said in ((["api/users.py"], "API changed; update docs/api.md"),
                          (["api/users.py", "docs/api.md"], None)):
        payload = json.dumps({"issue": {"id": "FEAT-1", "files_changed": changed}})
        done = mcp_hooks(home, project, "fire", "pre-issue-submit", "--payload", payload,
                         "--json", "--trust-project-hooks")
        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout)
        assert not outcome["warnings"], outcome
        if said:
            assert [s["header"]["intensity"] for s in outcome["signals"]] == ["prompt"]
            assert any(said in text for text in outcome["additional_context"]), outcome
        else:
            assert not outcome["signals"], outcome


def test_the_trust_commands(tmp_path: Path) -> None:
    """docs/safety.md's four lines in a project with an untrusted hook lint-migrations: the
    first shows it and asks (without a terminal it says to pass --yes), the second trusts
    it, the third lists it, the fourth forgets it."""
    from tests.conftest import write_hook

    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    write_hook(project / ".agents" / "hooks", "lint-migrations")
    lines = [line.split("#")[0].split() for line in
             block("docs/safety.md", "mcp-hooks trust ").body.splitlines()]
    assert [line[:2] for line in lines] == [["mcp-hooks", "trust"]] * 4
    shown = mcp_hooks(home, project, *lines[0][1:])
    assert shown.returncode == 1 and "lint-migrations  [untrusted]" in shown.stdout
    assert "pass --yes" in shown.stderr
    for line in lines[1:]:
        done = mcp_hooks(home, project, *line[1:])
        assert done.returncode == 0, (line, done.stderr)
        if "--list" in line:
            assert "lint-migrations" in done.stdout
    assert "lint-migrations" not in mcp_hooks(home, project, "trust", "--list").stdout


def test_the_inspector_the_docs_name_is_the_one_tested() -> None:
    """Every command line naming the MCP Inspector pins the version tests/server/test_server_ts.py
    runs (on node < 22.7.5 a bare npx picks 0.15.0, which has no --strict)."""
    package = json.loads((REPO / "tests" / "ts_client" / "package.json").read_text())
    tested = package["dependencies"]["@modelcontextprotocol/inspector"]
    named = [(doc.name, version) for doc in DOCS for version in re.findall(
        r"npx (?:-y )?@modelcontextprotocol/inspector(\S*)\s+--cli", doc.read_text())]
    assert named and all(version == f"@{tested}" for _, version in named), named


@pytest.mark.anyio
async def test_what_the_python_sdk_shows_without_the_token(tmp_path: Path) -> None:
    """docs/server.md: the Python SDK reads nothing of the 401's body (an OAuth error object,
    not JSON-RPC): its error is a bare -32603. If it ever shows the hint, say so there."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    from mcp_hooks.server.transport import AUTH_HINT
    from tests.helpers.transports import served

    text = (REPO / "docs" / "server.md").read_text(encoding="utf-8")
    assert '-32603 "Server returned an error response"' in " ".join(text.split())
    with served(["serve", "--transport", "http", "--port", "0", "--token", "right",
                 "--user-dir", str(tmp_path), "--no-log"]) as server:
        for headers in ({"Authorization": "Bearer wrong"}, {}):
            async with httpx2.AsyncClient(headers=headers) as http:
                with pytest.raises(BaseException) as raised:
                    async with Client(streamable_http_client(server.url, http_client=http)):
                        pass
            errors = [e for e in _leaves(raised.value) if isinstance(e, MCPError)]
            assert len(errors) == 1, raised.value
            assert errors[0].error.code == -32603, errors[0]
            assert errors[0].error.message == "Server returned an error response"
            assert AUTH_HINT not in str(errors[0])


def _leaves(exc: BaseException) -> list[BaseException]:
    inner = getattr(exc, "exceptions", None)
    return [leaf for e in inner for leaf in _leaves(e)] if inner else [exc]


def test_persistent_hooks_live_per_event_loop(tmp_path: Path) -> None:
    """docs/python-api.md: three asyncio.run(afire) start three processes of a persistent
    hook; three fire, or three afire in one loop, share one."""
    from tests.conftest import write_hook

    hooks_dir, project = tmp_path / "hooks", tmp_path / "project"
    project.mkdir()
    write_hook(hooks_dir, "pid", entry="scripts/run.py", extra="metadata:\n  persistent: true\n",
               script="import os\nfrom mcp_hooks.hookkit import context, hook\n\n\n@hook\n"
                      "def main(event):\n    return context(str(os.getpid()))\n")
    code = textwrap.dedent(f"""\
        import asyncio, json
        from mcp_hooks import Hooks
        hooks = Hooks(project_dir={str(project)!r}, user_dir={str(hooks_dir)!r})
        fire = dict(tool_name="Shell", tool_input={{"command": "ls"}})
        pid = lambda out: out.additional_context[0]
        runs = [pid(asyncio.run(hooks.afire("before_tool", **fire))) for _ in range(3)]
        fires = [pid(hooks.fire("before_tool", **fire)) for _ in range(3)]
        async def one_loop():
            return [pid(await hooks.afire("before_tool", **fire)) for _ in range(3)]
        loop = asyncio.run(one_loop())
        hooks.close()
        print(json.dumps([runs, fires, loop]))
        """)
    done = subprocess.run([str(BIN / "python"), "-c", code], env=clean_env(tmp_path),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    runs, fires, loop = json.loads(done.stdout)
    assert len(set(runs)) == 3 and len(set(fires)) == 1 and len(set(loop)) == 1, (runs, fires,
                                                                                   loop)


def test_the_untrusted_override_warning(tmp_path: Path) -> None:
    """docs/safety.md's warning, from an untrusted project layer that switches off your
    ``guard`` entry (the home and the project named as in the docs)."""
    shown = block("docs/safety.md", ".ahp/hooks.yaml: pre-tool-use[0]").body
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".ahp").mkdir(parents=True)
    (home / ".ahp").mkdir(parents=True)
    (home / ".ahp" / "hooks.yaml").write_text(
        "hooks:\n  pre-tool-use:\n    - {oracle: PermissionChecker, id: guard}\n")
    (project / ".ahp" / "hooks.yaml").write_text(
        "hooks:\n  pre-tool-use:\n    - {oracle: PermissionChecker, id: guard, enabled: false}\n")
    done = mcp_hooks(home, project, "fire", "pre-tool-use", "--tool", "Shell", "--input",
                     '{"command": "ls"}', "--json")
    assert done.returncode == 0, done.stderr
    said = [w.replace(f"{project}/", "").replace(str(home), "~").replace(
        str(project), "/path/to/project") for w in json.loads(done.stdout)["warnings"]]
    assert " ".join(shown.split()) in said, said


def test_every_module_has_a_row_in_development_md() -> None:
    """docs/development.md's "Which module owns what": one row per module of mcp_hooks/ (a
    row may name several; ``adapters/`` names a folder)."""
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    table = text.split("## Which module owns what", 1)[1].split("\n## ", 1)[0]
    rows = "\n".join(line for line in table.splitlines() if line.startswith("| "))
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", rows))
    package = REPO / "mcp_hooks"
    modules = [str(p.relative_to(package)) for p in sorted(package.rglob("*.py"))
               if not {"library", "__pycache__"} & set(p.relative_to(package).parts)]
    missing = [m for m in modules if m not in named and m.rsplit("/", 1)[-1] != "__init__.py"
               and not any(m.startswith(n) for n in named if n.endswith("/"))]
    assert not missing, f"docs/development.md: no row for {missing}"
    folders = [package / n for n in named if n.endswith("/")]
    gone = [n for n in named if n.endswith(".py") and not (package / n).exists()
            and not any((folder / n).exists() for folder in folders)]
    assert not gone, f"docs/development.md: rows for modules that are gone: {gone}"


# Install commands that name the package on PyPI: they fail until it is published
# (errors.ON_PYPI); a paragraph may give one only saying so (README.md's "Install").
_PYPI_FORMS = re.compile(r"pip\s+install\s+'?mcp-hooks\b|pipx\s+install\s+mcp-hooks\b|"
                         r"uv\s+tool\s+install\s+mcp-hooks\b|uvx\s+mcp-hooks(?!==)\b")


def test_no_page_gives_an_install_command_that_fails() -> None:
    if ON_PYPI:
        return
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    wrong = [f"{page.name}: {' '.join(para.split())[:160]}"
             for page in pages for para in page.read_text(encoding="utf-8").split("\n\n")
             if _PYPI_FORMS.search(para) and "PyPI" not in para]
    assert wrong == [], "give the checkout/wheel form (README.md#install):\n" + "\n".join(wrong)
    assert "in a checkout" in install_command("redis") and "PyPI" in install_command("redis")
