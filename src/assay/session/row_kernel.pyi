"""Types of the compiled row kernel (`row_kernel.pyx`; see its docstring)."""

from typing import Any

from assay.model.results import Status
from assay.session.lean_rows import EncodedMetric
from assay.session.lean_score import LeanPlan
from assay.store import EncodedCase

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
    @staticmethod
    def of(plan: LeanPlan) -> RowKernel | None: ...
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
