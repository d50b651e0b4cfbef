"""The stored form of a `CaseResult` (document format 2) and its expansion on read.

`CaseResult.to_dict()` repeats itself: every per-invocation score appears twice (in
`metrics[*].per_invocation` and in `invocations[*].scores`), every metric carries its
name as key and as field, and defaults (`"explanation": null`, `"details": {}`) fill
most of it. Written as is, a Vertex row scored by seven metrics is mostly its scores;
encoding and SQLite's work both grow with those bytes. Format 2 keeps the same
information in well under half the bytes (bench/README.md):

    {"format": 2, "case_id": "row-7", "status": "PASSED",
     "metrics": [["trajectory_exact_match", 1.0, 1.0, "PASSED", [1.0]], ...],
     "invocations": [{"actual": {...}, "expected": {...}}], "eval_set_id": "rows"}

- A metric is `[name, score, threshold, status, per_invocation]`, followed by
  `explanation, details, key` when any of them is not its default (None, {}, the name),
  and then its `error_type` (an `ErrorType` value) when it could not score.
  Metrics are a list, so they keep their order (jsonb would reorder an object's keys).
- A score is its bare value when it has no explanation and no details, else the full
  `{"value", "explanation", "details"}` object.
- An invocation's `scores` are left out when they are exactly what the engine builds:
  `per_invocation[i]` of every metric scored once per invocation, in metric order. The
  reader rebuilds them; any other `scores` are stored as they are.
- Result fields at their defaults (None, False, run index 0, no metrics or invocations,
  an invocation's position as its index) are left out. Turns are stored as
  `model_dump(exclude_none=True)` gives them.

`expand_document` turns a stored document back into exactly `CaseResult.to_dict()`
(key order included, except inside turns on PostgreSQL, whose jsonb orders keys its own
way); documents without `format` (written before format 2, already in that shape) are
returned unchanged.
"""

from __future__ import annotations

from typing import Any

from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, MetricResult, Score
from assay.errors import StoreError
from assay.store._json import dumps_bytes

FORMAT = 2
"""The document format `encode_document` writes."""

# A stored metric: name, score, threshold, status, per_invocation, then optionally
# explanation, details, key, and last the error type of a metric that could not score.
_SHORT_METRIC = 5
_LONG_METRIC = 8


def _score(score: Score) -> Any:
    value: Any = score.value
    details = score.details
    # A dict value would read back as the object form, so it never goes bare.
    if (
        score.explanation is None
        and type(details) is dict
        and not details
        and type(value) is not dict
    ):
        return value
    return {"value": value, "explanation": score.explanation, "details": details}


def metric_entry(key: str, metric: MetricResult) -> list[Any]:
    """One metric of a result as format 2 stores it (see the module docstring); the
    row kernel (`rows.kernel.EncodedMetric`) writes its metrics through this too."""
    per = metric.per_invocation
    scores: list[Any] = []
    for score in per:
        value: Any = score.value
        details = score.details
        # `_score` inlined for the common case: a bare value.
        if (
            score.explanation is None
            and type(details) is dict
            and not details
            and type(value) is not dict
        ):
            scores.append(value)
        else:
            scores.append(_score(score))
    status = metric.status
    entry: list[Any] = [
        metric.name,
        metric.score,
        metric.threshold,
        # `_value_`: Enum.value is a Python-level property (and orjson reads it too).
        None if status is None else status._value_,
        scores,
    ]
    metric_details = metric.details
    failed = metric.error_type
    if (
        metric.explanation is not None
        or type(metric_details) is not dict
        or metric_details
        or key != metric.name
        or failed is not None
    ):
        entry += (metric.explanation, metric_details, key)
        if failed is not None:
            entry.append(ErrorType(failed)._value_)
    return entry


def compact_document(result: CaseResult) -> dict[str, Any]:
    """`result` in document format 2, as plain values (Turns left as pydantic models)."""
    invocations = result.invocations
    count = len(invocations)
    metrics: list[list[Any]] = []
    # Metrics scored once per invocation (what the engine copies into each invocation's
    # scores), and their per_invocation lists.
    derived: list[str] = []
    derived_scores: list[list[Score]] = []
    for key, metric in result.metrics.items():
        per = metric.per_invocation
        metrics.append(metric_entry(key, metric))
        if count and len(per) == count:
            derived.append(key)
            derived_scores.append(per)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "case_id": result.case_id,
        "status": result.status._value_,
    }
    if metrics:
        doc["metrics"] = metrics
    if invocations:
        stored = []
        for i, inv in enumerate(invocations):
            item: dict[str, Any] = {}
            if inv.actual is not None:
                item["actual"] = inv.actual
            if inv.expected is not None:
                item["expected"] = inv.expected
            if inv.index != i:
                item["index"] = inv.index
            if inv.invocation_id is not None:
                item["invocation_id"] = inv.invocation_id
            by_metric = inv.scores
            # List equality checks identity first: the engine's scores are the very
            # objects in per_invocation, so this costs a few pointer comparisons.
            if list(by_metric) != derived or list(by_metric.values()) != [
                per[i] for per in derived_scores
            ]:
                item["scores"] = {k: _score(s) for k, s in by_metric.items()}
            stored.append(item)
        doc["invocations"] = stored
    if result.run_index != 0:
        doc["run_index"] = result.run_index
    if result.latency_s is not None:
        doc["latency_s"] = result.latency_s
    if result.failure:
        doc["failure"] = result.failure
    if result.error is not None:
        doc["error"] = result.error
    if result.error_type is not None:
        doc["error_type"] = ErrorType(result.error_type)._value_
    if result.eval_set_id is not None:
        doc["eval_set_id"] = result.eval_set_id
    if result.conversation is not None:
        doc["conversation"] = result.conversation
    if result.traceback is not None:
        doc["traceback"] = result.traceback
    return doc


def encode_document(result: CaseResult) -> bytes:
    """`result` as the JSON the store keeps (format 2); StoreError names the case."""
    try:
        return dumps_bytes(compact_document(result))
    except StoreError as exc:
        raise StoreError(f"result of case {result.case_id!r}: {exc}") from exc


def _copy(value: object) -> Any:
    # Decoded JSON holds only dicts, lists and scalars.
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def _full_score(stored: object) -> dict[str, Any]:
    if type(stored) is dict:
        # Rebuilt rather than reused: jsonb (PostgreSQL) reorders an object's keys.
        return {
            "value": stored["value"],
            "explanation": stored["explanation"],
            "details": stored["details"],
        }
    return {"value": stored, "explanation": None, "details": {}}


def expand_document(doc: object) -> Any:
    """A stored document as `CaseResult.to_dict()` gives it (see the module docstring)."""
    if type(doc) is not dict:
        return doc
    version = doc.get("format")
    if version is None:
        return doc
    if version != FORMAT:
        raise StoreError(
            f"case result document format {version!r} is not readable by this version of "
            f"assay (it reads format {FORMAT}); upgrade assay to read this store"
        )
    stored_invocations = doc.get("invocations", ())
    count = len(stored_invocations)
    metrics: dict[str, Any] = {}
    # Per invocation, the scores rebuilt from per_invocation (when not stored).
    derived: list[dict[str, Any]] = [{} for _ in range(count)]
    # Loops rather than comprehensions and helper calls: reading 100,000 results
    # spends most of its Python time here.
    for entry in doc.get("metrics", ()):
        failed = None
        if len(entry) == _SHORT_METRIC:
            name, score, threshold, status, per = entry
            explanation, details, key = None, {}, name
        elif len(entry) == _LONG_METRIC:
            name, score, threshold, status, per, explanation, details, key = entry
        else:
            name, score, threshold, status, per, explanation, details, key, failed = entry
        scores = []
        for stored in per:
            if type(stored) is dict:
                scores.append(_full_score(stored))
            else:
                scores.append({"value": stored, "explanation": None, "details": {}})
        metrics[key] = {
            "name": name,
            "score": score,
            "threshold": threshold,
            "status": status,
            "explanation": explanation,
            "per_invocation": scores,
            "details": details,
            "error_type": failed,
        }
        if count and len(per) == count:
            for i, stored in enumerate(per):
                if type(stored) is dict:
                    # Its own containers, as in to_dict(): this is its second use.
                    derived[i][key] = _full_score(_copy(stored))
                else:
                    derived[i][key] = {"value": stored, "explanation": None, "details": {}}
    invocations = []
    for i, item in enumerate(stored_invocations):
        by_metric = item.get("scores")
        invocations.append(
            {
                "index": item.get("index", i),
                "invocation_id": item.get("invocation_id"),
                "actual": item.get("actual"),
                "expected": item.get("expected"),
                "scores": (
                    derived[i]
                    if by_metric is None
                    else {k: _full_score(s) for k, s in by_metric.items()}
                ),
            }
        )
    return {
        "case_id": doc["case_id"],
        "status": doc["status"],
        "metrics": metrics,
        "invocations": invocations,
        "run_index": doc.get("run_index", 0),
        "latency_s": doc.get("latency_s"),
        "failure": doc.get("failure", False),
        "error": doc.get("error"),
        "error_type": doc.get("error_type"),
        "eval_set_id": doc.get("eval_set_id"),
        "conversation": doc.get("conversation"),
        "traceback": doc.get("traceback"),
    }
