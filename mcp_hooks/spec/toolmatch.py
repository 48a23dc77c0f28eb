"""A HOOK.md ``matcher`` (``tool``, ``pattern``), compiled once: which tool calls it admits.

The one implementation of the matcher rule, shared by a valid hook (``HookSpec.matches``)
and by a hook that did not load but whose HOOK.md declared a readable matcher
(``folders.InvalidHook``: its fault counts only on the calls its matcher admits).

- ``tool`` must match the whole tool name (``Shell`` does not match ``PowerShell``). A
  names-only one (``Bash|Shell``, ``LITERAL_TOOLS``) is a set, widened with the canonical
  names any host's table gives them (``vocabulary.also_named``: ``Bash`` -> ``Shell``), since
  every door renames a host's own tool before hooks see it; any other is an RE2 regex.
- ``pattern`` is searched in every string value of the input, at any depth.
- Both are matched in time linear in the input (``matching``); no matcher admits every call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mcp_hooks.spec import matching
from mcp_hooks.spec.vocabulary import also_named

LITERAL_TOOLS = re.compile(r"[A-Za-z0-9_\-]+(?:\|[A-Za-z0-9_\-]+)*")


@dataclass(frozen=True)
class ToolMatcher:
    """``matcher.tool`` and ``matcher.pattern`` as written (None: not given), compiled.

    Raises:
        matching.MatcherError: a regex that cannot be compiled.
    """

    tool: str | None = None
    pattern: str | None = None
    tool_names: frozenset[str] | None = field(default=None, init=False, compare=False)
    _tool_re: matching.Matcher | None = field(default=None, init=False, repr=False,
                                              compare=False)
    _pattern_re: matching.Matcher | None = field(default=None, init=False, repr=False,
                                                 compare=False)

    def __post_init__(self) -> None:
        if self.tool is not None:
            if LITERAL_TOOLS.fullmatch(self.tool):
                names = frozenset(self.tool.split("|"))
                object.__setattr__(self, "tool_names", names | also_named(names))
            else:
                object.__setattr__(self, "_tool_re", matching.compile_matcher(self.tool))
        if self.pattern is not None:
            object.__setattr__(self, "_pattern_re", matching.compile_matcher(self.pattern))

    @property
    def given(self) -> bool:
        return self.tool is not None or self._pattern_re is not None

    @property
    def tool_re(self) -> matching.Matcher | None:
        """The linear-time matcher of ``tool`` (compiled now for a names-only one)."""
        if self.tool is None:
            return None
        return self._tool_re or matching.compile_matcher(self.tool)

    def matches(self, tool_name: str | None, tool_input: Any) -> bool:
        """Whether this call is admitted (see the module doc)."""
        if self.tool_names is not None:
            if tool_name not in self.tool_names:
                return False
        elif self._tool_re is not None and (
            tool_name is None or not matching.fullmatch(self._tool_re, tool_name)
        ):
            return False
        return self._pattern_re is None or matching.search_strings(self._pattern_re, tool_input)


NO_MATCHER = ToolMatcher()
