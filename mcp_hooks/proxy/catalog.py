"""What the proxy serves: the union of its upstreams' tools, prompts, resources and templates,
and the route from each name the client sees back to its upstream.

Names: a tool or prompt name two configured upstreams share gets the ``<server>__`` prefix on
both (``prefix_all`` prefixes every one); a name still taken after that is hidden, with one
warning. Resources keep their URIs: the first upstream to list one wins, and
``STATUS_URI`` (the proxy's own status) always wins. A URI no upstream lists goes to the
upstream whose template matches it, else to the only upstream that serves resources.

A name the client sees, and so the name hooks match (``a__write_file``), must not change
because another upstream is down: a hook written for it would stop applying. So whether a
name collides is decided over every configured upstream, by the names each one listed last:
in this run, kept after it dies, and, for one that has not come up in this run (starting,
failed), the names it listed in an earlier run, which ``NameMemory`` keeps in
``$XDG_STATE_HOME/mcp-hooks/proxy-names.json`` (per upstream name and set of configured
names). Only an upstream never seen up at all counts for nothing: until it first lists, the
others' names are what they would be without it. Only live listings are served and routed.

``rebuild`` recomputes everything from the upstreams' last listings (on start, on every
list change and restart); between rebuilds the catalog is read-only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from mcp_hooks import paths
from mcp_hooks.proxy.upstream import Upstream

logger = logging.getLogger("mcp_hooks.proxy")

STATUS_URI = "hooks://proxy/status"

Route = tuple[Upstream, str]
"""An upstream and the item's own name there."""

_Named = TypeVar("_Named", types.Tool, types.Prompt)


MEMORY_FILE = "proxy-names.json"
_MEMORY_CAP = 1 << 20  # bytes of the memory file read at most
_MEMORY_UPSTREAMS = 256  # upstreams remembered; the least recently listed go first
_MEMORY_NAMES = 4096  # names remembered per upstream and kind

Names = dict[str, list[str]]
"""``{"tools": [...], "prompts": [...]}``: the names one upstream listed."""


class NameMemory:
    """The tool and prompt names each upstream listed last, kept across runs in one JSON
    file, so that an upstream down at the start still counts for the collisions it had.

    Never fails the proxy: a file that cannot be read (missing, not a regular file, too big,
    not this shape) is an empty memory, and a write that fails is skipped.

    Args:
        path: the file; None keeps the memory in this process only.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._names: dict[str, Names] | None = None

    @classmethod
    def default(cls) -> NameMemory:
        """The memory in ``$XDG_STATE_HOME/mcp-hooks``."""
        return cls(paths.state_dir() / MEMORY_FILE)

    @staticmethod
    def key(upstream: str, configured: Sequence[str]) -> str:
        """One upstream among one set of configured upstreams."""
        return f"{upstream} of {','.join(sorted(configured))}"

    def recall(self, key: str) -> Names | None:
        """The names last remembered for ``key``, or None."""
        return self._load().get(key)

    def remember(self, key: str, names: Names) -> None:
        """Keep ``names`` for ``key``; the file is written only when they changed."""
        memory = self._load()
        if memory.get(key) == names:
            return
        memory.pop(key, None)
        memory[key] = names  # last: the most recently listed
        while len(memory) > _MEMORY_UPSTREAMS:
            del memory[next(iter(memory))]
        if self.path is not None:
            on_disk = self._read()  # other proxies' upstreams too; this one's wins
            on_disk.pop(key, None)
            self._names = memory = {**{k: v for k, v in on_disk.items() if k not in memory},
                                    **memory}
            self._write(memory)

    def _load(self) -> dict[str, Names]:
        if self._names is None:
            self._names = self._read()
        return self._names

    def _read(self) -> dict[str, Names]:
        if self.path is None:
            return {}
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return {}
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size > _MEMORY_CAP:
                return {}  # a FIFO or a device would never end; an oversized file is not ours
            data = json.loads(os.read(fd, _MEMORY_CAP) or b"{}")
        except (OSError, ValueError, RecursionError):
            return {}
        finally:
            os.close(fd)
        if not isinstance(data, dict):
            return {}
        return {str(k): v for k, v in data.items() if _names_shape(v)}

    def _write(self, memory: dict[str, Names]) -> None:
        assert self.path is not None
        text = json.dumps(memory, ensure_ascii=True, sort_keys=False)
        if len(text) > _MEMORY_CAP:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".proxy-names-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="ascii") as f:
                    f.write(text)
                os.replace(temp, self.path)  # readers see the old file or the new, whole
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError as exc:
            logger.debug("cannot remember the upstreams' names in %s: %s", self.path, exc)


def _names_shape(value: Any) -> bool:
    return (isinstance(value, dict) and set(value) == {"tools", "prompts"}
            and all(isinstance(v, list) and all(isinstance(n, str) for n in v)
                    for v in value.values()))


@dataclass
class Catalog:
    """The aggregated listings and their routes.

    Attributes:
        prefix_all: prefix every tool and prompt ``<server>__``, not only colliding ones.
        memory: the names of upstreams not up in this run (see the module's docstring);
            None: in this process only.
    """

    prefix_all: bool = False
    memory: NameMemory = field(default_factory=lambda: NameMemory(None))
    tools: list[types.Tool] = field(default_factory=list)
    tool_routes: dict[str, Route] = field(default_factory=dict)
    prompts: list[types.Prompt] = field(default_factory=list)
    prompt_routes: dict[str, Route] = field(default_factory=dict)
    resources: list[types.Resource] = field(default_factory=list)
    resource_routes: dict[str, Upstream] = field(default_factory=dict)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    template_routes: list[tuple[UriTemplate | None, str, Upstream]] = field(
        default_factory=list)
    _hidden: set[str] = field(default_factory=set)

    def rebuild(self, upstreams: Sequence[Upstream]) -> None:
        """Recompute what the proxy serves from its upstreams' listings."""
        names = self._names(upstreams)
        self.tools, self.tool_routes = self._aggregate(
            "tool", [(u, u.listing.tools) for u in upstreams], names["tools"])
        self.prompts, self.prompt_routes = self._aggregate(
            "prompt", [(u, u.listing.prompts) for u in upstreams], names["prompts"])
        resources: list[types.Resource] = []
        routes: dict[str, Upstream] = {}
        templates: list[types.ResourceTemplate] = []
        template_routes: list[tuple[UriTemplate | None, str, Upstream]] = []
        for upstream in upstreams:
            for resource in upstream.listing.resources:
                if resource.uri in routes or resource.uri == STATUS_URI:
                    self._warn_hidden(f"resource {resource.uri} of {upstream.name} is hidden "
                                      "by an earlier one")
                    continue
                routes[resource.uri] = upstream
                resources.append(resource)
            for template in upstream.listing.templates:
                try:
                    parsed: UriTemplate | None = UriTemplate.parse(template.uri_template)
                except InvalidUriTemplate:
                    parsed = None
                template_routes.append((parsed, template.uri_template, upstream))
                templates.append(template)
        self.resources, self.resource_routes = resources, routes
        self.templates, self.template_routes = templates, template_routes

    def _names(self, upstreams: Sequence[Upstream]) -> dict[str, Counter[str]]:
        """How many configured upstreams have each tool and prompt name: by the listing of
        those up in this run (remembered), by memory for the others."""
        configured = [u.name for u in upstreams]
        counts: dict[str, Counter[str]] = {"tools": Counter(), "prompts": Counter()}
        for upstream in upstreams:
            key = NameMemory.key(upstream.name, configured)
            names: Names | None
            if upstream.capabilities is not None:  # it has listed in this run
                names = {"tools": [t.name for t in upstream.listing.tools],
                         "prompts": [p.name for p in upstream.listing.prompts]}
                if len(upstreams) > 1:  # alone, it collides with nothing: nothing to keep
                    self.memory.remember(key, {kind: sorted(set(named))[:_MEMORY_NAMES]
                                               for kind, named in names.items()})
            else:
                names = self.memory.recall(key)
            for kind, named in (names or {}).items():
                counts[kind].update(set(named))
        return counts

    def _aggregate(
        self, kind: str, items: list[tuple[Upstream, Sequence[_Named]]], counts: Counter[str]
    ) -> tuple[list[_Named], dict[str, Route]]:
        out: list[_Named] = []
        routes: dict[str, Route] = {}
        for upstream, group in items:
            for item in group:
                prefixed = self.prefix_all or counts[item.name] > 1
                exposed = upstream.spec.prefix + item.name if prefixed else item.name
                if exposed in routes:
                    self._warn_hidden(f"{kind} {exposed!r} of {upstream.name} is hidden by the "
                                      f"one of {routes[exposed][0].name}")
                    continue
                routes[exposed] = (upstream, item.name)
                out.append(item if exposed == item.name else
                           item.model_copy(update={"name": exposed}))
        return out, routes

    def _warn_hidden(self, what: str) -> None:
        if what not in self._hidden:
            self._hidden.add(what)
            logger.warning("%s", what)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The upstream's input schema of the tool the client calls ``name``."""
        route = self.tool_routes.get(name)
        if route is None:
            return None
        for tool in route[0].listing.tools:
            if tool.name == route[1]:
                return tool.input_schema
        return None

    def resource_owner(self, uri: str, upstreams: Sequence[Upstream]) -> Upstream | None:
        """The upstream that serves ``uri`` (see the module's docstring), or None."""
        owner = self.resource_routes.get(uri)
        if owner is not None:
            return owner
        for template, _, upstream in self.template_routes:
            if template is not None and template.match(uri) is not None:
                return upstream
        able = [u for u in upstreams
                if u.capabilities is not None and u.capabilities.resources is not None]
        return able[0] if len(able) == 1 else None

    def template_owner(self, uri_template: str) -> Upstream | None:
        """The upstream that lists this resource template (completion requests name it)."""
        return next((u for _, text, u in self.template_routes if text == uri_template), None)
