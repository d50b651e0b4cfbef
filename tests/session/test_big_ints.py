"""Integers beyond 64 bits in row files are kept exactly on every path.

orjson, which reads streamed rows, turns such an integer into a float without a word
(10**20 became 1e+20 in the report and the store, a silently changed value), while the
loaded path (`json`) kept it. Lines that may hold one are now read by `json` on the
streamed and the lean row paths too: the reports carry the exact integer, and the store,
which holds 64-bit integers, refuses the case on both paths with the same message.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.formats.stream import RowFile, batch_cases, may_hold_big_int

runner = CliRunner()
BIG = 10**20


def _rows(count: int, big_at: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for i in range(count):
        call = {"tool_name": "t", "tool_input": {"n": i}}
        predicted = {"tool_name": "t", "tool_input": {"n": BIG if i == big_at else i}}
        rows.append({
            "prompt": f"p{i}", "response": "a", "reference": "a",
            "predicted_trajectory": [predicted], "reference_trajectory": [call],
        })  # fmt: skip
    return rows


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_streamed_row_keeps_an_integer_beyond_64_bits(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "rows.jsonl", _rows(3, big_at=1))
    assert orjson.loads(data.read_bytes().splitlines()[1])["predicted_trajectory"][0]["tool_input"][
        "n"
    ] == float(BIG)  # what orjson alone makes of it
    (batch,) = list(RowFile(data, "jsonl").batches(10))
    cases, error = batch_cases(batch, None)
    assert error is None and len(cases) == 3
    held = repr(cases[1].model_dump())
    assert "100000000000000000000" in held and "1e+20" not in held


def test_reports_carry_the_exact_integer_streamed_and_loaded(tmp_path: Path) -> None:
    rows = _rows(200, big_at=150)  # enough rows for the lean row path
    data = _jsonl(tmp_path / "rows.jsonl", rows)
    whole = tmp_path / "rows.json"
    whole.write_text(json.dumps(rows), encoding="utf-8")
    for source, out in ((data, "streamed.json"), (whole, "loaded.json")):
        result = runner.invoke(
            app,
            ["eval", str(source), "-m", "trajectory_exact_match", "--no-store", "--quiet",
             "--out", str(tmp_path / out)],
        )  # fmt: skip
        assert result.exit_code == 1, result.output
        text = (tmp_path / out).read_text(encoding="utf-8")
        assert "100000000000000000000" in text and "1e+20" not in text


def test_the_store_refuses_it_on_both_paths_naming_the_case(tmp_path: Path) -> None:
    rows = _rows(200, big_at=150)
    data = _jsonl(tmp_path / "rows.jsonl", rows)
    whole = tmp_path / "rows.json"
    whole.write_text(json.dumps(rows), encoding="utf-8")
    for source in (data, whole):
        result = runner.invoke(
            app,
            ["eval", str(source), "-m", "trajectory_exact_match", "--quiet",
             "--store", f"sqlite:///{tmp_path / (source.name + '.db')}"],
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        assert "row-150" in result.output and "64-bit" in result.output


@pytest.mark.parametrize(
    ("line", "may"),
    [
        (b'{"n": 1234567890123456789}', True),  # 19 digits: maybe beyond 64 bits
        (b'{"n": -99999999999999999999}', True),
        (b"12345678901234567890", True),  # at both ends of the line
        (b'{"n": 123456789012345678}', False),  # 18 digits fit in 64 bits
        (b'{"n": 1.5e300, "m": 123456789.0123456789}', False),
        (b'{"id": "x12345678901234567890y"}', True),  # in a string: only the slower parse
        (b"", False),
    ],
)
def test_which_lines_may_hold_an_integer_beyond_64_bits(line: bytes, may: bool) -> None:
    assert may_hold_big_int(line) is may
    if may and line.isdigit():
        assert json.loads(line) >= 2**63  # the case the check is for


@pytest.mark.parametrize("big_at", [None, 0, 2, 4])
def test_a_chunk_is_checked_for_big_integers_once(tmp_path: Path, big_at: int | None) -> None:
    """A chunk without 19 digits in a row marks its batch clean (no line is checked on
    its own); one with them leaves each line to be checked, and only that line goes to
    `json`. Digits never run across a line end, so the two checks agree."""
    rows = _rows(5, big_at if big_at is not None else -1)
    path = _jsonl(tmp_path / "rows.jsonl", rows)
    (chunk,) = RowFile(path, "jsonl").chunks(10)
    batch = chunk.batch()
    assert batch.no_big_ints is (big_at is None)
    assert [may_hold_big_int(raw) for _, raw in batch.rows] == [i == big_at for i in range(5)]
    cases, error = batch_cases(batch, None)
    assert error is None
    args = [case.actual[0].steps[0].tool_call.args["n"] for case in cases]
    assert args == [BIG if i == big_at else i for i in range(5)]
    assert all(type(n) is int for n in args)
