"""Report cases written by worker processes to part files and appended to the `--out`
report by the kernel (`write_cases_part`, `JsonReportWriter.add_cases_part`): the same
report bytes as cases passed through the writing process, with or without
`copy_file_range`, and no part file left behind."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import orjson
import pytest

from assay.report import json_report
from assay.report.json_report import JsonReportWriter, write_cases_part

SUMMARY = {"case_count": 7}


def _cases(start: int, n: int) -> list[bytes]:
    return [
        orjson.dumps({"eval_id": f"c{i}", "text": "ü\n" * (i % 3)}) for i in range(start, start + n)
    ]


def _report(path: Path, *, parts: bool) -> bytes:
    writer = JsonReportWriter(path, run_id="r", eval_set_ids=["s"], metrics=["m"])
    batches = [_cases(0, 3), [], _cases(3, 1), _cases(4, 3)]
    for i, batch in enumerate(batches):
        if parts and i != 2:  # a batch sent as bytes between part files
            part = write_cases_part(str(writer.parts_directory()), batch)
            assert part is not None
            writer.add_cases_part(part)
        else:
            writer.add_encoded_cases(batch)
        if parts and writer._parts is not None:
            assert not list(writer._parts.iterdir())  # each part removed once appended
    writer.finish(SUMMARY)
    assert not list(path.parent.glob(".*parts*"))  # the part files' directory is gone
    return path.read_bytes()


def test_parts_make_the_same_report(tmp_path: Path) -> None:
    plain = _report(tmp_path / "a" / "plain.json", parts=False)
    with_parts = _report(tmp_path / "b" / "plain.json", parts=True)
    assert with_parts == plain
    assert [c["eval_id"] for c in json.loads(plain)["cases"]] == [f"c{i}" for i in range(7)]


@pytest.mark.parametrize("how", ["refused", "absent"])
def test_without_copy_file_range_the_bytes_are_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Another file system (EXDEV), an old kernel, another OS: copied through a buffer."""
    plain = _report(tmp_path / "a" / "r.json", parts=False)
    if how == "absent":
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    else:

        def refuse(*args: object) -> int:
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", refuse, raising=False)
    monkeypatch.setattr(json_report, "_COPY_CHUNK", 7)  # several reads per part
    assert _report(tmp_path / "b" / "r.json", parts=True) == plain


def test_a_copy_cut_short_goes_on_from_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _report(tmp_path / "a" / "r.json", parts=False)
    real = os.copy_file_range
    calls = []

    def once_then_refuse(src: int, dst: int, count: int, *rest: object) -> int:
        calls.append(count)
        if len(calls) % 2:
            return real(src, dst, min(count, 5))  # a short copy ...
        raise OSError(errno.EINVAL, "Invalid argument")  # ... then a refusal

    monkeypatch.setattr(os, "copy_file_range", once_then_refuse)
    assert _report(tmp_path / "b" / "r.json", parts=True) == plain
    assert calls


def test_discard_removes_the_parts(tmp_path: Path) -> None:
    writer = JsonReportWriter(tmp_path / "r.json", run_id="r", eval_set_ids=[], metrics=[])
    parts = writer.parts_directory()
    assert write_cases_part(str(parts), _cases(0, 2)) is not None
    writer.discard()
    assert not parts.exists()
    assert not (tmp_path / "r.json").exists()


def test_parts_left_by_a_killed_run_are_cleared(tmp_path: Path) -> None:
    first = JsonReportWriter(tmp_path / "r.json", run_id="r", eval_set_ids=[], metrics=[])
    left = write_cases_part(str(first.parts_directory()), _cases(0, 2))
    assert left is not None and Path(left[0]).exists()  # the process dies here
    again = JsonReportWriter(tmp_path / "r.json", run_id="r", eval_set_ids=[], metrics=[])
    assert list(again.parts_directory().iterdir()) == []
    again.finish(SUMMARY)


def test_a_part_that_cannot_be_written_is_sent_as_bytes(tmp_path: Path) -> None:
    """The worker sends the batch's cases as they are (the writing process then
    reports any error writing the report itself)."""
    assert write_cases_part(str(tmp_path / "missing"), _cases(0, 2)) is None
    assert not (tmp_path / "missing").exists()


def _rows_report(path: Path, batches: list[list[dict[str, object]]]) -> bytes:
    writer = JsonReportWriter(path, run_id="r", eval_set_ids=["s"], metrics=["m"])
    for batch in batches:
        writer.rows.add_encoded_rows([(tuple(r), orjson.dumps(r) + b"\n", None) for r in batch])
    lines = list(writer.rows.lines())
    assert lines == [orjson.dumps(r) for batch in batches for r in batch]
    writer.finish(SUMMARY)
    return path.read_bytes()


@pytest.mark.parametrize("copy", ["kernel", "buffered"])
def test_the_rows_are_copied_into_the_report_as_the_array_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy: str
) -> None:
    """The rows are spooled as they stand in the report's `rows` array (indented, comma
    after each), and appended to it by the kernel or a buffered copy at the end."""
    if copy == "buffered":
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    batches = [[{"case_id": f"r{i}", "text": "ü\n"} for i in range(3)], [], [{"case_id": "r3"}]]
    text = _rows_report(tmp_path / "rows.json", batches).decode()
    rows = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for b in batches for r in b]
    assert '  "rows": [\n    ' + ",\n    ".join(rows) + '\n  ],\n  "summary"' in text
    assert json.loads(text)["rows"] == [r for b in batches for r in b]
    empty = _rows_report(tmp_path / "empty.json", [[], []]).decode()
    assert '  "rows": [],\n  "summary"' in empty
    assert json.loads(empty)["rows"] == []
