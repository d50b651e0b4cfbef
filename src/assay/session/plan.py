"""Which driver runs a run: one rule for `assay eval`, `evaluate`/`aevaluate` and the service.

A run of row files (JSON lines, CSV, Parquet of Vertex rows) is streamed: read in
batches and never held whole, by `session.streaming.StreamingRun` (recorded rows) or
`session.agent_stream.AgentStreamingRun` (an agent over the rows). Everything else is
loaded whole and run by `session.run_session.RunSession`. `plan_run` takes what a
caller knows of the run (`RunFacts`) and returns the driver, with the reason when the
run cannot stream, so callers can say it.

The callers gather the facts (each knows its own options) but never decide: the rules
live here only, and `tests/session/test_plan.py` pins them over a table of inputs.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.formats.stream import RowFile
    from assay.metrics.base import Metric


class Driver(enum.Enum):
    """What runs a run."""

    ROWS = "rows"
    """`StreamingRun`: recorded row files scored in batches."""
    AGENT_ROWS = "agent_rows"
    """`AgentStreamingRun`: the agent run over row files read as its slots free."""
    SESSION = "session"
    """`RunSession`: the eval sets loaded whole, then run."""


@dataclass(frozen=True)
class RunFacts:
    """What a caller knows of a run when it plans it.

    `files`: the data as row files (`row_files`), None when they are not (or the
    caller's data never are: the service's evaluations); `metrics`: the run's metrics
    when named (or from a config), None when the defaults depend on what the data
    holds; `local`: the cases run in this process (no Ray cluster); `whole_result`: the
    caller wants every case result in memory (`evaluate` without `keep_cases`);
    `observers`: the caller's own observers are told each case result;
    `simulated_user` is not among the facts: row files hold no scenarios, so a
    simulated user has nothing to do in a streamed run.
    """

    files: Sequence[RowFile] | None
    metrics: Sequence[Metric] | None
    agent: bool = False
    local: bool = True
    runs: int | None = None
    selection: bool = False
    html_without_store: bool = False
    mlflow: bool = False
    adk_history: bool = False
    observers: bool = False
    whole_result: bool = False


@dataclass(frozen=True)
class RunPlan:
    """`driver`, and when the run is loaded, `reason` (why it cannot stream);
    `said`: the reason is an option the user gave over row files, worth a line in
    ordinary output (other reasons belong in verbose output)."""

    driver: Driver
    reason: str | None = None
    said: bool = False

    @property
    def streams(self) -> bool:
        return self.driver is not Driver.SESSION

    def notice(self) -> str | None:
        """The line a caller prints when the run is loaded, else None."""
        if self.reason is None:
            return None
        return f"rows loaded whole, not streamed: {self.reason} (docs/scale.md)"


def plan_run(facts: RunFacts) -> RunPlan:
    """The driver of the run `facts` describe (the module docstring)."""
    quiet = _unsaid_reason(facts)
    if quiet is not None:
        return RunPlan(Driver.SESSION, quiet)
    said = _said_reason(facts)
    if said is not None:
        return RunPlan(Driver.SESSION, said, said=True)
    return RunPlan(Driver.AGENT_ROWS if facts.agent else Driver.ROWS)


def _unsaid_reason(facts: RunFacts) -> str | None:
    """Why the run is loaded for a reason that is no option's doing, or None."""
    if not facts.local:
        return "another executor runs the cases (and scores rows in batches) where it runs"
    if facts.files is None:
        return "the data are not row files (JSON lines, CSV or Parquet of Vertex rows)"
    ids = [f.eval_set_id for f in facts.files]
    clash = next((i for i in ids if ids.count(i) > 1), None)
    if clash is not None:
        return f"two row files are eval set {clash!r}; the loaded run names the clash"
    if facts.metrics is None:
        return "the default criteria depend on what the data holds (name the metrics)"
    if not facts.agent and facts.whole_result:
        return "every case result is kept in memory, which the loaded run builds faster"
    if not facts.agent and facts.observers:
        return "observers are told each case result by the loaded run"
    return None


def _said_reason(facts: RunFacts) -> str | None:
    """Why the run is loaded for an option the user gave, or None (it streams)."""
    if facts.html_without_store:
        return "--html without a store builds its page from every case in memory"
    if facts.mlflow:
        return "--mlflow logs one results table of every case"
    if facts.selection:
        return "case selection (--case, --tag, --limit, --sample) picks among all the cases"
    if (facts.runs or 1) != 1:
        return "--runs above 1 repeats every case"
    judged = next((m.name for m in facts.metrics or () if m.is_async), None)
    if judged is not None:
        return f"{judged} is judged, through the loaded run's judge pool"
    if facts.adk_history:
        return "ADK's eval history of the run holds every case (--no-adk-history streams)"
    return None


def row_files(data: object, fmt: str | None) -> list[RowFile] | None:
    """`data` as row files when it is one or more paths to them; else None."""
    from assay.formats.stream import row_file

    items = [data] if isinstance(data, str | Path) else data
    if not isinstance(items, Sequence) or isinstance(items, bytes | str) or not items:
        return None
    if not all(isinstance(item, str | Path) for item in items):
        return None
    files = [row_file(Path(item), fmt) for item in items]
    found = [f for f in files if f is not None]
    return found if len(found) == len(files) else None
