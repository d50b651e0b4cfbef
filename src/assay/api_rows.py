"""`assay.evaluate(rows_path, metrics=..., keep_cases=N)` of recorded rows, streamed.

Without an agent, row files (JSON lines, CSV, Parquet of Vertex rows) are scored as
`assay eval` scores them (`session.streaming.StreamingRun`, the lean row path included):
read in batches, each batch stored and tallied before the next, nothing per row kept but
the summary's numbers and the first `keep_cases` case results that did not pass. Only
when the caller bounds the result (`keep_cases`): a result holding every case holds the
rows' worth of objects anyway, and the loaded run builds it faster. In the caller's
process (no worker pool is forked in it) and its thread, as the loaded run scores.

Ctrl-C stores the finished batches, leaves the run INTERRUPTED (the same call resumes
it) and goes on to the caller as KeyboardInterrupt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from assay.core.results import EvalResult

if TYPE_CHECKING:
    from assay.api_inputs import StoreInput
    from assay.api_stream import Planned


def evaluate_recorded_streamed(
    planned: Planned,
    *,
    store: StoreInput,
    mapping: Mapping[str, str] | None,
    run_name: str | None,
    fresh: bool,
    keep_cases: int | None,
) -> EvalResult:
    """The streamed run of the recorded row files `planned` (its driver `Driver.ROWS`:
    row files, a bound on the result, named metrics none of them judged)."""
    from assay.api_inputs import environment, open_store
    from assay.api_stream import streamed_result
    from assay.session.run_session import RunSession
    from assay.session.streaming import StreamingRun

    assert keep_cases is not None  # the plan streams recorded rows only with a bound
    files, cfg, metric_objects = planned.files, planned.config, planned.metrics
    # The loaded run's identity, so either resumes the other's interrupted run.
    session = RunSession((), metric_objects, config=cfg.dump() if cfg is not None else {})
    assert session.identity is not None
    identity = session.identity.as_kwargs()
    identity["eval_set_ids"] = [f.eval_set_id for f in files]
    opened = open_store(store)
    try:
        outcome = StreamingRun(
            files,
            metric_objects,
            identity,
            workers=1,
            store=opened,
            mapping=dict(mapping) if mapping is not None else None,
            fresh=fresh,
            name=run_name,
            keep_failing=keep_cases,
            keep_all_up_to=keep_cases,
            environment=environment() if opened is not None else None,
        ).run()
    finally:
        if opened is not None and opened is not store:  # a Store given stays open
            opened.close()
    if outcome.error is not None:
        raise outcome.error
    if outcome.interrupted:
        raise KeyboardInterrupt
    return streamed_result(outcome, metric_objects, files, agent_run=False)
