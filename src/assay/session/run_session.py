"""`RunSession`: one run's life, the same for the CLI, `assay.evaluate` and the service.

A session is planned from the eval sets, metrics, agent and options; `open` finds the
store's unfinished run of exactly this evaluation (`RunIdentity`) and resumes it, or
starts a new one; `arun` runs the case runs still to do through the engine (its
executor, its judges in the run's context) while the sinks record each result as it
completes — the store's recorder durably, then the caller's observers (progress, a
viewer); at the end the run is marked COMPLETED, INTERRUPTED (Ctrl-C, a cancelled task:
resumable) or ERROR with its message. A completed run is then handed to the session's
sinks in order (report files, MLflow, ADK eval history: `sinks.RunSink`);
`finish_interrupted` hands an interrupted run's partial result (earlier sessions'
results included) to the sinks that take partial results.

A streamed run of row files (`session.streaming.StreamingRun`, and
`session.agent_stream.AgentStreamingRun` with an agent) has the same life but its own
executor: it opens the session, stores each scored batch through `record_encoded` (each
agent case run through `case_outputs`, as `arun` does) and ends with `mark_completed` /
`mark_interrupted` / `mark_error`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from assay.core.results import CaseResult, EvalResult
from assay.engine.aggregate import build_result
from assay.engine.judge_options import JudgeRunOptions
from assay.engine.options import RunOptions
from assay.errors import ConfigError, StoreError
from assay.redact import redact
from assay.session.resume import ENVIRONMENT_KEY, Resumption, find_resumable
from assay.session.sinks import CaseOutputs, FinishedRun, RunSink, StreamedReports
from assay.store.exceptions import store_unavailable
from assay.store.lease import LEASE_S, LeaseKeeper, describe_owner, this_process

if TYPE_CHECKING:
    from assay.agents.base import Agent
    from assay.core.cases import EvalSet
    from assay.engine.executors import Executor
    from assay.engine.runner import RunObserver
    from assay.judges.client import JudgePool
    from assay.metrics.base import Metric
    from assay.store import EncodedCase, Store, StoreRecorder
    from assay.store.runs import RunInfo


def run_options_doc(
    options: RunOptions,
    persona_source: str | None = None,
    selection: Mapping[str, object] | None = None,
    extra: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """What, besides data, metrics and agent, decides the results (for resume matching).

    `selection`: which cases of the data were chosen (`--case`, `--tag`, `--limit`, ...);
    `extra`: further settings that change scores (`prices_file`), only when set.
    """
    sim = options.simulator
    return {
        "runs": options.runs,
        "tool_behavior": options.tool_behavior.value,
        "run_method": options.run_method.value if options.run_method else None,
        "user_model": sim.model if sim is not None else None,
        "stop_signal": sim.stop_signal if sim is not None else None,
        "max_turns": sim.max_turns if sim is not None else None,
        "persona_file": persona_source,
        **({"selection": dict(selection)} if selection else {}),
        **(extra or {}),
    }


@dataclass(frozen=True)
class RunIdentity:
    """What makes two runs the same evaluation: only such a run is ever resumed."""

    eval_set_ids: list[str]
    metrics: list[str]
    config: dict[str, Any]
    agent: str | None

    def as_kwargs(self) -> dict[str, Any]:
        return {
            "eval_set_ids": self.eval_set_ids,
            "metrics": self.metrics,
            "config": self.config,
            "agent": self.agent,
        }


def _runs_here(executor: Executor | None) -> bool:
    from assay.engine.executors import LocalExecutor

    return executor is None or isinstance(executor, LocalExecutor)


@dataclass
class RunSession:
    """One run: plan, open (new or resumed), run with sinks, finish or interruption.

    `store` None runs without recording (nothing to resume); the caller owns the store
    and closes it. `judges`: the run's judge options, or a `JudgePool` the caller owns
    and closes (its own cache and pacing, as calibration passes one); only options get
    the session's store as their cache. `identity` defaults to the eval set ids, metric
    names, `config` plus the run options (and `run_extra`), and `agent_label`. `fresh`
    starts a new run even when an unfinished one of this evaluation exists. `sinks` get
    the finished run in order; `say` shows the lines they return (default: dropped).

    For a server: `continue_run` names a stored run to continue (already started, e.g.
    claimed from a server that stopped) instead of looking one up by identity;
    `recorder` makes the store sink for a run id (default: a `StoreRecorder` counting
    the case runs already done in its total); `offload` moves the session's own store
    reads and writes (open, the final mark) to a worker thread so the event loop never
    waits on the database; `abandon` before cancelling leaves the stored run as it is
    (another server owns it now).
    """

    evalsets: Sequence[EvalSet]
    metrics: Sequence[Metric]
    agent: Agent | None = None
    options: RunOptions = field(default_factory=RunOptions)
    judges: JudgeRunOptions | JudgePool = field(default_factory=JudgeRunOptions)
    store: Store | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    agent_label: str | None = None
    persona_source: str | None = None
    selection: Mapping[str, Any] | None = None
    run_extra: Mapping[str, Any] | None = None
    name: str | None = None
    fresh: bool = False
    observers: Sequence[RunObserver] = ()
    executor: Executor | None = None
    identity: RunIdentity | None = None
    sinks: Sequence[RunSink] = ()
    say: Callable[[str], None] | None = None
    continue_run: str | None = None
    recorder: Callable[[Store, str], StoreRecorder] | None = None
    offload: bool = False
    environment: Mapping[str, Any] | None = None
    _abandoned: bool = field(default=False, init=False, repr=False)
    _resumption: Resumption | None = field(default=None, init=False, repr=False)
    _recorder: StoreRecorder | None = field(default=None, init=False, repr=False)
    _outputs: CaseOutputs | None = field(default=None, init=False, repr=False)
    _finished: bool = field(default=False, init=False, repr=False)
    _lease: LeaseKeeper | None = field(default=None, init=False, repr=False)
    resumed: bool = field(default=False, init=False)
    #: unfinished runs of this evaluation other live processes are executing (not joined)
    busy: list[RunInfo] = field(default_factory=list, init=False)
    lease_s: float = LEASE_S

    def __post_init__(self) -> None:
        sim = self.options.simulator
        if sim is not None and sim.cache_replies and not _runs_here(self.executor):
            # The reply cache is the store's table, which only this process opens; the
            # simulated user of another executor runs where the store is out of reach.
            raise ConfigError(
                "--cache-user-replies keeps the simulated user's replies in the store,"
                " which only this process opens; with another executor (--executor ray)"
                " the user runs on the workers: drop --cache-user-replies"
            )
        if self.identity is None:
            extra = dict(self.run_extra or {})
            if self.judges.num_samples is not None:  # `--judge-samples` changes the scores
                extra["judge_samples"] = self.judges.num_samples
            self.identity = RunIdentity(
                eval_set_ids=[e.id for e in self.evalsets],
                metrics=[m.name for m in self.metrics],
                config={
                    **self.config,
                    "run_options": run_options_doc(
                        self.options, self.persona_source, self.selection, extra or None
                    ),
                },
                agent=self.agent_label,
            )

    # -- the plan ------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """Case runs of the whole run (those done by earlier sessions included)."""
        from assay.engine.runner import count_case_runs

        return count_case_runs(self.evalsets, self.options, agent_given=self.agent is not None)

    @property
    def run_id(self) -> str | None:
        return self._resumption.run_id if self._resumption is not None else None

    @property
    def done_before(self) -> int:
        """Case runs an earlier, interrupted session of this run completed."""
        return len(self._resumption.skip) if self._resumption is not None else 0

    @property
    def opened(self) -> bool:
        """Whether the session holds its stored run (and marks it however it ends)."""
        return self._recorder is not None

    @property
    def previous(self) -> list[CaseResult]:
        return self._resumption.previous if self._resumption is not None else []

    @property
    def skip(self) -> set[tuple[str, str, int]]:
        """The case runs (eval set, case, run index) an earlier session completed."""
        return self._resumption.skip if self._resumption is not None else set()

    # -- the life ------------------------------------------------------------------------

    def open(self) -> None:
        """Find the run to resume, else start one (no-op without a store or if open)."""
        if self.store is None or self._resumption is not None:
            return
        assert self.identity is not None
        owner = this_process()
        if self.continue_run is not None:
            self._resumption = Resumption.load(
                self.store, self.continue_run, owner=str(owner), lease_s=self.lease_s
            )
            self.resumed = bool(self._resumption.skip)
        else:
            self._resumption = self._resume_or_start(str(owner))
        self._lease = LeaseKeeper(self.store, self._resumption.run_id, owner, self.lease_s)
        self._lease.start()
        self._recorder = self._make_recorder()

    def _resume_or_start(self, owner: str) -> Resumption:
        """Resume the newest unfinished run of this evaluation whose owner is gone, else
        start one; a run another live process executes is never joined (`busy`)."""
        assert self.store is not None and self.identity is not None
        for _attempt in range(5):
            self.busy = []
            found = (
                None
                if self.fresh
                else find_resumable(self.store, **self.identity.as_kwargs(), busy=self.busy)
            )
            if found is None:
                break
            claimed = Resumption.claim(self.store, found, owner=owner, lease_s=self.lease_s)
            if claimed is not None:
                self.resumed = True
                return claimed
            # Another process took it over between our look and our claim: look again.
        started = self.identity.as_kwargs()
        if self.environment:
            # Where the run was made (git commit, assay version): shown by the
            # reports of the stored run, not part of what a resumption must match.
            started["config"] = {**started["config"], ENVIRONMENT_KEY: dict(self.environment)}
        run_id = self.store.start_run(
            **started,
            runs=self.options.runs or 1,
            name=self.name,
            owner=owner,
            lease_s=self.lease_s,
        )
        return Resumption(run_id)

    def busy_note(self) -> str | None:
        """A line naming the live runs of this evaluation this session did not join."""
        if not self.busy:
            return None
        first = self.busy[0]
        more = f" (and {len(self.busy) - 1} more)" if len(self.busy) > 1 else ""
        return (
            f"run {first.id} of this evaluation is still running in {describe_owner(first)}"
            f"{more}; not joining it: this is a new run, {self.run_id}"
        )

    def _stop_lease(self, *, release: bool = False) -> None:
        lease, self._lease = self._lease, None
        if lease is None:
            return
        lease.stop()
        if release and self.store is not None:
            # The store may be down (why the session gave up): then the lease runs out.
            with contextlib.suppress(StoreError):
                self.store.release_lease(lease.run_id, str(lease.owner))

    def _make_recorder(self) -> StoreRecorder:
        assert self.store is not None and self._resumption is not None
        if self.recorder is not None:
            return self.recorder(self.store, self._resumption.run_id)
        return self._resumption.recorder(self.store)

    def abandon(self) -> None:
        """Stop without touching the stored run (call before cancelling the task)."""
        self._abandoned = True

    async def arun(self) -> EvalResult:
        """Run the case runs still to do, then hand the completed run to the sinks.

        The run is marked finished however it ends. Sinks are synchronous and run on
        this thread after the store marked the run COMPLETED.
        """
        result = await self._execute()
        self._deliver(FinishedRun(result, self.evalsets))
        return result

    def run(self) -> EvalResult:
        """`arun` with the engine on a new event loop and the sinks after it.

        Ctrl-C marks the run INTERRUPTED and re-raises (`finish_interrupted` then reports
        what completed).
        """
        try:
            result = asyncio.run(self._execute())
        except KeyboardInterrupt:
            self.mark_interrupted()
            raise
        self._deliver(FinishedRun(result, self.evalsets))
        return result

    def finish_interrupted(self) -> EvalResult:
        """After an interrupt: mark the run INTERRUPTED (if not yet), hand what completed
        to the sinks that take partial results, and return it."""
        self.mark_interrupted()
        result = self.partial_result()
        finished = FinishedRun(result, self.evalsets, interrupted=True)
        self._deliver(finished, partial_only=True)
        return result

    def _deliver(self, finished: FinishedRun, *, partial_only: bool = False) -> None:
        for sink in self.sinks:
            if partial_only and not sink.partial:
                continue
            for line in sink.deliver(finished):
                if self.say is not None:
                    self.say(line)

    async def _blocking(self, call: Callable[[], None]) -> None:
        if self.offload:
            await asyncio.to_thread(call)
        else:
            call()

    async def _execute(self) -> EvalResult:
        from assay.engine.runner import arun

        await self._blocking(self.open)
        outputs = self.case_outputs(self.observers, collect=True)
        judges = self.judges
        if self.store is not None and isinstance(judges, JudgeRunOptions):
            judges = replace(judges, store=self.store)
        try:
            # On success the recorder writes the last results and marks the run COMPLETED.
            result = await arun(
                self.evalsets,
                self.metrics,
                agent=self.agent,
                options=self.options,
                observers=(outputs,),
                skip=self._resumption.skip if self._resumption is not None else None,
                previous=self.previous,
                judges=judges,
                executor=self.executor,
            )
        except (KeyboardInterrupt, asyncio.CancelledError):
            stop = self._close_abandoned if self._abandoned else self.mark_interrupted
            await self._blocking(stop)
            raise
        except BaseException as exc:
            if store_unavailable(exc):
                # The store failed, not the run: leave the run as stored (unfinished,
                # resumable once the store answers again). Marking it ERROR when the
                # database came back a moment later would turn an outage into a failed run.
                await self._blocking(self._close_abandoned)
                raise
            message = redact(f"{type(exc).__name__}: {exc}")
            await self._blocking(lambda: self.mark_error(message))
            raise
        self._finished = True
        self._stop_lease()  # the recorder marked the run COMPLETED
        result.run_id = self.run_id
        return result

    def mark_interrupted(self) -> None:
        """Write what completed and mark the run INTERRUPTED (once; it can be resumed)."""
        if not self._finished and self._recorder is not None:
            self._finished = True
            self._stop_lease()
            self._recorder.mark_interrupted()

    def _close_abandoned(self) -> None:
        if not self._finished and self._recorder is not None:
            self._finished = True
            self._stop_lease(release=True)
            self._recorder.close()

    def mark_error(self, message: str) -> None:
        """Write what completed and mark the run ERROR with `message` (once)."""
        if not self._finished and self._recorder is not None:
            self._finished = True
            self._stop_lease()
            self._recorder.mark_error(message)

    # -- a run executed outside the engine (`session.streaming`) -------------------------

    def encoded_writer(self) -> tuple[Store, str] | None:
        """Where workers may store encoded results themselves (`record_encoded`'s
        store and run), after anything buffered is written; None when nothing is
        recorded."""
        if self._recorder is None or self.store is None or self.run_id is None:
            return None
        self._recorder.flush()
        return self.store, self.run_id

    def record_encoded(self, encoded: Sequence[EncodedCase]) -> None:
        """Store finished case runs a worker already encoded; durable on return."""
        if self._recorder is not None and encoded:
            self._recorder.add_encoded(encoded)

    def case_outputs(
        self,
        observers: Sequence[RunObserver] = (),
        *,
        collect: bool = False,
        reports: StreamedReports | None = None,
    ) -> CaseOutputs:
        """Where this session's finished case runs go (after `open`): the store's
        recorder, then `observers`; `collect` keeps each one for `partial_result`, a
        streamed run's `reports` take them in file order (`CaseOutputs.in_order`)."""
        self._outputs = CaseOutputs(
            self._recorder,
            observers,
            collected=[] if collect else None,
            reports=reports,
        )
        return self._outputs

    def mark_completed(self, summary: dict[str, Any]) -> None:
        """Mark the run COMPLETED with `summary` (once; `arun` does it itself)."""
        if not self._finished and self._recorder is not None:
            self._finished = True
            self._stop_lease()
            self._recorder.mark_completed(summary)

    def _collected(self) -> list[CaseResult]:
        if self._outputs is None or self._outputs.collected is None:
            return []
        return self._outputs.collected

    def partial_result(self) -> EvalResult:
        """What the run completed so far, earlier sessions included (after an interrupt)."""
        result = build_result(
            [*self.previous, *self._collected()],
            self.metrics,
            agent_run=self.agent is not None,
        )
        result.run_id = self.run_id
        return result
