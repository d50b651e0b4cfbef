"""A judged run for the label tests: case results as the engine stores them for a judged
metric (`final_response_match_v2`, five samples, threshold 0.8), without calling a judge.

Item k asks "What is k plus k?"; the stored judge verdict is right for most items and
wrong on every fifth (`JUDGE_WRONG`); items with k % 7 == 3 have samples that split
(agreement 0.6: unstable).
"""

from __future__ import annotations

from assay.core import Turn, UserInput
from assay.core.results import CaseResult, InvocationResult, MetricResult, Score, Status
from assay.store import Store

METRIC = "final_response_match_v2"
THRESHOLD = 0.8
ITEMS = 60


def correct(k: int) -> bool:
    """Whether the agent's answer to item k is right (the truth people label)."""
    return k % 3 != 0


def judge_wrong(k: int) -> bool:
    return k % 5 == 0


def unstable(k: int) -> bool:
    return k % 7 == 3


def case_id(k: int) -> str:
    return f"sum-{k:02d}"


def _result(k: int) -> CaseResult:
    answer = str(2 * k) if correct(k) else str(2 * k + 1)
    judged_ok = correct(k) != judge_wrong(k)
    score = 1.0 if judged_ok else 0.0
    status = Status.PASSED if judged_ok else Status.FAILED
    details = {"samples": 5, "agreement": 0.6 if unstable(k) else 1.0, "unparseable": 0}
    verdict = Score(score, f"the answer {answer} is {'right' if judged_ok else 'wrong'}", details)
    prompt = f"What is {k} plus {k}?"
    return CaseResult(
        case_id=case_id(k),
        status=status,
        eval_set_id="sums",
        metrics={
            METRIC: MetricResult(
                METRIC,
                score,
                THRESHOLD,
                status,
                per_invocation=[verdict],
                details={"agreement": details["agreement"], "unparseable_samples": 0},
            ),
            "response_match_score": MetricResult("response_match_score", 0.5, None, None),
        },
        invocations=[
            InvocationResult(
                index=0,
                invocation_id=None,
                actual=Turn(user_input=UserInput(text=prompt), final_response=answer),
                expected=Turn(user_input=UserInput(text=prompt), final_response=str(2 * k)),
                scores={METRIC: verdict},
            )
        ],
    )


def judged_run(store: Store, *, items: int = ITEMS) -> str:
    """A finished run of `items` judged cases in `store`; its id."""
    run_id = store.start_run(eval_set_ids=["sums"], metrics=[METRIC], config={}, agent=None,
                             runs=1)  # fmt: skip
    store.add_case_results(run_id, [_result(k) for k in range(items)])
    store.finish_run(run_id, summary={}, status="COMPLETED")
    return run_id
