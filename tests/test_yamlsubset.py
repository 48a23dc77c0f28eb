"""The fast frontmatter reader agrees with PyYAML wherever it answers, and declines the rest."""

from __future__ import annotations

import pytest
import yaml

from mcp_hooks import yamlsubset

AGREES = [
    "name: a\ndescription: Blocks things, carefully.\ntrigger: before_tool\n",
    "timeout: 5000\npriority: 0\nasync: true\nflag: False\nnothing: null\ntilde: ~\n",
    "matcher:\n  tool: Shell\n  pattern: 'rm -rf /|mkfs'\n",
    "matcher:\n    tool: \"Write|Edit\"\nmetadata:\n    on_error: block\n",
    "# a comment line\nname: x\n\nempty:\nafter: 1\n",
    "quote: 'it''s fine'\nneg: -5\nplus: +7\n",
]
DECLINES = [
    "name: [a, b]\n", "list:\n  - a\n", "text: |\n  block\n", "a: &x 1\nb: *x\n",
    "v: 1.5\n", "d: 2024-01-01\n", "b: yes\n", "o: on\n", "c: value # comment\n",
    "e: \"esc\\n\"\n", "m:\n  n:\n    deep: 1\n", "dup: 1\ndup: 2\n", "t:\tx\n",
    "x: 0x1F\n", "x: 010\n", "long: first line\n  continued here\n", "k: a: b\n",
    "m:\n  a: 1\n   b: 2\n", "x: !!str 5\n", "x: .5\n", "x: 1_000\n",
]


@pytest.mark.parametrize("text", AGREES)
def test_agrees_with_pyyaml(text: str) -> None:
    assert yamlsubset.load(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", DECLINES)
def test_declines_what_it_does_not_know(text: str) -> None:
    assert yamlsubset.load(text) is None
