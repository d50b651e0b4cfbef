"""Types of the compiled row kernel (`kernel.pyx`; see its docstring)."""

from typing import Any

from assay.core.results import MetricResult, Status
from assay.metrics.base import Metric
from assay.rows.plan import RowPlan
from assay.store import EncodedCase

class EncodedMetric:
    result: MetricResult
    stored: bytes
    overall: bytes
    invocation: bytes
    columns: dict[str, Any]
    csv: str
    columns_json: bytes
    columns_id: int
    explanation_entry: bytes | None
    def __init__(self, metric: Metric, result: MetricResult) -> None: ...

class KernelRow:
    case_id: str
    status: Status
    metrics: list[EncodedMetric]
    stored: EncodedCase | None
    case_json: bytes | None
    shape: tuple[str, ...] | None
    line: bytes | None
    csv: bytes | None

class RowKernel:
    python_rows: int
    @staticmethod
    def of(plan: RowPlan) -> RowKernel: ...
    def row(
        self,
        raw: bytes,
        index: int,
        set_id: str,
        run_id: str | None,
        set_file: str | None,
        store: bool,
        cases: bool,
        rows: bool,
        csv: bool,
    ) -> KernelRow | None: ...
    def scan(
        self,
        data: bytes,
        position: int,
        lineno: int,
        offset: int,
        start: int,
        set_id: str,
        run_id: str | None,
        set_file: str | None,
        store: bool,
        cases: bool,
        rows: bool,
        csv: bool,
        keep: int,
        out: Any,
        statuses: dict[Status, int],
        counted: dict[EncodedMetric, int],
    ) -> tuple[int, int, int, int, int, bytes | None]: ...
