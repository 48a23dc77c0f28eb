"""The patch reader the bundled guards share: every file a patch names, in either format."""

from __future__ import annotations

import pytest

from mcp_hooks.spec.patchtext import (
    MAX_STRINGS,
    TooManyValues,
    added_text,
    applies_patch,
    is_patch_tool,
    patch_paths,
    patch_strings,
)

ENVELOPE = """*** Begin Patch
*** Add File: a/new.txt
+hello
*** Update File: src/old.py
*** Move to: src/moved.py
@@
-x
+y
  *** delete file: gone.txt\r
*** End Patch
"""
UNIFIED = """diff --git a/one.py b/two.py
rename from one.py
rename to two.py
--- a/one.py\t2026-01-01
+++ b/two.py
--- /dev/null
+++ b/added.md
@@ -0,0 +1 @@
+++ not a header in a hunk? read as one: over-reading is the safe side
"""


def test_every_header_of_the_envelope_is_read() -> None:
    assert patch_paths(ENVELOPE) == ["a/new.txt", "src/old.py", "src/moved.py", "gone.txt"]


def test_every_header_of_a_unified_diff_is_read() -> None:
    paths = patch_paths(UNIFIED)
    assert paths[:7] == ["one.py", "two.py", "one.py", "two.py", "one.py", "two.py", "added.md"]
    assert "/dev/null" not in paths


def test_added_lines_without_headers() -> None:
    assert added_text(ENVELOPE) == "hello\ny"
    assert added_text("+++ b/x\n+secret\n-old\n") == "secret"


def test_every_string_of_an_input_is_read() -> None:
    value = {"patchText": "p1", "nested": [{"diff": "p2"}, 3, None, ["p3"]], "k": "p4"}
    assert sorted(patch_strings(value)) == ["p1", "p2", "p3", "p4"]
    assert patch_strings("whole") == ["whole"]


def test_too_many_values_are_refused_not_read_halfway() -> None:
    with pytest.raises(TooManyValues, match=str(MAX_STRINGS)):
        patch_strings({"many": list(range(MAX_STRINGS + 1))})


@pytest.mark.parametrize(("name", "expected"), [
    ("ApplyPatch", True), ("apply_patch", True), ("patch", True), ("mcp__x__apply_patch", True),
    ("Write", False), ("Bash", False), (None, False),
])
def test_patch_tools_by_name(name: object, expected: bool) -> None:
    assert is_patch_tool(name) is expected


def test_shell_commands_that_apply_a_patch() -> None:
    assert applies_patch("apply_patch <<'EOF'\n*** Begin Patch\nEOF")
    assert applies_patch("git apply fix.diff") and applies_patch("patch -p1 < fix.diff")
    assert not applies_patch("ls -la") and not applies_patch("dispatcher --run")
