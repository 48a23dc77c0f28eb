"""The package is the whole product: issue 11's "Done when", offline.

The sdist is built from a copy of this checkout, and the wheel from that sdist (``python -m
build --no-isolation``: no network). Both are listed: the bundled hook library (the
checkout's ``hooks/``) is in each, at ``hooks/`` in the sdist and at ``mcp_hooks/library/``
in the wheel (where ``mcp_hooks.registry.bundle`` finds it once installed), file modes kept and no
byte-code; the sdist also carries the tests (with fixtures), docs, examples, bench and
Makefile. Then a fresh venv gets ONLY the built wheel (``pip install --no-deps
--no-index``); its dependencies are made importable by a ``.pth`` naming this venv's
site-packages (whose own ``.pth`` files, the editable install's included, are not processed
there, so the checkout cannot leak in: checked). In a home folder of its own, that venv's
``mcp-hooks init --host claude-code --scope user`` must write a Claude Code command that
denies a real ``PreToolUse`` payload for ``Bash`` ``rm -rf /`` with the bundled guard, and
lets ``ls`` through. And the Quick start's ``pip install .``, from a copy of the checkout
into another fresh venv, gives an ``mcp-hooks`` that runs and finds the library.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LIBRARY = REPO / "hooks"  # installed as mcp_hooks/library/
SDIST_EXTRAS = ("tests", "docs", "examples", "bench", "java")
JUNK = ("hooks/protect-hooks/scripts/__pycache__/protect_hooks.cpython-311.pyc",
        "hooks/protect-hooks/scripts/.mypy_cache/3.10/cache.db",
        "tests/.ruff_cache/0.6/cache", "tests/fixtures/__pycache__/x.cpython-311.pyc")
_NOT_SOURCE = {".git", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
               ".hypothesis", "node_modules"}
_NOT_SOURCE_TOP = {"build", "dist"}
# this venv's site-packages, read at import (sysconfig reads ~ once, before the home guard)
DEV_SITE = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])


@dataclass(frozen=True)
class Built:
    src: Path
    sdist: Path
    wheel: Path


def _ignore(folder: str, names: list[str]) -> set[str]:
    top = Path(folder) == REPO
    return {n for n in names if n in _NOT_SOURCE or n.endswith((".egg-info", ".pyc"))
            or (top and n in _NOT_SOURCE_TOP)
            or (n == "target" and REPO / "java" in (Path(folder), Path(folder).parent))  # mvn
            or (Path(folder) == REPO / "bench" and n == "out")}


def _copy(source: str, dest: str) -> None:
    """``shutil.copy2``, but a file removed meanwhile (a move under way in a shared
    checkout) is not an error: it is not in the copy."""
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(source, dest)


def _offline_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "MCP_HOOKS_"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The sdist and the wheel built from it, from a copy of the checkout (so building
    writes nothing into the checkout, where others may be working)."""
    root = tmp_path_factory.mktemp("package")
    src = root / "src"
    shutil.copytree(REPO, src, ignore=_ignore, symlinks=True, copy_function=_copy)
    for junk in JUNK:  # byte-code and a tool's cache, as a run inside the library leaves
        (src / junk).parent.mkdir(parents=True, exist_ok=True)
        (src / junk).write_bytes(b"\0")
    out = root / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True, text=True, timeout=300, cwd=root, env=_offline_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return Built(src, sdist, wheel)


def _is_junk(name: str) -> bool:
    """Byte-code or a tool's cache: in neither archive."""
    parts = name.split("/")
    return name.endswith(".pyc") or bool(set(parts) & _NOT_SOURCE) or any(
        p.startswith(".") and p.endswith("_cache") for p in parts)


def _library_files(under: str) -> dict[str, int]:
    """Every file of the bundled library, named as if it were in the folder ``under``, with
    its exec bits."""
    found = {}
    for path in sorted(LIBRARY.rglob("*")):
        rel = path.relative_to(LIBRARY).as_posix()
        if path.is_file() and not _is_junk(rel):
            found[f"{under}/{rel}"] = path.stat().st_mode & 0o111
    assert len({p.split("/")[-2] for p in found if p.endswith("/HOOK.md")}) >= 7  # seven hooks
    return found


def test_the_wheel_carries_the_library_with_its_modes(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        modes = {i.filename: (i.external_attr >> 16) & 0o111 for i in wheel.infolist()}
    library = _library_files("mcp_hooks/library")
    assert {name: modes.get(name) for name in library} == library
    assert not [n for n in modes if n.startswith("hooks/")]  # not beside the package
    assert not [n for n in modes if _is_junk(n)]
    assert "mcp_hooks/registry/bundle.py" in modes and "mcp_hooks/py.typed" in modes
    # the dashboard's page, style and script ship as package data (no build step, no CDN)
    assert {f"mcp_hooks/dashboard/static/{name}" for name in (
        "page.html", "dashboard.css", "dashboard.js")} <= set(modes)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in modes), sorted(modes)[-8:]
    assert not [n for n in modes if n.startswith(("tests/", "docs/", "mcp_hooks/tests"))]


def test_the_sdist_carries_the_library_tests_docs_examples_and_bench(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        members = {m.name.split("/", 1)[1]: m.mode & 0o111 for m in sdist.getmembers()
                   if m.isfile() and "/" in m.name}
    library = _library_files("hooks")
    assert {name: members.get(name) for name in library} == library
    for top in ("Makefile", "README.md", "pyproject.toml", "setup.py", "MANIFEST.in", "LICENSE"):
        assert top in members
    for folder in SDIST_EXTRAS:
        expected = {p.relative_to(built.src).as_posix() for p in (built.src / folder).rglob("*")
                    if p.is_file() and "out" not in p.relative_to(built.src).parts[1:2]
                    and not _is_junk(p.relative_to(built.src).as_posix())}
        assert expected, folder
        assert expected <= set(members), sorted(expected - set(members))[:10]
    assert "tests/conftest.py" in members and "tests/fixtures" in {
        "/".join(n.split("/")[:2]) for n in members}
    assert not [n for n in members if _is_junk(n)]


@pytest.fixture(scope="module")
def venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the built wheel installed; dependencies through a ``.pth``."""
    root = tmp_path_factory.mktemp("fresh")
    target = _fresh_venv(root)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(target / "bin" / "python"), "install",
         "--no-deps", "--no-index", "--quiet", str(built.wheel)],
        capture_output=True, text=True, timeout=180, cwd=root, env=_offline_env())
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def _fresh_venv(root: Path) -> Path:
    """A venv without pip whose Python also sees this venv's site-packages (the
    dependencies, and setuptools for a build without isolation) through a ``.pth``."""
    target = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True,
                   timeout=120, capture_output=True)
    python = target / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(site, "_dev_dependencies.pth").write_text("".join(f"{p}\n" for p in DEV_SITE))
    return target


def test_pip_install_from_a_checkout(tmp_path: Path) -> None:
    """The Quick start's first line, ``pip install .`` in a checkout (a copy of this one),
    into a fresh venv, offline: its ``mcp-hooks`` runs and finds the bundled library."""
    src = tmp_path / "mcp-hooks"
    shutil.copytree(REPO, src, ignore=_ignore, symlinks=True, copy_function=_copy)
    venv = _fresh_venv(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--no-build-isolation", "--no-index", "--quiet", "."],
        capture_output=True, text=True, timeout=300, cwd=src, env=_offline_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    env = _home_env(venv, tmp_path / "home")
    version = subprocess.run([str(venv / "bin" / "mcp-hooks"), "--version"], capture_output=True,
                             text=True, timeout=60, cwd=tmp_path, env=env)
    assert version.returncode == 0, version.stderr
    from mcp_hooks import __version__

    assert __version__ in version.stdout
    listed = subprocess.run([str(venv / "bin" / "mcp-hooks"), "add", "--list", "--json"],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    paths = [Path(h["path"]) for h in json.loads(listed.stdout)]
    assert len(paths) >= 7 and all(p.is_relative_to(venv) for p in paths), paths


def _home_env(venv: Path, home: Path) -> dict[str, str]:
    """A user's shell: a home folder of its own (XDG defaults under it), the venv on PATH,
    and a temp dir that is not the venv's parent (``install`` refuses throwaway venvs)."""
    systmp = home.parent / "systmp"
    systmp.mkdir(exist_ok=True)
    env = {k: v for k, v in _offline_env().items() if not k.startswith("XDG_")}
    for var in ("CLAUDE_CONFIG_DIR", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(var, None)
    env.update(HOME=str(home), TMPDIR=str(systmp),
               PATH=f"{venv / 'bin'}{os.pathsep}{os.defpath}")
    return env


def test_the_wheel_alone_is_what_runs(venv: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import mcp_hooks, mcp_hooks.registry.bundle as b, mcp; print(mcp_hooks.__file__); "
         "print(b.LIBRARY_DIR)"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env=_home_env(venv, tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    module, library = (Path(line) for line in done.stdout.split())
    assert module.is_relative_to(venv) and library.is_relative_to(venv)
    assert not module.is_relative_to(REPO)


def test_add_list_from_the_wheel_lists_every_bundled_hook(venv: Path, tmp_path: Path) -> None:
    done = subprocess.run([str(venv / "bin" / "mcp-hooks"), "add", "--list", "--json"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=_home_env(venv, tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    folders = sorted(p.name for p in LIBRARY.iterdir() if (p / "HOOK.md").is_file())
    assert [h["name"] for h in listed] == folders
    assert all(Path(h["path"]).is_relative_to(venv) for h in listed)


def _pre_tool_use(command: str, work: Path, home: Path) -> str:
    """A Claude Code ``PreToolUse`` payload for its ``Bash`` tool, as Claude Code sends it."""
    return json.dumps({
        "session_id": "9b0c5e1e-5d7e-4d3f-9a51-0c2f3f6f1a11",
        "transcript_path": str(home / ".claude" / "projects" / "work" / "9b0c5e1e.jsonl"),
        "cwd": str(work),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run a shell command"},
        "tool_use_id": "toolu_01ABCDEFGHJKMNPQRSTUVWXYZ",
    })


def test_done_when_init_then_claude_code_denies_rm_rf_root(venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = _home_env(venv, home)
    done = subprocess.run(
        [str(venv / "bin" / "mcp-hooks"), "init", "--host", "claude-code", "--scope", "user"],
        capture_output=True, text=True, timeout=120, cwd=work, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (home / ".config" / "agents" / "hooks" / "block-dangerous-commands").is_dir()

    settings = json.loads((home / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["PreToolUse"]
    [handler] = group["hooks"]
    argv = shlex.split(handler["command"])
    assert Path(argv[0]).is_relative_to(venv)  # the wheel's own command, stable

    def answer(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, input=_pre_tool_use(command, work, home),
                              capture_output=True, text=True, timeout=60, cwd=work, env=env)

    denied = answer("rm -rf /")
    assert denied.returncode == 0, denied.stderr
    specific = json.loads(denied.stdout)["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"]
    log = home / ".local" / "state" / "mcp-hooks" / "events.jsonl"
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["decision"] == "deny" and last["blocked_by"] == "block-dangerous-commands"

    allowed = answer("ls -la")
    assert allowed.returncode == 0, allowed.stderr
    out = json.loads(allowed.stdout) if allowed.stdout.strip() else {}
    assert out.get("hookSpecificOutput", {}).get("permissionDecision") != "deny"
