"""``Settings``: one record, built once (flags, then ``MCP_HOOKS_*``, then defaults), the only
reader of our variables; and a flag given to ``serve`` reaching the bridge endpoint's faults."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import mcp_hooks
from mcp_hooks import Hooks, Settings
from mcp_hooks.cli import build_parser
from mcp_hooks.cli.serve import options_from_args
from mcp_hooks.errors import ConfigError
from mcp_hooks.hosts.forward import FORWARD_PATH
from mcp_hooks.hosts.forward_auth import answer_problem, sign_request
from mcp_hooks.settings import DEFAULT_STOP_BLOCK_CAP, VARIABLES
from tests.conftest import write_hook
from tests.helpers.forward_served import served

PACKAGE = Path(mcp_hooks.__file__).resolve().parent
DOCS = PACKAGE.parent / "docs" / "settings.md"
PREFIX = "MCP_HOOKS_"

# Modules that may touch our variables in the environment, and why: the ones that run outside
# the package's process or read no setting.
EXCEPTIONS = {
    "settings/__init__.py": "the one reader (Settings.from_env, and its own _env_value)",
    "hookkit.py": "runs inside a hook's own process and imports nothing of the package "
                  "(MCP_HOOKS_PERSISTENT tells it it is resident)",
    "runner/hookenv.py": "removes our variables from a hook's environment: it names them, "
                         "it reads no setting from them",
    "hosts/forward_script.py": "the generated forward.py stands alone (run as python -I -S in "
                               "the host's process): its reads are in the script's text",
}
# settings' helpers that read a variable themselves when called without an ``environ``: a
# call of one outside settings is a read of our variables through a helper.
READING_HELPERS = frozenset({"trust_store_path", "trust_all_from_env",
                             "managed_dir_from_env"})
# The library's doors: a public constructor a library caller may use without any door's
# Settings reads "not said" (None) as this process's environment, through settings' helpers.
# Nothing else may, and every call inside the package passes its door's value instead
# (test_the_package_passes_its_doors_values).
LIBRARY_DOORS = {
    ("control/config.py", "load_config"): "hooks.yaml's project trust and its trust store",
    ("control/evaluation.py", "evaluate"): "config=None: load_config as a library caller",
    ("registry/discovery.py", "__init__"): "Registry: trust and the managed folder",
    ("registry/discovery.py", "trust_store"): "Registry: the trust store, made when asked",
    ("registry/trust.py", "__init__"): "TrustStore(): the trust store file",
}
# Reads of the environment under a computed name that is never one of ours.
COMPUTED = {
    ("hosts/base.py", "work_dir"): "the host's own project variables (CLAUDE_PROJECT_DIR, ...)",
    ("hosts/base.py", "config_path"): "the host's own config folder variable (CODEX_HOME, ...)",
    ("hosts/base.py", "config_home"): "the host's own config folder variable (CODEX_HOME, ...)",
    ("paths.py", "_base"): "XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_CACHE_HOME",
    ("control/files.py", "git_ignores"): "PATH, HOME, XDG_CONFIG_HOME for a git child",
}


def _our_constants() -> set[str]:
    """Names bound anywhere in the package to a string starting with ``MCP_HOOKS_``."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)
                    and node.value.value.startswith(PREFIX)):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_os_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os")


class _Reads(ast.NodeVisitor):
    """Every read of an environment variable of ours (a literal or a constant naming one, on
    any mapping: an ``env = os.environ`` alias too) and every read of ``os.environ`` /
    ``os.getenv`` under a computed name."""

    def __init__(self, ours: set[str]) -> None:
        self.ours = ours
        self.found: list[tuple[int, str, str]] = []  # (line, function, what)
        self.function = ""

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def _key(self, key: ast.expr, environ: bool, line: int) -> None:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            if key.value.startswith(PREFIX):
                self.found.append((line, self.function, key.value))
        elif isinstance(key, ast.Name) and key.id in self.ours:
            self.found.append((line, self.function, key.id))
        elif environ:
            self.found.append((line, self.function, f"computed name {ast.unparse(key)}"))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called.endswith("env_value") and node.args:  # settings' own reader
            self._key(node.args[0], False, node.lineno)
        elif called in READING_HELPERS and not (node.args or node.keywords):
            self.found.append((node.lineno, self.function, f"{called}() (a helper)"))
        elif isinstance(func, ast.Attribute) and node.args:
            if func.attr == "get":
                self._key(node.args[0], _is_os_environ(func.value), node.lineno)
            elif (func.attr == "getenv" and isinstance(func.value, ast.Name)
                  and func.value.id == "os"):
                self._key(node.args[0], True, node.lineno)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            self._key(node.slice, _is_os_environ(node.value), node.lineno)
        self.generic_visit(node)


def reads(source: str, rel: str, ours: set[str]) -> list[str]:
    """``file:line what`` for each read ``rel`` may not make."""
    visitor = _Reads(ours)
    visitor.visit(ast.parse(source))
    return [f"mcp_hooks/{rel}:{line} {what}" for line, function, what in visitor.found
            if not (what.startswith("computed") and (rel, function) in COMPUTED)
            and not (what.endswith("(a helper)") and (rel, function) in LIBRARY_DOORS)]


def test_no_module_but_settings_reads_our_variables() -> None:
    ours = _our_constants()
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in EXCEPTIONS or rel.startswith("library/"):  # library/: standalone hooks
            continue
        found += reads(path.read_text(encoding="utf-8"), rel, ours)
    assert not found, (
        "a read of MCP_HOOKS_* outside mcp_hooks/settings: give the value a Settings field "
        "(settings/variables.py, docs/settings.md), read it once where the door builds its "
        "Settings (options.settings, Settings.from_env) and pass the record or the value "
        "down:\n" + "\n".join(found))


def test_each_library_door_still_reads_the_environment() -> None:
    """A library door whose read is gone is taken off ``LIBRARY_DOORS``."""
    ours, left = _our_constants(), set()
    for rel, _ in LIBRARY_DOORS:
        visitor = _Reads(ours)
        visitor.visit(ast.parse((PACKAGE / rel).read_text(encoding="utf-8")))
        left |= {(rel, f) for _, f, what in visitor.found if what.endswith("(a helper)")}
        left |= {(rel, f) for f, _ in _defaulted_calls(PACKAGE / rel)}
    assert set(LIBRARY_DOORS) <= left, f"no longer read there: {set(LIBRARY_DOORS) - left}"


# What each public constructor reads from the environment when its caller leaves it out.
DEFAULTED = {
    "Registry": ("trust_project_hooks", "trust_store", "managed_dir"),
    "TrustStore": ("path",),
    "load_config": ("trust_project", "trust_store"),
    "ControlLayer": ("trust_project", "trust_store"),
}


def _defaulted_calls(path: Path) -> list[tuple[str, str]]:
    """(function, what) for each call in ``path`` of a ``DEFAULTED`` constructor that leaves
    a value it would take from the environment unsaid (a ``shared=`` store needs no path;
    ``trust_project=True`` needs no store; a module's own function of the same name is
    not one of them)."""
    found: list[tuple[str, str]] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}

    class Calls(ast.NodeVisitor):
        function = ""

        def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
            outer, self.function = self.function, node.name
            self.generic_visit(node)
            self.function = outer

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Call(self, node: ast.Call) -> None:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            said = {k.arg for k in node.keywords}
            if name == "TrustStore" and (node.args or said & {"path", "shared"}):
                said.add("path")
            if name == "load_config" and any(
                    k.arg == "trust_project" and isinstance(k.value, ast.Constant)
                    and k.value.value is True for k in node.keywords):
                said.add("trust_store")
            if None in said:  # **options: what it holds is checked where it is made
                said |= set(DEFAULTED.get(name, ()))
            missing = [k for k in DEFAULTED.get(name, ()) if k not in said and name not in own]
            if missing:
                found.append((self.function, f"{name}(...) without {', '.join(missing)}"))
            self.generic_visit(node)

    Calls().visit(tree)
    return found


def test_the_package_passes_its_doors_values() -> None:
    """Inside the package, a ``Registry``, ``TrustStore``, hooks.yaml load or control layer
    is given the trust and managed folder of its door's ``Settings``: only a library door
    leaves them to the environment."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        found += [f"mcp_hooks/{rel} {function}: {what}"
                  for function, what in _defaulted_calls(path)
                  if (rel, function) not in LIBRARY_DOORS]
    assert not found, ("pass the door's value (Settings.trust_project_hooks, "
                       "TrustStore(settings.trust_store) or options.trust_store_of, "
                       "Settings.managed_dir):\n" + "\n".join(found))


def test_the_call_check_finds_an_unsaid_value(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text(
        "def a(s): return Registry(u, p, trust_project_hooks=s.t, managed_dir=s.m)\n"
        "def b(s): return TrustStore(), TrustStore(s.path), TrustStore.over(x), "
        "TrustStore(shared=x)\n"
        "def c(s): return load_config(p, trust_project=True), load_config(p)\n"
        "def d(s, o): return Registry(u, p, **o), ControlLayer(p, trust_store=s)\n",
        encoding="utf-8")
    assert _defaulted_calls(source) == [
        ("a", "Registry(...) without trust_store"), ("b", "TrustStore(...) without path"),
        ("c", "load_config(...) without trust_project, trust_store"),
        ("d", "ControlLayer(...) without trust_project")]


def test_the_check_finds_each_kind_of_read() -> None:
    source = (
        "import os\n"
        "TOKEN_ENV = 'MCP_HOOKS_TOKEN'\n"
        "def a(): return os.environ.get('MCP_HOOKS_LOG')\n"
        "def b(env): return env.get(TOKEN_ENV)\n"
        "def c(): return os.getenv('MCP_HOOKS_ON_FAULT')\n"
        "def d(name): return os.environ[name]\n"
        "def e(): return os.environ.get('HOME'), {**os.environ, 'MCP_HOOKS_LOG': 'off'}\n"
        "def f(): return env_value(TOKEN_ENV), settings.env_value('MCP_HOOKS_LOG')\n"
        "def g(): return trust_store_path(), managed_dir_from_env(), trust_store_path({})\n"
    )
    found = reads(source, "x.py", {"TOKEN_ENV"})
    assert [f.split()[0] for f in found] == [
        "mcp_hooks/x.py:3", "mcp_hooks/x.py:4", "mcp_hooks/x.py:5", "mcp_hooks/x.py:6",
        "mcp_hooks/x.py:8", "mcp_hooks/x.py:8", "mcp_hooks/x.py:9", "mcp_hooks/x.py:9"]


def test_flags_then_environment_then_defaults(tmp_path: Path) -> None:
    env = {"MCP_HOOKS_ON_FAULT": "warn", "MCP_HOOKS_STOP_BLOCK_CAP": "3",
           "MCP_HOOKS_LOG": str(tmp_path / "env.jsonl"), "MCP_HOOKS_TOKEN": "t0k",
           "MCP_HOOKS_TRUST_PROJECT_HOOKS": "0", "MCP_HOOKS_PROJECT_DIR": str(tmp_path)}
    from_env = Settings.from_env(env)
    assert (from_env.on_fault, from_env.stop_block_cap, from_env.log) == (
        "warn", 3, tmp_path / "env.jsonl")
    assert from_env.project_dir == tmp_path.resolve() and "t0k" in from_env.secrets
    flagged = Settings.from_env(env, on_fault="block", stop_block_cap=0, no_log=True,
                                trust_project_hooks=True)
    assert (flagged.on_fault, flagged.stop_block_cap, flagged.log) == ("block", 0, None)
    assert flagged.trust_project_hooks and flagged.log_read == tmp_path / "env.jsonl"
    bare = Settings.from_env({})
    assert (bare.on_fault, bare.stop_block_cap, bare.state) == ("block",
                                                                DEFAULT_STOP_BLOCK_CAP, "file:")
    assert bare.log is not None and bare.log.name == "events.jsonl"
    assert Settings.from_env({"MCP_HOOKS_LOG": "off"}).log is None


@pytest.mark.parametrize(("given", "named"), [
    ({"environ": {"MCP_HOOKS_ON_FAULT": "wran"}}, "MCP_HOOKS_ON_FAULT='wran'"),
    ({"on_fault": "wran"}, "--on-fault='wran'"),
    ({"environ": {"MCP_HOOKS_STOP_BLOCK_CAP": "lots"}}, "MCP_HOOKS_STOP_BLOCK_CAP='lots'"),
    ({"stop_block_cap": -1}, "--stop-block-cap=-1"),
    ({"environ": {"MCP_HOOKS_TRUST_PROJECT_HOOKS": "maybe"}}, "MCP_HOOKS_TRUST_PROJECT_HOOKS"),
    ({"environ": {"MCP_HOOKS_SERVE_STDIO": "sdkk"}}, "MCP_HOOKS_SERVE_STDIO='sdkk'"),
    ({"environ": {"MCP_HOOKS_STATE": "mongodb://localhost"}}, "MCP_HOOKS_STATE: a 'mongodb'"),
    ({"state": "redis:localhost"}, "--state: not a store URL"),
    ({"colour": "red"}, "unknown setting(s) colour"),
])
def test_a_bad_value_names_its_variable_or_flag(given: dict[str, object], named: str) -> None:
    flags = dict(given)
    environ = flags.pop("environ", {})
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(environ, **flags)  # type: ignore[arg-type]
    assert named in str(caught.value)
    assert re.search(r"use |give |supported|known:", str(caught.value)), "the fix is said"


def test_an_invalid_forward_deadline_is_the_default_as_the_forward_protocol_says() -> None:
    # FORWARD-V2: the forwarder says the bad value on stderr (test_forward_impostor) and waits
    # the default; the standalone forward script and the Java client do the same
    assert Settings.from_env({"MCP_HOOKS_FORWARD_TIMEOUT": "-5"}).forward_timeout == 5.0
    assert Settings.from_env({"MCP_HOOKS_FORWARD_TIMEOUT": "0.5"}).forward_timeout == 0.5


def test_settings_built_directly_are_checked_too() -> None:
    with pytest.raises(ConfigError, match="state: a 'ftp' URL") as caught:
        Settings(state="ftp://admin:hunter2@x")
    assert "hunter2" not in str(caught.value), "a store URL's password is never echoed"
    shared = Settings(state=" redis://:hunter2@127.0.0.1:6379/0 ")
    assert shared.state == "redis://:hunter2@127.0.0.1:6379/0" and "hunter2" not in repr(shared)
    with pytest.raises(ConfigError, match="on_fault='allow'"):
        Settings(on_fault="allow")  # type: ignore[arg-type]
    assert Settings(token="s3cret").secrets == ("s3cret",)
    assert "s3cret" not in repr(Settings(token="s3cret", secrets=("hdr",)))


def test_every_variable_and_flag_is_in_the_docs_table() -> None:
    table = DOCS.read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `") for line in table.splitlines()
            if line.startswith("| `MCP_HOOKS_")}
    assert rows == set(VARIABLES), "docs/settings.md: one row per settings.VARIABLES entry"
    for variable in VARIABLES.values():
        row = next(line for line in table.splitlines() if f"`{variable.name}`" in line)
        if variable.flag:
            assert variable.flag.split()[0] in row, variable.name
    fields = {f for f in Settings.__dataclass_fields__}
    for field in fields:
        assert f"`{field}`" in table, f"docs/settings.md does not say what Settings.{field} is"


def test_hooks_takes_the_record_or_its_keywords_not_both(user_dir: Path) -> None:
    with Hooks(settings=Settings(user_dir=user_dir, stop_block_cap=2)) as hooks:
        assert hooks.settings.stop_block_cap == 2 and hooks.user_dir == user_dir
    with Hooks(user_dir=user_dir, on_fault="warn") as hooks:
        assert hooks.settings.on_fault == "warn" and hooks.settings.user_dir == user_dir
    with pytest.raises(ConfigError, match="give settings= or on_fault, not both"):
        Hooks(settings=Settings(), on_fault="warn")
    with pytest.raises(ConfigError, match="on_fault='wran'"):
        Hooks(on_fault="wran")  # type: ignore[arg-type]


def test_serve_options_carry_one_record(project: Path, tmp_path: Path) -> None:
    args = build_parser(["serve"]).parse_args([
        "serve", "--project-dir", str(project), "--on-fault", "warn", "--stop-block-cap", "4",
        "--log", str(tmp_path / "e.jsonl"), "--token", "tok"])
    opts = options_from_args(args, environ={"MCP_HOOKS_ON_FAULT": "block"})
    assert opts.settings.on_fault == "warn" and opts.settings.stop_block_cap == 4
    assert opts.settings.secrets == ("tok",) and opts.serve.token == "tok"


# -- serve --on-fault warn, given as a flag, reaches the bridge endpoint's fault replies -------

TOKEN = "settings-on-fault-token"
BROKEN_HOOK = "metadata:\n  persistent: false\nmatcher:\n  tool: Shell\n"


def _bridge(url: str, body: bytes) -> tuple[int, str]:
    """A signed POST to ``/hooks/bridge/claude-code?event=PreToolUse``; the answer's
    signature is checked."""
    target = f"{FORWARD_PATH}claude-code?event=PreToolUse"
    signed = sign_request(TOKEN, target, body)
    request = urllib.request.Request(url + target, data=body, headers={
        "Content-Type": "application/json", **signed.headers})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, headers, content = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        status, headers, content = error.code, dict(error.headers), error.read()
    assert answer_problem(TOKEN, signed, status,
                          {k.lower(): v for k, v in headers.items()}, content) is None
    return status, content.decode()


def _pre_tool_use(project: Path) -> str:
    """Claude Code's PreToolUse of ``ls`` in ``project``, as a bridge reads it."""
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "session_id": "s1",
                       "cwd": str(project)})


def _denied(status: int, text: str) -> bool:
    return status == 422 or '"deny"' in text


@pytest.mark.parametrize("flag", [(), ("--on-fault", "warn")], ids=["default", "flag-warn"])
def test_serve_on_fault_flag_reaches_the_bridge_endpoint(flag: tuple[str, ...], project: Path,
                                                         project_hooks: Path, user_dir: Path,
                                                         tmp_path: Path) -> None:
    """A hook that cannot start, and a payload that is not JSON: both faults of ours, one
    answered by the engine, one by the endpoint itself. ``--on-fault warn`` on the command
    line (MCP_HOOKS_ON_FAULT unset, as conftest leaves it) lets both through with the warning;
    without it, both are denies."""
    assert "MCP_HOOKS_ON_FAULT" not in os.environ
    hook = write_hook(project_hooks, "cannot-start", entry="scripts/missing.sh",
                      extra=BROKEN_HOOK)
    (hook / "scripts" / "missing.sh").unlink()  # in scope, and it cannot start
    payload = _pre_tool_use(project).encode()
    with served(project, user_dir, tmp_path / "events.jsonl", "--token", TOKEN, *flag) as url:
        hook_fault = _bridge(url, payload)
        unreadable = _bridge(url, b"{not json")
    for status, text in (hook_fault, unreadable):
        if flag:
            assert status == 200 and not _denied(status, text), text
        else:
            assert _denied(status, text), text
    assert "missing.sh" in hook_fault[1] or "cannot-start" in hook_fault[1], hook_fault


def test_a_bad_variable_under_a_host_bridge_is_a_deny_naming_it(project: Path,
                                                                 user_dir: Path) -> None:
    """The bridge answers a host: a typo in its settings must not crash it or let the call
    through; the deny names the variable and the fix."""
    payload = _pre_tool_use(project)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_hooks.cli", "bridge", "claude-code", "--event",
         "PreToolUse", "--user-dir", str(user_dir), "--no-log"],
        input=payload, capture_output=True, text=True, cwd=project, timeout=120,
        env={**os.environ, "PYTHONPATH": str(PACKAGE.parent), "MCP_HOOKS_ON_FAULT": "wran"})
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", done.stdout
    assert "MCP_HOOKS_ON_FAULT='wran'" in answer["permissionDecisionReason"]


NO_PRODUCTION = """
from mcp_hooks.spec.signals import Signal

class NoProduction:
    def __init__(self, config):
        pass
    def evaluate(self, context):
        return Signal.block("not in production")
"""


def _no_production_project(tmp_path: Path) -> Path:
    """A project whose hooks.yaml blocks every tool call where the environment is production."""
    project = tmp_path / "project"
    (project / ".ahp").mkdir(parents=True)
    (project / ".ahp" / "oracles.py").write_text(NO_PRODUCTION)
    (project / ".ahp" / "hooks.yaml").write_text(
        "hooks:\n  pre-tool-use:\n    - oracle: 'oracles.py:NoProduction'\n"
        "      when: {environment: production}\n")
    return project


@pytest.mark.parametrize(("environment", "code"), [("production", 2), ("", 0)])
def test_the_deployment_environment_reaches_hooks_yaml_through_settings(
        environment: str, code: int, tmp_path: Path) -> None:
    """``MCP_HOOKS_ENVIRONMENT``, read once into the door's Settings, is what a hooks.yaml
    ``when.environment`` tests (the engine passes it down; the context reads no variable)."""
    project = _no_production_project(tmp_path)
    done = subprocess.run(
        ["mcp-hooks", "fire", "pre-tool-use", "--tool", "Shell", "--input", '{"command": "ls"}',
         "--project-dir", str(project), "--user-dir", str(tmp_path / "user"), "--no-log"],
        env={**os.environ, "MCP_HOOKS_ENVIRONMENT": environment}, capture_output=True,
        text=True, timeout=120)
    assert done.returncode == code, done.stdout + done.stderr
    assert ("not in production" in done.stdout) is (code == 2)


LIBRARY_FIRE = """
import sys
from mcp_hooks import Hooks
hooks = Hooks(sys.argv[1], user_dir=sys.argv[2], trust_project_hooks=True)
outcome = hooks.fire("before_tool", tool_name="Shell", tool_input={"command": "ls"})
print("denied" if outcome.denied else "allowed", outcome.reason)
"""


@pytest.mark.parametrize(("environment", "said"), [("production", "denied"), ("", "allowed")])
def test_a_library_caller_s_keywords_honour_the_deployment_environment(
        environment: str, said: str, tmp_path: Path) -> None:
    """``MCP_HOOKS_ENVIRONMENT`` holds for the whole process: ``Hooks(...)`` built with
    keywords (no ``Settings.from_env()``) still runs a ``when.environment: production``
    guard in production (``settings.process_values``)."""
    project = _no_production_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", LIBRARY_FIRE, str(project), str(tmp_path / "user")],
        env={**os.environ, "MCP_HOOKS_ENVIRONMENT": environment}, capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == said, done.stdout + done.stderr
