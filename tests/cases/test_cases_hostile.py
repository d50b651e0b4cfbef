"""Hostile eval set files: whatever a file holds, `assay cases` lists it, edits it or
refuses it with an AssayError (exit 2 on the command line) and leaves it as it was —
never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.cases import list_cases, remove_case
from assay.cases.api import add_cases
from assay.cases.sources import Played
from assay.core.cases import Turn, UserInput
from assay.errors import AssayError

_KEYS = st.sampled_from([
    "eval_set_id", "eval_cases", "eval_id", "conversation", "evaluations", "golden",
    "scenario", "displayName", "name", "turns", "steps", "prompt", "reference", "id",
    "user_content", "intermediate_data", "evalCases", "evalSetId", "x",
])  # fmt: skip
_LEAF = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)
_SHAPED = st.one_of(
    st.fixed_dictionaries({"eval_set_id": _LEAF, "eval_cases": st.lists(_VALUE, max_size=3)}),
    st.fixed_dictionaries({"evaluations": st.lists(_VALUE, max_size=3)}),
    st.fixed_dictionaries({"golden": _VALUE, "displayName": _LEAF}),
    st.lists(st.dictionaries(_KEYS, _VALUE, max_size=4), max_size=3),
    _VALUE,
)
_PLAYED = Played("new_case", [Turn(user_input=UserInput(text="hi"), final_response="hello")], "t")


@pytest.mark.filterwarnings("ignore::assay.errors.AssayWarning")  # readers' notes on odd columns
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_SHAPED, suffix=st.sampled_from([".json", ".evalset.json", ".jsonl"]))
def test_any_document_is_edited_or_refused_never_crashed(document: object, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / f"hostile{suffix}"
        if suffix == ".jsonl" and isinstance(document, list):
            text = "".join(json.dumps(row) + "\n" for row in document)
        else:
            text = json.dumps(document, indent=2)
        target.write_text(text, encoding="utf-8")
        for edit in (
            lambda: list_cases(target),
            lambda: add_cases(target, [_PLAYED]),
            lambda: remove_case(target, ["new_case"]),
        ):
            before = target.read_text(encoding="utf-8")
            try:
                edit()
            except AssayError:
                assert target.read_text(encoding="utf-8") == before
