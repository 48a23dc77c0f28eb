"""Install, configure and run the real agent hosts for the end-to-end tests.

Each host is a pinned release from its registry (npm; kimi-cli from PyPI), installed once
into the test suite's cache folder outside the repository and reused by later runs
(``tests/helpers/shared_cache.py``):

    $MCP_HOOKS_TEST_CACHE (default $XDG_CACHE_HOME/mcp-hooks-test, ~/.cache/mcp-hooks-test)
        hosts/<host>-<version>/     npm --prefix folder (or a venv for kimi-cli)
        npm/                        npm's download cache
        pip/                        pip's download cache

An install goes to a temporary sibling folder, is checked by running ``<bin> --version``
and only then renamed into place, under a lock, so an interrupted or concurrent install
never leaves a broken host at the final path (``shared_cache.ensure``).

Every host run gets a fresh HOME (and CODEX_HOME, KIMI_SHARE_DIR, XDG dirs inside it), a
minimal environment built from scratch (nothing of the caller's environment leaks in but
PATH), stdin from /dev/null and a timeout. How each host is driven offline is recorded in
``shared/hosts/host-e2e.md``; the short version is in the ``Host`` subclasses below.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

try:
    from tests.helpers.shared_cache import cache_root, ensure
except ModuleNotFoundError:  # run as a script: python tests/e2e/hosts.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.helpers.shared_cache import cache_root, ensure

RUN_TIMEOUT = 120.0  # seconds per host run; a hung host fails the test, not CI
INSTALL_TIMEOUT = 900.0
# what an installer may take from the caller's environment (registry, proxy, CA settings);
# npm's global config (CA file, registry) lives outside HOME and applies as well
INSTALL_ENV = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_CERT",
    "PIP_DEFAULT_TIMEOUT",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "npm_config_registry",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
)


class HostUnavailable(Exception):
    """A host cannot be installed on this machine (the message says why)."""


@dataclass
class InstallInfo:
    """Where a host is installed and what the install cost."""

    host: str
    version: str
    prefix: Path
    binary: Path
    installed_now: bool
    seconds: float
    size_bytes: int = 0


@dataclass
class RunResult:
    """One host run."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    def describe(self) -> str:
        """A short text for assertion messages: exit code, time, output tails."""
        return (
            f"argv={self.argv!r}\nexit={self.returncode} timed_out={self.timed_out} "
            f"seconds={self.seconds:.2f}\n--- stdout (tail) ---\n{self.stdout[-3000:]}\n"
            f"--- stderr (tail) ---\n{self.stderr[-3000:]}"
        )


@dataclass
class Sandbox:
    """The folders of one host run: a project, a HOME and a scratch folder."""

    root: Path
    project: Path = field(init=False)
    home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.project = self.root / "project"
        self.home = self.root / "home"
        self.project.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)

    @property
    def user_hooks(self) -> Path:
        """The user-level HOOK.md folder mcp-hooks reads under this HOME."""
        return self.home / ".config" / "agents" / "hooks"

    @property
    def project_hooks(self) -> Path:
        """The project-level HOOK.md folder."""
        return self.project / ".agents" / "hooks"


def _dir_size(path: Path) -> int:
    total = 0
    seen: set[tuple[int, int]] = set()
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            total += st.st_size
    return total


def base_env(home: Path, extra_path: list[str] | None = None) -> dict[str, str]:
    """A minimal environment for a host process whose HOME is ``home``.

    Only PATH is taken from the caller (plus the given folders in front of it); every
    per-user location points inside ``home``.
    """
    path_parts = [*(extra_path or []), os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")]
    env = {
        "PATH": os.pathsep.join(p for p in path_parts if p),
        "HOME": str(home),
        "USER": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "true",
        "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return env


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = RUN_TIMEOUT,
) -> RunResult:
    """Run ``argv`` with stdin from /dev/null and a timeout that kills its process group."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    # Read both pipes in threads and wait for the host itself: a child it leaves behind
    # holding the pipes (an MCP server, a detached hook) must not stall the run.
    chunks: dict[str, list[str]] = {"out": [], "err": []}

    def drain(name: str, stream: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            chunks[name].append(stream.read())

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for t in readers:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    # the host's whole session goes: a hung host, or anything it left behind
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    proc.wait()
    for t in readers:
        t.join(timeout=10)
    if not any(t.is_alive() for t in readers):  # else a straggler in another session holds
        for stream in (proc.stdout, proc.stderr):  # the pipe: leave it to the daemon thread
            if stream is not None:
                stream.close()
    out, err = "".join(chunks["out"]), "".join(chunks["err"])
    return RunResult(
        argv=list(argv),
        returncode=None if timed_out else proc.returncode,
        stdout=out,
        stderr=err,
        seconds=time.perf_counter() - start,
        timed_out=timed_out,
    )


class Host:
    """One agent host: how to install it, configure it and run one prompt offline."""

    name: ClassVar[str]
    version: ClassVar[str]
    package: ClassVar[str]
    bin_name: ClassVar[str]
    #: the name of the shell tool as the host's hooks see it (for native hook configs)
    native_shell_tool: ClassVar[str]

    def __init__(self, info: InstallInfo) -> None:
        self.info = info

    # --- install ------------------------------------------------------------------

    @classmethod
    def prefix(cls) -> Path:
        """The cache folder this host version installs into."""
        return cache_root() / "hosts" / f"{cls.name}-{cls.version}"

    @classmethod
    def find_binary(cls, prefix: Path) -> Path:
        """The executable inside an install prefix."""
        return prefix / "node_modules" / ".bin" / cls.bin_name

    @classmethod
    def check_tools(cls) -> None:
        """Raise HostUnavailable when the tools to install this host are missing."""
        for tool in ("node", "npm"):
            if shutil.which(tool) is None:
                raise HostUnavailable(f"`{tool}` is not on PATH; {cls.name} installs from npm")

    @classmethod
    def install_into(cls, tmp: Path, env: dict[str, str]) -> None:
        """Install the pinned package into the fresh folder ``tmp``."""
        npm_cache = cache_root() / "npm"
        argv = [
            "npm",
            "install",
            "--prefix",
            str(tmp),
            "--cache",
            str(npm_cache),
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
            "--prefer-offline",
            "--loglevel",
            "error",
            f"{cls.package}@{cls.version}",
        ]
        res = run_process(argv, cwd=tmp, env=env, timeout=INSTALL_TIMEOUT)
        if res.returncode != 0 and "ETARGET" in res.stderr:
            # --prefer-offline trusts a cached package list that predates a dependency's
            # release ("No matching version found"): ask the registry once more
            argv.remove("--prefer-offline")
            res = run_process(argv, cwd=tmp, env=env, timeout=INSTALL_TIMEOUT)
        if res.returncode != 0:
            raise RuntimeError(
                f"npm install of {cls.package}@{cls.version} failed:\n{res.describe()}"
            )

    @classmethod
    def version_argv(cls, binary: Path) -> list[str]:
        """The command that prints the host's version."""
        return [str(binary), "--version"]

    #: whether the install still runs once renamed (a venv names itself in its scripts)
    relocatable: ClassVar[bool] = True

    @classmethod
    def ensure_installed(cls) -> InstallInfo:
        """Install the pinned host into the cache unless a complete install is there."""
        cls.check_tools()
        start = time.perf_counter()
        prefix, now = ensure(
            f"hosts/{cls.name}-{cls.version}", cls._install_checked, relocatable=cls.relocatable
        )
        return cls._info(prefix, installed_now=now, seconds=time.perf_counter() - start)

    @classmethod
    def _install_checked(cls, tmp: Path) -> None:
        """Install into the fresh folder ``tmp`` and check that ``<bin> --version`` runs
        (``shared_cache.ensure`` then marks it complete and renames it into place)."""
        home = tmp.with_name(tmp.name + ".home")  # a .partial-* sibling: removed if left
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        try:
            env = base_env(home)
            env["npm_config_cache"] = str(cache_root() / "npm")
            env["npm_config_logs_dir"] = str(cache_root() / "npm" / "_logs")
            env.update({key: os.environ[key] for key in INSTALL_ENV if key in os.environ})
            cls.install_into(tmp, env)
            res = run_process(cls.version_argv(cls.find_binary(tmp)), cwd=tmp,
                              env=cls.version_env(env, home), timeout=120)
            if res.returncode != 0 or cls.version not in res.stdout + res.stderr:
                raise RuntimeError(f"{cls.name} installed but does not run:\n{res.describe()}")
        finally:
            shutil.rmtree(home, ignore_errors=True)

    @classmethod
    def version_env(cls, env: dict[str, str], home: Path) -> dict[str, str]:
        """The environment of the ``--version`` check after an install."""
        return env

    @classmethod
    def _info(cls, prefix: Path, *, installed_now: bool, seconds: float) -> InstallInfo:
        return InstallInfo(
            host=cls.name,
            version=cls.version,
            prefix=prefix,
            binary=cls.find_binary(prefix),
            installed_now=installed_now,
            seconds=seconds,
            size_bytes=_dir_size(prefix) if installed_now else 0,
        )

    # --- one run --------------------------------------------------------------------

    def configure(self, box: Sandbox, base_url: str) -> None:
        """Write the host's user config (model provider, auth, trust) into ``box``."""

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        """The environment of a host run against the fake at ``base_url``."""
        return base_env(box.home, extra_path)

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        """The command line of one non-interactive run.

        ``pre_approved`` grants the shell tool up front (the host's own permission flag);
        without it, a host that asks before running commands cannot ask in a headless run
        and refuses the command unless something else (a hook) approves it.
        """
        raise NotImplementedError

    def run(
        self,
        box: Sandbox,
        base_url: str,
        *,
        prompt: str = "Do the task.",
        extra_path: list[str] | None = None,
        timeout: float = RUN_TIMEOUT,
        pre_approved: bool = True,
    ) -> RunResult:
        """Run the host once in ``box.project`` against the fake model at ``base_url``."""
        env = self.env(box, base_url, extra_path or [])
        argv = self.argv(prompt, pre_approved)
        return run_process(argv, cwd=box.project, env=env, timeout=timeout)

    # --- hand-written native hooks (harness check, no mcp-hooks involved) -----------

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        """Configure the host's own hooks: ``pre_script`` before its shell tool, ``stop_script``
        at stop."""
        raise NotImplementedError


def _claude_shaped(matcher: str, pre: Path, stop: Path, stop_event: str = "Stop") -> dict[str, Any]:
    return {
        "hooks": {
            "PreToolUse": [
                {"matcher": matcher, "hooks": [{"type": "command", "command": str(pre)}]}
            ],
            stop_event: [{"hooks": [{"type": "command", "command": str(stop)}]}],
        }
    }


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


class ClaudeCode(Host):
    """Claude Code: Anthropic Messages at ``ANTHROPIC_BASE_URL``; ``-p`` with
    ``--allowedTools Bash`` (bypass flags are refused as root)."""

    name = "claude-code"
    version = "2.1.197"
    package = "@anthropic-ai/claude-code"
    bin_name = "claude"
    native_shell_tool = "Bash"

    @classmethod
    def find_binary(cls, prefix: Path) -> Path:
        # The postinstall links the native binary to bin/claude.exe (the `claude` bin);
        # when install scripts were skipped, the platform package's binary works the same.
        exe = prefix / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
        if exe.is_file() and exe.stat().st_size > 1_000_000:
            return prefix / "node_modules" / ".bin" / "claude"
        scope = prefix / "node_modules" / "@anthropic-ai"
        for candidate in sorted(scope.glob("claude-code-linux-*/claude")):
            return candidate
        return prefix / "node_modules" / ".bin" / "claude"

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env.update(
            ANTHROPIC_BASE_URL=base_url,
            ANTHROPIC_API_KEY="sk-fake",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
        )
        return env

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        argv = [str(self.info.binary), "-p", prompt, "--output-format", "json"]
        return [*argv, "--allowedTools", "Bash"] if pre_approved else argv

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        _write_json(
            box.project / ".claude" / "settings.json",
            _claude_shaped("Bash", pre_script, stop_script),
        )


class Codex(Host):
    """Codex CLI: OpenAI Responses from a custom provider in ``$CODEX_HOME/config.toml``;
    ``exec --dangerously-bypass-hook-trust`` and a trusted project."""

    name = "codex"
    version = "0.169.0"
    package = "@openai/codex"
    bin_name = "codex"
    native_shell_tool = "Bash"

    @staticmethod
    def codex_home(box: Sandbox) -> Path:
        """``CODEX_HOME`` of a run: ``<home>/.codex``."""
        return box.home / ".codex"

    def configure(self, box: Sandbox, base_url: str) -> None:
        home = self.codex_home(box)
        home.mkdir(parents=True, exist_ok=True)
        project = str(box.project).replace("\\", "\\\\").replace('"', '\\"')
        (home / "config.toml").write_text(
            'model = "fake-model"\n'
            'model_provider = "fake"\n'
            "\n"
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{base_url}/v1"\n'
            'env_key = "FAKE_API_KEY"\n'
            'wire_api = "responses"\n'
            "\n"
            f'[projects."{project}"]\n'
            'trust_level = "trusted"\n'
        )

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env.update(CODEX_HOME=str(self.codex_home(box)), FAKE_API_KEY="sk-fake")
        return env

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        # `codex exec` never asks for approval (its policy is fixed to "never"); the
        # workspace-write sandbox is what limits commands, so pre_approved changes nothing.
        return [
            str(self.info.binary),
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            "-s",
            "workspace-write",
            prompt,
        ]

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        _write_json(
            self.codex_home(box) / "hooks.json", _claude_shaped("Bash", pre_script, stop_script)
        )


class GeminiCli(Host):
    """Gemini CLI: Gemini API at ``GOOGLE_GEMINI_BASE_URL``; API-key auth selected in the
    user settings, a trusted workspace, and a pinned model (no router call)."""

    name = "gemini-cli"
    version = "0.61.0"
    package = "@google/gemini-cli"
    bin_name = "gemini"
    native_shell_tool = "run_shell_command"
    model = "gemini-2.5-flash"

    def configure(self, box: Sandbox, base_url: str) -> None:
        _write_json(
            box.home / ".gemini" / "settings.json",
            {"security": {"auth": {"selectedType": "gemini-api-key"}}},
        )

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env.update(
            GEMINI_API_KEY="fake",
            GOOGLE_GEMINI_BASE_URL=base_url,
            GEMINI_CLI_TRUST_WORKSPACE="true",
        )
        return env

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        argv = [str(self.info.binary), "-p", prompt, "-m", self.model, "--output-format", "json"]
        return [*argv, "--yolo"] if pre_approved else argv

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        cfg = {
            "hooks": {
                "BeforeTool": [
                    {
                        "matcher": "run_shell_command",
                        "hooks": [{"name": "pre", "type": "command", "command": str(pre_script)}],
                    }
                ],
                "AfterAgent": [
                    {"hooks": [{"name": "stop", "type": "command", "command": str(stop_script)}]}
                ],
            }
        }
        _write_json(box.project / ".gemini" / "settings.json", cfg)


def find_python313() -> Path | None:
    """A CPython >= 3.13 interpreter for kimi-cli (3.12.1 crashes it), or None."""
    candidates: list[str] = []
    if os.environ.get("MCP_HOOKS_E2E_PYTHON313"):
        candidates.append(os.environ["MCP_HOOKS_E2E_PYTHON313"])
    for name in ("python3.13", "python3.14"):
        found = shutil.which(name)
        if found:
            candidates.append(found)
    # the account's home from the password database: tests point HOME elsewhere
    pyenv_root = Path(
        os.environ.get("PYENV_ROOT") or Path(pwd.getpwuid(os.getuid()).pw_dir) / ".pyenv"
    )
    candidates += sorted(str(p) for p in pyenv_root.glob("versions/3.1[3-9]*/bin/python3"))
    candidates += ["/usr/bin/python3.13", "/usr/local/bin/python3.13"]
    for cand in candidates:
        if not os.path.exists(cand):
            continue
        try:
            out = subprocess.run(
                [cand, "-c", "import sys; print(sys.version_info >= (3, 13))"],
                capture_output=True,
                text=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == "True":
            return Path(cand)
    return None


class KimiCli(Host):
    """kimi-cli 1.51.0 from PyPI (1.52.0 is an archive tombstone; never run ``kimi`` bare):
    Chat Completions from a provider in ``$KIMI_SHARE_DIR/config.toml``; hooks live only
    in that user config."""

    name = "kimi-cli"
    version = "1.51.0"
    package = "kimi-cli"
    bin_name = "kimi"
    native_shell_tool = "Shell"
    relocatable = False  # a venv: its scripts are rewritten to the final path before the rename

    @classmethod
    def find_binary(cls, prefix: Path) -> Path:
        return prefix / "bin" / "kimi"

    @classmethod
    def check_tools(cls) -> None:
        if find_python313() is None:
            raise HostUnavailable(
                "kimi-cli 1.51.0 needs CPython >= 3.13 (3.12.1 crashes it) and none was found; "
                "set MCP_HOOKS_E2E_PYTHON313 to one"
            )

    @classmethod
    def install_into(cls, tmp: Path, env: dict[str, str]) -> None:
        python = find_python313()
        assert python is not None
        res = run_process([str(python), "-m", "venv", str(tmp)], cwd=tmp, env=env, timeout=300)
        if res.returncode != 0:
            raise RuntimeError(f"venv for kimi-cli failed:\n{res.describe()}")
        argv = [
            str(tmp / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--cache-dir",
            str(cache_root() / "pip"),
            f"{cls.package}=={cls.version}",
        ]
        res = run_process(argv, cwd=tmp, env=env, timeout=INSTALL_TIMEOUT)
        if res.returncode != 0:
            raise RuntimeError(f"pip install of kimi-cli=={cls.version} failed:\n{res.describe()}")

    @classmethod
    def version_env(cls, env: dict[str, str], home: Path) -> dict[str, str]:
        return {**env, "KIMI_SHARE_DIR": str(home / "kimi")}

    @staticmethod
    def share_dir(box: Sandbox) -> Path:
        """``KIMI_SHARE_DIR`` of a run: ``<home>/.kimi``."""
        return box.home / ".kimi"

    def configure(self, box: Sandbox, base_url: str) -> None:
        share = self.share_dir(box)
        share.mkdir(parents=True, exist_ok=True)
        (share / "config.toml").write_text(
            'default_model = "fake"\n'
            "telemetry = false\n"
            "\n"
            "[providers.fake]\n"
            'type = "openai_legacy"\n'
            f'base_url = "{base_url}/v1"\n'
            'api_key = "sk-fake"\n'
            "\n"
            "[models.fake]\n"
            'provider = "fake"\n'
            'model = "fake-model"\n'
            "max_context_size = 128000\n"
        )

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env["KIMI_SHARE_DIR"] = str(self.share_dir(box))
        return env

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        # print mode approves every tool call itself
        return [str(self.info.binary), "--print", "-p", prompt]

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        cfg = self.share_dir(box) / "config.toml"
        with open(cfg, "a") as fh:
            fh.write(
                "\n[[hooks]]\n"
                'event = "PreToolUse"\n'
                'matcher = "Shell"\n'
                f"command = {json.dumps(str(pre_script))}\n"
                "\n[[hooks]]\n"
                'event = "Stop"\n'
                f"command = {json.dumps(str(stop_script))}\n"
            )


class CopilotCli(Host):
    """GitHub Copilot CLI: OpenAI Chat Completions through its bring-your-own-key variables
    (``COPILOT_OFFLINE=true``, ``COPILOT_PROVIDER_BASE_URL``, ...), no GitHub login;
    ``-p`` with ``--allow-all-tools``. User hooks (``~/.copilot/hooks/*.json``) always
    load; repository hooks (``.github/hooks/*.json``) only in a trusted folder, which the
    run grants with ``GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true``."""

    name = "copilot-cli"
    version = "1.0.102"
    package = "@github/copilot"
    bin_name = "copilot"
    native_shell_tool = "bash"
    model = "gpt-4.1"
    #: The native binary unpacks its 235 MB runtime into ``$XDG_CACHE_HOME/copilot/pkg`` on
    #: first start: in a fresh HOME that is every run. It is unpacked once, at install, into
    #: this folder of the prefix, which every run names in ``COPILOT_PKG_CACHE_HOME`` (the
    #: unpacking is Copilot's own rename-into-place, so a copy made later is just as safe).
    pkg_cache = "copilot-pkg-cache"

    @classmethod
    def install_into(cls, tmp: Path, env: dict[str, str]) -> None:
        super().install_into(tmp, env)
        unpack = {**env, "COPILOT_PKG_CACHE_HOME": str(tmp / cls.pkg_cache)}
        res = run_process([str(cls.find_binary(tmp)), "--version"], cwd=tmp, env=unpack)
        if res.returncode != 0:
            raise RuntimeError(f"copilot could not unpack its runtime:\n{res.describe()}")

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env.update(
            COPILOT_PKG_CACHE_HOME=str(self.info.prefix / self.pkg_cache),
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=f"{base_url}/v1",
            COPILOT_PROVIDER_API_KEY="sk-fake",
            COPILOT_MODEL=self.model,
            COPILOT_AUTO_UPDATE="false",
            GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS="true",
        )
        return env

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        argv = [str(self.info.binary), "-p", prompt]
        return [*argv, "--allow-all-tools"] if pre_approved else argv

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        # Copilot CLI 1.0.102 blocks on any non-zero preToolUse exit but drops stderr (the
        # model reads "hook exited with code 2"); the reason travels only in its JSON answer.
        # So the pre-tool entry is a wrapper that turns the script's exit 2 + stderr into
        # {"permissionDecision": "deny", "permissionDecisionReason": <stderr>}.
        wrapper = box.root / "native" / "copilot-pre-tool"
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text(
            f"#!{sys.executable}\n"
            "import json, subprocess, sys\n"
            f"p = subprocess.run([{str(pre_script)!r}], stdin=sys.stdin, capture_output=True,"
            " text=True)\n"
            "if p.returncode == 2:\n"
            "    print(json.dumps({'permissionDecision': 'deny',"
            " 'permissionDecisionReason': p.stderr.strip()}))\n"
            "    sys.exit(0)\n"
            "sys.stdout.write(p.stdout)\n"
            "sys.exit(p.returncode)\n"
        )
        wrapper.chmod(0o755)

        def entry(script: Path) -> dict[str, Any]:
            return {"type": "command", "bash": str(script), "timeoutSec": 30}

        cfg = {
            "version": 1,
            "hooks": {"preToolUse": [entry(wrapper)], "agentStop": [entry(stop_script)]},
        }
        _write_json(box.home / ".copilot" / "hooks" / "native.json", cfg)


class QwenCode(Host):
    """Qwen Code: OpenAI Chat Completions at ``OPENAI_BASE_URL`` (``--auth-type openai``);
    ``-p`` with ``--yolo``. Claude Code's hook format in ``.qwen/settings.json`` (project hooks
    load: folder trust is off by default). It declares node >= 22 and runs on 20."""

    name = "qwen-code"
    version = "0.24.4"
    package = "@qwen-code/qwen-code"
    bin_name = "qwen"
    native_shell_tool = "run_shell_command"
    model = "fake-model"

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env.update(
            OPENAI_BASE_URL=f"{base_url}/v1",
            OPENAI_API_KEY="sk-fake",
            OPENAI_MODEL=self.model,
        )
        return env

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        argv = [str(self.info.binary), "-p", prompt, "--auth-type", "openai", "-m", self.model]
        return [*argv, "--yolo"] if pre_approved else argv

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        _write_json(
            box.project / ".qwen" / "settings.json",
            _claude_shaped("run_shell_command", pre_script, stop_script),
        )


class ClineCli(Host):
    """Cline CLI: an ``openai-compatible`` provider written by ``cline auth`` (a hand-written
    ``providers.json`` is ignored); ``cline --json TASK`` (auto-approve is on by default), the
    session backend kept in-process (``CLINE_SESSION_BACKEND_MODE=local``: otherwise a hub
    daemon is started that can outlive the run). Hooks: one executable per event in
    ``~/.cline/hooks/``. Its shell tool is ``run_commands`` ``{"commands": [...]}``."""

    name = "cline"
    version = "3.0.65"
    package = "cline"
    bin_name = "cline"
    native_shell_tool = "run_commands"

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env["CLINE_SESSION_BACKEND_MODE"] = "local"
        return env

    def configure(self, box: Sandbox, base_url: str) -> None:
        argv = [str(self.info.binary), "auth", "-p", "openai-compatible", "-k", "sk-fake",
                "-m", "fake-model", "-b", f"{base_url}/v1"]
        res = run_process(argv, cwd=box.project, env=self.env(box, base_url, []), timeout=120)
        if res.returncode != 0:
            raise RuntimeError(f"cline auth failed:\n{res.describe()}")

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        return [str(self.info.binary), "--json", prompt]

    @staticmethod
    def hooks_dir(box: Sandbox) -> Path:
        """Where Cline looks for its hook executables: ``~/.cline/hooks``."""
        return box.home / ".cline" / "hooks"

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        # Cline ignores exit codes: a block is {"cancel": true} on stdout, which ends the run
        # without telling the model. The native check blocks with a rewrite to a no-op plus
        # the reason as context (what the model can read), from the script's exit 2 + stderr.
        folder = self.hooks_dir(box)
        folder.mkdir(parents=True, exist_ok=True)
        pre = folder / "PreToolUse"
        pre.write_text(
            f"#!{sys.executable}\n"
            "import json, subprocess, sys\n"
            "data = sys.stdin.read()\n"
            f"p = subprocess.run([{str(pre_script)!r}], input=data, capture_output=True,"
            " text=True)\n"
            "if p.returncode == 2:\n"
            "    print(json.dumps({'overrideInput': {'commands': ['true']},"
            " 'context': p.stderr.strip()}))\n"
            "else:\n"
            "    print('{}')\n"
        )
        pre.chmod(0o755)
        stop = folder / "TaskComplete"
        stop.write_text(f"#!/bin/sh\n{shlex.quote(str(stop_script))}\necho '{{}}'\n")
        stop.chmod(0o755)


class OpenCode(Host):
    """OpenCode: an ``@ai-sdk/openai-compatible`` provider (bundled) in
    ``~/.config/opencode/opencode.json``; ``opencode run --auto``. No hook config: JS plugins
    in ``.opencode/plugins/`` (``tool.execute.before`` refuses a call by throwing). The first
    model request of a run is a tool-less title request."""

    name = "opencode"
    version = "1.18.33"
    package = "opencode-ai"
    bin_name = "opencode"
    native_shell_tool = "bash"

    def configure(self, box: Sandbox, base_url: str) -> None:
        _write_json(
            box.home / ".config" / "opencode" / "opencode.json",
            {
                "$schema": "https://opencode.ai/config.json",
                "model": "fake/fake-model",
                "autoupdate": False,
                "share": "disabled",
                "provider": {
                    "fake": {
                        "npm": "@ai-sdk/openai-compatible",
                        "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-fake"},
                        "models": {"fake-model": {"tool_call": True}},
                    }
                },
            },
        )

    def env(self, box: Sandbox, base_url: str, extra_path: list[str]) -> dict[str, str]:
        env = base_env(box.home, extra_path)
        env.update(
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_SHARE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        )
        return env

    def argv(self, prompt: str, pre_approved: bool = True) -> list[str]:
        argv = [str(self.info.binary), "run", prompt]
        return [*argv, "--auto"] if pre_approved else argv

    def write_native_hooks(self, box: Sandbox, pre_script: Path, stop_script: Path) -> None:
        plugin = box.project / ".opencode" / "plugins" / "native.js"
        plugin.parent.mkdir(parents=True, exist_ok=True)
        plugin.write_text(
            'import { spawnSync } from "node:child_process";\n'
            "export const Native = async () => ({\n"
            '  "tool.execute.before": async (input, output) => {\n'
            "    const payload = JSON.stringify({tool_name: input.tool, "
            "tool_input: output.args});\n"
            f"    const p = spawnSync({json.dumps(str(pre_script))}, [], "
            '{input: payload, encoding: "utf8"});\n'
            "    if (p.status === 2) throw new Error(p.stderr.trim());\n"
            "  },\n"
            "  event: async ({ event }) => {\n"
            '    if (event.type === "session.idle") '
            f"spawnSync({json.dumps(str(stop_script))}, [], "
            '{input: JSON.stringify(event), encoding: "utf8"});\n'
            "  },\n"
            "});\n"
        )


HOSTS: dict[str, type[Host]] = {
    cls.name: cls
    for cls in (ClaudeCode, Codex, GeminiCli, KimiCli, CopilotCli, QwenCode, ClineCli, OpenCode)
}


def main(argv: list[str] | None = None) -> int:
    """``python tests/e2e/hosts.py [HOST...]``: install (or find) hosts and print the cost."""
    names = (argv if argv is not None else sys.argv[1:]) or list(HOSTS)
    for name in names:
        try:
            info = HOSTS[name].ensure_installed()
        except HostUnavailable as exc:
            print(f"{name}: unavailable: {exc}")
            continue
        state = "installed" if info.installed_now else "cached"
        size = f", {info.size_bytes / 1e6:.0f} MB" if info.size_bytes else ""
        print(f"{name} {info.version}: {state} in {info.seconds:.1f} s{size} -> {info.binary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
