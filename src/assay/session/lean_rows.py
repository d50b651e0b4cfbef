"""The lean row path: a plain recorded Vertex row scored straight from its cells.

Most rows of a large recorded run have one shape — `id`, `prompt`, `response`,
`reference` and two trajectories of `{tool_name, tool_input}` calls — and are scored by
the same few metrics. Building the case (pydantic turns, steps, calls), a `CaseResult`
with its invocations, and then walking it three times for the store, the JSON report
and the rows costs most of a streamed run's CPU. Instead, `plain_row` reads such a row
into a `LeanRow` (its texts and call lists), `session.lean_score` scores every metric
on it through the metric's own code, keeping each result with its parts of the three
outputs (`EncodedMetric`), and `session.lean_encode` writes the store document, the
ADK-shaped report case and the report row from it — byte for byte what the ordinary
path writes.

A row takes the lean path only when it has exactly the plain shape (`plain_row`
returns None otherwise) and every metric of the run is one the lean path knows
(`LeanPlan.of`): any other row, and every row of any other run, takes the ordinary
path, row by row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.model.results import Status
from assay.report.json_report import _metric_entry, _overall_entry
from assay.report.json_stream import csv_fields, dumps
from assay.store._document import metric_entry
from assay.store._json import dumps_bytes

if TYPE_CHECKING:
    from assay.metrics.base import Metric
    from assay.model.results import MetricResult

# The columns of a plain row: any other column (aliases, latency, rubrics, metadata)
# takes the ordinary path.
_PLAIN = frozenset(
    {"id", "prompt", "response", "reference", "predicted_trajectory", "reference_trajectory"}
)
_CALL_KEYS = frozenset({"tool_name", "tool_input"})


class LeanCall:
    """A tool call as the call matchers and call diffs read it: `name` and `args` (and
    `id`, always None in a plain row). Built per call of every row, so no pydantic."""

    __slots__ = ("args", "name")
    id = None

    def __init__(self, name: str, args: dict[str, Any]) -> None:
        self.name = name
        self.args = args


class EncodedMetric:
    """One metric's result on a plain row and its parts of the three outputs.

    Results that do not depend on the row beyond their score (a perfect trajectory, a
    ROUGE value, an informational metric of a row without timings) repeat across rows:
    `LeanPlan` keeps their `EncodedMetric` and reuses it, so a row's metrics are mostly
    encoded once per run, not once per row.
    """

    __slots__ = (
        "columns",
        "columns_id",
        "columns_json",
        "csv",
        "explanation_entry",
        "invocation",
        "overall",
        "result",
        "stored",
    )

    def __init__(self, metric: Metric, result: MetricResult) -> None:
        score = result.per_invocation[0]
        self.result = result
        # The three entries as JSON, encoded once: a row's documents join them as they
        # are, not encode them again.
        self.stored = _kept(dumps_bytes(metric_entry(result.name, result)))
        self.overall = _kept(dumps(_overall_entry(result)))
        self.invocation = _kept(
            dumps(_metric_entry(result.name, score, result.threshold, result.status is None))
        )
        self.columns = metric.row_columns(score)
        self.csv = csv_fields(list(self.columns.values()))
        # The report row's part (`,"name/score":...`), and which columns it has: one
        # number per distinct list of column names (the row's shape is made of them).
        self.columns_json = b"".join(
            [b"," + dumps(key) + b":" + dumps(value) for key, value in self.columns.items()]
        )
        names = tuple(self.columns)
        self.columns_id = _COLUMN_LISTS.setdefault(names, len(_COLUMN_LISTS))
        # The report case's entry in its `explanations` object, if it has one.
        self.explanation_entry = (
            None
            if result.explanation is None
            else dumps(result.name) + b":" + dumps(result.explanation)
        )


def _kept(encoded: bytes) -> bytes:
    """A copy of orjson's output the size of its text: orjson's own keeps the ~4 KB
    buffer it wrote into, which thousands of kept entries would hold (measured: 20,000
    entries of a worker's memo, 125 -> 350 MB)."""
    return memoryview(encoded).tobytes()


_COLUMN_LISTS: dict[tuple[str, ...], int] = {}
"""A number per distinct list of a metric's row columns (a few per run's metric)."""


class LeanRow:
    """A plain row, scored: its cells and its metrics' results, in metric order."""

    __slots__ = (
        "case_id",
        "metrics",
        "predicted",
        "prompt",
        "reference",
        "reference_calls",
        "response",
        "status",
    )

    def __init__(
        self,
        case_id: str,
        prompt: str | None,
        response: str | None,
        reference: str | None,
        predicted: list[LeanCall],
        reference_calls: list[LeanCall],
    ) -> None:
        self.case_id = case_id
        self.prompt = prompt
        self.response = response
        self.reference = reference
        self.predicted = predicted
        self.reference_calls = reference_calls
        self.metrics: list[EncodedMetric] = []
        self.status = Status.NOT_EVALUATED


def _calls(value: Any, names: dict[str, str]) -> list[LeanCall] | None:
    """The calls of a trajectory cell of the plain shape, else None."""
    if type(value) is not list:
        return None
    calls = []
    for item in value:
        if type(item) is not dict or not item.keys() <= _CALL_KEYS:
            return None
        name = item.get("tool_name")
        if type(name) is not str:
            return None
        args = item.get("tool_input")
        if args is None:
            args = {}
        elif type(args) is not dict:
            return None
        calls.append(LeanCall(names.setdefault(name, name), args))
    return calls


def plain_row(row: Any, index: int, names: dict[str, str]) -> LeanRow | None:
    """`row` (parsed) as an unscored `LeanRow` when it has the plain shape, else None.

    The case id is the one `formats.vertex` gives (`row-{index}` without an id); the row
    must have both a recorded and a reference turn, as a row scored on its own does.
    """
    if type(row) is not dict or not row.keys() <= _PLAIN:
        return None
    get = row.get
    raw_id = get("id")
    if type(raw_id) is str:
        case_id = raw_id
    elif raw_id is None:
        case_id = f"row-{index}"
    elif type(raw_id) is int:
        case_id = str(raw_id)
    else:
        return None
    prompt, response, reference = get("prompt"), get("response"), get("reference")
    for text in (prompt, response, reference):
        if text is not None and type(text) is not str:
            return None
    pred_raw, ref_raw = get("predicted_trajectory"), get("reference_trajectory")
    if (response is None and pred_raw is None) or (reference is None and ref_raw is None):
        return None
    predicted = _calls(pred_raw, names) if pred_raw is not None else []
    reference_calls = _calls(ref_raw, names) if ref_raw is not None else []
    if predicted is None or reference_calls is None:
        return None
    return LeanRow(case_id, prompt, response, reference, predicted, reference_calls)
