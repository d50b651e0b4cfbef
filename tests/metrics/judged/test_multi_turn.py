"""Whole-conversation judged metrics: reply parsing that must not trust the judge."""

from __future__ import annotations

import json

from assay.core.cases import Rubric
from assay.metrics.judged.multi_turn import violating_turns
from assay.metrics.judged.rubrics import parse_rubric_reply
from assay.metrics.judged.vertex_hosted import MAX_CHECKS, parse_checklist


def test_violating_turns_ignore_hostile_entries() -> None:
    reply = json.dumps(
        {
            "rubrics": [
                {"id": ["a"], "verdict": "no", "turn": 1},  # unhashable id
                {"id": "a", "verdict": "no", "turn": 9},  # beyond the conversation
                {"id": "a", "verdict": "no", "turn": True},  # not a number
                {"id": "b", "verdict": "no", "turn": "2"},  # a numeric string is fine
                {"id": "c", "verdict": "no", "turn": 3},  # not a failed rubric
                "junk",
            ]
        }
    )
    later = json.dumps({"rubrics": [{"id": "a", "verdict": "no", "turn": 3}]})
    assert violating_turns([reply, later], ["a", "b"], turns=3) == {"a": 3, "b": 2}
    assert violating_turns(["not json"], ["a"], turns=3) == {"a": None}


def test_adk_labelled_blocks_and_json_give_the_same_verdicts() -> None:
    rubrics = [Rubric(id="1", text="Calls grammar_check."), Rubric(id="2", text="Is polite.")]
    blocks = (
        "STEP 1: Calls grammar_check.\nSTEP 5: yes\nID: 1\nProperty: Calls grammar_check.\n"
        "Rationale: turn 2 calls it.\nVerdict: yes\n\n"
        "STEP 1: Is polite.\nSTEP 5: no\nID: \nProperty: **Is polite.**\n"
        "Rationale: rude in turn 1.\nVerdict: no\n"
    )
    as_json = json.dumps({"rubrics": [{"id": "1", "verdict": "yes"}, {"id": "2", "verdict": "no"}]})
    got = parse_rubric_reply(blocks, rubrics)
    assert got == {"1": [(True, "turn 2 calls it.")], "2": [(False, "rude in turn 1.")]}
    json_got = parse_rubric_reply(as_json, rubrics)
    assert json_got is not None
    assert {k: v[0][0] for k, v in json_got.items()} == {"1": True, "2": False}
    # A block whose verdict says neither yes nor no, or names no rubric, is no verdict.
    assert parse_rubric_reply("ID: 9\nProperty: other\nVerdict: yes\n", rubrics) is None
    assert parse_rubric_reply("ID: 1\nVerdict: maybe\n", rubrics) is None


def test_checklists_are_bounded_and_ids_made_unique() -> None:
    entries = [{"id": "Same ID!", "property": f"check {i}"} for i in range(MAX_CHECKS + 3)]
    entries.insert(0, {"property": "   "})  # blank: dropped
    entries.insert(1, {"id": 7, "text": "numeric id"})
    checks = parse_checklist(json.dumps({"rubrics": entries}))
    assert checks is not None and len(checks) == MAX_CHECKS
    ids = [c.id for c in checks]
    assert len(set(ids)) == len(ids)
    assert ids[:3] == ["7", "same_id", "same_id_2"]
    assert parse_checklist(json.dumps({"rubrics": "all good"})) is None
    assert parse_checklist("no JSON at all") is None
