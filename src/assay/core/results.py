"""Result shapes: a metric's score per invocation, per case, and a whole run (SPEC §3).

Plain slotted dataclasses: the engine builds hundreds of thousands of them on the
row-scoring path, where pydantic validation would dominate. `pydantic.TypeAdapter`
reads them back from JSON when needed (store, reports).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import Enum, StrEnum
from typing import Any, TypeVar

from assay.core.cases import Turn
from assay.core.error_types import ErrorType, ExecutionState

_R = TypeVar("_R", bound="EvalResult")


# Read for every metric of every case a report writes: one lookup, no dict per call.
_ADK_CODES = {"PASSED": 1, "FAILED": 2, "NOT_EVALUATED": 3}


class Status(StrEnum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    NOT_EVALUATED = "NOT_EVALUATED"

    # The hash Enum gives a member (its name's, which here is its value) without the
    # Python-level call of Enum.__hash__: statuses key the counts of every row tallied.
    __hash__ = str.__hash__

    @property
    def adk_code(self) -> int:
        """ADK's `EvalStatus` integer (1 passed, 2 failed, 3 not evaluated)."""
        return _ADK_CODES[self._value_]


def status_for(score: float | None, threshold: float | None) -> Status:
    """PASSED if score >= threshold, FAILED if below, NOT_EVALUATED without a score."""
    if score is None:
        return Status.NOT_EVALUATED
    if threshold is None or score >= threshold:
        return Status.PASSED
    return Status.FAILED


def combine_statuses(statuses: list[Status]) -> Status:
    """Strict case status: any FAILED fails; else any NOT_EVALUATED; else PASSED.

    A case with no scored metric at all is NOT_EVALUATED, never PASSED.
    """
    if not statuses:
        return Status.NOT_EVALUATED
    if Status.FAILED in statuses:
        return Status.FAILED
    if Status.NOT_EVALUATED in statuses:
        return Status.NOT_EVALUATED
    return Status.PASSED


@dataclass(slots=True)
class Score:
    """One metric's verdict on one invocation (or row).

    `value` None means "no score" and `explanation` then says why; a missing score is
    never reported as 0. `details` holds extra named outputs that become row columns
    (e.g. a custom metric's `{name}/{key}` values, per-rubric scores, chunk ratings).
    """

    value: float | None
    explanation: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class MetricResult:
    """One metric on one case: the case score, its status and the per-invocation scores."""

    name: str
    score: float | None
    threshold: float | None
    status: Status | None  # None for informational metrics (never pass/fail)
    explanation: str | None = None
    per_invocation: list[Score] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    #: why the metric could not score (METRIC_CALCULATION_FAILURE when it raised)
    error_type: ErrorType | None = None


@dataclass(slots=True)
class InvocationResult:
    index: int
    invocation_id: str | None
    actual: Turn | None
    expected: Turn | None
    scores: dict[str, Score] = field(default_factory=dict)


@dataclass(slots=True)
class CaseResult:
    """Every requested metric on one case, for one run of it (run_index is 0-based)."""

    case_id: str
    status: Status
    metrics: dict[str, MetricResult] = field(default_factory=dict)
    invocations: list[InvocationResult] = field(default_factory=list)
    run_index: int = 0
    latency_s: float | None = None
    failure: bool = False
    error: str | None = None
    error_type: ErrorType | None = None
    eval_set_id: str | None = None
    #: a scenario run's conversation: `stopped_by` ("stop_signal": the simulated user
    #: ended it, "max_turns", "error", "timeout"), `user_turns`, `max_turns`, `persona`,
    #: `user_model`, `initiator`, `simulator_calls`, `stop_message`; None otherwise
    conversation: dict[str, Any] | None = None
    #: the agent's exception, when it raised one: its traceback, trimmed of assay's own
    #: frames (an HTTP agent: the error body it answered)
    traceback: str | None = None

    @property
    def execution_state(self) -> ExecutionState:
        """ERROR when the case run failed to execute (an error or a failed agent)."""
        if self.error is not None or self.failure:
            return ExecutionState.ERROR
        return ExecutionState.COMPLETED

    def __repr__(self) -> str:
        scores = ", ".join(f"{n}={m.score!r}" for n, m in self.metrics.items())
        return (
            f"CaseResult(case_id={self.case_id!r}, run_index={self.run_index}, "
            f"status={self.status.value}, {scores})"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for inv, src in zip(data["invocations"], self.invocations, strict=True):
            inv["actual"] = src.actual.model_dump(exclude_none=True) if src.actual else None
            inv["expected"] = src.expected.model_dump(exclude_none=True) if src.expected else None
        return _enums_to_str(data)  # type: ignore[no-any-return]


def _enums_to_str(value: object) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _enums_to_str(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_enums_to_str(v) for v in value]
    return value


class EvalResult:
    """The outcome of one evaluation run.

    `summary` is the Vertex-style summary dict (`row_count`, `{metric}/mean`, ...),
    `rows` one dict per row/invocation with `{metric}/score` columns, `cases` the
    per-case results (written as ADK `EvalCaseResult` objects by the JSON report).
    Rows may be built lazily (`row_builder`), on first access: a 100k-row run that
    only prints a summary and stores its cases never pays for them.
    """

    def __init__(
        self,
        summary: dict[str, Any],
        rows: list[dict[str, Any]] | None = None,
        cases: list[CaseResult] | None = None,
        run_id: str | None = None,
        eval_set_id: str | None = None,
        metrics: list[str] | None = None,
        repeated: dict[str, Any] | None = None,
        *,
        row_builder: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.summary = summary
        self._rows = rows
        self._row_builder = row_builder
        self.cases = cases if cases is not None else []
        self.run_id = run_id
        self.eval_set_id = eval_set_id
        self.metrics = metrics if metrics is not None else []
        self.repeated = repeated if repeated is not None else {}

    @property
    def rows(self) -> list[dict[str, Any]]:
        if self._rows is None:
            self._rows = self._row_builder() if self._row_builder is not None else []
        return self._rows

    @rows.setter
    def rows(self, value: list[dict[str, Any]]) -> None:
        self._rows = value

    @classmethod
    def from_result(cls: type[_R], other: EvalResult) -> _R:
        """The same result as an instance of `cls` (e.g. a subclass with more views)."""
        new = cls(
            other.summary, other._rows, other.cases, other.run_id, other.eval_set_id,
            other.metrics, other.repeated, row_builder=other._row_builder,
        )  # fmt: skip
        return new

    @property
    def status(self) -> Status:
        return combine_statuses([c.status for c in self.cases])

    def __repr__(self) -> str:
        # Compact on purpose: a full dump of 100k rows in a notebook or a log line helps nobody.
        return (
            f"EvalResult(run_id={self.run_id!r}, status={self.status.value}, "
            f"cases={len(self.cases)}, metrics={self.metrics!r})"
        )

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs `pip install pandas`, or the `pandas` extra)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on environment
            from assay.errors import AssayError

            raise AssayError(
                "EvalResult.to_pandas() needs pandas: pip install -e '.[pandas]'"
            ) from exc
        return pd.DataFrame(self.rows)
