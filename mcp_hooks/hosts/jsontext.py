"""A JSON config file edited in place: what an edit did not change keeps its bytes.

``render(text, new)``: ``text`` is a JSON document as the user wrote it, ``new`` the value it
must hold after an edit (``json.loads(text)`` with members or list items added, removed or
changed). Every value of ``new`` equal to the one at the same place in ``text`` (the same key;
in a list, the next equal item in order) is copied from ``text`` as written: its indentation,
spacing, line breaks, key order and escapes. What was added is written in the file's own
style (its indent unit and ``:`` spacing; one item per line, or all on one line where the
surrounding list or object is written on one line); what was removed takes its separator with
it. So ``install`` then ``uninstall`` gives a hand-formatted file back byte for byte, and an
``install`` changes only the lines of our entries.

A text that cannot be read so (not JSON, a key twice in one object, nested past the
recursion limit), or a result that would not read back as ``new``, is written whole instead:
``json.dumps(new, indent=2)``, as before this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp_hooks.errors import ConfigError

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


class _Unreadable(ConfigError, ValueError):
    """The text cannot be edited in place (the caller writes it whole)."""


@dataclass
class _Node:
    """One value of the text: where it is, and for a container its members or items."""

    start: int
    end: int
    value: Any
    keys: list[str] = field(default_factory=list)  # an object's keys, in order
    key_starts: list[int] = field(default_factory=list)  # where each member's key begins
    items: list[_Node] = field(default_factory=list)  # values of members or items


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _parse(text: str, pos: int) -> _Node:
    pos = _skip(text, pos)
    opener = text[pos:pos + 1]
    if opener not in ("{", "["):
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError as exc:
            raise _Unreadable(str(exc)) from None
        return _Node(pos, end, value)
    node = _Node(pos, pos, {} if opener == "{" else [])
    closer = "}" if opener == "{" else "]"
    pos = _skip(text, pos + 1)
    if text[pos:pos + 1] == closer:
        node.end = pos + 1
        return node
    while True:
        if opener == "{":
            pos = _skip(text, _member_key(text, pos, node))
            if text[pos:pos + 1] != ":":
                raise _Unreadable(f"expected ':' at offset {pos}")
            pos += 1
        item = _parse(text, pos)
        node.items.append(item)
        pos = _skip(text, item.end)
        if text[pos:pos + 1] == ",":
            pos = _skip(text, pos + 1)
            continue
        if text[pos:pos + 1] != closer:
            raise _Unreadable(f"expected {closer!r} at offset {pos}")
        node.end = pos + 1
        break
    node.value = (dict(zip(node.keys, [i.value for i in node.items], strict=True))
                  if opener == "{"
                  else [i.value for i in node.items])
    return node


def _member_key(text: str, pos: int, node: _Node) -> int:
    """Read the key at ``pos`` into ``node``; where it ends."""
    if text[pos:pos + 1] != '"':
        raise _Unreadable(f"expected a key at offset {pos}")
    key, end = _DECODER.raw_decode(text, pos)
    if key in node.keys:
        raise _Unreadable(f"the key {key!r} appears twice in one object")
    node.keys.append(key)
    node.key_starts.append(pos)
    return int(end)


def _same(one: Any, other: Any) -> bool:
    """Equal as JSON (``1``, ``1.0`` and ``true`` differ; key order counts)."""
    return json.dumps(one, ensure_ascii=False) == json.dumps(other, ensure_ascii=False)


def _line_indent(text: str, pos: int) -> str:
    """The whitespace that begins the line holding ``pos``."""
    begin = text.rfind("\n", 0, pos) + 1
    end = begin
    while end < pos and text[end] in " \t":
        end += 1
    return text[begin:end]


@dataclass(frozen=True)
class _Style:
    unit: str  # one level of indentation
    colon: str  # between a key and its value
    comma: str  # between the items of a list or object written on one line


class _Writer:
    """``new`` written over the parsed ``text``, reusing what did not change."""

    def __init__(self, text: str, root: _Node) -> None:
        self.text = text
        self.style = _style(text, root)

    def fresh(self, value: Any, indent: str, inline: bool) -> str:
        if inline:
            return json.dumps(value, ensure_ascii=False,
                              separators=(self.style.comma, self.style.colon))
        dumped = json.dumps(value, indent=self.style.unit, ensure_ascii=False,
                            separators=(",", self.style.colon))
        return dumped.replace("\n", "\n" + indent)

    def value(self, node: _Node, new: Any, indent: str, inline: bool) -> str:
        if _same(node.value, new):
            return self.text[node.start:node.end]
        if isinstance(node.value, dict) and isinstance(new, dict) and node.items:
            return self.container(node, list(new.items()), indent)
        if isinstance(node.value, list) and isinstance(new, list) and node.items:
            return self.container(node, self._paired(node, new), indent)
        return self.fresh(new, indent, inline)

    def _paired(self, node: _Node, new: list[Any]) -> list[tuple[int | None, Any]]:
        """Each new item with the old item it continues (the next equal one in order, else
        the next old container of its kind, changed), or None: a new item."""
        pairs: list[tuple[int | None, Any]] = []
        olds = [i.value for i in node.items]
        j = 0
        for item in new:
            k = next((k for k in range(j, len(olds)) if _same(olds[k], item)), None)
            if k is None and j < len(olds) and type(olds[j]) is type(item) \
                    and isinstance(item, (dict, list)) \
                    and not any(_same(o, item) for o in olds[j + 1:]):
                k = j
            if k is None:
                pairs.append((None, item))
                continue
            pairs.append((k, item))
            j = k + 1
        return pairs

    def container(self, node: _Node, new: list[tuple[Any, Any]], indent: str) -> str:
        """An object (``new``: key, value) or list (``new``: old index or None, value)."""
        text, is_object = self.text, isinstance(node.value, dict)
        opener, closer = ("{", "}") if is_object else ("[", "]")
        if not new:
            return opener + closer
        first = node.key_starts[0] if is_object else node.items[0].start
        last = node.items[-1].end
        lead, tail = text[node.start + 1:first], text[last:node.end - 1]
        seps = [text[node.items[i].end:(node.key_starts[i + 1] if is_object
                                        else node.items[i + 1].start)]
                for i in range(len(node.items) - 1)]
        inline = "\n" not in lead
        inner = lead[lead.rfind("\n") + 1:] if not inline else indent
        typical = seps[0] if seps else (self.style.comma if inline else ",\n" + inner)
        out = [opener, lead]
        for at, (place, value) in enumerate(new):
            index = _index(node, place)
            if at:  # the separator that followed the previous item, if it was an old one
                previous = _index(node, new[at - 1][0])
                out.append(seps[previous] if previous is not None and previous < len(seps)
                           else typical)
            out.append(self._item(node, index, place if is_object else None, value, inner,
                                  inline))
        out += [tail, closer]
        return "".join(out)

    def _item(self, node: _Node, index: int | None, key: str | None, value: Any, inner: str,
              inline: bool) -> str:
        if index is None:
            head = "" if key is None else json.dumps(key, ensure_ascii=False) + self.style.colon
            return head + self.fresh(value, inner, inline)
        item = node.items[index]
        begin = node.key_starts[index] if key is not None else item.start
        head = self.text[begin:item.start]
        return head + self.value(item, value, _line_indent(self.text, item.start), inline)


def _index(node: _Node, place: Any) -> int | None:
    """The old position of a new member (by key) or item (given); None: a new one."""
    if isinstance(node.value, dict):
        return node.keys.index(place) if place in node.keys else None
    return place if isinstance(place, int) else None


def _style(text: str, root: _Node) -> _Style:
    """The file's indent unit, ``:`` spacing and one-line ``,`` spacing, read off its top
    object (two spaces, ``": "`` and ``", "`` where it shows none)."""
    unit, colon, comma = "  ", ": ", ", "
    if root.items and isinstance(root.value, dict):
        lead = text[root.start + 1:root.key_starts[0]]
        if "\n" in lead:
            unit = lead[lead.rfind("\n") + 1:] or unit
        elif len(root.items) > 1 and "\n" not in text[root.items[0].end:root.key_starts[1]]:
            comma = text[root.items[0].end:root.key_starts[1]]
        key_end = _DECODER.raw_decode(text, root.key_starts[0])[1]
        between = text[key_end:root.items[0].start]
        if "\n" not in between:
            colon = between
    return _Style(unit, colon, comma)


def render(text: str, new: Any) -> str:
    """``new`` as JSON text, reusing ``text`` wherever the two agree (see the module)."""
    whole = json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    if not text.strip():
        return whole
    try:
        root = _parse(text, 0)
        if text[_skip(text, root.end):].strip():
            return whole
        writer = _Writer(text, root)
        body = writer.value(root, new, _line_indent(text, root.start), inline=False)
        result = text[:root.start] + body + text[root.end:]
    except (ValueError, RecursionError):  # _Unreadable, or a bad string escape
        return whole
    try:
        if not _same(json.loads(result), new):
            return whole
    except ValueError:
        return whole
    return result


__all__ = ["render"]
