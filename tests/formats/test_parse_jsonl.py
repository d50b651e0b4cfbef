"""Reading JSONL (`_common.parse_jsonl`): values, line ends, blank lines, located errors."""

from __future__ import annotations

import gc
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import InputError
from assay.formats._common import parse_jsonl


def _reference(text: str, file: str) -> list[Any]:
    """The plain definition: split at LF / CRLF / CR, skip blank lines, `json.loads` each."""
    rows = []
    for lineno, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON: {exc.msg} at column {exc.colno}", file=file, path=f"line {lineno}"
            ) from None
    return rows


def _outcome(text: str, parse: Any) -> tuple[str, Any]:
    try:
        return "ok", parse(text, "f")
    except InputError as exc:
        return "error", str(exc)


def test_values_of_every_kind_and_blank_lines() -> None:
    text = '{"a": 1}\n\n  [1, 2]  \n"s"\n\t\n3.5\nnull\ntrue\n{}\n'
    assert parse_jsonl(text, "f") == [{"a": 1}, [1, 2], "s", 3.5, None, True, {}]


def test_crlf_and_bare_cr_line_ends() -> None:
    assert parse_jsonl('{"a": 1}\r\n{"a": 2}\r\n', "f") == [{"a": 1}, {"a": 2}]
    assert parse_jsonl('{"a": 1}\r{"a": 2}\r', "f") == [{"a": 1}, {"a": 2}]


def test_unicode_separators_inside_strings_do_not_end_lines() -> None:
    text = json.dumps({"t": "a\u2028b\x85c\u2029d"}, ensure_ascii=False) + "\n"
    assert parse_jsonl(text, "f") == [{"t": "a\u2028b\x85c\u2029d"}]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"a": 1}\n\n{"a": 1} {"b": 2}\n', "line 3", "Extra data at column 10"),
        ('{"a": 1}\n{"a":\n1}\n', "line 2", "Expecting value at column 6"),
        ("1\n\ufeff2\n", "line 2", "Unexpected UTF-8 BOM"),
        ("1\n\x0c2\n", "line 2", "Expecting value at column 1"),
        ("[1,]\n", "line 1", "Expecting value at column 4"),
    ],
)
def test_bad_lines_are_located(text: str, where: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)) as info:
        parse_jsonl(text, "rows.jsonl")
    assert info.value.file == "rows.jsonl"
    assert info.value.path == where
    assert gc.isenabled()


def test_a_line_opening_brackets_deeper_than_the_recursion_limit_is_located() -> None:
    # Read in place, line 1 would run on through every later line: still a line-1 error.
    with pytest.raises(InputError, match="Expecting value at column 2") as info:
        parse_jsonl("[\n" * 5000, "rows.jsonl")
    assert info.value.path == "line 1"


def test_values_after_a_line_without_newline_and_around_blank_lines() -> None:
    assert parse_jsonl('\n\n{"a": [1,\t2]}  \n\t"x"', "f") == [{"a": [1, 2]}, "x"]


def test_whitespace_only_lines_of_any_kind_are_skipped() -> None:
    # str.strip() whitespace outside JSON's set still makes a blank line, as before.
    assert parse_jsonl("1\n\u00a0\u3000\n2\n", "f") == [1, 2]


_JSONISH = st.text(
    alphabet='{}[]",:-.0123456789eE \t\r\n\x0c\u00a0\u2028\ufefftrufalsn\\', max_size=40
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(_JSONISH)
def test_agrees_with_the_plain_definition_on_arbitrary_text(text: str) -> None:
    assert _outcome(text, parse_jsonl) == _outcome(text, _reference)


@settings(max_examples=100, deadline=None)
@given(st.lists(_VALUES, max_size=6), st.sampled_from(["\n", "\r\n", "\r", "\n\n", " \n\t"]))
def test_reads_back_what_json_dumps_writes(values: list[Any], end: str) -> None:
    text = "".join(json.dumps(v, ensure_ascii=False) + end for v in values)
    assert parse_jsonl(text, "f") == values
