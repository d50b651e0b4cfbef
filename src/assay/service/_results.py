"""CES JSON of evaluation runs and evaluation results, rendered from what the store holds.

A result is one stored case run (`CaseResult.to_dict()`): its id is `{run id}-{run
index}` under the evaluation it ran, so its name is
`apps/{app}/evaluations/{evaluation}/results/{run}-{index}`. Golden cases become a
`goldenResult` with one `turnReplayResult` per replayed turn (expectation outcomes,
tool invocation scores, semantic similarity, hallucination, latencies); scenarios a
`scenarioResult`. Durations are written as CES does (`"1.250s"`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from assay.core.cases import Expectation, ToolCall, Turn
from assay.core.error_types import ErrorType
from assay.core.verdict import ces_evaluation_status
from assay.formats._ces_write import _dump_call, _dump_expectation
from assay.models.cost import BUDGET_REACHED
from assay.service.errors import InvalidArgument, NotFound
from assay.store.eval_results import SERVICE_KEY, Progress, ResultRow
from assay.store.runs import RunInfo
from assay.store.schema import RunStatus

MAX_RUN_INDEX = 2**31 - 1

PASS, FAIL, UNSPECIFIED = "PASS", "FAIL", "OUTCOME_UNSPECIFIED"

SIMILARITY_LABELS = {
    4: "Fully consistent",
    3: "Mostly consistent",
    2: "Partially consistent (minor omissions)",
    1: "Largely inconsistent (major omissions)",
    0: "Completely inconsistent / contradictory",
}
HALLUCINATION_LABELS = {1: "Justified", 0: "Not justified", -1: "No claim to assess"}
GOAL_LABELS = {1: "User goal satisfied", 0: "User goal not satisfied", -1: "Unspecified"}


def duration(seconds: float) -> str:
    """A google.protobuf.Duration in JSON (`"0.250s"`)."""
    return f"{seconds:.3f}s"


def rfc3339(value: Any) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def run_name(app: str, run_id: str) -> str:
    return f"apps/{app}/evaluationRuns/{run_id}"


def result_id(run_id: str, run_index: int) -> str:
    return f"{run_id}-{run_index}"


def parse_result_id(rid: str) -> tuple[str, int]:
    """(run id, run index) of a result id; INVALID_ARGUMENT if it is not one."""
    run_id, sep, index = rid.rpartition("-")
    # isdigit alone also takes digits of other scripts ("²"), which int() refuses.
    if not sep or not run_id or not (index.isascii() and index.isdigit()):
        raise InvalidArgument.field("name", f"{rid!r} is not a result id ({{run id}}-{{index}})")
    if len(index) > 10 or int(index) > MAX_RUN_INDEX:
        # No run has that many runs of a case (the store's run index is a 32-bit integer).
        raise NotFound(f"no evaluation result {rid!r}")
    return run_id, int(index)


def result_name(app: str, row: ResultRow) -> str:
    return f"apps/{app}/evaluations/{row.case_id}/results/{result_id(row.run_id, row.run_index)}"


# -- runs ---------------------------------------------------------------------------------


def service_config(run: RunInfo) -> dict[str, Any]:
    found = run.config.get(SERVICE_KEY)
    return dict(found) if isinstance(found, Mapping) else {}


def run_state(run: RunInfo) -> str:
    """CES state: INTERRUPTED service runs are RUNNING (resumed at the next start)."""
    if run.status == RunStatus.INTERRUPTED.value:
        return "RUNNING" if SERVICE_KEY in run.config else "ERROR"
    return run.status


def render_run(app: str, run: RunInfo, progress: Progress) -> dict[str, Any]:
    svc = service_config(run)
    evaluations = [f"apps/{app}/evaluations/{e}" for e in svc.get("evaluationIds", [])]
    total = svc.get("totalCount", run.total if run.total is not None else 0)
    body: dict[str, Any] = {
        "name": run_name(app, run.id),
        "displayName": run.name or run.id,
        "createTime": rfc3339(run.created_at),
        "state": run_state(run),
        "progress": {
            "totalCount": total,
            "completedCount": progress.completed,
            "passedCount": progress.passed,
            "failedCount": progress.failed,
            "errorCount": progress.error,
        },
        "evaluations": evaluations,
    }
    for key in (
        "runCount", "evaluationDataset", "appVersion", "goldenRunMethod", "config",
        "scheduledEvaluationRun",
    ):  # fmt: skip
        if svc.get(key) is not None:
            body[key] = svc[key]
    if run.finished_at is not None and run.status != RunStatus.INTERRUPTED.value:
        body["endTime"] = rfc3339(run.finished_at)
    body.update(judge_fields(svc, run.summary))
    if run.error and body["state"] == "ERROR":
        body["errorInfo"] = {
            "errorType": ErrorType.RUNTIME_FAILURE.value,
            "errorMessage": run.error,
        }
    elif run.status == RunStatus.INTERRUPTED.value and body["state"] == "ERROR":
        body["errorInfo"] = {
            "errorType": ErrorType.RUNTIME_FAILURE.value,
            "errorMessage": (
                "the run was interrupted; run the same `assay eval` command again to resume it"
            ),
        }
    return body


#: the run's judge spending in its summary, as `assayJudgeCost` shows it
_COST_KEYS = {
    "judge/calls": "calls",
    "judge/cache_hits": "cacheHits",
    "judge/refused": "refused",
    "judge/input_tokens": "inputTokens",
    "judge/output_tokens": "outputTokens",
    "judge/usd": "usd",
    "judge/usd_estimated": "usdEstimated",
}


def judge_fields(svc: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """assay's extensions of a run (not in CES, whose clients drop them): the judge
    budget it runs under (`assayJudgeBudget`) and, once finished, what its judges
    spent (`assayJudgeCost`, from the run's summary)."""
    out: dict[str, Any] = {}
    if svc.get("judgeBudget"):
        out["assayJudgeBudget"] = svc["judgeBudget"]
    cost = {shown: summary[key] for key, shown in _COST_KEYS.items() if key in summary}
    if cost:
        out["assayJudgeCost"] = cost
    return out


# -- results ------------------------------------------------------------------------------


def evaluation_status(row: ResultRow) -> str | None:
    """PASS only for a PASSED case run (the one verdict rule); None unless COMPLETED."""
    if row.execution_state != "COMPLETED":
        return None
    return ces_evaluation_status(row.status)


def render_result(app: str, row: ResultRow, run: RunInfo | None) -> dict[str, Any]:
    doc = row.document
    svc = service_config(run) if run is not None else {}
    run_label = (run.name if run is not None else None) or row.run_id
    body: dict[str, Any] = {
        "name": result_name(app, row),
        "displayName": f"{run_label} #{row.run_index + 1}",
        "createTime": rfc3339(row.created_at),
        "evaluationRun": run_name(app, row.run_id),
        "executionState": row.execution_state,
    }
    status = evaluation_status(row)
    if status is not None:
        body["evaluationStatus"] = status
    for key in ("appVersion", "goldenRunMethod", "config"):
        if svc.get(key) is not None:
            body[key] = svc[key]
    if doc.get("error"):
        body["errorInfo"] = {
            "errorType": doc.get("error_type") or "RUNTIME_FAILURE",
            "errorMessage": doc["error"],
        }
    invocations = doc.get("invocations") or []
    if any(inv.get("expected") for inv in invocations) or "parameter_correctness_score" in (
        doc.get("metrics") or {}
    ):
        body["goldenResult"] = _golden_result(doc)
    else:
        body["scenarioResult"] = _scenario_result(doc)
    return body


def _turn(value: object) -> Turn | None:
    return None if value is None else Turn.model_validate(value)


def _score(doc: Mapping[str, Any], metric: str, index: int) -> dict[str, Any] | None:
    per = ((doc.get("metrics") or {}).get(metric) or {}).get("per_invocation") or []
    found = per[index] if index < len(per) else None
    return found if isinstance(found, dict) else None


def _threshold(doc: Mapping[str, Any], metric: str) -> float | None:
    value = ((doc.get("metrics") or {}).get(metric) or {}).get("threshold")
    return value if isinstance(value, int | float) else None


def _outcome(value: float | None, threshold: float | None) -> str:
    if value is None:
        return UNSPECIFIED
    return PASS if threshold is None or value >= threshold else FAIL


def not_judged(reason: object) -> dict[str, Any] | None:
    """A judged check the run's judge budget stopped: no score (CES's is optional, so a
    client reads none, not 0) and the reason as its explanation. A check unscored for
    another reason (no response to judge, no claim) is left out, as it always was."""
    if isinstance(reason, str) and reason.startswith(BUDGET_REACHED):
        return {"explanation": reason}
    return None


def transcript(turn: Turn) -> str:
    lines = []
    if turn.user_input.text:
        lines.append(f"user: {turn.user_input.text}")
    for call in turn.tool_calls():
        lines.append(f"tool call: {call.name}({json.dumps(call.args, ensure_ascii=False)})")
    if turn.final_response:
        lines.append(f"agent: {turn.final_response}")
    return "\n".join(lines)


def tool_latencies(turn: Turn) -> list[dict[str, Any]]:
    return [
        {"tool": r.name, "displayName": r.name, "executionLatency": duration(r.latency_s)}
        for r in turn.tool_responses()
        if r.latency_s is not None
    ]


def labelled(score: Mapping[str, Any] | None, labels: Mapping[int, str]) -> dict[str, Any] | None:
    """A CES {score, label, explanation} check result from a stored per-turn score."""
    if score is None:
        return None
    if score.get("value") is None:
        return not_judged(score.get("explanation"))
    value = int(score["value"])
    out: dict[str, Any] = {"score": value, "label": labels.get(value, str(value))}
    if score.get("explanation"):
        out["explanation"] = score["explanation"]
    return out


def _golden_result(doc: Mapping[str, Any]) -> dict[str, Any]:
    turns = []
    for index, inv in enumerate(doc.get("invocations") or []):
        actual, expected = _turn(inv.get("actual")), _turn(inv.get("expected"))
        turns.append(_turn_replay(doc, index, actual, expected))
    return {"turnReplayResults": turns}


def _turn_replay(
    doc: Mapping[str, object], index: int, actual: Turn | None, expected: Turn | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"turnIndex": index}
    if actual is not None:
        out["conversation"] = transcript(actual)
        if actual.latency_s is not None:
            out["turnLatency"] = duration(actual.latency_s)
        out["toolCallLatencies"] = tool_latencies(actual)
        if actual.error:
            out["errorInfo"] = {"errorType": "RUNTIME_FAILURE", "errorMessage": actual.error}
    similarity = _similarity(doc, index)
    if similarity is not None:
        out["semanticSimilarityResult"] = similarity
    hallucination = labelled(_score(doc, "hallucination", index), HALLUCINATION_LABELS)
    if hallucination is not None:
        out["hallucinationResult"] = hallucination
    invocation = _score(doc, "tool_invocation_score", index)
    if invocation is not None and invocation.get("value") is not None:
        out["overallToolInvocationResult"] = {
            "toolInvocationScore": invocation["value"],
            "outcome": _outcome(invocation["value"], _threshold(doc, "tool_invocation_score")),
        }
    ordered = _score(doc, "tool_ordered_invocation_score", index)
    if ordered is not None and ordered.get("value") is not None:
        out["toolOrderedInvocationScore"] = ordered["value"]
    if expected is not None:
        out["expectationOutcome"] = list(_expectation_outcomes(doc, index, actual, expected))
    return out


def _similarity(doc: Mapping[str, object], index: int) -> dict[str, Any] | None:
    score = _score(doc, "semantic_similarity", index)
    found = labelled(score, SIMILARITY_LABELS)
    if found is None or score is None:
        return None
    threshold = _threshold(doc, "semantic_similarity")
    found["outcome"] = (score.get("details") or {}).get("outcome") or _outcome(
        score["value"], threshold
    )
    return found


def _expectation_outcomes(
    doc: Mapping[str, object], index: int, actual: Turn | None, expected: Turn
) -> Iterator[dict[str, Any]]:
    """One GoldenExpectationOutcome per expectation of the golden turn (mocks are inputs)."""
    params = _score(doc, "parameter_correctness_score", index) or {}
    calls = iter((params.get("details") or {}).get("tool_calls") or [])
    others_score = _score(doc, "golden_expectations", index) or {}
    others = iter((others_score.get("details") or {}).get("expectations") or [])
    for exp in expected.expectations:
        if exp.mock_tool_response is not None:
            continue
        out: dict[str, Any] = {"expectation": _dump_expectation(exp)["expectation"]}
        if exp.tool_call is not None:
            out.update(_tool_call_outcome(next(calls, None)))
        else:
            checked = next(others, None)
            out.update(_other_outcome(doc, index, exp, checked, actual))
        yield out


def _tool_call_outcome(checked: Mapping[str, Any] | None) -> dict[str, Any]:
    if checked is None:
        return {"outcome": UNSPECIFIED}
    out: dict[str, Any] = {
        "outcome": checked.get("outcome", UNSPECIFIED),
        "toolInvocationResult": {
            "parameterCorrectnessScore": checked.get("parameter_correctness_score"),
            "outcome": checked.get("outcome", UNSPECIFIED),
        },
    }
    missing = checked.get("missing_or_different") or []
    observed = checked.get("observed_tool_call")
    if observed is None:
        out["toolInvocationResult"]["explanation"] = f"{checked.get('tool')} was not called"
    elif missing:
        out["toolInvocationResult"]["explanation"] = (
            "parameters missing or different: " + ", ".join(missing)
        )
    if observed is not None:
        out["observedToolCall"] = _dump_call(ToolCall.model_validate(observed))
    return out


def _other_outcome(
    doc: Mapping[str, object],
    index: int,
    exp: Expectation,
    checked: Mapping[str, object] | None,
    actual: Turn | None,
) -> dict[str, Any]:
    if exp.agent_response is not None:
        response = actual.final_response if actual is not None else None
        out: dict[str, Any] = {"observedAgentResponse": {"role": "agent", "chunks": []}}
        if response:
            out["observedAgentResponse"]["chunks"].append({"text": response})
        similarity = _similarity(doc, index)
        out["outcome"] = similarity["outcome"] if similarity else UNSPECIFIED
        if similarity:
            out["semanticSimilarityResult"] = similarity
        return out
    if checked is None:
        return {"outcome": UNSPECIFIED}
    outcome = checked.get("outcome")
    out = {"outcome": outcome if outcome in (PASS, FAIL) else UNSPECIFIED}
    observed = checked.get("observed")
    if exp.tool_response is not None:
        out["observedToolResponse"] = {"tool": exp.tool_response.name, "responses": observed}
    elif exp.agent_transfer is not None:
        out["observedAgentTransfer"] = {"targetAgents": observed}
    else:
        out["observedUpdatedVariables"] = observed
    return out


def _case_metric(doc: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    found = (doc.get("metrics") or {}).get(name)
    return found if isinstance(found, Mapping) else None


def _scenario_result(doc: Mapping[str, Any]) -> dict[str, Any]:
    turns = [_turn(inv.get("actual")) for inv in doc.get("invocations") or []]
    played = [t for t in turns if t is not None]
    out: dict[str, Any] = {
        "conversation": "\n".join(transcript(t) for t in played),
        "toolCallLatencies": [lat for t in played for lat in tool_latencies(t)],
    }
    hallucinations = [
        labelled(_score(doc, "hallucination", i), HALLUCINATION_LABELS) for i in range(len(turns))
    ]
    out["hallucinationResult"] = [h for h in hallucinations if h is not None]
    for key, metric, labels in (
        ("userGoalSatisfactionResult", "user_goal_satisfaction", GOAL_LABELS),
        ("taskCompletionResult", "task_completed", {1: "Task completed", 0: "Not completed"}),
    ):
        found = _case_metric(doc, metric)
        result = None
        if found is not None:
            score = {"value": found.get("score"), "explanation": found.get("explanation")}
            result = labelled(score, labels)
        if result is not None:
            out[key] = result
    completed = _case_metric(doc, "task_completed")
    if completed is not None and completed.get("score") is not None:
        out["taskCompleted"] = completed["score"] >= 1
    return out
