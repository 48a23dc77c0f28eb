"""The proxy's upstream servers: an ``mcpServers`` config file and ``--upstream`` options.

The file has the shape hosts already use (Claude Desktop, Claude Code's ``.mcp.json``,
Cursor; VS Code's ``servers`` key is read too)::

    {"mcpServers": {
        "git":    {"command": "uvx", "args": ["mcp-server-git"], "env": {"K": "v"}, "cwd": "."},
        "remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "${KEY}"}},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9000/sse"}
    }}

An entry with ``command`` is a stdio server; one with ``url`` is streamable HTTP, or SSE with
``"type": "sse"``. ``${VAR}``, ``${VAR:-default}`` and VS Code's ``${env:VAR}`` are expanded
in every string, as Claude Code does. ``"disabled": true`` skips an entry. ``"timeout"``
(seconds) overrides ``--timeout`` for one server. A relative ``cwd`` is taken from the
file's folder. Keys other hosts add (``autoApprove``, ``alwaysAllow``, ...) are ignored.

``--upstream NAME=COMMAND`` adds one server without a file: COMMAND is split like a shell
would split it, or is an ``http(s)://`` URL for streamable HTTP.

Secrets: hooks run beside the proxy, so no hook may find an upstream's credentials in its
environment. ``upstream_secrets`` names them (see there) and the proxy hands them to its
engine, which leaves out of every hook's environment any variable holding one of them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_hooks.errors import ConfigError

UpstreamTransport = Literal["stdio", "http", "sse"]

_TYPES: dict[str, UpstreamTransport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}
_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_PREFIX_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_SECRET_WORD = re.compile(r"(?i)token|secret|passw|api[-_]?key|auth|credential|bearer")
_URL_USERINFO = re.compile(r"(\w+://)[^/@\s]+@")


def _masked(argv: list[str]) -> list[str]:
    """``argv`` with the values of secret-looking options (``--token X``, ``--api-key=X``,
    ``TOKEN=X``) and the user info of URLs replaced by ``***``."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if eq and _SECRET_WORD.search(name):
            out.append(f"{name}=***")
        elif arg.startswith("-") and _SECRET_WORD.search(arg):
            out.append(arg)
            hide_next = True
        else:
            out.append(_URL_USERINFO.sub(r"\1***@", arg))
    return out


class ProxyConfigError(ConfigError):
    """A config file or ``--upstream`` value that cannot be used; the message names the
    file, the server and the field, and says how to fix it."""


class UpstreamSpec(BaseModel):
    """One upstream MCP server, as configured.

    Attributes:
        name: the key in ``mcpServers`` (or the NAME of ``--upstream``).
        transport: ``stdio``, ``http`` (streamable HTTP) or ``sse``.
        command, args, env, cwd: how to start a stdio server.
        url, headers: where a streamable HTTP or SSE server listens, and what to send.
        timeout: seconds each call may take; None for the proxy-wide ``--timeout``.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    transport: UpstreamTransport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float | None = None

    @property
    def prefix(self) -> str:
        """``<server>__`` as it goes in front of a tool or prompt name."""
        return _PREFIX_UNSAFE.sub("_", self.name) + "__"

    def describe(self) -> str:
        """A one-line description for logs and the status resource, which a model may read:
        no header or environment values, and arguments that look like secrets masked."""
        if self.transport == "stdio":
            return shlex.join(_masked([self.command or "", *self.args]))
        url = _URL_USERINFO.sub(r"\1***@", self.url or "")
        return f"{self.transport} {url}"


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9._~+/-]*\s+(\S.*)$")  # "Bearer abc" -> "abc"
_MIN_SECRET = 8  # shorter values hide too many ordinary variables to be worth it


def _looks_like_token(value: str) -> bool:
    """A long run of letters and digits with no spaces: an API key, not a path or a word."""
    return (len(value) >= 16 and not any(c.isspace() for c in value)
            and "://" not in value and not value.startswith(("/", ".", "~"))
            and any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


def _header_secrets(spec: UpstreamSpec, add: Callable[..., None]) -> None:
    """``add`` every header value of ``spec``, and the credential after its scheme."""
    for name, value in spec.headers.items():
        always = bool(_SECRET_WORD.search(name)) or name.lower() in ("cookie", "x-api-key")
        add(value, always=always)
        scheme = _SCHEME.match(value.strip())
        if scheme is not None:
            add(scheme.group(1), always=always)


def upstream_secrets(specs: Iterable[UpstreamSpec]) -> list[str]:
    """The configured values no hook may see in its environment.

    - every header value of an HTTP or SSE upstream (of 8 characters or more; the
      ``Authorization``, cookie and key-named headers whatever their length), and the
      credential after its scheme (``Bearer abc`` -> ``abc``: the variable it was
      expanded from holds only that);
    - every ``env`` value of a stdio upstream whose name looks secret (token, secret,
      password, api key, auth, credential), and any other that looks like a key (16 or more
      characters with letters and digits, no spaces, not a path or URL);
    - the values of secret-looking arguments (``--token X``, ``--api-key=X``, ``TOKEN=X``)
      and the password of a URL's user info.

    Values are matched exactly: a variable whose value equals one of them is left out.
    """
    found: list[str] = []

    def add(value: str | None, *, always: bool = False) -> None:
        value = (value or "").strip()
        if value and (always or len(value) >= _MIN_SECRET) and value not in found:
            found.append(value)

    for spec in specs:
        _header_secrets(spec, add)
        _env_secrets(spec, add)
        _argument_secrets(spec, add)
    return found


def _env_secrets(spec: UpstreamSpec, add: Callable[..., None]) -> None:
    """``add`` every ``env`` value of ``spec`` whose name looks secret, or that looks a key."""
    for name, value in spec.env.items():
        if _SECRET_WORD.search(name):
            add(value, always=True)
        elif _looks_like_token(value):
            add(value)


def _argument_secrets(spec: UpstreamSpec, add: Callable[..., None]) -> None:
    """``add`` the values of ``spec``'s secret-looking arguments and its URLs' passwords."""
    argv = [spec.command or "", *spec.args, spec.url or ""]
    for arg, masked in zip(argv[1:], _masked(argv)[1:], strict=False):
        if masked != arg:
            name, eq, rest = arg.partition("=")
            add(rest if eq and masked == f"{name}=***" else arg)
        userinfo = re.search(r"\w+://([^/@\s]+)@", arg)
        if userinfo is not None:
            add(userinfo.group(1).partition(":")[2] or userinfo.group(1))


def _expand(value: str, where: str, environ: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ProxyConfigError(
            f"{where}: the environment variable {name} is not set; set it, or write "
            f"${{{name}:-default}} to give a default"
        )

    return _VAR.sub(replace, value)


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProxyConfigError(f"{where}: must be a list of strings")
    return list(value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ProxyConfigError(f"{where}: must be an object of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ProxyConfigError(f"{where}.{key}: must be a string")
        out[str(key)] = str(item)
    return out


def _text(entry: dict[str, Any], key: str, where: str, environ: Mapping[str, str]) -> str | None:
    """``entry[key]``, a string with ``${VAR}`` expanded, or None when absent."""
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProxyConfigError(f"{where}.{key}: must be a string")
    return _expand(value, f"{where}.{key}", environ)


def _transport(kind: Any, command: str | None, url: str | None, where: str) -> UpstreamTransport:
    """The entry's ``type`` (or ``transport``), or the one its ``command``/``url`` implies."""
    if kind is None and command is None and url is None:
        raise ProxyConfigError(
            f"{where}: needs 'command' (a stdio server) or 'url' (a streamable HTTP server)"
        )
    if kind is None:
        return "stdio" if command is not None else "http"
    if isinstance(kind, str) and kind.lower() in _TYPES:
        return _TYPES[kind.lower()]
    raise ProxyConfigError(
        f"{where}.type: {kind!r} is not a transport; use \"stdio\", \"http\" or \"sse\""
    )


def _timeout(entry: dict[str, Any], where: str) -> float | None:
    """The entry's ``timeout`` in seconds, None when absent."""
    timeout = entry.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        raise ProxyConfigError(f"{where}.timeout: must be a positive number of seconds")
    return timeout


def _stdio_server(name: str, entry: dict[str, Any], command: str | None, timeout: float | None,
                  where: str, base_dir: Path | None, environ: Mapping[str, str]) -> UpstreamSpec:
    """A stdio entry: its command, args, env and cwd (relative to ``base_dir``)."""
    if not command:
        raise ProxyConfigError(
            f"{where}: a stdio server needs 'command' (or give 'url' for an HTTP server)"
        )
    args = [_expand(a, f"{where}.args", environ)
            for a in _strings(entry.get("args", []), f"{where}.args")]
    env = {k: _expand(v, f"{where}.env.{k}", environ)
           for k, v in _string_map(entry.get("env", {}), f"{where}.env").items()}
    cwd = _text(entry, "cwd", where, environ)
    if cwd is not None and base_dir is not None and not os.path.isabs(cwd):
        cwd = str((base_dir / cwd).resolve())
    return UpstreamSpec(name=name, transport="stdio", command=command, args=tuple(args),
                        env=env, cwd=cwd, timeout=timeout)


def _remote_server(name: str, entry: dict[str, Any], transport: UpstreamTransport,
                   url: str | None, timeout: float | None, where: str,
                   environ: Mapping[str, str]) -> UpstreamSpec:
    """A streamable HTTP or SSE entry: its url and headers."""
    if not url:
        raise ProxyConfigError(f"{where}: an {transport} server needs 'url'")
    if not url.startswith(("http://", "https://")):
        raise ProxyConfigError(f"{where}.url: {url!r} must start with http:// or https://")
    headers = {k: _expand(v, f"{where}.headers.{k}", environ)
               for k, v in _string_map(entry.get("headers", {}), f"{where}.headers").items()}
    return UpstreamSpec(name=name, transport=transport, url=url, headers=headers,
                        timeout=timeout)


def parse_server(
    name: str,
    entry: Any,
    *,
    where: str,
    base_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> UpstreamSpec | None:
    """One ``mcpServers`` entry -> an ``UpstreamSpec`` (None when ``disabled``).

    Args:
        name: the entry's key.
        entry: the entry's JSON value.
        where: how to name the entry in errors (``file: mcpServers.git``).
        base_dir: the folder a relative ``cwd`` is taken from.
        environ: variables for ``${VAR}`` expansion (default ``os.environ``).

    Raises:
        ProxyConfigError: the entry is malformed; the message says which field and why.
    """
    env_vars = os.environ if environ is None else environ
    if not isinstance(name, str) or not name.strip():
        raise ProxyConfigError(f"{where}: a server needs a non-empty name")
    if not isinstance(entry, dict):
        raise ProxyConfigError(f"{where}: must be an object with 'command' or 'url'")
    if entry.get("disabled") is True:
        return None
    command = _text(entry, "command", where, env_vars)
    url = _text(entry, "url", where, env_vars) or _text(entry, "serverUrl", where, env_vars)
    transport = _transport(entry.get("type", entry.get("transport")), command, url, where)
    timeout = _timeout(entry, where)
    if transport == "stdio":
        return _stdio_server(name, entry, command, timeout, where, base_dir, env_vars)
    return _remote_server(name, entry, transport, url, timeout, where, env_vars)


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> list[UpstreamSpec]:
    """The upstream servers of an ``mcpServers`` (or VS Code ``servers``) JSON file.

    Raises:
        ProxyConfigError: the file is missing, is not JSON, or has a malformed entry.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProxyConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ProxyConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ProxyConfigError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProxyConfigError(f"{path}: must be a JSON object with an 'mcpServers' object")
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        raise ProxyConfigError(
            f"{path}: has no 'mcpServers' object (the shape of Claude Desktop, .mcp.json and "
            "Cursor configs) nor a VS Code 'servers' object"
        )
    servers = data[key]
    if not isinstance(servers, dict):
        raise ProxyConfigError(f"{path}: {key} must be an object of named servers")
    specs = []
    for name, entry in servers.items():
        spec = parse_server(name, entry, where=f"{path}: {key}.{name}",
                            base_dir=path.parent.resolve(), environ=environ)
        if spec is not None and not _is_this_proxy(spec, path):
            specs.append(spec)
    return specs


def _is_this_proxy(spec: UpstreamSpec, config: Path) -> bool:
    """An entry that starts ``mcp-hooks proxy --config`` on this very file: the proxy's own
    entry in a host config it was pointed at. Starting it would recurse; it is skipped."""
    if spec.transport != "stdio" or not spec.command:
        return False
    argv = [spec.command, *spec.args]
    runs_proxy = any(os.path.basename(a) in ("mcp-hooks", "mcp-hooks.exe") for a in argv[:3]) \
        and "proxy" in argv
    if not runs_proxy or "--config" not in argv[:-1]:
        return False
    given = Path(argv[argv.index("--config") + 1])
    if not given.is_absolute() and spec.cwd:
        given = Path(spec.cwd) / given
    try:
        return given.resolve() == config.resolve()
    except OSError:
        return False


def parse_upstream(value: str) -> UpstreamSpec:
    """``NAME=COMMAND`` (a stdio server; COMMAND split like a shell) or ``NAME=URL``.

    Raises:
        ProxyConfigError: no ``=``, an empty name or an empty command.
    """
    name, sep, command = value.partition("=")
    name = name.strip()
    where = f"--upstream {value!r}"
    if not sep or not name:
        raise ProxyConfigError(f"{where}: write NAME=COMMAND, e.g. git='uvx mcp-server-git'")
    command = command.strip()
    if command.startswith(("http://", "https://")):
        return UpstreamSpec(name=name, transport="http", url=command)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ProxyConfigError(f"{where}: cannot split the command: {exc}") from None
    if not argv:
        raise ProxyConfigError(f"{where}: the command is empty")
    return UpstreamSpec(name=name, transport="stdio", command=argv[0], args=tuple(argv[1:]))


def collect_upstreams(
    config: Path | None, upstreams: Iterable[str], environ: Mapping[str, str] | None = None
) -> list[UpstreamSpec]:
    """Every upstream of ``--config`` and ``--upstream``, in that order, names unique.

    Raises:
        ProxyConfigError: a malformed entry, a name given twice, or no upstream at all.
    """
    specs = load_config(config, environ) if config is not None else []
    specs += [parse_upstream(value) for value in upstreams]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ProxyConfigError(f"upstream {spec.name!r} is configured twice; names must differ")
        seen.add(spec.name)
    if not specs:
        raise ProxyConfigError(
            "no upstream servers: give --config FILE (an mcpServers JSON file) or "
            "--upstream NAME=COMMAND"
        )
    return specs
