"""Run observers for the terminal: a rich progress bar (TTY), periodic plain progress lines
(CI logs, no TTY), and a collector of finished cases."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from assay.core.results import CaseResult, EvalResult, Status
from assay.judges.stats import JudgeCounts


class ProgressObserver:
    """Shows case runs completed, with running pass/fail counts; removed when done."""

    def __init__(self, console: Console, judges: JudgeCounts | None = None) -> None:
        self._judges = judges
        self._progress = Progress(
            TextColumn("[bold]evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._task: TaskID | None = None
        self._counts = {s: 0 for s in Status}
        self._start = time.monotonic()
        self._done = 0

    def _rate(self) -> str:
        elapsed = time.monotonic() - self._start
        return f"{self._done / elapsed:,.1f}/s" if elapsed > 0 else ""

    def _counts_text(self) -> str:
        text = (
            f"[green]{self._counts[Status.PASSED]} passed[/] "
            f"[red]{self._counts[Status.FAILED]} failed[/] "
            f"[yellow]{self._counts[Status.NOT_EVALUATED]} not evaluated[/]"
        )
        judges = self._judges
        if judges is not None and (judges.calls or judges.cache_hits):
            text += f" [dim]judge {judges.calls} calls, {judges.cache_hits} cached[/]"
        return text

    def on_start(self, total: int) -> None:
        self._progress.start()
        self._start = time.monotonic()
        self._task = self._progress.add_task(
            "cases", total=total, counts=self._counts_text(), rate=""
        )

    def on_case_done(self, result: CaseResult) -> None:
        self._counts[result.status] += 1
        self._done += 1
        if self._task is not None:
            self._progress.update(
                self._task, advance=1, counts=self._counts_text(), rate=self._rate()
            )

    def advance(self, done: int, passed: int, failed: int, not_evaluated: int) -> None:
        """A batch of case runs finished (streamed runs): `done` and the counts so far."""
        self._done = done
        self._counts.update(
            {Status.PASSED: passed, Status.FAILED: failed, Status.NOT_EVALUATED: not_evaluated}
        )
        if self._task is not None:
            self._progress.update(
                self._task, completed=done, counts=self._counts_text(), rate=self._rate()
            )

    def on_finish(self, result: EvalResult) -> None:
        self.close()

    def close(self) -> None:
        """Stop drawing (also after an interrupted run); safe to call twice."""
        self._progress.stop()


class PlainProgress:
    """Progress as plain lines for logs without a terminal (CI): one every `interval`
    seconds, and a last one when the run ends.

    `progress: 40/100 case runs (40%), 3.2/s, ETA 19s; 35 passed, 4 failed, 1 not
    evaluated; 1 agent error; judge: 80 calls, 12 cached, 1 error`. The judge part comes
    from `judges` (the run's `JudgeStats`), once a judge has been used. `clock` is
    injectable for tests.
    """

    def __init__(
        self,
        console: Console,
        *,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        judges: JudgeCounts | None = None,
    ) -> None:
        self._console = console
        self._interval = interval
        self._clock = clock
        self._start = self._last = 0.0
        self._total = 0
        self._done = 0
        self._errors = 0
        self._counts = {s: 0 for s in Status}
        self._judges = judges

    def on_start(self, total: int) -> None:
        self._start = self._last = self._clock()
        self._total = total

    def line(self) -> str:
        elapsed = max(self._clock() - self._start, 1e-9)
        rate = self._done / elapsed
        share = f" ({100 * self._done / self._total:.0f}%)" if self._total else ""
        text = f"progress: {self._done}/{self._total} case runs{share}, {rate:.1f}/s"
        if rate > 0 and self._done < self._total:
            text += f", ETA {_duration((self._total - self._done) / rate)}"
        text += (
            f"; {self._counts[Status.PASSED]} passed, {self._counts[Status.FAILED]} failed, "
            f"{self._counts[Status.NOT_EVALUATED]} not evaluated"
        )
        if self._errors:
            text += f"; {self._errors} agent error{'s' if self._errors != 1 else ''}"
        judges = self._judges
        if judges is not None and (judges.calls or judges.cache_hits or judges.errors):
            text += f"; judge: {judges.calls} call{'s' if judges.calls != 1 else ''}"
            text += f", {judges.cache_hits} cached"
            if judges.errors:
                text += f", {judges.errors} error{'s' if judges.errors != 1 else ''}"
        return text

    def on_case_done(self, result: CaseResult) -> None:
        self._done += 1
        self._counts[result.status] += 1
        self._errors += bool(result.failure)
        now = self._clock()
        if now - self._last >= self._interval:
            self._last = now
            self._console.print(self.line(), highlight=False, soft_wrap=True)

    def on_finish(self, result: EvalResult) -> None:
        self._console.print(self.line(), highlight=False, soft_wrap=True)

    def advance(self, done: int, passed: int, failed: int, not_evaluated: int) -> None:
        """A batch of case runs finished (streamed runs): `done` and the counts so far."""
        self._done = done
        self._counts.update(
            {Status.PASSED: passed, Status.FAILED: failed, Status.NOT_EVALUATED: not_evaluated}
        )
        now = self._clock()
        if now - self._last >= self._interval:
            self._last = now
            self._console.print(self.line(), highlight=False, soft_wrap=True)

    def close(self) -> None:
        """The last line, when the run ends (streamed runs)."""
        self._console.print(self.line(), highlight=False, soft_wrap=True)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{(seconds % 3600) // 60:02.0f}m"


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
