"""Editing one array of a JSON document in its text, so the rest keeps its bytes.

An eval set under review must not churn when a case is added, replaced or removed:
the other cases keep their exact text (key order, indentation, number spelling,
unknown fields), and only the edited element is written, in the indentation the file
already uses. `ArrayText` finds the array (by its key path from the root) and the
span of each element; its edits return the new document text.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from assay.errors import InputError

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"
# An escaped character past ASCII (a control character's escape says nothing).
_HIGH_ESCAPE = re.compile(r"\\u(?!00[0-7][0-9a-fA-F])[0-9a-fA-F]{4}")


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _value_end(text: str, i: int, file: str) -> int:
    try:
        return _DECODER.raw_decode(text, i)[1]
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", file=file) from None


def _member(text: str, start: int, key: str, file: str) -> int:
    """The index of `key`'s value in the object starting at `start`."""
    i = _skip(text, start + 1)
    while i < len(text) and text[i] != "}":
        name, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if text[i] != ":":
            raise InputError(f"not valid JSON: ':' expected at offset {i}", file=file)
        i = _skip(text, i + 1)
        if name == key:
            return i
        i = _skip(text, _value_end(text, i, file))
        if text[i] == ",":
            i = _skip(text, i + 1)
    raise InputError(f"no {key!r} key", file=file)


def _line_indent(text: str, i: int) -> str:
    line_start = text.rfind("\n", 0, i) + 1
    j = line_start
    while j < i and text[j] in " \t":
        j += 1
    return text[line_start:j]


def replaced(text: str, spans: Sequence[tuple[int, int]], new: Mapping[int, str]) -> str:
    """`text` with the elements at `spans` whose index `new` names replaced by its text."""
    out, at = [], 0
    for index, (start, end) in enumerate(spans):
        if index in new:
            out += [text[at:start], new[index]]
            at = end
    out.append(text[at:])
    return "".join(out)


@dataclass(frozen=True)
class ArrayText:
    """An array inside a JSON document: its brackets and its elements' spans."""

    text: str
    file: str
    open_at: int  # index of "["
    close_at: int  # index of "]"
    spans: tuple[tuple[int, int], ...]

    @classmethod
    def find(cls, text: str, path: Sequence[str], file: str) -> ArrayText:
        """The array at `path` (keys from the root; empty: the root is the array)."""
        i = _skip(text, 0)
        for key in path:
            if i >= len(text) or text[i] != "{":
                raise InputError(f"expected an object holding {key!r}", file=file)
            i = _member(text, i, key, file)
        if i >= len(text) or text[i] != "[":
            where = ".".join(path) or "the document"
            raise InputError(f"{where} is not an array", file=file)
        spans: list[tuple[int, int]] = []
        j = _skip(text, i + 1)
        while j < len(text) and text[j] != "]":
            end = _value_end(text, j, file)
            spans.append((j, end))
            j = _skip(text, end)
            if j < len(text) and text[j] == ",":
                j = _skip(text, j + 1)
        if j >= len(text):
            raise InputError("not valid JSON: an unclosed array", file=file)
        return cls(text, file, i, j, tuple(spans))

    def element(self, index: int) -> str:
        start, end = self.spans[index]
        return self.text[start:end]

    # -- the file's layout --------------------------------------------------------------

    @functools.cached_property
    def _indent_unit(self) -> str | None:
        return self.indent_unit()

    def indent_unit(self) -> str | None:
        """The file's indentation step (None: the document is on one line)."""
        lines = self.text.split("\n")
        for line in lines[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                return line[: len(line) - len(stripped)]
        return None

    @functools.cached_property
    def ascii_only(self) -> bool:
        """Whether the file escapes non-ASCII text (`\\u00e9`) rather than writing it."""
        return self.text.isascii() and bool(_HIGH_ESCAPE.search(self.text))

    @functools.cached_property
    def newline(self) -> str:
        """The file's line ending (a new element's lines end as the others' do)."""
        return "\r\n" if "\r\n" in self.text else "\n"

    def element_indent(self) -> str:
        if self.spans:
            return _line_indent(self.text, self.spans[0][0])
        return _line_indent(self.text, self.open_at) + (self._indent_unit or "")

    def render(self, value: object) -> str:
        """`value` as JSON laid out as this file's elements are."""
        unit = self._indent_unit
        ascii_only = self.ascii_only
        if unit is None:
            return json.dumps(value, ensure_ascii=ascii_only)
        indent: int | str = len(unit) if set(unit) == {" "} else unit
        dumped = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
        return dumped.replace("\n", self.newline + self.element_indent())

    # -- edits -------------------------------------------------------------------------

    def _separator(self) -> str:
        """What separates two elements (the file's own, or from its layout)."""
        if len(self.spans) >= 2:
            return self.text[self.spans[0][1] : self.spans[1][0]]
        if self._indent_unit is None:
            return ", "
        return "," + self.newline + self.element_indent()

    def append(self, element: str) -> str:
        if self.spans:
            at = self.spans[-1][1]
            return self.text[:at] + self._separator() + element + self.text[at:]
        if self._indent_unit is None:
            inner = element
        else:
            closing = self.newline + _line_indent(self.text, self.open_at)
            inner = self.newline + self.element_indent() + element + closing
        return self.text[: self.open_at + 1] + inner + self.text[self.close_at :]

    def append_all(self, elements: Sequence[str]) -> str:
        """The text with `elements` after the last element, each separated as the file's."""
        return self.append(self._separator().join(elements)) if elements else self.text

    def replace(self, index: int, element: str) -> str:
        start, end = self.spans[index]
        return self.text[:start] + element + self.text[end:]

    def remove(self, index: int) -> str:
        start, end = self.spans[index]
        if len(self.spans) == 1:
            return self.text[: self.open_at + 1] + self.text[self.close_at :]
        if index == len(self.spans) - 1:
            return self.text[: self.spans[index - 1][1]] + self.text[end:]
        return self.text[:start] + self.text[self.spans[index + 1][0] :]
