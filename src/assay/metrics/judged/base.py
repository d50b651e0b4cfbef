"""What every LLM-judged metric shares: judge options and the judge hook.

A judged metric is built from its criterion like any other metric and is never changed
by a run: it finds its judge when it scores, in the run's `JudgeSource` (the judges of
the run the current task belongs to, set by the engine with `judges_in_context`), which
builds it from `judge_model_options.judge_model` or the `--judge MODEL` flag. Two runs
in one process (the service runs several) thus never see each other's judges, and one
metric object may serve both. A caller may still give a metric its own client
(`attach_judge`); that one wins over the run's. Without a judge the metric
gives each invocation no score with `NO_JUDGE_MESSAGE` (SPEC §5: NOT_EVALUATED with a
message that says how to configure a judge), while deterministic metrics still run.
With one, `ascore_case` calls `judge_case`, which by default judges the invocations
concurrently through `judge_view` (each invocation with the turns before it), which
by default calls `judge_invocation`: the hooks each metric family fills in with its
prompt, reply parsing and voting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import ClassVar, Protocol, runtime_checkable

from pydantic import Field

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Score
from assay.judges.types import JudgeModelOptions, JudgeRequest
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.judged.context import InvocationView, views_of
from assay.metrics.sample_split import mark_result

NO_JUDGE_MESSAGE = (
    "no LLM judge configured: give one with --judge MODEL (CLI), judge=MODEL (Python API)"
    " or judge_model_options.judge_model in the config, where MODEL is openai:NAME (any"
    " OpenAI-compatible endpoint; OPENAI_BASE_URL / OPENAI_API_KEY), gemini-NAME or"
    " gemini:NAME (GEMINI_API_KEY / GOOGLE_API_KEY), anthropic:NAME (ANTHROPIC_API_KEY)"
    " or local:PATH.gguf; the deterministic metrics still run"
)


@runtime_checkable
class JudgeClient(Protocol):
    """The judge as a metric sees it: `n` sampled replies to one chat prompt.

    Caching, voting, retries and rate limits wrap a backend from outside (assay.judges),
    so a metric only renders prompts and parses replies.
    """

    async def generate(
        self,
        messages: Sequence[Mapping[str, object]],
        n: int,
        settings: Mapping[str, object],
        *,
        accept: Callable[[str], bool] | None = None,
        prompt_version: str | None = None,
    ) -> list[str]:
        """`n` replies; `accept` tells which replies the metric can parse (only those
        may be cached), `prompt_version` is the metric's prompt template id."""
        ...


class JudgeSource(Protocol):
    """Where a run's judged metrics find their judges (`JudgePool` is one)."""

    def judge_for(self, metric: JudgeRequest) -> JudgeClient | str | None:
        """The judge for `metric`; None when none is configured; the reason as text
        when the configured one cannot be built."""
        ...


# Context-local, not global: asyncio copies it into every task a run starts, so each
# run's tasks see that run's judges however many runs share the process.
_RUN_JUDGES: ContextVar[JudgeSource | None] = ContextVar("assay_run_judges", default=None)
#: the run's `--judge-samples N`: samples per judged item for every judged metric
_RUN_SAMPLES: ContextVar[int | None] = ContextVar("assay_run_judge_samples", default=None)


@contextmanager
def judges_in_context(
    source: JudgeSource | None, *, num_samples: int | None = None
) -> Iterator[None]:
    """Make `source` the judges of the code run (and the tasks started) inside;
    `num_samples` (the run's `--judge-samples`) overrides every judged metric's."""
    token = _RUN_JUDGES.set(source)
    samples_token = _RUN_SAMPLES.set(num_samples)
    try:
        yield
    finally:
        _RUN_SAMPLES.reset(samples_token)
        _RUN_JUDGES.reset(token)


class JudgedOptions(MetricOptions):
    """Options every judged metric accepts."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class JudgedMetric(Metric):
    """Base class of the LLM-judged metrics."""

    needs: ClassVar[frozenset[str]] = frozenset({"judge"})
    options_model: ClassVar[type[MetricOptions]] = JudgedOptions
    #: samples per invocation when `judge_model_options.num_samples` is not given
    default_num_samples: ClassVar[int] = 1

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        #: the caller's own judge client (`attach_judge`); None: the run's judge
        self.judge: JudgeClient | None = None

    @property
    def judge_options(self) -> JudgeModelOptions:
        opts = self.options
        return opts.judge_model_options if isinstance(opts, JudgedOptions) else JudgeModelOptions()

    @property
    def judge_model(self) -> str | None:
        """The judge model the config asks for (None: use the run's `--judge`)."""
        return self.judge_options.judge_model

    @property
    def num_samples(self) -> int:
        """Samples per judged item: the run's `--judge-samples`, else the metric's
        `judge_model_options.num_samples`, else its family's default."""
        return _RUN_SAMPLES.get() or self.judge_options.num_samples or self.default_num_samples

    def attach_judge(self, judge: JudgeClient | None) -> None:
        """Give the metric a judge client of the caller's own (None removes it).

        The engine never calls this: a run's judges come from the run's context.
        """
        self.judge = judge

    def current_judge(self) -> tuple[JudgeClient | None, str]:
        """The judge to score with now, and why there is none when there is none.

        The caller's own judge first, else the one the current run's judges give for
        this metric's `judge_model_options`; the reason is NO_JUDGE_MESSAGE, or why the
        configured judge is unavailable (e.g. its SDK is not installed).
        """
        if self.judge is not None:
            return self.judge, NO_JUDGE_MESSAGE
        source = _RUN_JUDGES.get()
        found = source.judge_for(self) if source is not None else None
        if isinstance(found, str):
            return None, found
        return found, NO_JUDGE_MESSAGE

    @property
    def no_judge_reason(self) -> str:
        """Why the metric has no judge now (NO_JUDGE_MESSAGE when nothing names one)."""
        return self.current_judge()[1]

    # -- scoring -------------------------------------------------------------------------

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        judge, reason = self.current_judge()
        if judge is None:
            return Score(None, reason)
        return Score(None, f"{self.name} is judged asynchronously: score it with ascore_case")

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        judge, reason = self.current_judge()
        if judge is None or not actual:
            return self.not_evaluated(actual, reason if judge is None else None)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore_case(case, actual, expected))
        return self.not_evaluated(
            actual, f"{self.name} is judged asynchronously: await ascore_case inside a loop"
        )

    async def ascore_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        judge, reason = self.current_judge()
        if judge is None:
            return self.not_evaluated(actual, reason)
        # How each invocation's samples split around the threshold (`noise`).
        return mark_result(await self.judge_case(judge, case, actual, expected))

    def not_evaluated(self, actual: Sequence[Turn], reason: str | None) -> MetricResult:
        """No score for the case nor any invocation, with `reason`."""
        why = reason or "no invocation to judge"
        return self.make_result(None, [Score(None, why) for _ in actual], explanation=why)

    # -- hooks for the judge implementation ---------------------------------------------

    async def judge_case(
        self,
        judge: JudgeClient,
        case: EvalCase,
        actual: Sequence[Turn],
        expected: Sequence[Turn | None],
    ) -> MetricResult:
        """Judge a whole case. Default: unless `unjudgeable` gives a reason, each
        invocation concurrently through `judge_view`, then `finish_case`.

        Metrics that judge a whole conversation (scenario metrics) override this.
        """
        reason = self.unjudgeable(case, actual, expected)
        if reason is not None:
            return self.not_evaluated(actual, reason)
        views = views_of(case, actual, expected)
        per = await asyncio.gather(*(self.judge_view(judge, view) for view in views))
        return self.finish_case(list(per))

    def unjudgeable(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> str | None:
        """Why the whole case gets no score without asking the judge (None: judge it)."""
        return None

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        """Judge one invocation seen with the turns before it. Default: `judge_invocation`,
        for metrics that need no history."""
        return await self.judge_invocation(judge, view.turn, view.expected, view.case)

    def finish_case(self, per: list[Score]) -> MetricResult:
        """The case result from the invocations' scores. Default: their mean."""
        return self.result_from_invocations(per)

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        """Judge one invocation: render the prompt, sample the judge, parse and vote.

        The base class has no prompt of its own, so it reports that plainly instead of
        guessing a verdict; each judged metric supplies its prompt here.
        """
        return Score(None, f"{self.name}: this metric has no judge prompt in this version")
