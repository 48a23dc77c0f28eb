"""``example_of``: the example command ``mcp-hooks new`` builds from a matcher regex, one row
per construct of the parse (pins the table the walk dispatches on)."""
from __future__ import annotations

import pytest

from mcp_hooks.cli.scaffold import example_of


@pytest.mark.parametrize(("pattern", "spaced", "unspaced"), [
    ("git push.*--force", "git push --force", "git push--force"),
    ("rm -rf /", "rm -rf /", "rm -rf /"),
    ("a[0-9]b", "a0b", "a0b"),
    ("[^x]y", "yy", "yy"),
    ("[^a]", "x", "x"),
    ("a|b", "a", "a"),
    ("(ab)+c", "abc", "abc"),
    ("x{3}", "xxx", "xxx"),
    ("^foo$", "foo", "foo"),
    ("\\d\\s\\w", "0 a", "0 a"),
    ("a(?=b)b", "ab", "ab"),
    ("[abc]*d", "d", "d"),
    ("a+?b", "ab", "ab"),
    ("(?>ab)c", "abc", "abc"),
    ("a\\bb", "ab", "ab"),
    ("x.*", "x", "x"),
    ("(?P<n>q)", "q", "q"),
    ("(a)\\1", None, None),  # a back-reference: no example is built
    ("(?(1)a|b)", None, None),
    ("(", None, None),  # not a pattern Python reads
])
def test_example_of_builds_the_shortest_plain_match(pattern: str, spaced: str | None,
                                                    unspaced: str | None) -> None:
    assert example_of(pattern) == spaced
    assert example_of(pattern, spaced=False) == unspaced
