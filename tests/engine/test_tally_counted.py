"""`Tally.add_counted` (a batch's lean rows tallied by kind) gives the summary, status
counts and thresholds that `add_row`, row by row in file order, gives: bit for bit,
since the summary's sums are exact whatever the order."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from assay.core.results import MetricResult, Score, Status
from assay.engine import build_metrics
from assay.engine.tally import Tally


def _result(name: str, value: float | None, threshold: float | None) -> MetricResult:
    status = None if threshold is None else (
        Status.PASSED if value is not None and value >= threshold else Status.FAILED
    )  # fmt: skip
    return MetricResult(name, value, threshold, status, per_invocation=[Score(value)])


def test_counted_rows_tally_as_rows_one_by_one() -> None:
    metrics = build_metrics(None, {"trajectory_precision": 0.5, "response_match_score": 0.6})
    names = [m.name for m in metrics]
    rng = random.Random(3)
    # A few results repeat (trajectories); most values are distinct (ROUGE).
    shared = [_result(names[0], v, 0.5) for v in (0.0, 1 / 3, 0.5, 1.0, None)]
    rows = []
    for _ in range(5_000):
        rouge = _result(names[1], rng.random() * 1e-3 + rng.choice([0.0, 1e6]), 0.6)
        status = rng.choice([Status.PASSED, Status.FAILED, Status.NOT_EVALUATED])
        rows.append((status, [rng.choice(shared), rouge]))
    one_by_one = Tally(names)
    for status, results in rows:
        one_by_one.add_row(status, results)
    counted = Tally(names)
    statuses = Counter(status for status, _ in rows)
    # By identity, as a batch counts its encoded results.
    by_id = {id(r): r for _, results in rows for r in results}
    kinds = Counter(id(r) for _, results in rows for r in results)
    counted.add_counted(statuses, [(by_id[key], n) for key, n in kinds.items()])
    assert counted.summary(metrics) == one_by_one.summary(metrics)
    assert counted.status_columns() == one_by_one.status_columns()
    assert counted.rows == one_by_one.rows == 5_000
    assert counted.metric_statuses == one_by_one.metric_statuses
    assert counted.thresholds == one_by_one.thresholds


def test_a_tally_of_case_scores_is_added_row_by_row() -> None:
    tally = Tally(["m"], case_scores=["m"])
    with pytest.raises(ValueError, match="row by row"):
        tally.add_counted({Status.PASSED: 1}, [(_result("m", 1.0, 0.5), 1)])
