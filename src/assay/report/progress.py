"""Run observers for the terminal: a rich progress bar, and a collector of finished cases."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from assay.model.results import CaseResult, EvalResult, Status


class ProgressObserver:
    """Shows case runs completed, with running pass/fail counts; removed when done."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task: TaskID | None = None
        self._counts = {s: 0 for s in Status}

    def _counts_text(self) -> str:
        return (
            f"[green]{self._counts[Status.PASSED]} passed[/] "
            f"[red]{self._counts[Status.FAILED]} failed[/] "
            f"[yellow]{self._counts[Status.NOT_EVALUATED]} not evaluated[/]"
        )

    def on_start(self, total: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task("cases", total=total, counts=self._counts_text())

    def on_case_done(self, result: CaseResult) -> None:
        self._counts[result.status] += 1
        if self._task is not None:
            self._progress.update(self._task, advance=1, counts=self._counts_text())

    def on_finish(self, result: EvalResult) -> None:
        self.close()

    def close(self) -> None:
        """Stop drawing (also after an interrupted run); safe to call twice."""
        self._progress.stop()


class CaseCollector:
    """Keeps finished cases, so an interrupted run still reports what completed."""

    def __init__(self) -> None:
        self.cases: list[CaseResult] = []
        self.total = 0

    def on_start(self, total: int) -> None:
        self.total = total

    def on_case_done(self, result: CaseResult) -> None:
        self.cases.append(result)

    def on_finish(self, result: EvalResult) -> None:
        return None
