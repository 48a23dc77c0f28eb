"""Oracles on risk: ``SecurityScanner``, ``DependencyChecker``, ``PermissionChecker``.

None of them runs a command; they read files and the event. Every file is read inside the
project only (``runtime.read_inside``: no symlink followed, regular files only, a size cap):
what is not readable so is skipped (a scanned or imported file) or a problem (a manifest).
SecurityScanner and DependencyChecker read many files: their ``timeout`` defaults to 30 s.

- ``SecurityScanner`` searches the changed files (text files up to 1 MiB) and every string
  of the tool input with the ``rules`` (default all of ``RULES``): ``no-secrets`` (keys,
  tokens, private keys, assigned passwords; high), ``no-sql-injection`` (SQL built by
  formatting or concatenation and handed to execute/query; high), ``no-eval`` (medium),
  ``no-shell-true`` (``shell=True``; low). Findings below ``severity_threshold`` (default
  low) are dropped; a high finding blocks, the rest prompt. Patterns run on RE2 (linear time
  over whatever an agent wrote).
- ``DependencyChecker``: each of ``manifest_files`` (default: those of
  ``requirements.txt``, ``pyproject.toml``, ``package.json`` present) must exist and parse,
  and the code's third-party imports (Python ``import``/``from``; JavaScript ``require``/
  ``import ... from``) must be declared in one of them. Blocks, naming what to add.
- ``PermissionChecker``: a tool call whose input contains one of ``dangerous_commands``
  (plain substrings, case-insensitive) is a prompt asking for confirmation when
  ``require_confirmation`` is true, else a block; ``tools`` restricts it to some tools.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from mcp_hooks.control import runtime
from mcp_hooks.control.context import OracleContext, git
from mcp_hooks.control.oracles.base import Option, Oracle, OracleConfigError, checked_path
from mcp_hooks.spec.matching import compile_matcher, strings
from mcp_hooks.spec.signals import Signal

SEVERITY_RANK = {"low": 0, "medium": 1, "high": 2}
MAX_SCAN_BYTES = 1024 * 1024
MAX_MANIFEST_BYTES = 4 << 20
READING_TIMEOUT = 30.0  # the default timeout of the oracles that read many files

# rule -> (severity, patterns); RE2 syntax
RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "no-secrets": ("high", (
        r"AKIA[0-9A-Z]{16}",
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP )?PRIVATE KEY",
        r"gh[pousr]_[A-Za-z0-9]{36}",
        r"xox[abprs]-[A-Za-z0-9-]{10,}",
        r"sk-[A-Za-z0-9]{32,}",
        r"(?i)(?:api[_-]?key|secret|passw(?:or)?d|token)\s*[:=]\s*[\"'][^\"'\s]{8,}[\"']",
    )),
    "no-sql-injection": ("high", (
        r"(?i)(?:execute|executemany|query|raw)\s*\(\s*f[\"'][^\"']*\b(?:select|insert|update|delete)\b[^\"']*\{",
        r"(?i)(?:execute|executemany|query|raw)\s*\(\s*[\"'][^\"']*\b(?:select|insert|update|delete)\b[^\"']*[\"']\s*(?:\+|%)",
        r"(?i)(?:execute|executemany|query|raw)\s*\(\s*[\"'][^\"']*\b(?:select|insert|update|delete)\b[^\"']*[\"']\s*\.\s*format\s*\(",
    )),
    "no-eval": ("medium", (r"(?:^|[^.\w])eval\s*\(",)),
    "no-shell-true": ("low", (r"shell\s*=\s*True",)),
}


class SecurityScanner(Oracle):
    name = "SecurityScanner"
    options: ClassVar[Mapping[str, Option]] = {
        "rules": Option((list,), list(RULES), f"a list of rule names ({', '.join(RULES)})"),
        "severity_threshold": Option((str,), "low", "low, medium or high"),
    }
    default_timeout = READING_TIMEOUT

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)

        for i, rule in enumerate(self.config["rules"]):
            if rule not in RULES:
                raise OracleConfigError(f"rules[{i}]", f"unknown rule {rule!r}; use "
                                        f"{', '.join(RULES)}")
        if self.config["severity_threshold"] not in SEVERITY_RANK:
            raise OracleConfigError("severity_threshold", "must be low, medium or high")
        floor = SEVERITY_RANK[self.config["severity_threshold"]]
        self.rules = [(rule, RULES[rule][0], [compile_matcher(p) for p in RULES[rule][1]])
                      for rule in self.config["rules"] if SEVERITY_RANK[RULES[rule][0]] >= floor]

    def _texts(self, context: OracleContext) -> Iterator[tuple[str, str]]:
        for name in context.changed_files:
            try:
                data = runtime.read_inside(context.work_dir, runtime.relative_parts(
                    name, "changed file"), MAX_SCAN_BYTES, what="changed file")
            except (OSError, runtime.FileRefused):
                continue
            if b"\0" not in data:
                yield name, data.decode("utf-8", "replace")
        for text in strings(dict(context.tool_input)):
            yield "tool_input", text

    def evaluate(self, context: OracleContext) -> Signal | None:
        findings: list[tuple[str, str, str]] = []  # severity, rule, where
        for where, text in self._texts(context):
            for number, line in enumerate(text.splitlines(), 1):
                for rule, severity, matchers in self.rules:
                    if any(m.search(line) for m in matchers):
                        findings.append((severity, rule, f"{where}:{number}"))
        if not findings:
            return None
        worst = max(SEVERITY_RANK[f[0]] for f in findings)
        listed = ", ".join(f"{rule} at {where}" for _, rule, where in findings[:20])
        more = f" and {len(findings) - 20} more" if len(findings) > 20 else ""
        files = sorted({w.rsplit(":", 1)[0] for _, _, w in findings} - {"tool_input"})
        fixes = [f"remove or rewrite: {rule} at {where}" for _, rule, where in findings[:20]]
        if worst == SEVERITY_RANK["high"]:
            return Signal.block(f"security: {listed}{more}", resolution_path=fixes,
                                type="security", files=files)
        severity = "medium" if worst == SEVERITY_RANK["medium"] else "low"
        return Signal.prompt(f"security: {listed}{more}", suggestions=fixes,
                             severity=severity, type="security", files=files)


# import name -> distribution name, where they differ
IMPORT_TO_DIST = {"yaml": "pyyaml", "PIL": "pillow", "sklearn": "scikit-learn",
                  "cv2": "opencv-python", "bs4": "beautifulsoup4",
                  "dateutil": "python-dateutil", "dotenv": "python-dotenv",
                  "jwt": "pyjwt", "re2": "google-re2", "frontmatter": "python-frontmatter"}
_NODE_BUILTINS = frozenset((
    "assert", "buffer", "child_process", "cluster", "crypto", "dgram", "dns", "events", "fs",
    "http", "http2", "https", "net", "os", "path", "perf_hooks", "process", "querystring",
    "readline", "stream", "string_decoder", "timers", "tls", "tty", "url", "util", "v8", "vm",
    "worker_threads", "zlib"))
_JS_IMPORT = re.compile(r"""(?:require\(\s*|\bfrom\s+|\bimport\s+)['"]([^'"]+)['"]""")
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
DEFAULT_MANIFESTS = ("requirements.txt", "pyproject.toml", "package.json")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared_node(text: str) -> set[str]:
    """The dependency names of a package.json (every kind of dependency)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return {name for key in ("dependencies", "devDependencies", "peerDependencies",
                             "optionalDependencies")
            for name in (data.get(key) or {})}


def _load_toml(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib  # lazy: 12 ms of cold start, only for a pyproject.toml
    else:  # Python 3.10: tomli, a dependency there (pyproject); lazy: 12 ms as above
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None
    return data


def _declared_pyproject(text: str) -> set[str]:
    """The names of a pyproject.toml: PEP 621 dependencies and extras, and Poetry's."""
    data = _load_toml(text)
    project = data.get("project") or {}
    specs = list(project.get("dependencies") or [])
    for extra in (project.get("optional-dependencies") or {}).values():
        specs += list(extra)
    poetry = (data.get("tool") or {}).get("poetry") or {}
    names = {_norm(n) for n in (poetry.get("dependencies") or {})}
    return names | {_norm(m.group(1)) for s in specs if (m := _REQ_NAME.match(str(s)))}


def _declared_requirements(text: str) -> set[str]:
    """The names of a requirements file; option lines (``-r``, ``-e`` ...) are skipped."""
    names = set()
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        found = _REQ_NAME.match(line)
        if not found:
            raise ValueError(f"line {number}: {line!r} is not a requirement")
        names.add(_norm(found.group(1)))
    return names


def _manifest_kind(path: Path) -> str:
    if path.name == "package.json":
        return "node"
    return "pyproject" if path.suffix == ".toml" else "requirements"


# manifest kind -> its reader (text -> the declared names)
_DECLARED_BY_KIND: dict[str, Callable[[str], set[str]]] = {
    "node": _declared_node,
    "pyproject": _declared_pyproject,
    "requirements": _declared_requirements,
}


def _declared(path: Path, text: str) -> set[str]:
    """The dependency names a manifest declares (normalised); ``path`` tells its kind.

    Raises:
        ValueError: the manifest does not parse.
    """
    return _DECLARED_BY_KIND[_manifest_kind(path)](text)


def _python_imports(text: str) -> set[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


class DependencyChecker(Oracle):
    name = "DependencyChecker"
    options: ClassVar[Mapping[str, Option]] = {
        "manifest_files": Option((list,), None, "a list of manifest paths"),
        "check_imports": Option((bool,), True, "true or false"),
    }
    default_timeout = READING_TIMEOUT

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        for i, name in enumerate(self.config["manifest_files"] or ()):
            checked_path(f"manifest_files[{i}]", name)

    def _sources(self, context: OracleContext) -> list[str]:
        try:
            listed = git(context.work_dir, "ls-files", "-co", "--exclude-standard", "-z")
            return [n for n in listed.stdout.split("\0") if n]
        except OSError:
            return list(context.changed_files)

    def evaluate(self, context: OracleContext) -> Signal | None:
        root = context.work_dir
        manifests = self.config["manifest_files"] or [
            m for m in DEFAULT_MANIFESTS if (root / m).exists()]
        problems: list[str] = []
        python: set[str] = set()
        node: set[str] = set()
        for name in manifests:
            declared = _read_manifest(root, name)
            if isinstance(declared, str):
                problems.append(declared)
                continue
            (node if Path(name).name == "package.json" else python).update(declared)
        has_py = any(Path(m).name != "package.json" for m in manifests)
        has_js = any(Path(m).name == "package.json" for m in manifests)
        if self.config["check_imports"] and not problems:
            problems += self._undeclared(context, has_py, python, has_js, node)
        if not problems:
            return None
        return Signal.block("dependencies: " + "; ".join(problems),
                            resolution_path=[f"fix: {p}" for p in problems],
                            type="dependencies", files=list(manifests))

    def _undeclared(self, context: OracleContext, has_py: bool, python: set[str],
                    has_js: bool, node: set[str]) -> list[str]:
        root = context.work_dir
        files = self._sources(context)
        local = {Path(f).parts[0].removesuffix(".py") for f in files}
        local |= {Path(f).parent.name for f in files if f.endswith("/__init__.py")}
        missing: dict[str, str] = {}
        for name in files:
            is_py = name.endswith(".py")
            if not ((is_py and has_py) or (name.endswith(_JS_SUFFIXES) and has_js)):
                continue
            text = _read_source(root, name)
            if text is None:
                continue
            found = (_missing_python(text, local, python) if is_py
                     else _missing_node(text, node))
            for mod in found:
                missing.setdefault(mod, name)
        return [f"{mod} (imported in {where}) is not declared in a manifest"
                for mod, where in sorted(missing.items())]


_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx")


def _read_manifest(root: Path, name: str) -> set[str] | str:
    """The names manifest ``name`` declares, or the problem (a sentence) reading it."""
    try:
        data = runtime.read_inside(root, runtime.relative_parts(name, "manifest"),
                                   MAX_MANIFEST_BYTES, what="manifest")
    except FileNotFoundError:
        return f"{name} is missing"
    except runtime.FileRefused as exc:
        return str(exc)
    except OSError as exc:
        return f"{name} cannot be read: {exc.strerror or exc}"
    try:
        return _declared(root / name, data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return f"{name} does not parse: {exc}"


def _read_source(root: Path, name: str) -> str | None:
    """A source file's text for the import scan; None when it is not readable inside."""
    try:
        return runtime.read_inside(root, runtime.relative_parts(name, "source"),
                                   MAX_SCAN_BYTES, what="source").decode("utf-8", "replace")
    except (OSError, runtime.FileRefused):
        return None


def _missing_python(text: str, local: set[str], python: set[str]) -> list[str]:
    """The third-party modules a Python file imports that no manifest declares, in order."""
    return sorted(mod for mod in _python_imports(text)
                  if not (mod in sys.stdlib_module_names or mod in local or mod == "__future__"
                          or _norm(IMPORT_TO_DIST.get(mod, mod)) in python))


def _missing_node(text: str, node: set[str]) -> list[str]:
    """The npm packages a JavaScript/TypeScript file imports that package.json lacks."""
    found = []
    for spec in _JS_IMPORT.findall(text):
        if spec.startswith((".", "/", "node:")):
            continue
        parts = spec.split("/")
        pkg = "/".join(parts[:2]) if spec.startswith("@") else parts[0]
        if pkg not in _NODE_BUILTINS and pkg not in node:
            found.append(pkg)
    return found


class PermissionChecker(Oracle):
    name = "PermissionChecker"
    options: ClassVar[Mapping[str, Option]] = {
        "dangerous_commands": Option((list,), ["rm -rf", "DROP TABLE", "git push --force"],
                                     "a list of strings"),
        "require_confirmation": Option((bool,), True, "true or false"),
        "tools": Option((list,), [], "a list of tool names (empty: every tool)"),
    }

    def evaluate(self, context: OracleContext) -> Signal | None:
        if self.config["tools"] and context.tool_name not in self.config["tools"]:
            return None
        texts = [t.lower() for t in strings(dict(context.tool_input))]
        hits = [d for d in self.config["dangerous_commands"]
                if any(d.lower() in t for t in texts)]
        if not hits:
            return None
        what = f"{context.tool_name or 'the call'} contains {', '.join(map(repr, hits))}"
        if self.config["require_confirmation"]:
            return Signal.prompt(f"dangerous operation: {what}; confirm before it runs",
                                 severity="high", type="permission",
                                 suggestions=["confirm with the user", "use a safer command"])
        return Signal.block(f"dangerous operation refused: {what}", type="permission",
                            resolution_path=["use a safer command"])
