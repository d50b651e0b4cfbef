"""A run's cost before it runs (`assay eval --dry-run`, `evaluate(..., dry_run=True)`).

`estimate_run` scores the run's data through the real pipeline with the judges in dry
run (`assay.models.cost.DryRunBackend` over a read-only cache): every judged metric
makes exactly the calls it makes in a real run (cases × invocations × samples ×
rubrics, as each metric asks), each is counted, its prompt's tokens counted and
priced, and a call whose reply is already in the cache is counted as a cache hit. No
model is called and nothing is stored.

An agent is never run: its calls are counted where they can be known (each golden turn
of each run; a scenario's `max_turns`, an upper bound), and the judged metrics are
estimated on the golden turns standing in for the agent's replies (a CES golden's
expectations acted out: its tool calls and responses, its agent response). A metric
whose later calls depend on what the judge said first (one call per claim it found) is
estimated with one item per list in each reply.

With `--judge-batch`, a judge whose vendor has a batch interface in assay is asked
through a batch queue whose batches the dry run answers at once: its calls are priced at
the table's batch price and counted in `batched_calls`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from assay.core.cases import EvalCase, EvalSet, Step, Turn
from assay.engine import RunOptions
from assay.engine.judge_options import JudgeRunOptions
from assay.engine.runner import arun, runs_for
from assay.metrics.base import Metric
from assay.models.cost import CostLine
from assay.models.pricing import token_counter


@dataclass
class CostEstimate:
    """What a run would cost: judge calls per (metric, model), agent calls, totals."""

    lines: dict[tuple[str, str], CostLine] = field(default_factory=dict)
    agent_calls: int = 0
    #: True when the agent's count is an upper bound (scenarios stop when the user does)
    agent_calls_bounded: bool = False
    unpriced: list[str] = field(default_factory=list)
    tokens_counted_by: str = ""

    def total(self) -> CostLine:
        total = CostLine()
        for line in self.lines.values():
            for name, value in line.as_dict().items():
                setattr(total, name, getattr(total, name) + value)
        return total

    def per_metric(self) -> dict[str, CostLine]:
        out: dict[str, CostLine] = {}
        for (metric, _), line in sorted(self.lines.items()):
            into = out.setdefault(metric, CostLine())
            for name, value in line.as_dict().items():
                setattr(into, name, getattr(into, name) + value)
        return out

    def summary(self) -> dict[str, Any]:
        """The estimate in a run summary's keys (`judge/calls`, `judge/usd`,
        `judge/cost/{metric}/{model}/{counter}`, `agent/calls`), marked `dry_run`."""
        total = self.total()
        out: dict[str, Any] = {
            "dry_run": True,
            "judge/calls": total.calls,
            "judge/batched_calls": total.batched_calls,
            "judge/cache_hits": total.cache_hits,
            "judge/input_tokens": total.input_tokens,
            "judge/output_tokens": total.output_tokens,
            "judge/usd": round(total.usd, 8),
            "agent/calls": self.agent_calls,
            "agent/calls_upper_bound": self.agent_calls_bounded,
        }
        if self.unpriced:
            out["judge/unpriced_models"] = list(self.unpriced)
        for (metric, model), line in sorted(self.lines.items()):
            for name, value in _public(line).items():
                out[f"judge/cost/{metric}/{model}/{name}"] = value
        return out

    def as_dict(self) -> dict[str, Any]:
        total = self.total()
        return {
            "judge": {
                "calls": total.calls,
                "batched_calls": total.batched_calls,
                "cache_hits": total.cache_hits,
                "input_tokens": total.input_tokens,
                "output_tokens": total.output_tokens,
                "usd": round(total.usd, 8),
                "per_metric": {m: _public(line) for m, line in self.per_metric().items()},
                "per_metric_model": [
                    {"metric": metric, "model": model, **_public(line)}
                    for (metric, model), line in sorted(self.lines.items())
                ],
                "unpriced_models": self.unpriced,
                "tokens_counted_by": self.tokens_counted_by,
            },
            "agent": {"calls": self.agent_calls, "upper_bound": self.agent_calls_bounded},
        }


def _public(line: CostLine) -> dict[str, Any]:
    return {
        "calls": line.calls,
        "batched_calls": line.batched_calls,
        "cache_hits": line.cache_hits,
        "input_tokens": line.input_tokens,
        "output_tokens": line.output_tokens,
        "usd": round(line.usd, 8),
    }


def agent_calls(
    evalsets: Sequence[EvalSet], options: RunOptions, *, agent_given: bool
) -> tuple[int, bool]:
    """The agent's calls of a run (0 with no agent), and whether that is an upper bound."""
    if not agent_given:
        return 0, False
    calls, bounded = 0, False
    default_turns = options.simulator.max_turns if options.simulator is not None else 0
    for evalset in evalsets:
        for case in evalset.cases:
            runs = runs_for(case, options, agent_given=True)
            if case.scenario is not None and not case.reference:
                calls += runs * (case.scenario.max_turns or default_turns)
                bounded = True
            else:
                calls += runs * len(case.reference or case.actual or [])
    return calls, bounded


def _as_recorded(case: EvalCase) -> EvalCase:
    """The case with its golden turns standing in for an agent's replies."""
    if case.reference:
        return case.model_copy(update={"actual": [_acted(t) for t in case.reference]})
    return case


def _acted(turn: Turn) -> Turn:
    """A golden turn as the reply it expects of the agent: a CES golden's expectations
    (its tool calls and their responses, its agent response) acted out as the agent's
    steps and response, so the judges see a turn with a response as in the real run.
    A turn without expectations stands in as it is."""
    if not turn.expectations:
        return turn
    steps, response = list(turn.steps), turn.final_response
    for expected in turn.expectations:
        if expected.tool_call is not None:
            steps.append(Step(tool_call=expected.tool_call))
        reply = expected.tool_response or expected.mock_tool_response
        if reply is not None:
            steps.append(Step(tool_response=reply))
        if expected.agent_response is not None:
            response = expected.agent_response
    return turn.model_copy(update={"steps": steps, "final_response": response, "expectations": []})


async def aestimate_run(
    evalsets: Sequence[EvalSet],
    metrics: Sequence[Metric],
    *,
    options: RunOptions | None = None,
    judges: JudgeRunOptions | None = None,
    agent_given: bool = False,
) -> CostEstimate:
    """The estimate of a run of `metrics` over `evalsets` (see the module docstring)."""
    options = options or RunOptions()
    chosen = replace(judges or JudgeRunOptions(), dry_run=True, max_usd=None, max_calls=None)
    if agent_given:
        evalsets = [
            e.model_copy(update={"cases": [_as_recorded(c) for c in e.cases]}) for e in evalsets
        ]
    registry = chosen.make_registry(options.concurrency)
    pool = chosen.make_pool(registry)
    try:
        await arun(evalsets, metrics, options=options, judges=pool)
    finally:
        await pool.aclose()
    calls, bounded = agent_calls(evalsets, options, agent_given=agent_given)
    return CostEstimate(
        lines=dict(pool.meter.lines),
        agent_calls=calls,
        agent_calls_bounded=bounded,
        unpriced=sorted(pool.meter.unpriced),
        tokens_counted_by=token_counter()[0],
    )


def estimate_run(
    evalsets: Sequence[EvalSet],
    metrics: Sequence[Metric],
    *,
    options: RunOptions | None = None,
    judges: JudgeRunOptions | None = None,
    agent_given: bool = False,
) -> CostEstimate:
    """`aestimate_run` from synchronous code."""
    return asyncio.run(
        aestimate_run(evalsets, metrics, options=options, judges=judges, agent_given=agent_given)
    )
