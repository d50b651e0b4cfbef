"""People's labels in the store (issue #35), on SQLite and PostgreSQL (see conftest.py):
one label per person and item, a person's second label replaces their own only, unknown
runs, cases and metrics are named, labels survive a new process, and `label_pairs`
gives each label with the case's inputs and the run's judge verdict."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from label_samples import METRIC, case_id, correct, judge_wrong, judged_run, unstable

from assay.core import Turn, UserInput
from assay.core.results import CaseResult, InvocationResult, MetricResult, Score, Status
from assay.engine.calibrate import load_labels
from assay.store import RunNotFoundError, Store
from assay.store.labels import (
    LabelTargetNotFoundError,
    LabelValueError,
    case_ref,
    label_pairs,
    parse_label,
)


def test_a_label_is_stored_with_who_and_when(store: Store) -> None:
    run = judged_run(store, items=4)
    stored = store.labels.set_label(
        run, "sum-01", metric=METRIC, label="PASS", author="ann", note="right sum"
    )
    assert (stored.case, stored.label, stored.verdict, stored.author) == (
        "sums/sum-01", "pass", "pass", "ann",
    )  # fmt: skip
    assert stored.note == "right sum" and stored.score is None
    assert stored.created_at.tzinfo is not None and stored.updated_at == stored.created_at
    [listed] = store.labels.list_labels([run])
    assert listed == stored


def test_a_second_person_does_not_overwrite_the_first(store: Store) -> None:
    run = judged_run(store, items=4)
    store.labels.set_label(run, "sum-02", metric=METRIC, label="pass", author="ann")
    store.labels.set_label(run, "sum-02", metric=METRIC, label="fail", author="bob", note="no")
    labels = {lab.author: lab.verdict for lab in store.labels.list_labels([run])}
    assert labels == {"ann": "pass", "bob": "fail"}
    # ann changes her mind: her label is replaced, bob's stays.
    again = store.labels.set_label(run, "sums/sum-02", metric=METRIC, label="0.3", author="ann")
    assert (again.label, again.score, again.verdict) == ("0.3", 0.3, "fail")
    assert again.created_at <= again.updated_at
    labels = {lab.author: (lab.label, lab.note) for lab in store.labels.list_labels([run])}
    assert labels == {"ann": ("0.3", None), "bob": ("fail", "no")}
    assert store.labels.delete_label(run, "sum-02", metric=METRIC, author="ann") is True
    assert store.labels.delete_label(run, "sum-02", metric=METRIC, author="ann") is False
    assert [lab.author for lab in store.labels.list_labels([run])] == ["bob"]
    # The history keeps what was replaced and deleted, in order.
    events = [(e.author, e.action, e.label, e.note) for e in store.labels.history([run])]
    assert events == [
        ("ann", "set", "pass", None), ("bob", "set", "fail", "no"),
        ("ann", "set", "0.3", None), ("ann", "delete", None, None),
    ]  # fmt: skip
    assert store.labels.history(["other"]) == []


def test_unknown_run_case_and_metric_are_named(store: Store) -> None:
    run = judged_run(store, items=3)
    with pytest.raises(RunNotFoundError, match="nope"):
        store.labels.set_label("nope", "sum-01", metric=METRIC, label="pass", author="a")
    with pytest.raises(LabelTargetNotFoundError, match="no case 'sum-99' in run"):
        store.labels.set_label(run, "sum-99", metric=METRIC, label="pass", author="a")
    with pytest.raises(LabelTargetNotFoundError, match=r"metric 'coherence' was not scored.*"
                       r"final_response_match_v2"):  # fmt: skip
        store.labels.set_label(run, "sum-01", metric="coherence", label="pass", author="a")
    assert store.labels.list_labels([run]) == []


@pytest.mark.parametrize(
    ("label", "field"),
    [("maybe", "neither pass"), ("nan", "finite"), ("inf", "finite"), ("1.5", "outside"),
     ("-0.1", "outside"), ("", "expected pass")],
)  # fmt: skip
def test_bad_labels_name_the_field(store: Store, label: str, field: str) -> None:
    run = judged_run(store, items=2)
    with pytest.raises(LabelValueError, match=rf"^label: .*{field}"):
        store.labels.set_label(run, "sum-01", metric=METRIC, label=label, author="a")
    with pytest.raises(LabelValueError, match=r"^note: "):
        store.labels.set_label(run, "sum-01", metric=METRIC, label="pass", author="a",
                               note="x" * 10_001)  # fmt: skip
    with pytest.raises(LabelValueError, match=r"^author: "):
        store.labels.set_label(run, "sum-01", metric=METRIC, label="pass", author=" ")
    assert store.labels.list_labels([run]) == []


def test_parse_label_verdicts_and_scores() -> None:
    assert parse_label("Valid", threshold=0.8) == ("pass", None, "pass")
    assert parse_label(False, threshold=None) == ("fail", None, "fail")
    assert parse_label(0.8, threshold=0.8) == ("0.8", 0.8, "pass")
    assert parse_label("4", threshold=3.0) == ("4", 4.0, "pass")
    with pytest.raises(LabelValueError, match="no threshold"):
        parse_label("0.5", threshold=None)


def test_repetitions_and_eval_sets_are_told_apart(store: Store) -> None:
    def result(run_index: int) -> CaseResult:
        turn = Turn(user_input=UserInput(text="hi"), final_response="hello")
        score = Score(1.0, "fine", {"samples": 1, "agreement": 1.0})
        return CaseResult(
            case_id="greet", status=Status.PASSED, eval_set_id="chat", run_index=run_index,
            metrics={METRIC: MetricResult(METRIC, 1.0, 0.8, Status.PASSED, per_invocation=[score])},
            invocations=[InvocationResult(0, None, turn, None, {METRIC: score})],
        )  # fmt: skip

    run = store.start_run(eval_set_ids=["chat"], metrics=[METRIC], config={}, agent=None, runs=2)
    store.add_case_results(run, [result(0), result(1)])
    with pytest.raises(LabelTargetNotFoundError, match=r"ambiguous: name one of chat/greet, "
                       r"chat/greet#1"):  # fmt: skip
        store.labels.set_label(run, "greet", metric=METRIC, label="pass", author="a")
    store.labels.set_label(run, "greet#1", metric=METRIC, label="fail", author="a")
    store.labels.set_label(run, "chat/greet#0", metric=METRIC, label="pass", author="a")
    found = {(lab.case, lab.verdict) for lab in store.labels.list_labels([run])}
    assert found == {("chat/greet#1", "fail"), ("chat/greet", "pass")}
    assert case_ref("", "greet", 0) == "greet"


def test_label_pairs_carry_the_case_and_the_judge(store: Store) -> None:
    run = judged_run(store, items=12)
    other = judged_run(store, items=3)
    for k in range(12):
        store.labels.set_label(run, case_id(k), metric=METRIC,
                               label="pass" if correct(k) else "fail", author="ann")  # fmt: skip
    store.labels.set_label(run, case_id(3), metric=METRIC, label="0.9", author="bob", note="ok")
    store.labels.set_label(other, case_id(1), metric=METRIC, label="pass", author="ann")
    items = label_pairs(store, metric=METRIC, runs=[run])
    assert len(items) == 13
    assert [i.case_id for i in items[:5]] == [case_id(k) for k in (0, 1, 2, 3, 3)]
    three = [i for i in items if i.case_id == case_id(3)]
    assert [(i.author, i.label, i.score, i.verdict) for i in three] == [
        ("ann", "fail", None, "fail"), ("bob", "0.9", 0.9, "pass"),
    ]  # fmt: skip
    first = items[0]
    assert first.inputs == {"prompt": "What is 0 plus 0?", "response": "1", "reference": "0"}
    for item in items:
        k = int(item.case_id.removeprefix("sum-"))
        truth = "pass" if correct(k) else "fail"
        assert item.judge == (truth if not judge_wrong(k) else {"pass": "fail"}.get(truth, "pass"))
        assert item.unstable == unstable(k)
        assert item.threshold == 0.8 and item.rationale
    assert len(label_pairs(store, metric=METRIC)) == 14
    assert label_pairs(store, metric="coherence") == []


def test_calibration_rows_are_a_labels_file(store: Store, tmp_path: object) -> None:
    from pathlib import Path

    run = judged_run(store, items=5)
    store.labels.set_label(run, case_id(1), metric=METRIC, label="pass", author="ann")
    store.labels.set_label(run, case_id(1), metric=METRIC, label="0.1", author="bob")
    store.labels.set_label(run, case_id(2), metric=METRIC, label="fail", author="ann", note="n")
    path = Path(str(tmp_path)) / "labels.jsonl"
    rows = [i.calibration_row() for i in label_pairs(store, metric=METRIC)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    labelled = load_labels(path)
    assert list(labelled.labels.values()) == [True, False, False]
    assert len({c.id for c in labelled.evalset.cases}) == 3
    first = labelled.evalset.cases[0]
    assert first.actual is not None and first.actual[0].final_response == "2"
    assert first.reference is not None and first.reference[0].final_response == "2"


RESTART = textwrap.dedent(
    """
    import json, sys
    from assay.store import Store
    with Store.open(sys.argv[1]) as db:
        print(json.dumps([[l.author, l.case, l.label] for l in db.labels.list_labels()]))
    """
)


def test_labels_survive_a_new_process(store_url: str) -> None:
    with Store.open(store_url) as db:
        run = judged_run(db, items=3)
        db.labels.set_label(run, case_id(0), metric=METRIC, label="fail", author="ann")
        db.labels.set_label(run, case_id(0), metric=METRIC, label="pass", author="bob")
    done = subprocess.run([sys.executable, "-c", RESTART, store_url], capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    assert json.loads(done.stdout) == [
        ["ann", "sums/sum-00", "fail"],
        ["bob", "sums/sum-00", "pass"],
    ]


def test_deleting_a_run_deletes_its_labels(store: Store) -> None:
    run = judged_run(store, items=2)
    store.labels.set_label(run, case_id(1), metric=METRIC, label="pass", author="ann")
    store.delete_run(run)
    assert store.labels.list_labels() == [] and store.labels.history() == []
