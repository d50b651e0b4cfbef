"""What a service run would cost, before it runs (`POST .../evaluations:estimate`).

The request is a run request (`evaluations:run`'s body), checked exactly as a run's is
(fields, models, the judge budget, limits). Nothing is stored and no model or agent is
called: the run's evaluations, metrics and options are those `evaluations:run` would
store, handed to `assay.session.estimate`, the estimate `assay eval --dry-run` prints,
with the store's judge cache giving the cache hits. The answer is that estimate's JSON
(`assay eval --dry-run --out`'s), and the judge budget the run would get.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from assay.core.cases import EvalSet
from assay.engine.build import build_metrics
from assay.service._run_session import EVAL_SET_ID, judge_options, run_plan
from assay.service.runs import checked_request
from assay.session.estimate import CostEstimate, estimate_run

if TYPE_CHECKING:
    from assay.service.context import ServiceContext
    from assay.service.settings import JudgeBudget


def estimate(ctx: ServiceContext, app: str, request: object) -> dict[str, Any]:
    """The estimate of the run `request` would start in `app` (see the module docstring)."""
    settings = checked_request(ctx, app, request)
    cases, options = run_plan(settings)
    metrics = build_metrics(names=settings.metrics)
    judges = replace(judge_options(settings, ctx.prices_file), store=ctx.store)
    found = estimate_run(
        [EvalSet(id=EVAL_SET_ID, cases=cases)],
        metrics,
        options=options,
        judges=judges,
        agent_given=True,
    )
    out = found.as_dict()
    out["evaluations"] = [f"apps/{app}/evaluations/{e}" for e in settings.evaluation_ids]
    out["metrics"] = list(settings.metrics)
    # A simulated conversation is not known before it happens: its judges' calls (per
    # turn, and of the whole conversation) and its simulated user's are not counted.
    simulated = [c.id for c in cases if c.scenario is not None and not c.reference]
    out["complete"] = not simulated
    if simulated:
        out["notCounted"] = [f"apps/{app}/evaluations/{e}" for e in simulated]
    budget = settings.judge_budget
    if budget is not None:
        out["judgeBudget"] = {**budget.document(), "exceeded": exceeds(found, budget)}
    return out


def exceeds(found: CostEstimate, budget: JudgeBudget) -> bool:
    """Whether the estimated calls (cache hits are free) pass the budget: the run would
    then stop judging before its end. Under a dollar cap, a call to a model the price
    table does not know is never made, so any such call passes it."""
    total = found.total()
    over_calls = budget.max_calls is not None and total.calls > budget.max_calls
    unknown = bool(found.unpriced) and total.calls > 0
    over_usd = budget.max_usd is not None and (total.usd > budget.max_usd or unknown)
    return over_calls or over_usd
