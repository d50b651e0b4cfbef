"""An evaluation's `aggregatedMetrics`, kept up to date as its results arrive.

`metricsByAppVersion[]` groups the evaluation's COMPLETED results by the app version
of their run: pass/fail counts, per-tool pass/fail (each expected tool call's
parameter-correctness outcome), average semantic similarity (0..4) and hallucination
(0..1, turns with no claim left out), average tool-call latency per tool and turn
latency, and the same per turn index in `metricsByTurn[]`. ERROR results count in none
of them.

Reads stay cheap: `Aggregator` keeps per-evaluation sums in memory, checked against a
watermark of the stored results (their count and highest row id, one indexed query).
New results are folded in incrementally; anything else (a deleted run, another
process's writes interleaved oddly) triggers a recount from the store.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.core.verdict import is_pass
from assay.errors import StoreError
from assay.service._results import duration, render_result, service_config
from assay.store.eval_results import EvaluationResults, ResultRow
from assay.store.namespace import Namespace, current_namespace
from assay.store.runs import RunInfo

DRAFT_VERSION = "draft"
"""The app version id of results whose run named none."""

_PAGE = 500


@dataclass
class _Mean:
    total: float = 0.0
    count: int = 0

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1

    def value(self) -> float | None:
        return self.total / self.count if self.count else None


@dataclass
class _Bucket:
    """Sums of one app version (or of one turn index within it)."""

    tools: dict[str, list[int]] = field(default_factory=dict)  # tool -> [pass, fail]
    similarity: _Mean = field(default_factory=_Mean)
    hallucination: _Mean = field(default_factory=_Mean)
    tool_latency: dict[str, _Mean] = field(default_factory=dict)
    turn_latency: _Mean = field(default_factory=_Mean)

    def render(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "toolMetrics": [
                {"tool": tool, "passCount": counts[0], "failCount": counts[1]}
                for tool, counts in sorted(self.tools.items())
            ],
            "semanticSimilarityMetrics": _mean_list(self.similarity),
            "hallucinationMetrics": _mean_list(self.hallucination),
            "toolCallLatencyMetrics": [
                {"tool": tool, "averageLatency": duration(mean.total / mean.count)}
                for tool, mean in sorted(self.tool_latency.items())
                if mean.count
            ],
            "turnLatencyMetrics": [
                {"averageLatency": duration(self.turn_latency.total / self.turn_latency.count)}
            ]
            if self.turn_latency.count
            else [],
        }
        return out


def _mean_list(mean: _Mean) -> list[dict[str, float]]:
    value = mean.value()
    return [] if value is None else [{"score": round(value, 6)}]


@dataclass
class _Version:
    passed: int = 0
    failed: int = 0
    overall: _Bucket = field(default_factory=_Bucket)
    turns: dict[int, _Bucket] = field(default_factory=dict)


@dataclass
class EvaluationMetrics:
    """Everything the evaluation decorator shows about one evaluation's results."""

    watermark: tuple[int, int] = (0, 0)
    versions: dict[str, _Version] = field(default_factory=dict)
    last_completed: ResultRow | None = None
    run_ids: set[str] = field(default_factory=set)
    # When the watermark was last compared, and the local write generation then.
    checked_at: float = 0.0
    generation: int = 0
    # What `rendered` and `last_result` made, kept: an entry is never changed once it is
    # cached (a refresh folds into a copy), so neither is what it renders.
    _rendered: dict[str, Any] | None = field(default=None, repr=False)
    _last_result: dict[str, Any] | None = field(default=None, repr=False)

    def add(self, row: ResultRow, app_version: str) -> None:
        self.run_ids.add(row.run_id)
        if row.execution_state != "COMPLETED":
            return
        if self.last_completed is None or row.row_id > self.last_completed.row_id:
            self.last_completed = row
        version = self.versions.setdefault(app_version, _Version())
        if is_pass(row.status):
            version.passed += 1
        else:
            version.failed += 1
        doc = row.document
        for index, inv in enumerate(doc.get("invocations") or []):
            turn_bucket = version.turns.setdefault(index, _Bucket())
            for bucket in (version.overall, turn_bucket):
                _add_turn(bucket, doc, index, inv)

    def rendered(self) -> dict[str, Any]:
        """`render()`, made once per entry; callers must not change it."""
        if self._rendered is None:
            self._rendered = self.render()
        return self._rendered

    def last_result(self, app: str, run: Callable[[str], RunInfo]) -> dict[str, Any] | None:
        """The last completed result as the service renders it (made once per entry;
        callers must not change it); `run` gives the run of a run id."""
        row = self.last_completed
        if row is None:
            return None
        if self._last_result is None:
            self._last_result = render_result(app, row, run(row.run_id))
        return self._last_result

    def render(self) -> dict[str, Any]:
        by_version = []
        for version_id, version in sorted(self.versions.items()):
            entry: dict[str, Any] = {
                "appVersionId": version_id,
                "passCount": version.passed,
                "failCount": version.failed,
                **version.overall.render(),
                "metricsByTurn": [
                    {"turnIndex": index, **bucket.render()}
                    for index, bucket in sorted(version.turns.items())
                ],
            }
            by_version.append(entry)
        return {"metricsByAppVersion": by_version}


def _per_invocation(doc: Mapping[str, Any], metric: str, index: int) -> Mapping[str, Any]:
    per = ((doc.get("metrics") or {}).get(metric) or {}).get("per_invocation") or []
    found = per[index] if index < len(per) else None
    return found if isinstance(found, Mapping) else {}


def _add_turn(
    bucket: _Bucket, doc: Mapping[str, object], index: int, inv: Mapping[str, Any]
) -> None:
    details = _per_invocation(doc, "parameter_correctness_score", index).get("details") or {}
    for call in details.get("tool_calls") or []:
        counts = bucket.tools.setdefault(str(call.get("tool")), [0, 0])
        counts[0 if call.get("outcome") == "PASS" else 1] += 1
    similarity = _per_invocation(doc, "semantic_similarity", index).get("value")
    if isinstance(similarity, int | float):
        bucket.similarity.add(float(similarity))
    hallucination = _per_invocation(doc, "hallucination", index).get("value")
    if isinstance(hallucination, int | float) and hallucination >= 0:
        bucket.hallucination.add(float(hallucination))
    actual = inv.get("actual") or {}
    if isinstance(actual.get("latency_s"), int | float):
        bucket.turn_latency.add(float(actual["latency_s"]))
    for step in actual.get("steps") or []:
        response = step.get("tool_response")
        if response and isinstance(response.get("latency_s"), int | float):
            mean = bucket.tool_latency.setdefault(str(response.get("name")), _Mean())
            mean.add(float(response["latency_s"]))


class Aggregator:
    """Per-evaluation metrics of one store, cached and refreshed by watermark.

    Results this process stores are announced with `touched`, so they show at once;
    without that, a cached entry is trusted for `recheck_s` before its watermark is
    compared again (the delay after which other processes' writes show).
    Thread-safe: request handlers run in a thread pool.
    """

    def __init__(
        self,
        results: EvaluationResults,
        get_run: Callable[[str], RunInfo],
        *,
        recheck_s: float = 1.0,
    ) -> None:
        self._results = results
        self._get_run = get_run
        self._recheck_s = recheck_s
        self._lock = threading.Lock()
        # Keyed by namespace too: apps of one name may live in several projects.
        self._cache: dict[tuple[Namespace, str, str], EvaluationMetrics] = {}
        self._generations: dict[tuple[str, str], int] = {}
        self._runs: dict[str, RunInfo] = {}

    def metrics(self, app: str, evaluation_id: str) -> EvaluationMetrics:
        """The evaluation's metrics as of now."""
        key = (current_namespace(), app, evaluation_id)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(key)
            # Read before the watermark: a write landing after it bumps the generation.
            # (Generations are not per namespace: a bump in another one costs a recheck.)
            generation = self._generations.get((app, evaluation_id), 0)
        if (
            cached is not None
            and cached.generation == generation
            and now - cached.checked_at < self._recheck_s
        ):
            return cached
        mark = self._results.watermark(app, evaluation_id)
        if cached is not None and cached.watermark == mark:
            fresh = cached
        else:
            fresh = self._refresh(app, evaluation_id, cached, mark)
        fresh.checked_at, fresh.generation = now, generation
        with self._lock:
            self._cache[key] = fresh
        return fresh

    def touched(self, app: str, evaluation_ids: Iterable[str]) -> None:
        """Results of these evaluations were just stored (by this process)."""
        with self._lock:
            for evaluation_id in evaluation_ids:
                key = (app, evaluation_id)
                self._generations[key] = self._generations.get(key, 0) + 1

    def forget(self, app: str) -> None:
        """Drop what is cached about `app` (after deleting a run, say)."""
        with self._lock:
            ns = current_namespace()
            for key in [k for k in self._cache if k[:2] == (ns, app)]:
                del self._cache[key]

    def run(self, run_id: str) -> RunInfo:
        """A run as results render it (name and request never change, so cached)."""
        with self._lock:
            known = self._runs.get(run_id)
        if known is not None:
            return known
        run = self._get_run(run_id)
        with self._lock:
            if len(self._runs) > 10_000:
                self._runs.clear()
            self._runs[run_id] = run
        return run

    def _refresh(
        self,
        app: str,
        evaluation_id: str,
        cached: EvaluationMetrics | None,
        mark: tuple[int, int],
    ) -> EvaluationMetrics:
        if cached is not None and mark[0] > cached.watermark[0] and mark[1] > cached.watermark[1]:
            rows = list(self._rows(app, evaluation_id, after=cached.watermark[1]))
            if cached.watermark[0] + len(rows) == mark[0]:
                updated = _copy(cached)
                self._fold(updated, rows)
                updated.watermark = mark
                return updated
        fresh = EvaluationMetrics()
        rows = list(self._rows(app, evaluation_id, after=0))
        self._fold(fresh, rows)
        # The watermark of the rows folded in (which may be newer than `mark`).
        fresh.watermark = (len(rows), max((r.row_id for r in rows), default=0))
        return fresh

    def _rows(self, app: str, evaluation_id: str, *, after: int) -> Iterable[ResultRow]:
        while True:
            page = self._results.results(app, evaluation_id, limit=_PAGE, after=after)
            yield from page
            if len(page) < _PAGE:
                return
            after = page[-1].row_id

    def _fold(self, metrics: EvaluationMetrics, rows: Iterable[ResultRow]) -> None:
        for row in rows:
            metrics.add(row, self.app_version(row.run_id))

    def app_version(self, run_id: str) -> str:
        """The app version id a run evaluated."""
        try:
            run = self.run(run_id)
        except StoreError:  # deleted meanwhile: its results are about to go too
            return DRAFT_VERSION
        return str(service_config(run).get("appVersion") or DRAFT_VERSION)


def _copy(metrics: EvaluationMetrics) -> EvaluationMetrics:
    # Readers may hold the cached object: fold into a copy (the rows are immutable).
    return EvaluationMetrics(
        metrics.watermark,
        copy.deepcopy(metrics.versions),
        metrics.last_completed,
        set(metrics.run_ids),
    )
