"""Cases written into a CES list bring the rubric resources they refer to
(`evaluationExpectations`) that the file lacks, in the file's layout; the resources and
cases already there keep their bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.cases import write_cases
from assay.core.cases import EvalCase, Rubric, Turn, UserInput

HELD = """{
    "evaluations": [],
    "evaluationExpectations": [
        {"displayName": "kept-outcome", "llmCriteria": {"prompt": "as written"}}
    ]
}
"""


def _case(case_id: str, rubric: str) -> EvalCase:
    turn = Turn(user_input=UserInput(text="hi"), final_response="hello")
    return EvalCase(id=case_id, reference=[turn], rubrics=[Rubric(id=rubric, text="greets")])


def test_resources_are_appended_to_the_files_own_array(tmp_path: Path) -> None:
    path = tmp_path / "set.ces.json"
    path.write_text(HELD, encoding="utf-8")
    edit = write_cases(path, [_case("c1", "c1-outcome"), _case("c2", "kept-outcome")])
    assert "google-cloud-ces Evaluation" in edit.validated_with
    text = path.read_text("utf-8")
    kept = '{"displayName": "kept-outcome", "llmCriteria": {"prompt": "as written"}}'
    assert f"\n        {kept}" in text
    names = [r["displayName"] for r in json.loads(text)["evaluationExpectations"]]
    assert names == ["kept-outcome", "c1-outcome"]  # the held one is not added twice


@pytest.mark.parametrize(
    "text", ['{"evaluations": []}', '{\n\t"evaluations": []\n}\n'], ids=["one-line", "tabs"]
)
def test_the_key_is_added_in_the_files_layout(tmp_path: Path, text: str) -> None:
    path = tmp_path / "set.ces.json"
    path.write_text(text, encoding="utf-8")
    write_cases(path, [_case("c1", "c1-outcome")])
    written = path.read_text("utf-8")
    data = json.loads(written)
    assert [r["displayName"] for r in data["evaluationExpectations"]] == ["c1-outcome"]
    assert ("\n" in written) == ("\n" in text)
    if "\t" in text:
        assert '\n\t"evaluationExpectations": [' in written
