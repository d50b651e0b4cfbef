"""Vote rules of SPEC §4.4 and tolerant reply parsing."""

from __future__ import annotations

import pytest

from assay.metrics.judged.parsing import (
    field,
    parse_choice,
    parse_int_in,
    parse_json_object,
    parse_yes_no,
)
from assay.metrics.judged.prompts import get_prompt, prompt_ids
from assay.metrics.judged.voting import binary_vote, label_vote, ordinal_vote


def test_binary_majority_tie_is_negative_and_unparseable_left_out() -> None:
    vote = binary_vote([True, True, False, None, None])
    assert vote.label is True and vote.parsed == 3 and vote.discarded == 2
    assert vote.agreement == pytest.approx(2 / 3)
    tie = binary_vote([True, False, None])
    assert tie.label is False and tie.agreement == 0.5
    none = binary_vote([None, None])
    assert none.label is None and not none.decided and none.agreement is None
    assert none.discarded == 2


def test_ordinal_and_label_votes_break_ties_to_the_negative_end() -> None:
    assert ordinal_vote([4, 3, 3, 4]).label == 3
    assert ordinal_vote([4, 4, 2]).label == 4
    assert ordinal_vote([-1, 1]).label == -1
    order = ["contradictory", "unsupported", "disputed", "not_applicable", "supported"]
    vote = label_vote(["supported", "unsupported", None], order)
    assert vote.label == "unsupported" and vote.discarded == 1
    assert label_vote(["supported", "supported", "disputed"], order).label == "supported"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"label": "yes"}', {"label": "yes"}),
        (
            'Sure!\n```json\n{"label": "no", "rationale": "a } in text"}\n```',
            {"label": "no", "rationale": "a } in text"},
        ),
        ('Verdict: {"score": 3,}', {"score": 3}),
        ('prefix {not json} then {"a": {"b": 1}}', {"a": {"b": 1}}),
        ("no json here", None),
        ("[1, 2]", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_json_object_is_tolerant(reply: str | None, expected: object) -> None:
    assert parse_json_object(reply) == expected


def test_label_helpers() -> None:
    assert field({"Label": "Yes"}, "label") == "Yes"
    assert field({"verdict": 1}, "label", "verdict") == 1
    assert field(None, "x") is None
    assert parse_choice(" Not Applicable. ", ["supported", "not_applicable"]) == "not_applicable"
    assert parse_choice(3, ["a"]) is None
    assert parse_yes_no("YES") is True and parse_yes_no("invalid") is False
    assert parse_yes_no(True) is True and parse_yes_no("maybe") is None
    assert parse_int_in("3", 0, 4) == 3 and parse_int_in(4.0, 0, 4) == 4
    assert parse_int_in(5, 0, 4) is None and parse_int_in(True, 0, 4) is None
    assert parse_int_in("three", 0, 4) is None


def test_every_shipped_prompt_template_loads_and_renders_placeholders() -> None:
    for prompt_id in prompt_ids():
        name, _, version = prompt_id.rpartition(".v")
        template = get_prompt(name, int(version))
        assert template.id == prompt_id
        assert template.system.strip() and template.user.strip()
    with pytest.raises(KeyError, match="no judge prompt named"):
        get_prompt("does_not_exist")
