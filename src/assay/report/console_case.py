"""One case of a stored run in the terminal (`assay runs show RUN --case ID`), and the
live traceback lines of `assay eval -v`.

A case is named by its id or `SET/ID`; every run of it (`--runs N`) is shown, each
with its status, error, metric scores and, when the agent raised, its traceback (the
agent's own frames, as the engine kept them). Tracebacks are printed as they are:
never wrapped, never read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from assay.errors import ConfigError, did_you_mean
from assay.model.results import CaseResult

MAX_LISTED = 20
"""Case ids listed when a `--case` matches none."""


def select_case(cases: Sequence[CaseResult], ref: str) -> list[CaseResult]:
    """The case runs `ref` names (an id, or `SET/ID`), in run order; ConfigError (exit 2)
    naming the closest id when none matches."""
    matched = [c for c in cases if c.case_id == ref]
    if not matched and "/" in ref:
        set_id, _, case_id = ref.partition("/")
        matched = [c for c in cases if c.case_id == case_id and (c.eval_set_id or "") == set_id]
    if matched:
        return sorted(matched, key=lambda c: (c.eval_set_id or "", c.run_index))
    ids = list(dict.fromkeys(c.case_id for c in cases))
    listed = "\n  ".join(ids[:MAX_LISTED])
    more = f"\n  and {len(ids) - MAX_LISTED} more" if len(ids) > MAX_LISTED else ""
    raise ConfigError(
        f"--case {ref!r}: no such case in this run{did_you_mean(ref, ids)}; its cases:\n"
        f"  {listed}{more}"
    )


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def print_case(console: Console, case: CaseResult, *, runs: int = 1) -> None:
    """One case run: heading, error, metrics, traceback."""
    head = Text(f"case {case.case_id}", style="bold")
    if case.eval_set_id:
        head.append(f"  eval set {case.eval_set_id}", style="dim")
    if runs > 1:
        head.append(f"  run {case.run_index + 1}")
    head.append(f"  {case.status.value}")
    if case.error_type is not None:
        head.append(f"  {case.error_type}", style="red")
    if case.latency_s is not None:
        head.append(f"  {case.latency_s:.2f}s", style="dim")
    console.print(head, soft_wrap=True)
    if case.error:
        console.print(Text(f"error: {case.error}", style="red"), soft_wrap=True)
    for name, metric in case.metrics.items():
        line = f"  {name}: {_score(metric.score)}"
        if metric.threshold is not None:
            line += f" (threshold {_score(metric.threshold)})"
        line += f" {metric.status.value if metric.status else 'informational'}"
        if metric.explanation and metric.explanation != case.error:  # said once, above
            line += f" - {metric.explanation}"
        console.print(Text(line), soft_wrap=True)
    if case.traceback:
        console.print(Text("traceback (the agent's frames):", style="bold"))
        console.print(Text(case.traceback.rstrip("\n")), soft_wrap=True, highlight=False)


def print_cases(console: Console, cases: Sequence[CaseResult]) -> None:
    """Every run of one case, one after the other."""
    for i, case in enumerate(cases):
        if i:
            console.print()
        print_case(console, case, runs=len(cases))


def traceback_hint(run_id: str | None, raised: Sequence[CaseResult], counted: bool) -> str:
    """The line saying where the tracebacks of the agent's exceptions are (`raised`: case
    runs with one; `counted`: they are all of them, so their number is told)."""
    said = f"the agent raised in {len(raised)} case run(s): " if counted else "the agent raised: "
    if run_id is not None:
        shown = f"assay runs show {run_id} --case {raised[0].case_id}"
        return said + f"`{shown}` prints its traceback; -v prints each as it happens"
    return said + "-v prints each traceback as it happens (--out keeps them too)"


class TracebackPrinter:
    """A run observer (`assay eval -v`): each case run whose agent raised, printed as
    it finishes with its traceback."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def on_start(self, total: int) -> None:
        pass

    def on_case_done(self, result: CaseResult) -> None:
        if result.traceback is None:
            return
        where = f"{result.eval_set_id}/" if result.eval_set_id else ""
        self.console.print(
            Text(
                f"case {where}{result.case_id} (run {result.run_index + 1}): {result.error}",
                style="red",
            ),
            soft_wrap=True,
        )
        self.console.print(Text(result.traceback.rstrip("\n")), soft_wrap=True, highlight=False)

    def on_finish(self, result: object) -> None:
        pass
