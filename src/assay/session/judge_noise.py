"""Measuring a judge without labels: its self-consistency and its biases.

- `astability`: the data scored K times by one judged metric, each repeat drawing
  samples of its own (the judges' `sample_offset`: repeat r asks for the samples
  r*n .. r*n+n-1 of each prompt, so no repeat reuses another's replies, while running
  the same stability check again is answered from the cache). Per item: its pass/fail
  verdict in each repeat and its flip rate (the chance two repeats disagree); overall:
  the mean flip rate with a bootstrap interval and Fleiss' κ across the repeats.
- `aprobe_position`: for each item, the recorded response and the reference answer
  compared by a pairwise judge in both orders (`assay.judges.pairwise.both_orders`);
  how often the verdict followed the position, with a Wilson interval.
- `aprobe_verbosity`: the data scored by a judged metric as recorded and with each
  response padded with neutral text (`PADDING`); how often the score rose, how often
  it fell, and the net share that rose, with a bootstrap interval.

Like a calibration, none of these is a run: nothing is recorded in the run store; the
store, when given, holds the judge cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.core.cases import EvalCase, EvalSet
from assay.core.results import EvalResult, Status
from assay.engine.stats import bootstrap_ci
from assay.errors import ConfigError
from assay.judges.noise import fleiss_kappa, flip_rate, wilson_interval
from assay.judges.pairwise import PairVerdict, both_orders
from assay.judges.types import JudgeCallError, JudgeModelOptions
from assay.metrics.judged.base import JudgedMetric
from assay.metrics.judged.context import NO_PROMPT, user_prompt_text
from assay.session.run_session import RunSession

if TYPE_CHECKING:
    from assay.judges.client import JudgePool
    from assay.judges.stats import JudgeStats
    from assay.models.cache import HasCacheTable

#: what the verbosity probe appends to each response: polite, and saying nothing
PADDING = (
    "\n\nI hope this helps. Let me know if you have any other questions about this; I am"
    " happy to go over any part of the answer again, step by step, or to add more"
    " background on the topic if that would be useful to you."
)
#: the position probe flags a judge whose interval's low end is above this share
POSITION_TOLERANCE = 0.1

PASS, FAIL = "pass", "fail"


#: bootstrap resamples of `mean_interval`
RESAMPLES = 2000


def mean_interval(values: Sequence[float], *, seed: int = 0) -> tuple[float, float] | None:
    """A 95 % percentile bootstrap interval of the mean of `values`, resampling the
    items (seeded, so a report is reproducible); None when empty."""
    return bootstrap_ci([[v] for v in values], resamples=RESAMPLES, seed=seed)


@dataclass(frozen=True)
class JudgeSetup:
    """How to reach the judge: the model, its endpoint, cache and pacing."""

    judge: str
    base_url: str | None = None
    store: HasCacheTable | None = None
    use_cache: bool = True
    concurrency: int = 8
    timeout_s: float = 60.0

    def pool(self, sample_offset: int = 0, stats: JudgeStats | None = None) -> JudgePool:
        from assay.judges.client import JudgePool

        return JudgePool(
            store=self.store,
            default_model=self.judge,
            default_base_url=self.base_url,
            concurrency=self.concurrency,
            use_cache=self.use_cache,
            timeout_s=self.timeout_s,
            sample_offset=sample_offset,
            stats=stats,
        )


async def _score(
    evalsets: Sequence[EvalSet], metric: JudgedMetric, setup: JudgeSetup, pool: JudgePool
) -> EvalResult:
    """The data scored by `metric` with the judge of `pool`, in a session recording
    nothing (the judge is built first: one that cannot exist is a usage error)."""
    options = metric.judge_options
    metric.attach_judge(pool.judge(metric.judge_model or setup.judge, options))
    try:
        return await RunSession(list(evalsets), [metric], judges=pool).arun()
    finally:
        metric.attach_judge(None)


def _first_reason(result: EvalResult, metric: str) -> str | None:
    """Why the first case without a verdict has none (the metric's explanation)."""
    for case in result.cases:
        found = case.metrics.get(metric)
        if found is not None and found.score is None and found.explanation:
            return found.explanation
        if found is None and case.error:
            return case.error
    return None


def _key(eval_set_id: str | None, case_id: str) -> str:
    return case_id if not eval_set_id else f"{eval_set_id}/{case_id}"


def _verdicts(result: EvalResult, metric: str) -> dict[str, tuple[str | None, float | None]]:
    """Each case's (pass/fail or None, score) under `metric`."""
    out: dict[str, tuple[str | None, float | None]] = {}
    for case in result.cases:
        found = case.metrics.get(metric)
        verdict = None
        if found is not None and found.status is Status.PASSED:
            verdict = PASS
        elif found is not None and found.status is Status.FAILED:
            verdict = FAIL
        out[_key(case.eval_set_id, case.case_id)] = (
            verdict,
            found.score if found is not None else None,
        )
    return out


# ----------------------------------------------------------------------------- stability


@dataclass(frozen=True)
class StabilityItem:
    """One item's verdict in each repeat (None: the judge gave none that time)."""

    item: str
    verdicts: list[str | None]

    @property
    def complete(self) -> bool:
        return all(v is not None for v in self.verdicts)

    @property
    def counts(self) -> list[int]:
        """(pass, fail) counts over the repeats."""
        return [self.verdicts.count(PASS), self.verdicts.count(FAIL)]

    @property
    def flip_rate(self) -> float | None:
        """The chance two repeats disagree (None unless every repeat gave a verdict)."""
        return flip_rate(self.counts) if self.complete else None

    @property
    def flipped(self) -> bool:
        return self.complete and min(self.counts) > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "verdicts": list(self.verdicts),
            "pass": self.counts[0],
            "fail": self.counts[1],
            "flip_rate": self.flip_rate,
        }


@dataclass(frozen=True)
class StabilityReport:
    """A judge's self-consistency over `repeats` scorings of the same data."""

    metric: str
    judge: str
    repeats: int
    samples: int
    items: list[StabilityItem]
    judge_stats: dict[str, Any] = field(default_factory=dict)
    #: why the first item without a verdict in some repeat has none
    unscored_reason: str | None = None

    @property
    def rated(self) -> list[StabilityItem]:
        """Items with a verdict in every repeat (the statistics use these only)."""
        return [i for i in self.items if i.complete]

    @property
    def flipped(self) -> list[StabilityItem]:
        return [i for i in self.items if i.flipped]

    @property
    def flip_rate(self) -> float | None:
        rates = [i.flip_rate for i in self.rated if i.flip_rate is not None]
        return sum(rates) / len(rates) if rates else None

    @property
    def flip_interval(self) -> tuple[float, float] | None:
        return mean_interval([i.flip_rate for i in self.rated if i.flip_rate is not None])

    @property
    def kappa(self) -> float | None:
        """Fleiss' κ of the repeats as raters (None when undefined: one verdict only)."""
        return fleiss_kappa([i.counts for i in self.rated])

    @property
    def stable(self) -> bool | None:
        """No rated item flipped (None when no item was rated)."""
        return None if not self.rated else not self.flipped

    def verdict_line(self) -> str:
        rated = len(self.rated)
        if not rated:
            return "no item got a verdict in every repeat: nothing to measure"
        if self.stable:
            return f"stable: none of {rated} items changed its verdict over {self.repeats} repeats"
        return (
            f"unstable: {len(self.flipped)} of {rated} items changed their verdict over"
            f" {self.repeats} repeats"
        )

    def to_dict(self) -> dict[str, Any]:
        interval = self.flip_interval
        return {
            "metric": self.metric,
            "judge": self.judge,
            "repeats": self.repeats,
            "samples": self.samples,
            "items": len(self.items),
            "rated": len(self.rated),
            "flipped": len(self.flipped),
            "stable": self.stable,
            "flip_rate": self.flip_rate,
            "flip_rate_ci95": list(interval) if interval is not None else None,
            "fleiss_kappa": self.kappa,
            "verdict": self.verdict_line(),
            "unscored_reason": self.unscored_reason,
            "results": [i.to_dict() for i in self.items],
            "judge_stats": dict(self.judge_stats),
        }


async def astability(
    evalsets: Sequence[EvalSet], metric: JudgedMetric, setup: JudgeSetup, *, repeats: int
) -> StabilityReport:
    """Score `evalsets` `repeats` times with `metric`, each repeat with samples of its
    own, and report how the verdicts agree across the repeats."""
    from assay.judges.stats import JudgeStats

    if repeats < 2:
        raise ConfigError(f"--repeats must be at least 2 to compare repeats, got {repeats}")
    per_repeat: list[dict[str, tuple[str | None, float | None]]] = []
    reason: str | None = None
    stats = JudgeStats()
    for r in range(repeats):
        pool = setup.pool(sample_offset=r * metric.num_samples, stats=stats)
        try:
            result = await _score(evalsets, metric, setup, pool)
        finally:
            await pool.aclose()
        per_repeat.append(_verdicts(result, metric.name))
        reason = reason or _first_reason(result, metric.name)
    keys = list(per_repeat[0])
    items = [
        StabilityItem(key, [repeat.get(key, (None, None))[0] for repeat in per_repeat])
        for key in keys
    ]
    return StabilityReport(
        metric=metric.name,
        judge=setup.judge,
        repeats=repeats,
        samples=metric.num_samples,
        items=items,
        judge_stats=stats.summary(),
        unscored_reason=reason,
    )


# ----------------------------------------------------------------------------- probes


@dataclass(frozen=True)
class PositionItem:
    """One pair (the recorded response, the reference) judged in both orders."""

    item: str
    verdict: PairVerdict | None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        base: dict[str, Any] = {"item": self.item}
        if self.verdict is not None:
            base.update(self.verdict.to_dict())
        if self.error is not None:
            base["error"] = self.error
        return base


@dataclass(frozen=True)
class PositionReport:
    """How often a pairwise judge's verdict followed the position of the answers."""

    judge: str
    items: list[PositionItem]
    skipped: list[str] = field(default_factory=list)

    @property
    def decided(self) -> list[PairVerdict]:
        return [i.verdict for i in self.items if i.verdict is not None and i.verdict.decided]

    @property
    def follows_position(self) -> int:
        return sum(1 for v in self.decided if v.follows_position)

    @property
    def rate(self) -> float | None:
        return self.follows_position / len(self.decided) if self.decided else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.follows_position, len(self.decided))

    @property
    def unscored_reason(self) -> str | None:
        """Why the first pair not judged in both orders was not (a judge error)."""
        return next((i.error for i in self.items if i.error), None)

    @property
    def first_shown_share(self) -> float | None:
        """Of every verdict that picked an answer, the share that picked answer A."""
        picks = sum(int(v.forward != "tie") + int(v.backward != "tie") for v in self.decided)
        first = sum(v.first_shown_wins for v in self.decided)
        return first / picks if picks else None

    @property
    def flagged(self) -> bool | None:
        interval = self.interval
        return None if interval is None else interval[0] > POSITION_TOLERANCE

    def verdict_line(self) -> str:
        if not self.decided:
            return "position: no pair was judged in both orders: nothing to measure"
        low, high = self.interval or (0.0, 0.0)
        share = f"{self.follows_position} of {len(self.decided)} pairs ({low:.0%}–{high:.0%})"
        if self.flagged:
            return f"position bias: the verdict followed the position, not the answer, in {share}"
        return f"no position bias found: the verdict followed the position in {share}"

    def to_dict(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "bias": "position",
            "judge": self.judge,
            "pairs": len(self.items),
            "decided": len(self.decided),
            "follows_position": self.follows_position,
            "rate": self.rate,
            "rate_ci95": list(interval) if interval is not None else None,
            "first_shown_share": self.first_shown_share,
            "flagged": self.flagged,
            "verdict": self.verdict_line(),
            "unscored_reason": self.unscored_reason,
            "skipped": list(self.skipped),
            "results": [i.to_dict() for i in self.items],
        }


def _pairs(evalsets: Sequence[EvalSet]) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """(item, request, response, reference) of every case with both answers, and the
    items left out (no recorded response, no reference, or the two are the same)."""
    pairs: list[tuple[str, str, str, str]] = []
    skipped: list[str] = []
    for evalset in evalsets:
        for case in evalset.cases:
            key = _key(evalset.id, case.id)
            found = _pair_of(case)
            if found is None:
                skipped.append(key)
            else:
                pairs.append((key, *found))
    return pairs, skipped


def _pair_of(case: EvalCase) -> tuple[str, str, str] | None:
    actual = case.actual[-1] if case.actual else None
    expected = case.reference[-1] if case.reference else None
    response = actual.final_response if actual is not None else None
    reference = expected.final_response if expected is not None else None
    reference = reference or case.expected_response
    if not response or not reference or response.strip() == reference.strip():
        return None
    turn = actual if actual is not None else expected
    request = user_prompt_text(turn.user_input) if turn is not None else NO_PROMPT
    return request, response, reference


async def aprobe_position(
    evalsets: Sequence[EvalSet], setup: JudgeSetup, *, samples: int = 1
) -> PositionReport:
    """Judge each (recorded response, reference) pair in both orders."""
    pairs, skipped = _pairs(evalsets)
    if not pairs:
        raise ConfigError(
            "the position probe needs cases with a recorded response and a different"
            " reference answer; none of the data has both"
        )
    pool = setup.pool()
    try:
        judge = pool.judge(setup.judge, JudgeModelOptions(base_url=setup.base_url))

        async def one(item: str, request: str, response: str, reference: str) -> PositionItem:
            try:
                verdict = await both_orders(judge, request, response, reference, samples=samples)
            except JudgeCallError as exc:
                return PositionItem(item, None, str(exc))
            return PositionItem(item, verdict)

        items = await asyncio.gather(*(one(*p) for p in pairs))
    finally:
        await pool.aclose()
    return PositionReport(judge=setup.judge, items=list(items), skipped=skipped)


@dataclass(frozen=True)
class VerbosityItem:
    """One item's score as recorded and with its response padded."""

    item: str
    score: float | None
    padded: float | None

    @property
    def shift(self) -> int | None:
        """+1 the padded score is higher, -1 lower, 0 the same (None: a score missing)."""
        if self.score is None or self.padded is None:
            return None
        return (self.padded > self.score) - (self.padded < self.score)

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "score": self.score, "padded": self.padded, "shift": self.shift}


@dataclass(frozen=True)
class VerbosityReport:
    """Does padding a response with neutral text raise its score?"""

    metric: str
    judge: str
    items: list[VerbosityItem]
    #: why the first item scored one way only has no score the other way
    unscored_reason: str | None = None

    @property
    def shifts(self) -> list[int]:
        return [i.shift for i in self.items if i.shift is not None]

    @property
    def rose(self) -> int:
        return self.shifts.count(1)

    @property
    def fell(self) -> int:
        return self.shifts.count(-1)

    @property
    def net(self) -> float | None:
        """(rose - fell) / compared: the net share of items padding raised."""
        return sum(self.shifts) / len(self.shifts) if self.shifts else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return mean_interval([float(s) for s in self.shifts])

    @property
    def flagged(self) -> bool | None:
        interval = self.interval
        return None if interval is None else interval[0] > 0

    def verdict_line(self) -> str:
        compared = len(self.shifts)
        if not compared:
            return "verbosity: no item was scored both ways: nothing to measure"
        low, high = self.interval or (0.0, 0.0)
        share = (
            f"padding raised {self.rose} and lowered {self.fell} of {compared} scores"
            f" (net {self.net or 0.0:+.0%}, {low:+.0%} to {high:+.0%})"
        )
        if self.flagged:
            return f"verbosity bias: {share}"
        return f"no verbosity bias found: {share}"

    def to_dict(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "bias": "verbosity",
            "metric": self.metric,
            "judge": self.judge,
            "items": len(self.items),
            "compared": len(self.shifts),
            "rose": self.rose,
            "fell": self.fell,
            "net": self.net,
            "net_ci95": list(interval) if interval is not None else None,
            "flagged": self.flagged,
            "verdict": self.verdict_line(),
            "unscored_reason": self.unscored_reason,
            "results": [i.to_dict() for i in self.items],
        }


def padded(evalset: EvalSet) -> EvalSet:
    """A copy of `evalset` with every recorded final response followed by `PADDING`."""
    copy = evalset.model_copy(deep=True)
    for case in copy.cases:
        for turn in case.actual or []:
            if turn.final_response:
                turn.final_response += PADDING
    return copy


async def aprobe_verbosity(
    evalsets: Sequence[EvalSet], metric: JudgedMetric, setup: JudgeSetup
) -> VerbosityReport:
    """Score the data as recorded and padded; compare each item's two scores."""
    pool = setup.pool()
    try:
        as_recorded = await _score(evalsets, metric, setup, pool)
        with_padding = await _score([padded(s) for s in evalsets], metric, setup, pool)
    finally:
        await pool.aclose()
    longer = _verdicts(with_padding, metric.name)
    items = [
        VerbosityItem(key, score, longer.get(key, (None, None))[1])
        for key, (_, score) in _verdicts(as_recorded, metric.name).items()
    ]
    reason = _first_reason(as_recorded, metric.name) or _first_reason(with_padding, metric.name)
    return VerbosityReport(metric.name, setup.judge, items, unscored_reason=reason)
