"""What every LLM-judged metric shares: judge options and the judge hook.

A judged metric is built from its criterion like any other metric. Before scoring,
the engine hands it a judge client (`attach_judge`) built from
`judge_model_options.judge_model` or the `--judge MODEL` flag. Without one the metric
gives each invocation no score with `NO_JUDGE_MESSAGE` (SPEC §5: NOT_EVALUATED with a
message that says how to configure a judge), while deterministic metrics still run.
With one, `ascore_case` calls `judge_case`, which by default judges the invocations
concurrently through `judge_view` (each invocation with the turns before it), which
by default calls `judge_invocation`: the hooks each metric family fills in with its
prompt, reply parsing and voting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from assay.metrics.base import Metric, MetricOptions
from assay.metrics.judged.context import InvocationView, views_of
from assay.model.core import EvalCase, Turn
from assay.model.results import MetricResult, Score

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
        self, messages: Sequence[Mapping[str, Any]], n: int, settings: Mapping[str, Any]
    ) -> list[str]: ...


class JudgeModelOptions(BaseModel):
    """`judge_model_options`: which judge, how many samples, generation settings.

    `judge_model` None means "the judge given on the command line" (`--judge MODEL`).
    Fields of ADK's JudgeModelOptions (`judge_model_config`, `parallelism_limit`) are
    accepted so ADK configs load unchanged.
    """

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )

    judge_model: str | None = None
    num_samples: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    judge_model_config: dict[str, Any] | None = None
    parallelism_limit: int | None = Field(default=None, ge=1)
    #: for OpenAI-compatible endpoints; the openai SDK's environment variables otherwise
    base_url: str | None = None


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
        self.judge: JudgeClient | None = None
        #: why there is no judge: NO_JUDGE_MESSAGE, or why the configured one is unavailable
        self.no_judge_reason: str = NO_JUDGE_MESSAGE

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
        return self.judge_options.num_samples or self.default_num_samples

    def attach_judge(self, judge: JudgeClient | None, reason: str | None = None) -> None:
        """Give the metric its judge client (None detaches it).

        `reason` (with None) says why the configured judge is unavailable, e.g. its SDK
        is not installed; the metric then reports it instead of NO_JUDGE_MESSAGE.
        """
        self.judge = judge
        self.no_judge_reason = reason or NO_JUDGE_MESSAGE

    # -- scoring -------------------------------------------------------------------------

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if self.judge is None:
            return Score(None, self.no_judge_reason)
        return Score(None, f"{self.name} is judged asynchronously: score it with ascore_case")

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        if self.judge is None or not actual:
            return self.not_evaluated(actual, self.no_judge_reason if self.judge is None else None)
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
        if self.judge is None:
            return self.not_evaluated(actual, self.no_judge_reason)
        return await self.judge_case(self.judge, case, actual, expected)

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
