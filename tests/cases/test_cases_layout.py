"""The text editor under `assay cases` on generated documents: element spans, the
file's layout for new elements, and add-then-remove giving back the bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.cases import list_cases, remove_case
from assay.cases.api import add_cases
from assay.cases.jsonedit import ArrayText, replaced
from assay.cases.sources import Played
from assay.cases.target import LinesText
from assay.core.cases import Turn, UserInput
from assay.formats import load

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_SCALAR = st.none() | st.booleans() | st.integers() | _TEXT
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_ELEMENT = st.dictionaries(_TEXT, _VALUE, max_size=4)
_INDENT = st.sampled_from([None, 1, 2, 4, "\t"])


def _document(elements: list[object], indent: int | str | None, ascii_only: bool) -> str:
    return json.dumps({"before": "[", "eval_cases": elements, "after": "]"}, indent=indent,
                      ensure_ascii=ascii_only)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    elements=st.lists(_ELEMENT, max_size=4),
    new=_ELEMENT,
    indent=_INDENT,
    ascii_only=st.booleans(),
)
def test_spans_append_and_remove_on_generated_documents(
    elements: list[object], new: dict[str, object], indent: int | str | None, ascii_only: bool
) -> None:
    text = _document(elements, indent, ascii_only)
    arr = ArrayText.find(text, ["eval_cases"], "f")
    assert [json.loads(arr.element(i)) for i in range(len(arr.spans))] == elements
    added = arr.append(arr.render(new))
    assert json.loads(added)["eval_cases"] == [*elements, new]
    after = ArrayText.find(added, ["eval_cases"], "f")
    # the elements that were there keep their text
    assert [after.element(i) for i in range(len(elements))] == [
        arr.element(i) for i in range(len(elements))
    ]
    # laid out as the document is: the same as a dump of the whole with the new element
    if elements:
        assert added == _document([*elements, new], indent, arr.ascii_only)
    assert after.remove(len(elements)) == text
    if elements:
        replaced = arr.replace(0, arr.render(new))
        assert json.loads(replaced)["eval_cases"] == [new, *elements[1:]]


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(_ELEMENT, max_size=4), new=_ELEMENT, crlf=st.booleans())
def test_json_lines_keep_their_lines(
    rows: list[object], new: dict[str, object], crlf: bool
) -> None:
    newline = "\r\n" if crlf else "\n"
    text = "".join(json.dumps(r, ensure_ascii=False) + newline for r in rows)
    lines = LinesText(text, "f")
    assert [json.loads(lines.element(i)) for i in range(len(lines.spans))] == rows
    added = LinesText(lines.append(lines.render(new)), "f")
    assert [json.loads(added.element(i)) for i in range(len(added.spans))] == [*rows, new]
    assert added.remove(len(rows)) == text
    if rows:
        swapped = replaced(text, lines.spans, {0: lines.render(new)})
        assert [json.loads(line) for line in swapped.split(newline) if line] == [new, *rows[1:]]
        assert swapped.endswith(newline)


def _played(text: str = "Hello\u2028there") -> Played:
    return Played("c1", [Turn(user_input=UserInput(text=text), final_response="Hi.")], "test")


def test_crlf_files_keep_their_line_endings(tmp_path: Path) -> None:
    target = tmp_path / "crlf.evalset.json"
    original = b'{\r\n  "eval_set_id": "crlf",\r\n  "eval_cases": []\r\n}\r\n'
    target.write_bytes(original)
    add_cases(target, [_played()])
    written = target.read_bytes()
    assert b"\n" not in written.replace(b"\r\n", b"")  # every line ends in CRLF
    assert [c.id for c in load(target).cases] == ["c1"]
    remove_case(target, ["c1"])
    assert target.read_bytes() == original


def test_json_lines_with_line_separators_in_strings(tmp_path: Path) -> None:
    target = tmp_path / "rows.jsonl"
    row = {"id": "r0", "prompt": "one\u2028two\u0085three", "reference": "ok"}
    original = json.dumps(row, ensure_ascii=False) + "\n"
    target.write_text(original, encoding="utf-8")
    assert [c.id for c in list_cases(target)[1]] == ["r0"]
    add_cases(target, [_played()])
    assert [c.id for c in load(target).cases] == ["r0", "c1"]
    remove_case(target, ["c1"])
    assert target.read_text(encoding="utf-8") == original


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "is a folder"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"eval_set_id": "x", "eval_cases": {"a": 1}}', "eval_cases"),
        (b'{"eval_set_id": "x", "eval_cases": [1, 2]}', "x.evalset.json"),
        (b"[1, 2", "not valid JSON"),
    ],
)
def test_files_that_are_not_eval_sets_are_refused_by_name(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    from typer.testing import CliRunner

    from assay.cli import app

    target = tmp_path / "x.evalset.json"
    if content is None:
        target.mkdir()
    else:
        target.write_bytes(content)
    for args in (["list", str(target)], ["rm", str(target), "a"]):
        result = CliRunner().invoke(app, ["cases", *args])
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
    if content is not None:
        assert target.read_bytes() == content
