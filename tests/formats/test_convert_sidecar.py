"""`assay convert --sidecar`: what the target cannot hold is kept beside it and comes
back when the file is converted again; the target itself stays a plain file of its
format (checked with google-cloud-ces)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from google.cloud import ces_v1beta
from typer.testing import CliRunner

from assay.cli import app
from assay.formats import load
from assay.formats.convert import convert_file, difference

REALWORLD = Path(__file__).resolve().parents[1] / "data" / "realworld"
HOME = REALWORLD / "adk" / "home_automation" / "simple_test.test.json"
OFF_RAILS = (
    REALWORLD / "ces" / "bella_notte" / "evaluations" / "Off-the-Rails_-_Repeated_Off-Topic.json"
)
runner = CliRunner()


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "in" / HOME.name
    src.parent.mkdir()
    shutil.copy(HOME, src)
    return src


def test_adk_to_ces_and_back_with_a_sidecar_is_equal(tmp_path: Path) -> None:
    src = _source(tmp_path)
    out = tmp_path / "home.json"
    # Without a choice, refused, and the message says how to keep the data.
    refused = runner.invoke(app, ["convert", str(src), str(out), "--to", "ces"])
    assert refused.exit_code == 2 and "--sidecar" in refused.output
    assert not out.exists()
    done = runner.invoke(app, ["convert", str(src), str(out), "--to", "ces", "--sidecar"])
    assert done.exit_code == 0, done.output
    side = tmp_path / "home.json.assay-sidecar.json"
    assert f"kept in {side}" in done.output and "reference[].id: 1 (in 1 case)" in done.output
    # The CES file is a plain Evaluation: nothing of assay's inside.
    text = out.read_text(encoding="utf-8")
    assert '"assay' not in text and "adk_unmapped" not in text
    ces_v1beta.Evaluation.from_json(text, ignore_unknown_fields=False)
    doc = json.loads(side.read_text(encoding="utf-8"))
    assert doc["assay_sidecar"] == 1 and doc["file"] == "home.json" and doc["format"] == "ces"
    # Back to ADK with no flag: nothing is refused, everything is there again.
    back = tmp_path / "back.evalset.json"
    again = runner.invoke(app, ["convert", str(out), str(back), "--to", "adk"])
    assert again.exit_code == 0, again.output
    assert f"read {side} (1 case restored whole)" in again.output
    original, returned = load(src), load(back)
    assert difference(original, returned) is None and returned.cases == original.cases


def test_an_edited_case_is_taken_as_the_file_says_and_named(tmp_path: Path) -> None:
    src = _source(tmp_path)
    out = tmp_path / "home.json"
    convert_file(src, out, "ces", sidecar=True)
    data = json.loads(out.read_text(encoding="utf-8"))
    first = data["golden"]["turns"][0]["steps"][0]["userInput"]
    first["text"] = "Turn everything off"
    out.write_text(json.dumps(data), encoding="utf-8")
    back = tmp_path / "back.evalset.json"
    result = runner.invoke(app, ["convert", str(out), str(back), "--to", "adk", "--lossy"])
    assert result.exit_code == 0, result.output
    case_id = load(src).cases[0].id
    assert f"case {case_id!r} differs from what was converted" in result.output
    returned = load(back).cases[0]
    assert returned.reference is not None
    assert returned.reference[0].user_input.text == "Turn everything off"
    assert returned.reference[0].id is None  # not restored: the case changed


def test_a_sidecar_of_another_file_is_refused(tmp_path: Path) -> None:
    src = _source(tmp_path)
    out = tmp_path / "home.json"
    convert_file(src, out, "ces", sidecar=True)
    other = tmp_path / "other.json"
    shutil.copy(out, other)
    shutil.copy(
        tmp_path / "home.json.assay-sidecar.json", tmp_path / "other.json.assay-sidecar.json"
    )
    result = runner.invoke(
        app, ["convert", str(other), str(tmp_path / "x.evalset.json"), "--to", "adk"]
    )
    assert result.exit_code == 2
    assert "written for 'home.json'" in result.output and "Traceback" not in result.output


def test_a_lossless_conversion_removes_a_stale_sidecar(tmp_path: Path) -> None:
    src = _source(tmp_path)
    out = tmp_path / "home.json"
    convert_file(src, out, "ces", sidecar=True)
    side = tmp_path / "home.json.assay-sidecar.json"
    assert side.is_file()
    # Another conversion to the same path that loses nothing: the old sidecar would
    # otherwise be read with a file it was not written for.
    ces = tmp_path / "in" / OFF_RAILS.name
    shutil.copy(OFF_RAILS, ces)
    done = convert_file(ces, out, "ces")
    assert done.kept == [] and done.dropped == [] and not side.exists()


def test_a_sidecar_is_not_taken_for_an_eval_set(tmp_path: Path) -> None:
    src = _source(tmp_path)
    convert_file(src, tmp_path / "home.json", "ces", sidecar=True)
    side = tmp_path / "home.json.assay-sidecar.json"
    result = runner.invoke(app, ["convert", str(side), str(tmp_path / "x.json"), "--to", "adk"])
    assert result.exit_code == 2 and "sidecar of 'home.json'" in result.output


def test_multi_turn_adk_to_vertex_is_one_row_with_its_history(tmp_path: Path) -> None:
    # Issue #19 kept a multi-turn case from being flattened into one row; issue #33 writes
    # it as the Gen AI evaluation SDK holds a conversation: the earlier turns as the
    # row's `history`, the last one as its prompt, trajectory and reference.
    src = tmp_path / "in" / "founder.evalset.json"
    src.parent.mkdir()
    shutil.copy(
        REALWORLD
        / "adk"
        / "camelcase_founder_validation"
        / "founder_validation_agent_eval.evalset.json",
        src,
    )
    out = tmp_path / "rows.json"
    refused = runner.invoke(app, ["convert", str(src), str(out), "--to", "vertex"])
    assert refused.exit_code == 2
    # What every case loses is said once; each case's own losses on its own line; the
    # multi-turn case itself is written (as a row with its history), not refused.
    assert "  all 10 cases: created_at, reference[].id" in refused.output
    assert "\n  case 'multi_turn_full_flow': reference[].id (x3)" in refused.output
    assert "the case (" not in refused.output
    kept = runner.invoke(app, ["convert", str(src), str(out), "--to", "vertex", "--sidecar"])
    assert kept.exit_code == 0, kept.output
    rows = json.loads(out.read_text(encoding="utf-8"))
    cases = rows["eval_cases"] if isinstance(rows, dict) else rows
    row = next(r for r in cases if r.get("eval_case_id") == "multi_turn_full_flow")
    source = next(c for c in load(src).cases if c.id == "multi_turn_full_flow")
    assert source.reference is not None and row["prompt"] == source.reference[-1].user_input.text
    users = [m["parts"][0]["text"] for m in row["history"] if m["role"] == "user"]
    assert users == [t.user_input.text for t in source.reference[:-1]]
    back = tmp_path / "back.evalset.json"
    assert runner.invoke(app, ["convert", str(out), str(back), "--to", "adk"]).exit_code == 0
    assert load(back).cases == load(src).cases
