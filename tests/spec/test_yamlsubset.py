"""The fast frontmatter reader agrees with PyYAML wherever it answers, and declines the rest.

``yamlsubset.load`` answers a mapping or None ("not mine: ask PyYAML"). The contract is a
differential one: where it answers, the answer is exactly ``yaml.safe_load``'s (same keys in
the same order, same values of the same types), under both the pure-Python and the C loader.
It is checked over

- hand-picked texts on both sides of the subset's edge (``AGREES``, ``DECLINES``);
- every HOOK.md frontmatter we ship or document: the bundled library
  (``hooks/*/HOOK.md``), any ``examples/**/HOOK.md`` and ``tests/**/HOOK.md``,
  the HOOK.md examples in README.md and ``docs/*.md``, and what ``mcp-hooks new`` and the
  tests' ``write_hook`` write;
- a generated corpus: documents built only from the subset, which must be *answered* (so the
  fast path cannot pass by declining everything), and documents that mix in what the subset
  declines (lists, block scalars, flow collections, anchors, floats, dates, trailing
  comments, tabs, deeper nesting, duplicate keys, YAML 1.1 booleans), where declining is fine.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_hooks.cli import main as cli_main
from mcp_hooks.spec import yamlsubset
from mcp_hooks.spec.hookfile import _FRONTMATTER
from tests.conftest import write_hook

REPO = Path(__file__).resolve().parents[2]
LOADERS = (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader))

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


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types and key order all the way down (1, 1.0 and True differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def assert_agrees(text: str) -> Any:
    """Check the contract on one text; the subset's answer (None when it declined)."""
    answer = yamlsubset.load(text)
    if answer is None:
        return None
    for loader in LOADERS:
        try:
            reference = yaml.load(text, Loader=loader)
        except yaml.YAMLError as exc:
            pytest.fail(f"yamlsubset answered {answer!r} where PyYAML ({loader.__name__}) "
                        f"refuses the text: {exc}\n--- text ---\n{text}")
        assert same(answer, reference), (
            f"yamlsubset and PyYAML ({loader.__name__}) disagree:\n{answer!r}\n{reference!r}\n"
            f"--- text ---\n{text}")
    return answer


@pytest.mark.parametrize("text", AGREES)
def test_agrees_with_pyyaml(text: str) -> None:
    assert yamlsubset.load(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", DECLINES)
def test_declines_what_it_does_not_know(text: str) -> None:
    assert yamlsubset.load(text) is None


# -- every frontmatter we ship or document ---------------------------------------------------

def frontmatter(text: str) -> str | None:
    """The frontmatter of a HOOK.md text as ``hookfile`` hands it to the reader."""
    found = _FRONTMATTER.match(text.removeprefix("\ufeff").replace("\r\n", "\n"))
    return found.group(1) if found else None


def shipped_hook_files() -> list[Path]:
    files = [*REPO.glob("hooks/*/HOOK.md"), *REPO.glob("examples/**/HOOK.md"),
             *REPO.glob("tests/**/HOOK.md")]
    return sorted(files)


_MARKDOWN_BLOCK = re.compile(r"^```(?:markdown|md)\n(---\n.*?)^```", re.S | re.M)


def documented_frontmatters() -> list[tuple[str, str]]:
    """The HOOK.md examples in README.md and docs/*.md, as (where, frontmatter)."""
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for n, block in enumerate(_MARKDOWN_BLOCK.findall(doc.read_text(encoding="utf-8"))):
            fm = frontmatter(block)
            if fm is not None:
                found.append((f"{doc.name}#{n}", fm))
    return found


@pytest.mark.parametrize("hook_file", shipped_hook_files(),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_hook_frontmatter(hook_file: Path) -> None:
    fm = frontmatter(hook_file.read_text(encoding="utf-8"))
    assert fm is not None, f"{hook_file}: no frontmatter"
    assert_agrees(fm)


def test_the_corpus_is_not_empty_and_the_subset_reads_most_of_it() -> None:
    files = shipped_hook_files()
    assert len(files) >= 7, files  # the seven bundled hooks at least
    answered = [f for f in files if yamlsubset.load(frontmatter(f.read_text()) or "")]
    # The bundled hooks are what the fast path is for: if it read none of them, the
    # differential test above would pass by declining everything.
    assert len(answered) >= 4, answered


def test_documented_hook_examples() -> None:
    documented = documented_frontmatters()
    assert documented, "README.md shows a HOOK.md example; none was found"
    for where, fm in documented:
        try:
            assert_agrees(fm)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from None


def test_generated_hook_files(tmp_path: Path) -> None:
    """What ``mcp-hooks new`` and the tests' ``write_hook`` write."""
    user_dir = tmp_path / "user"
    for args in (["plain", "--trigger", "session_start"],
                 ["tool", "--trigger", "before_tool", "--tool", "Shell", "--pattern", "rm -rf"],
                 ["escaped", "--trigger", "after_tool", "--pattern", r"\.py$", "--async"],
                 ["prio", "--trigger", "pre-tool-use", "--priority", "999"]):
        assert cli_main(["new", *args, "--user-dir", str(user_dir)]) == 0
    write_hook(user_dir, "fixture", extra="matcher:\n  tool: Shell\nmetadata:\n  on_error: block\n")
    files = sorted(user_dir.glob("*/HOOK.md"))
    assert len(files) == 5
    answered = 0
    for hook_file in files:
        fm = frontmatter(hook_file.read_text())
        assert fm is not None
        answered += assert_agrees(fm) is not None
    assert answered >= 4  # only the escaped pattern ("\\.py$") needs PyYAML


# -- a generated corpus ------------------------------------------------------------------------

_RESERVED = {"true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL",
             "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,11}", fullmatch=True).filter(
    lambda k: k not in _RESERVED)
INTS = st.one_of(st.integers(-10**12, 10**12).map(str),
                 st.integers(0, 10**6).map(lambda n: f"+{n}"))
BOOLS = st.sampled_from(["true", "True", "TRUE", "false", "False", "FALSE"])
NULLS = st.sampled_from(["null", "Null", "NULL", "~"])
_WORD = st.text(st.characters(codec="utf-8", categories=["L", "N"]), min_size=1, max_size=8)
_PUNCT = st.sampled_from([*".,;/|!?%@&*()[]{}<>=+-_'\"`$^\\", "", "", ""])
PLAIN = st.builds(
    lambda first, rest: first + rest,
    st.characters(categories=["L"]),
    st.lists(st.builds(lambda p, w, sep: p + w + sep, _PUNCT, _WORD,
                       st.sampled_from(["", " ", " "])), max_size=4).map("".join),
).map(str.rstrip).filter(
    lambda s: s not in _RESERVED and " #" not in s and ": " not in s and not s.endswith(":"))
_QUOTABLE = st.text(st.characters(codec="utf-8", exclude_characters="\n\r\t\"\\",
                                  exclude_categories=["Cc", "Cs", "Zl", "Zp"]), max_size=16)
SINGLE = _QUOTABLE.map(lambda s: "'" + s.replace("'", "''") + "'")
DOUBLE = _QUOTABLE.map(lambda s: '"' + s + '"')
SUBSET_SCALARS = st.one_of(INTS, BOOLS, NULLS, PLAIN, SINGLE, DOUBLE)
# Values at or past the subset's edge: YAML 1.1 types it leaves to PyYAML, escapes, flow
# collections, anchors, tags, trailing comments; and words a careless reader would take for
# a boolean or null that YAML reads as strings ("None", "y"). The subset declines most of them;
# where it answers, PyYAML must agree.
EDGE_VALUES = [
    *sorted(_RESERVED - {"true", "True", "TRUE", "false", "False", "FALSE", "null", "Null",
                         "NULL"}),
    "None", "NONE", "Nil", "y", "n", "1.5", ".5", "-2.0e3", ".inf", "-.Inf", ".NaN", "0x1F",
    "0o17", "010", "1_000", "0b101", "1:30", "2024-01-01", "2024-01-01T10:00:00Z", "<<", "=",
    '"esc\\n"', '"tab\\t"', "'open", "[a, b]", "{a: 1}", "[]", "{}", "&anchor 1", "*alias",
    "!!str 5", "value # comment", "a: b", "ends:", "@at", "`tick", "%pct", "- item", "|", ">",
    "|-\n  text", ">\n  folded\n  text", "? x",
]
OTHER_SCALARS = st.one_of(
    st.sampled_from(EDGE_VALUES),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(0, 10**4).map(lambda n: f"0{n}"),
    st.builds(lambda s, c: s + " #" + c, PLAIN, _WORD),
)


@st.composite
def documents(draw: st.DrawFn, *, only_subset: bool) -> str:
    """A frontmatter text: top-level ``key: value`` lines, one-level nested blocks, comment
    and blank lines. With ``only_subset`` False, exactly one line is at or past the subset's
    edge, so a wrong answer on that line is not hidden by another line's decline."""
    lines: list[str] = []
    keys = draw(st.lists(KEYS, min_size=1, max_size=8, unique=True))
    odd = -1 if only_subset else draw(st.integers(0, len(keys) - 1))
    for at, key in enumerate(keys):
        if draw(st.booleans()) and draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# a comment", "   # indented comment"])))
        gap = " " * draw(st.integers(1, 3))
        trailing = " " * draw(st.integers(0, 2))
        shapes = ["scalar", "scalar", "block", "empty"]
        if at == odd:
            shapes = ["odd scalar", "odd scalar", "odd scalar", "odd nested", "list", "deep",
                      "dup", "tab", "odd key"]
        shape = draw(st.sampled_from(shapes))
        if shape == "scalar":
            lines.append(f"{key}:{gap}{draw(SUBSET_SCALARS)}{trailing}")
        elif shape == "odd scalar":
            lines.append(f"{key}:{gap}{draw(OTHER_SCALARS)}{trailing}")
        elif shape == "empty":
            lines.append(f"{key}:{trailing}")
        elif shape in ("block", "odd nested"):
            lines.append(f"{key}:")
            indent = " " * draw(st.sampled_from([1, 2, 2, 4]))
            subs = draw(st.lists(KEYS, min_size=1, max_size=4, unique=True))
            odd_sub = draw(st.integers(0, len(subs) - 1)) if shape == "odd nested" else -1
            for n, sub in enumerate(subs):
                if draw(st.integers(0, 5)) == 0:
                    lines.append(indent + "# nested comment")
                value = draw(OTHER_SCALARS if n == odd_sub else SUBSET_SCALARS)
                lines.append(f"{indent}{sub}:{gap}{value}{trailing}")
        elif shape == "list":
            lines.append(f"{key}:")
            lines.extend(f"  - {draw(SUBSET_SCALARS)}" for _ in range(draw(st.integers(1, 3))))
        elif shape == "deep":
            lines += [f"{key}:", "  inner:", f"    leaf: {draw(SUBSET_SCALARS)}"]
        elif shape == "dup":
            lines += [f"{key}: 1", f"{key}: 2"]
        elif shape == "tab":
            lines.append(f"{key}:\t{draw(SUBSET_SCALARS)}")
        else:  # a key YAML 1.1 reads as a boolean or null
            lines.append(f"{draw(st.sampled_from(sorted(_RESERVED)))}: {draw(SUBSET_SCALARS)}")
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@pytest.mark.parametrize("value", EDGE_VALUES)
def test_every_edge_value_top_level_and_nested(value: str) -> None:
    assert_agrees(f"name: x\nkey: {value}\nafter: 1\n")
    assert_agrees(f"name: x\nblock:\n  a: 1\n  key: {value}\n")


GENERATED = settings(max_examples=300, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@given(text=documents(only_subset=True))
@GENERATED
def test_generated_subset_documents_are_answered_as_pyyaml_answers(text: str) -> None:
    answer = assert_agrees(text)
    assert answer is not None, f"yamlsubset declined a document inside its subset:\n{text}"


@given(text=documents(only_subset=False))
@GENERATED
def test_generated_mixed_documents_are_declined_or_answered_as_pyyaml_answers(
        text: str) -> None:
    assert_agrees(text)


def test_the_refused_characters_are_exactly_those_outside_yamls_printable_set() -> None:
    """``_NOT_YAML`` is written as the ranges outside YAML's printable set (compiled in a
    tenth of the time of the same class as ``[^...]``): the same set, code point by code
    point."""
    def printable(code: int) -> bool:  # YAML 1.1's c-printable, as the spec words it
        return (code in (0x09, 0x0A, 0x0D, 0x85) or 0x20 <= code <= 0x7E
                or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD
                or 0x10000 <= code <= 0x10FFFF)

    refused = [code for code in range(0x110000) if yamlsubset._NOT_YAML.match(chr(code))]
    assert refused == [code for code in range(0x110000) if not printable(code)]
