"""``mcp-hooks install <host>`` / ``uninstall``: write our entries into a host's hook config.

Each host keeps its hook config in its own file and shape:

==============  ==========================================  ===================================
host            project scope                               user scope
==============  ==========================================  ===================================
claude-code     ``.claude/settings.json``                   ``~/.claude/settings.json``
codex           ``.codex/hooks.json`` (needs trust)         ``$CODEX_HOME/hooks.json`` (~/.codex)
gemini-cli      ``.gemini/settings.json``                   ``~/.gemini/settings.json``
cursor          ``.cursor/hooks.json``                      ``~/.cursor/hooks.json``
copilot-cli     ``.github/hooks/mcp-hooks.json``            ``~/.copilot/hooks/mcp-hooks.json``
kimi-cli        (none: Kimi reads only its user config)     ``$KIMI_SHARE_DIR/config.toml``
==============  ==========================================  ===================================

Rules: every unrelated entry is kept as it was; installing twice changes nothing; the previous
file is copied to ``$XDG_STATE_HOME/mcp-hooks/backups/`` before a change; ``--dry-run`` prints
the diff and writes nothing; ``uninstall`` removes only our entries, recognised by their
shape whatever command starts them (``... bridge <host> --event ...`` or our forward
script), URL (``/hooks/bridge/``) or MCP tool (``bridge_hook``). Kimi's TOML is edited as
text: our ``[[hooks]]`` tables live in one block between two marker comments, appended to
the file and removed as a whole.

The command written must keep working (``bridge_prefix``): never a path inside a throwaway
environment (uv's cache or an ``archive-v0``/``.tmp`` folder, a ``pipx run`` cache, anything
under the temp dir). User scope gets an ``mcp-hooks`` found outside such places (this one or
the one on PATH), else ``<python> -m mcp_hooks.cli`` of a stable interpreter, else
``uvx mcp-hooks==<version>``, else install refuses and says how to install mcp-hooks for
good. Project scope (a file teams commit) gets plain ``mcp-hooks``, found on PATH by the
host. ``--bridge-command`` (or ``MCP_HOOKS_BRIDGE_COMMAND``) overrides both.

``--via`` chooses what the host runs:

- ``command`` (default): ``mcp-hooks bridge <host> --event <Event>``, a new process per
  hook call;
- ``server``: a small Python script (standard library only) that POSTs the payload to a
  running ``mcp-hooks serve --transport http`` (its token read from a 0600 header file) with
  a random nonce, accepts the answer only if it carries the HMAC-SHA256 of nonce and body
  keyed by the token (so only the real server can answer), and otherwise runs the bridge
  locally, so hooks never silently stop and nothing else on the port can say "allow";
- ``http`` (Claude Code): a native ``type: http`` hook to the server, no process at all
  (Claude Code fails open if the server is down);
- ``mcp`` (Claude Code): a native ``type: mcp_tool`` hook calling our server's
  ``bridge_hook`` tool, for events that cannot block only: Claude Code may run tools before
  its MCP servers connect, and an ``mcp_tool`` hook whose server is not connected does not
  run, so a gate there would be open meanwhile. Blocking events are refused with a message
  that says to use ``--via command`` or ``--via server`` for them.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_hooks.events import can_block
from mcp_hooks.hosts import ALIASES, HOSTS, UnknownHostError, get_host, host_name
from mcp_hooks.hosts.base import Host
from mcp_hooks.hosts.forward import NONCE_HEADER, SIGNATURE_HEADER

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 64
HOOK_TIMEOUT_S = 600  # the longest a HOOK.md may run; the engine enforces each hook's own
MCP_TOOL_NAME = "bridge_hook"
FORWARD_SCRIPT = "mcp-hooks-forward.py"
FORWARD_PATH = "/hooks/bridge/"
BRIDGE_COMMAND_ENV = "MCP_HOOKS_BRIDGE_COMMAND"
INSTALL_FOR_GOOD = ("install mcp-hooks for good (`uv tool install mcp-hooks` or `pipx install "
                    "mcp-hooks`) and run install again from it, or pass --bridge-command")
DEFAULT_URL = "http://127.0.0.1:8765"
KIMI_BEGIN = "# >>> mcp-hooks: managed block, written by `mcp-hooks install kimi-cli`"
KIMI_END = "# <<< mcp-hooks"
# Our entries by their shape, whatever starts them: `... bridge <host> --event ...`, our
# forward script (the .sh of earlier versions too), or the older `mcp-hooks bridge` forms.
_OURS = re.compile(
    r"(?:\bbridge\s+['\"]?(?:" + "|".join(re.escape(h) for h in (*HOSTS, *ALIASES))
    + r")['\"]?\s+--event\b"
    r"|mcp[-_]hooks(?:\.exe)?['\"]?\s+bridge\b|-m\s+mcp_hooks(?:\.cli)?\s+bridge\b"
    r"|mcp-hooks-forward\.(?:sh|py)\b)"
)


class InstallError(Exception):
    """A config the installer must not touch (unreadable, wrong shape) or bad options."""


# -- what the host runs -------------------------------------------------------------------


def _home() -> str | None:
    return os.environ.get("HOME") or None


def throwaway_reason(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` lies in an environment that may vanish (None: it does not).

    Throwaway: uv's cache (``$UV_CACHE_DIR``, ``~/.cache/uv``), any ``archive-v0`` or
    ``.tmp*`` folder, a ``pipx run`` cache (``~/.local/pipx/.cache``, ``pipx/.cache``),
    anything under the system temp dir (a venv made there included).
    """
    text = os.path.abspath(os.fspath(path))
    forms = {text, os.path.realpath(text)}
    caches: list[tuple[str, str]] = []
    if os.environ.get("UV_CACHE_DIR"):
        caches.append((os.environ["UV_CACHE_DIR"], "uv's cache ($UV_CACHE_DIR)"))
    xdg_cache = os.environ.get("XDG_CACHE_HOME")
    home = _home()
    if xdg_cache:
        caches.append((os.path.join(xdg_cache, "uv"), "uv's cache"))
        caches.append((os.path.join(xdg_cache, "pipx"), "pipx's cache"))
    if home:
        caches.append((os.path.join(home, ".cache", "uv"), "uv's cache"))
        caches.append((os.path.join(home, ".local", "pipx", ".cache"), "a `pipx run` cache"))
        caches.append((os.path.join(home, ".cache", "pipx"), "pipx's cache"))
    caches.append((tempfile.gettempdir(), "the temp dir"))
    for form in forms:
        parts = Path(form).parts
        for part in parts:
            if part == "archive-v0":
                return f"{form} is in uv's cache (archive-v0), which uv may clear"
            if part.startswith(".tmp"):
                return f"{form} is in a temporary folder ({part})"
        if "pipx" in parts and ".cache" in parts:
            return f"{form} is in a `pipx run` cache"
        for base, what in caches:
            for root in {os.path.abspath(base), os.path.realpath(base)}:
                if form == root or form.startswith(root.rstrip(os.sep) + os.sep):
                    return f"{form} is in {what} ({root}), which may be cleared"
    return None


def _release_version() -> str | None:
    from mcp_hooks import __version__

    return __version__ if re.fullmatch(r"\d+(?:\.\d+)*", __version__) else None


def stable_prefix() -> list[str]:
    """An argv that starts ``mcp-hooks`` and keeps working after this process has gone.

    Raises:
        InstallError: only throwaway copies were found; says how to install for good.
    """
    seen: list[str] = []
    argv0 = sys.argv[0] if sys.argv else ""
    candidates = []
    if os.path.basename(argv0) in ("mcp-hooks", "mcp-hooks.exe") and os.path.isfile(argv0):
        candidates.append(argv0)
    found = shutil.which("mcp-hooks")
    if found:
        candidates.append(found)
    for candidate in candidates:
        why = throwaway_reason(candidate)
        if why is None:
            return [os.path.abspath(candidate)]
        seen.append(why)
    package = Path(__file__).resolve().parent.parent
    why = throwaway_reason(sys.executable) or throwaway_reason(package)
    if why is None:
        return [sys.executable, "-m", "mcp_hooks.cli"]
    seen.append(why)
    uvx = shutil.which("uvx")
    version = _release_version()
    if uvx and version and throwaway_reason(uvx) is None:
        return [os.path.abspath(uvx), f"mcp-hooks=={version}"]
    raise InstallError(
        "refusing to write a command that would stop working: this mcp-hooks runs from a "
        f"throwaway environment ({'; '.join(dict.fromkeys(seen))}). To fix: "
        + INSTALL_FOR_GOOD + ".")


def explicit_prefix(args: argparse.Namespace) -> list[str] | None:
    """``--bridge-command`` (or ``$MCP_HOOKS_BRIDGE_COMMAND``), split; None when not given."""
    given = getattr(args, "bridge_command", None) or os.environ.get(BRIDGE_COMMAND_ENV)
    return shlex.split(given) if given else None


def bridge_prefix(args: argparse.Namespace, scope: str = "user") -> list[str]:
    """The argv that starts ``mcp-hooks`` in a written entry.

    ``--bridge-command`` wins; project scope (committed by teams) gets plain ``mcp-hooks``,
    found on PATH where the host runs; user scope a stable absolute command
    (``stable_prefix``).
    """
    given = explicit_prefix(args)
    if given:
        return given
    if scope == "project":
        return ["mcp-hooks"]
    return stable_prefix()


def _passed_options(args: argparse.Namespace) -> list[str]:
    """The folder options the user gave install, passed on to every bridge run."""
    extra: list[str] = []
    for flag, attr in (("--user-dir", "user_dir"), ("--project-dir", "project_dir")):
        value = getattr(args, attr, None)
        if value is not None:
            extra += [flag, str(Path(value).expanduser().resolve())]
    if getattr(args, "no_log", False):
        extra.append("--no-log")
    elif getattr(args, "log", None) is not None:
        extra += ["--log", str(Path(args.log).expanduser().resolve())]
    if getattr(args, "stop_block_cap", None) is not None:
        extra += ["--stop-block-cap", str(args.stop_block_cap)]
    if getattr(args, "on_fault", None) is not None:
        extra += ["--on-fault", str(args.on_fault)]
    return extra


def bridge_command_line(args: argparse.Namespace, host: Host, event: str,
                        scope: str = "user") -> str:
    argv = [*bridge_prefix(args, scope), "bridge", host.name, "--event", event,
            *_passed_options(args)]
    return shlex.join(argv)


def forward_command_line(args: argparse.Namespace, host: Host, event: str, script: Path,
                         python: str) -> str:
    return shlex.join([python, str(script), _url(args), host.name, event,
                       *_passed_options(args)])


def forward_python(bridge: list[str]) -> str:
    """The interpreter that runs the forward script: the one of the stable ``mcp-hooks``
    (its script's ``#!`` line), else this one if stable, else ``python3`` on PATH."""
    first = bridge[0] if bridge else ""
    if first and os.path.basename(first).startswith("python"):
        return first
    try:
        with open(first, "rb") as f:
            line = f.readline(512)
    except OSError:
        line = b""
    if line.startswith(b"#!"):
        words = line[2:].decode(errors="replace").split()
        if len(words) == 1 and os.path.isabs(words[0]) and os.path.exists(words[0]) \
                and throwaway_reason(words[0]) is None:
            return words[0]
    if throwaway_reason(sys.executable) is None:
        return sys.executable
    return shutil.which("python3") or "python3"


def _url(args: argparse.Namespace) -> str:
    url: str = getattr(args, "url", None) or DEFAULT_URL
    return url.rstrip("/")


def _token(args: argparse.Namespace) -> str:
    token = getattr(args, "token", None) or os.environ.get("MCP_HOOKS_TOKEN")
    if not token:
        raise InstallError(
            "--via server needs the server's bearer token: pass --token or set MCP_HOOKS_TOKEN "
            "(the same one `mcp-hooks serve --transport http` uses); the forwarding endpoint "
            "refuses requests without it"
        )
    return token


def config_home() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcp-hooks"


FORWARD_SCRIPT_TEXT = '''\
# mcp-hooks forward: hand an agent host's hook payload to a running `mcp-hooks serve`
# (HTTP transport) and print its answer, if and only if the answer proves it comes from that
# server: the request carries a random nonce, the answer the HMAC-SHA256 of nonce + "\\n" +
# body keyed by the server's token. Anything else (no server, another program on the port,
# a wrong token, an error) runs the bridge locally instead: same answer, one start slower.
# Written by `mcp-hooks install --via server` (shared by every host installed that way;
# `mcp-hooks uninstall` removes the host entries that call it, not this file).
# Usage: python mcp-hooks-forward.py URL HOST EVENT [bridge options...]
import hashlib
import hmac
import os
import subprocess
import sys

HEADER = {header!r}
BRIDGE = {bridge!r}
TIMEOUT = {timeout}


def forward(url, host, event, payload):
    """The server's verified answer (bytes), or None."""
    from http.client import HTTPConnection, HTTPSConnection
    from urllib.parse import quote, urlsplit

    with open(HEADER, encoding="utf-8") as f:
        token = f.read().strip().partition("Bearer ")[2].strip()
    if not token:
        return None
    parts = urlsplit(url)
    kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
    conn = kind(parts.hostname or "127.0.0.1", parts.port, timeout=TIMEOUT)
    nonce = os.urandom(16).hex()
    path = (parts.path.rstrip("/") + "{path}" + quote(host, safe="") + "?event="
            + quote(event, safe=""))
    try:
        conn.request("POST", path, body=payload, headers={{
            "Authorization": "Bearer " + token, "Content-Type": "application/json",
            "{nonce_header}": nonce}})
        response = conn.getresponse()
        body = response.read()
        signature = response.getheader("{signature_header}") or ""
    finally:
        conn.close()
    if response.status != 200:
        return None
    expected = hmac.new(token.encode(), nonce.encode() + b"\\n" + body,
                        hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        sys.stderr.write("mcp-hooks forward: the answer from " + url + " did not prove it came "
                         "from the mcp-hooks server (no valid signature); ignored, the local "
                         "bridge answers\\n")
        return None
    return body


def main():
    url, host, event = sys.argv[1:4]
    payload = sys.stdin.buffer.read()
    try:
        body = forward(url, host, event, payload)
    except Exception:
        body = None
    if body is not None:
        if body:
            sys.stdout.buffer.write(body.rstrip(b"\\n") + b"\\n")
        return 0
    argv = [*BRIDGE, "bridge", host, "--event", event, *sys.argv[4:]]
    try:
        done = subprocess.run(argv, input=payload, stdout=subprocess.PIPE)
    except OSError as exc:
        sys.stderr.write("mcp-hooks forward: cannot run the bridge " + repr(argv) + " (" + str(exc)
                         + "); blocked. Fix: run `mcp-hooks doctor`, or reinstall: "
                         "uv tool install mcp-hooks, then mcp-hooks install " + host + "\\n")
        return 1 if os.environ.get("MCP_HOOKS_ON_FAULT", "").strip().lower() == "warn" else 2
    sys.stdout.buffer.write(done.stdout)
    return done.returncode


sys.exit(main())
'''


def write_forward_files(args: argparse.Namespace, dry_run: bool) -> tuple[Path, str]:
    """The forward script and its 0600 token header file (written unless dry run), and the
    interpreter that runs the script."""
    folder = config_home()
    script = folder / FORWARD_SCRIPT
    header = folder / "forward.header"
    token = _token(args)
    bridge = explicit_prefix(args) or stable_prefix()  # the fallback: absolute, stable
    python = forward_python(bridge)
    if dry_run:
        return script, python
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(header, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"Authorization: Bearer {token}\n")
    os.chmod(header, 0o600)
    script.write_text(FORWARD_SCRIPT_TEXT.format(
        timeout=HOOK_TIMEOUT_S, header=str(header), path=FORWARD_PATH, bridge=bridge,
        nonce_header=NONCE_HEADER, signature_header=SIGNATURE_HEADER,
    ))
    os.chmod(script, 0o644)
    return script, python


# -- recognising our entries --------------------------------------------------------------


def is_ours(handler: Any) -> bool:
    """Whether a host hook handler is one we wrote (by its command, URL or MCP tool)."""
    if not isinstance(handler, dict):
        return False
    for key in ("command", "bash", "powershell"):
        value = handler.get(key)
        if isinstance(value, str) and _OURS.search(value):
            return True
    url = handler.get("url")
    if handler.get("type") == "http" and isinstance(url, str) and FORWARD_PATH in url:
        return True
    return handler.get("type") == "mcp_tool" and handler.get("tool") == MCP_TOOL_NAME


# -- config formats -----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where and how one host's hook config is written."""

    path: Path
    kind: str  # "claude", "cursor", "copilot", "kimi"


def target(host: Host, scope: str, project: Path) -> Target:
    """The config file of ``host`` for ``scope`` (the home folder is read only for user)."""
    name = host.name
    if scope == "project":
        if name == "kimi-cli":
            raise InstallError("Kimi CLI reads hooks only from its user config "
                               "($KIMI_SHARE_DIR/config.toml, default ~/.kimi/config.toml); "
                               "use --scope user")
        return {
            "claude-code": Target(project / ".claude" / "settings.json", "claude"),
            "codex": Target(project / ".codex" / "hooks.json", "claude"),
            "gemini-cli": Target(project / ".gemini" / "settings.json", "claude"),
            "cursor": Target(project / ".cursor" / "hooks.json", "cursor"),
            "copilot-cli": Target(project / ".github" / "hooks" / "mcp-hooks.json", "copilot"),
        }[name]

    def home(var: str | None, *default: str) -> Path:
        value = os.environ.get(var) if var else None
        return Path(value) if value else Path(os.path.expanduser("~"), *default)

    user: dict[str, Callable[[], Target]] = {
        "claude-code": lambda: Target(home("CLAUDE_CONFIG_DIR", ".claude") / "settings.json",
                                      "claude"),
        "codex": lambda: Target(home("CODEX_HOME", ".codex") / "hooks.json", "claude"),
        "gemini-cli": lambda: Target(home("GEMINI_CLI_HOME") / ".gemini" / "settings.json",
                                     "claude"),
        "cursor": lambda: Target(home(None, ".cursor") / "hooks.json", "cursor"),
        "copilot-cli": lambda: Target(home("COPILOT_HOME", ".copilot") / "hooks"
                                      / "mcp-hooks.json", "copilot"),
        "kimi-cli": lambda: Target(home("KIMI_SHARE_DIR", ".kimi") / "config.toml", "kimi"),
    }
    return user[name]()


Handler = dict[str, Any]
MakeHandler = Callable[[str], Handler]


def _load_json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it first, nothing was "
                           "changed") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} must hold a JSON object; nothing was changed")
    return data


def _hooks_object(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    hooks = data.get("hooks")
    if hooks is None:
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: \"hooks\" must be an object; nothing was changed")
    return hooks


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _strip_claude(path: Path, hooks: dict[str, Any]) -> None:
    """Remove our handlers from Claude-shaped ``hooks``, dropping groups and events left empty."""
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept.append(group)
                continue
            remaining = [h for h in inner if not is_ours(h)]
            if len(remaining) == len(inner):
                kept.append(group)
            elif remaining:
                kept.append({**group, "hooks": remaining})
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]


def _strip_flat(hooks: dict[str, Any]) -> None:
    """Remove our handlers from Cursor/Copilot ``hooks`` (event -> list of handlers)."""
    for event in list(hooks):
        handlers = hooks[event]
        if not isinstance(handlers, list):
            continue
        kept = [h for h in handlers if not is_ours(h)]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]


def edit_json(target: Target, text: str, events: Sequence[str], make: MakeHandler | None,
              host: Host) -> str:
    """The JSON config with our entries replaced by fresh ones (``make``) or removed (None)."""
    data = _load_json(target.path, text)
    hooks = _hooks_object(target.path, data)
    if target.kind == "claude":
        _strip_claude(target.path, hooks)
        if make is not None:
            for event in events:
                group: dict[str, Any] = {"hooks": [make(event)]}
                hooks.setdefault(event, [])
                if not isinstance(hooks[event], list):
                    raise InstallError(f"{target.path}: hooks.{event} must be a list; nothing "
                                       "was changed")
                hooks[event].append(group)
    else:
        _strip_flat(hooks)
        if make is not None:
            data.setdefault("version", 1)
            for event in events:
                hooks.setdefault(event, [])
                if not isinstance(hooks[event], list):
                    raise InstallError(f"{target.path}: hooks.{event} must be a list; nothing "
                                       "was changed")
                hooks[event].append(make(event))
    if make is None:
        if not hooks:
            del data["hooks"]
        if not data or data == {"version": 1}:
            return ""  # nothing left but what we wrote: remove the file
    return _dump_json(data)


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _strip_kimi(text: str) -> str:
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("# >>> mcp-hooks"):
            inside = True
            continue
        if inside and stripped == KIMI_END:
            inside = False
            continue
        if not inside:
            out.append(line)
    result = "".join(out)
    return result.rstrip("\n") + "\n" if result.strip() else ""


def edit_kimi(target: Target, text: str, events: Sequence[str], make: Callable[[str], str] | None,
              host: Host) -> str:
    """Kimi's config.toml with our managed block replaced (``make``) or removed (None)."""
    _check_toml(target.path, text)
    base = _strip_kimi(text)
    if make is None:
        return base
    block = [KIMI_BEGIN, "; remove it with `mcp-hooks uninstall kimi-cli`"]
    lines = [block[0] + block[1]]
    for event in events:
        lines += ["[[hooks]]", f"event = {_toml_string(event)}",
                  f"command = {_toml_string(make(event))}", f"timeout = {HOOK_TIMEOUT_S}", ""]
    lines.append(KIMI_END)
    sep = "\n" if base and not base.endswith("\n\n") else ""
    result = base + sep + "\n".join(lines) + "\n"
    _check_toml(target.path, result, ours=len(events))
    return result


def _check_toml(path: Path, text: str, ours: int | None = None) -> None:
    if sys.version_info >= (3, 11):
        import tomllib as toml
    else:  # pragma: no cover - Python 3.10 has no TOML reader; use tomli if it is there,
        # an optional extra we do not require (the text edit stands on its marker lines)
        import importlib

        try:
            toml = importlib.import_module("tomli")
        except ModuleNotFoundError:
            return
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        if ours is None:
            raise InstallError(f"{path} is not valid TOML ({exc}); fix it first, nothing was "
                               "changed") from None
        raise InstallError(f"appending our [[hooks]] to {path} would not give valid TOML "
                           f"({exc}); nothing was changed") from None
    if ours is not None:
        found = [h for h in data.get("hooks", []) if isinstance(h, dict)
                 and isinstance(h.get("command"), str) and _OURS.search(h["command"])]
        if len(found) < ours:
            raise InstallError(f"{path}: our [[hooks]] did not land where expected "
                               "(does the file end inside an array or table that takes them?); "
                               "nothing was changed")


# -- the commands -------------------------------------------------------------------------


def _project(args: argparse.Namespace) -> Path:
    given = getattr(args, "project_dir", None)
    if given is not None:
        return Path(given).expanduser().resolve()
    env = os.environ.get("MCP_HOOKS_PROJECT_DIR")
    return Path(env).expanduser().resolve() if env else Path.cwd().resolve()


def _events(args: argparse.Namespace, host: Host) -> list[str]:
    wanted = getattr(args, "events", None) or []
    if not wanted:
        return list(host.install_events)
    chosen: list[str] = []
    for name in wanted:
        for part in str(name).split(","):
            part = part.strip()
            if not part:
                continue
            matches = [e for e, c in host.events.items() if part in (e, c)]
            if not matches:
                raise InstallError(f"{host.title} has no event {part!r}; use a host event "
                                   f"({', '.join(host.events)}) or a canonical name")
            for match in matches:
                if match not in chosen and (match in host.install_events or part == match):
                    chosen.append(match)
    return chosen


def _handler_maker(args: argparse.Namespace, host: Host, kind: str, scope: str,
                   events: Sequence[str]) -> Callable[[str], Any]:
    via = getattr(args, "via", None) or "command"
    if via in ("http", "mcp") and host.name != "claude-code":
        raise InstallError(f"--via {via} is a Claude Code hook type; for {host.title} use "
                           "--via command or --via server")
    if via == "server":
        script, python = write_forward_files(args, getattr(args, "dry_run", False))

        def line(event: str) -> str:
            return forward_command_line(args, host, event, script, python)
    elif via == "command":
        prefix = bridge_prefix(args, scope)

        def line(event: str) -> str:
            return shlex.join([*prefix, "bridge", host.name, "--event", event,
                               *_passed_options(args)])
    elif via == "http":
        url = f"{_url(args)}{FORWARD_PATH}{host.name}"

        def http(event: str) -> Handler:
            return {"type": "http", "url": f"{url}?event={event}", "timeout": HOOK_TIMEOUT_S,
                    "headers": {"Authorization": "Bearer $MCP_HOOKS_TOKEN"},
                    "allowedEnvVars": ["MCP_HOOKS_TOKEN"]}
        return http
    elif via == "mcp":
        server = getattr(args, "server_name", None) or "mcp-hooks"
        gates = [e for e in events if can_block(host.events[e])]
        if gates:
            raise InstallError(
                f"--via mcp cannot guard {', '.join(gates)}: Claude Code may run tools before "
                "its MCP servers connect, and an mcp_tool hook whose server is not connected "
                "does not run, so these events would go unchecked meanwhile. Install them "
                "with --via command (or --via server, which falls back to the bridge); use "
                "--via mcp only for events that cannot block, e.g. " + " ".join(
                    f"--event {e}" for e in host.install_events
                    if not can_block(host.events[e])))

        def mcp_tool(event: str) -> Handler:
            return {"type": "mcp_tool", "server": server, "tool": MCP_TOOL_NAME,
                    "input": mcp_tool_input(event), "timeout": HOOK_TIMEOUT_S}
        return mcp_tool
    else:
        raise InstallError(f"--via must be command, server, http or mcp, not {via!r}")

    if kind == "kimi":
        return line
    if kind == "claude":
        def claude(event: str) -> Handler:
            handler: Handler = {"type": "command", "command": line(event)}
            if host.name == "gemini-cli":
                return {"name": "mcp-hooks", **handler, "timeout": HOOK_TIMEOUT_S * 1000}
            return {**handler, "timeout": HOOK_TIMEOUT_S}
        return claude
    if kind == "cursor":
        return lambda event: {"command": line(event), "timeout": HOOK_TIMEOUT_S}
    return lambda event: {"type": "command", "bash": line(event), "timeoutSec": HOOK_TIMEOUT_S}


def mcp_tool_input(event: str) -> dict[str, str]:
    """The ``input`` of a Claude Code ``mcp_tool`` hook: the hook JSON, field by field.

    Claude Code substitutes ``${path}`` in string values from its hook input. Whether an
    object (``${tool_input}``) arrives as JSON text is not documented, so the common input
    keys are passed as leaves too and the tool rebuilds ``tool_input`` from them if needed.
    """
    fields = {
        "host": "claude-code",
        "hook_event_name": event,
        "session_id": "${session_id}",
        "cwd": "${cwd}",
    }
    if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        fields.update({"tool_name": "${tool_name}", "tool_input": "${tool_input}",
                       "tool_use_id": "${tool_use_id}"})
        for key in LEAF_KEYS:
            fields[f"input_{key}"] = "${tool_input." + key + "}"
    if event == "PostToolUse":
        fields["tool_response"] = "${tool_response}"
    if event == "PostToolUseFailure":
        fields["error"] = "${error}"
    if event in ("Stop", "SubagentStop"):
        fields.update({"stop_hook_active": "${stop_hook_active}",
                       "last_assistant_message": "${last_assistant_message}"})
    if event == "UserPromptSubmit":
        fields["prompt"] = "${prompt}"
    return fields


LEAF_KEYS = ("command", "description", "file_path", "content", "old_string", "new_string",
             "path", "pattern", "url", "query", "prompt")


def _change(args: argparse.Namespace, install: bool) -> int:
    try:
        host = get_host(host_name(args.host))
    except UnknownHostError as exc:
        print(f"mcp-hooks: {exc}", file=sys.stderr)
        return EXIT_USAGE
    scope = getattr(args, "scope", None) or ("user" if host.name == "kimi-cli" else "project")
    dry = bool(getattr(args, "dry_run", False))
    verb = "install" if install else "uninstall"
    try:
        where = target(host, scope, _project(args))
        if getattr(args, "config", None) is not None:
            where = Target(Path(args.config).expanduser().resolve(), where.kind)
        events = _events(args, host) if install else list(host.events)
        old = where.path.read_text(encoding="utf-8") if where.path.exists() else ""
        make = _handler_maker(args, host, where.kind, scope, events) if install else None
        if where.kind == "kimi":
            new = edit_kimi(where, old, events, make, host)
        else:
            new = edit_json(where, old, events, make, host)
    except (InstallError, OSError) as exc:
        print(f"mcp-hooks {verb}: {exc}", file=sys.stderr)
        return EXIT_PROBLEM

    if new == old or (not old and not new):
        print(f"{where.path}: already up to date ({host.title}, {scope} scope)")
        if install:
            for note in _install_notes(host, scope, args):
                print(note)
        return EXIT_OK
    if dry:
        diff = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True),
            fromfile=str(where.path), tofile=f"{where.path} (after {verb})",
        )
        sys.stdout.writelines(diff)
        print(f"(dry run: {where.path} was not changed)")
        return EXIT_OK
    backup = None
    try:
        if old:
            backup = backup_path(host, scope, where.path)
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(where.path, backup)
        if new:
            where.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = where.path.with_name(f".{where.path.name}.mcp-hooks-tmp")
            tmp.write_text(new, encoding="utf-8")
            if where.path.exists():
                shutil.copymode(where.path, tmp)
            os.replace(tmp, where.path)
        else:
            where.path.unlink(missing_ok=True)
    except OSError as exc:
        print(f"mcp-hooks {verb}: cannot write {where.path}: {exc}", file=sys.stderr)
        return EXIT_PROBLEM
    done = "installed into" if install else "removed from"
    what = f"{len(events)} {host.title} event(s)" if install else f"our {host.title} entries"
    print(f"{what} {done} {where.path}" + (f" (previous file saved as {backup})" if backup
                                          else ""))
    if install:
        for note in _install_notes(host, scope, args):
            print(note)
    return EXIT_OK


def _install_notes(host: Host, scope: str, args: argparse.Namespace) -> list[str]:
    notes = []
    via = getattr(args, "via", None) or "command"
    if via == "command" and scope == "project" and explicit_prefix(args) is None:
        notes.append(
            "Project scope: the entries run plain `mcp-hooks`, which the host finds on PATH, "
            "so the file holds no path of this machine and can be committed. Everyone who "
            "uses it needs mcp-hooks on PATH (`uv tool install mcp-hooks` or `pipx install "
            "mcp-hooks`); pass --bridge-command to write another command.")
        if shutil.which("mcp-hooks") is None:
            notes.append("warning: no `mcp-hooks` is on PATH here, so these entries cannot "
                         "run yet: " + INSTALL_FOR_GOOD + ".")
    if via == "server" and scope == "project":
        notes.append("--via server writes the path of this machine's forward script "
                     f"({config_home() / FORWARD_SCRIPT}) into the project's file.")
    if host.name == "codex":
        notes.append("Codex runs hooks only once you trust them: review them with /hooks in "
                     "Codex (or pass --dangerously-bypass-hook-trust); project hooks also need "
                     "the project trusted.")
    if host.name == "copilot-cli" and scope == "project":
        notes.append("Copilot CLI loads repository hooks in prompt mode (-p) only for a trusted "
                     "folder or with GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true.")
    if getattr(args, "via", None) == "http":
        notes.append("Claude Code sends the token from $MCP_HOOKS_TOKEN: export it where "
                     "Claude Code runs. If the server is down, Claude Code carries on without "
                     "the hooks.")
    if getattr(args, "via", None) == "mcp":
        notes.append("Add the server to Claude Code as an MCP server named "
                     f"{getattr(args, 'server_name', None) or 'mcp-hooks'!r}, started with "
                     "--bridge-tool (claude mcp add mcp-hooks -- mcp-hooks serve --bridge-tool)."
                     " Until it is connected, these (non-blocking) hooks do not run.")
    return notes


def backup_path(host: Host, scope: str, path: Path) -> Path:
    """Where the previous config is saved: ``$XDG_STATE_HOME/mcp-hooks/backups/`` (not beside
    the file, so a project's config folder does not fill with backups)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    stamp = time.strftime("%Y%m%dT%H%M%S") + f".{time.time_ns() % 1_000_000:06d}"
    return Path(base) / "mcp-hooks" / "backups" / f"{stamp}-{host.name}-{scope}-{path.name}"


def install_command(args: argparse.Namespace) -> int:
    """``mcp-hooks install <host>``: merge our entries into the host's hook config."""
    return _change(args, install=True)


def uninstall_command(args: argparse.Namespace) -> int:
    """``mcp-hooks uninstall <host>``: remove only our entries from the host's hook config."""
    return _change(args, install=False)


__all__ = ["HOSTS", "InstallError", "install_command", "is_ours", "uninstall_command"]
