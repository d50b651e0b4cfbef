"""How a judged item's samples split, and whether its verdict is unstable.

With more than one judge sample per invocation (`--judge-samples N`, or a metric's
`judge_model_options.num_samples`), each invocation's score details carry:

- `sample_scores`: the score each parsed sample alone would give the invocation, on the
  metric's scale (1.0 / 0.0 for a yes/no verdict, the rating for a 1–5 scale, the
  share of rubrics met for a rubric metric), in sample order;
- `sample_split`: `{"pass": P, "fail": F}`, how many of them are at or above the
  metric's threshold and how many below;
- `unstable`: True when the samples straddle the threshold (P > 0 and F > 0): another
  draw of the same judge could have flipped the verdict.

The case's `MetricResult.details` sum the split over its invocations
(`sample_split`), count the unstable ones (`unstable_invocations`) and say
`unstable: True` when any is. A metric without a threshold, or an invocation with
fewer than two parsed samples, gets no split. Readers (the report, the viewer's review
queue, compare) use `is_unstable` and `split_of`; this module sits beside the judged
metrics, not in their package, so reading a stored result loads no judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assay.core.results import MetricResult, Score

#: per-invocation detail: each parsed sample's score on the metric's scale
SAMPLE_SCORES = "sample_scores"
#: per-invocation and case detail: {"pass": P, "fail": F}
SAMPLE_SPLIT = "sample_split"
#: per-invocation and case detail: the samples straddle the threshold
UNSTABLE = "unstable"
#: case detail: how many of the case's invocations are unstable
UNSTABLE_INVOCATIONS = "unstable_invocations"


def sample_scores_detail(values: Iterable[float | None]) -> dict[str, Any]:
    """`{"sample_scores": [...]}` for two or more parsed samples, else nothing (a single
    sample cannot disagree with itself, and runs of one sample keep their old details)."""
    parsed = [float(v) for v in values if v is not None]
    return {SAMPLE_SCORES: parsed} if len(parsed) > 1 else {}


def split_scores(values: Sequence[float], threshold: float) -> dict[str, int]:
    """How many of `values` pass (>= threshold) and how many fail."""
    passed = sum(1 for v in values if v >= threshold)
    return {"pass": passed, "fail": len(values) - passed}


def mark_invocation(score: Score, threshold: float) -> bool | None:
    """Add `sample_split` and `unstable` to one invocation's details from its
    `sample_scores`; returns the flag (None when the invocation has no split)."""
    values = score.details.get(SAMPLE_SCORES)
    if not isinstance(values, list) or len(values) < 2 or score.value is None:
        return None
    split = split_scores(values, threshold)
    unstable = split["pass"] > 0 and split["fail"] > 0
    score.details[SAMPLE_SPLIT] = split
    score.details[UNSTABLE] = unstable
    return unstable


def mark_result(result: MetricResult) -> MetricResult:
    """Mark each invocation of `result` and sum the case's split; returns `result`.

    Nothing changes for a metric without a threshold or without sampled invocations.
    """
    if result.threshold is None or result.status is None:
        return result
    flags: list[bool] = []
    passed = failed = 0
    for score in result.per_invocation:
        flag = mark_invocation(score, result.threshold)
        if flag is None:
            continue
        flags.append(flag)
        split = score.details[SAMPLE_SPLIT]
        passed += split["pass"]
        failed += split["fail"]
    if not flags:
        return result
    result.details[SAMPLE_SPLIT] = {"pass": passed, "fail": failed}
    result.details[UNSTABLE_INVOCATIONS] = sum(flags)
    result.details[UNSTABLE] = any(flags)
    return result


def is_unstable(details: Mapping[str, Any] | None) -> bool:
    """Whether a metric result's (or a score's) details mark it unstable."""
    return bool(details and details.get(UNSTABLE) is True)


def split_of(details: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """(pass, fail) sample counts from a metric result's details, if it has a split."""
    split = details.get(SAMPLE_SPLIT) if details else None
    if not isinstance(split, Mapping):
        return None
    p, f = split.get("pass"), split.get("fail")
    if not isinstance(p, int) or not isinstance(f, int):
        return None
    return p, f


def describe_split(details: Mapping[str, Any] | None) -> str | None:
    """`3 pass / 2 fail` for a result with a split, else None."""
    split = split_of(details)
    return None if split is None else f"{split[0]} pass / {split[1]} fail"
