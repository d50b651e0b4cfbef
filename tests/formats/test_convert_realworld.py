"""Every real file in tests/data/realworld, converted in every direction: the written file
is detected as its format and reads back as exactly what was meant; where nothing is
lost it comes back equal; where something is, the losses name fields the file has."""

from __future__ import annotations

from pathlib import Path

import pytest
from convert_helpers import SUFFIX, accepted_by_own_tools, present

from assay.formats import detect_format, format_module, load
from assay.formats._common import read_structured
from assay.formats.convert import difference, fit

REALWORLD = Path(__file__).resolve().parents[1] / "data" / "realworld"
MLFLOW_MAP = {"question": "request", "relevant_doc_id": "expected_retrieved_context"}
TARGETS = ("adk", "ces", "vertex", "mlflow")
SKIP = ("config.json", "initial.session.json", "SOURCES.md", "turn_eval_example.yaml")
FILES = sorted(
    p.relative_to(REALWORLD).as_posix()
    for p in REALWORLD.rglob("*")
    if p.is_file() and not p.name.endswith(SKIP)
)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rel", FILES)
def test_real_file_converts_and_comes_back(rel: str, target: str, tmp_path: Path) -> None:
    path = REALWORLD / rel
    source_fmt = detect_format(read_structured(path), path)
    home = "adk" if source_fmt in ("adk-legacy", "trace") else source_fmt
    original = load(path, mapping=MLFLOW_MAP if source_fmt == "mlflow" else None)
    source = fit(original, home)[0]
    converted, losses = fit(source, target)
    for loss in losses:
        assert present(source, loss), loss
    if not converted.cases and (source.cases or target in ("vertex", "mlflow")):
        return  # `assay convert` refuses to write a file without cases (tested below)
    out = tmp_path / f"{converted.id}{SUFFIX[target]}"
    format_module(target).write(converted, out)
    assert detect_format(read_structured(out), out) == target
    accepted_by_own_tools(out, target)
    read = load(out, target)
    assert difference(converted, read) is None
    again, _ = fit(read, home)
    back_path = tmp_path / "back" / f"{again.id}{SUFFIX[home]}"
    back_path.parent.mkdir()
    format_module(home).write(again, back_path)
    if home in ("adk", "ces"):
        accepted_by_own_tools(back_path, home)
    back = load(back_path, home)
    assert difference(again, back) is None
    if not losses:
        assert back.cases == source.cases


def test_a_set_without_cases_is_not_written_as_rows(tmp_path: Path) -> None:
    from assay.errors import InputError
    from assay.formats.convert import convert_file

    source = REALWORLD / "ces/bella_notte/evaluationExpectations/No_Technical_Leakage.json"
    with pytest.raises(InputError, match="it has no cases"):
        convert_file(source, tmp_path / "out.jsonl", "mlflow", lossy=True)
    assert list(tmp_path.iterdir()) == []
