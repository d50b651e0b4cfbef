"""`report.atomic`: a report replaces the one at its target whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.core.results import EvalResult
from assay.errors import AssayError
from assay.report.atomic import keeps_earlier, replaced_whole
from assay.report.csv_report import write_csv


def test_an_interrupt_while_writing_leaves_the_earlier_report(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    target.write_text("earlier", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt), replaced_whole(target, "JSON report") as tmp:
        tmp.write_text("half a rep", encoding="utf-8")
        raise KeyboardInterrupt
    assert target.read_text(encoding="utf-8") == "earlier"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_a_failed_write_names_the_file_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "rows.csv"
    target.write_text("earlier", encoding="utf-8")
    no_space = r"cannot write CSV .*rows\.csv: No space left"
    with pytest.raises(AssayError, match=no_space), replaced_whole(target, "CSV") as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise OSError(28, "No space left on device")
    assert target.read_text(encoding="utf-8") == "earlier"
    assert [p.name for p in tmp_path.iterdir()] == ["rows.csv"]


def test_a_complete_report_replaces_the_earlier_one(tmp_path: Path) -> None:
    target = tmp_path / "deeper" / "rows.csv"
    write_csv(EvalResult(summary={}, rows=[{"case_id": "a", "score": 1.0}]), target)
    assert target.read_text(encoding="utf-8").splitlines() == ["case_id,score", "a,1.0"]
    assert [p.name for p in target.parent.iterdir()] == ["rows.csv"]


def test_an_interrupted_run_keeps_only_reports_already_there(tmp_path: Path) -> None:
    there = tmp_path / "results.json"
    there.write_text("{}", encoding="utf-8")
    assert keeps_earlier(there, interrupted=True)
    assert not keeps_earlier(there, interrupted=False)
    assert not keeps_earlier(tmp_path / "new.json", interrupted=True)
    assert not keeps_earlier(None, interrupted=True)
