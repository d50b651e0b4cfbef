"""The JSON report: one document with the Vertex summary, the rows and ADK-shaped cases.

`cases` holds one object per case run, shaped like ADK's `EvalCaseResult` (snake_case,
integer `EvalStatus` codes, `Invocation`-shaped actual/expected turns) so ADK tooling can
read it, plus assay's own keys (`status`, `run_index`, `latency_s`, `failure`, `error`,
`traceback` when the agent raised, and `judge_samples` when judged metrics sampled their
judge more than once: how the samples split and whether the item is unstable) which ADK
ignores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.metrics.judged.noise import UNSTABLE_INVOCATIONS, is_unstable, split_of
from assay.model.core import Turn
from assay.model.results import CaseResult, EvalResult, MetricResult, Score, status_for
from assay.report.json_stream import JsonReportWriter
from assay.report.json_stream import finite as _finite
from assay.report.json_stream import jsonable as _jsonable

# ADK 2.x `EvalStatus.INFORMATIONAL`: a value was reported but never passes or fails.
_ADK_INFORMATIONAL = 4


def _part_text(text: str | None) -> dict[str, Any]:
    return {"text": text if text is not None else ""}


def _response_object(value: object) -> dict[str, Any]:
    # ADK's FunctionResponse.response must be an object; ADK itself wraps other values
    # under "result" when it records tool output.
    return value if isinstance(value, dict) else {"result": value}


def turn_to_invocation(turn: Turn, fallback_id: str) -> dict[str, Any]:
    """An ADK `Invocation`-shaped dict for one turn (final response, tools, messages)."""
    parts: list[dict[str, Any]] = []
    if turn.user_input.text is not None or not (
        turn.user_input.blobs or turn.user_input.tool_responses
    ):
        parts.append(_part_text(turn.user_input.text))
    for blob in turn.user_input.blobs:
        parts.append({"inline_data": {"mime_type": blob.mime_type, "data": blob.data}})
    for tr in turn.user_input.tool_responses:
        fr: dict[str, Any] = {"name": tr.name, "response": _response_object(tr.response)}
        if tr.id:
            fr["id"] = tr.id
        parts.append({"function_response": fr})
    tool_uses = []
    for call in turn.tool_calls():
        use: dict[str, Any] = {"name": call.name, "args": call.args}
        if call.id:
            use["id"] = call.id
        tool_uses.append(use)
    tool_responses = []
    for resp in turn.tool_responses():
        item: dict[str, Any] = {"name": resp.name, "response": _response_object(resp.response)}
        if resp.id:
            item["id"] = resp.id
        tool_responses.append(item)
    intermediate = [
        [msg.author or "agent", [_part_text(msg.text)]] for msg in turn.agent_messages()
    ]
    invocation: dict[str, Any] = {
        "invocation_id": turn.id or fallback_id,
        "user_content": {"role": "user", "parts": parts},
        "final_response": (
            {"role": "model", "parts": [_part_text(turn.final_response)]}
            if turn.final_response is not None
            else None
        ),
        "intermediate_data": {
            "tool_uses": tool_uses,
            "tool_responses": tool_responses,
            "intermediate_responses": intermediate,
        },
        "creation_timestamp": turn.created_at or 0.0,
    }
    if turn.latency_s is not None:
        invocation["duration"] = turn.latency_s
    return invocation


def _rubric_details(details: dict[str, Any]) -> dict[str, Any]:
    """ADK's `details.rubric_scores` ({rubric_id, score} per rubric) when the metric
    judged rubrics, so ADK's tools show the verdicts per rubric; else nothing."""
    scores = details.get("rubric_scores")
    if not isinstance(scores, dict) or not scores:
        return {}
    rubric_scores = [
        {"rubric_id": str(rid), "score": _finite(value)} for rid, value in scores.items()
    ]
    return {"details": {"rubric_scores": rubric_scores}}


def _metric_entry(
    name: str, score: Score, threshold: float | None, informational: bool
) -> dict[str, Any]:
    value = score.value
    code = _ADK_INFORMATIONAL if informational else status_for(value, threshold).adk_code
    entry = {
        "metric_name": name,
        "threshold": threshold,
        "score": _finite(value),
        "eval_status": code,
    }
    if score.details:  # this runs for every metric of every turn: no call when empty
        entry.update(_rubric_details(score.details))
    return entry


def _overall_entry(metric: MetricResult) -> dict[str, Any]:
    code = metric.status.adk_code if metric.status is not None else _ADK_INFORMATIONAL
    entry = {
        "metric_name": metric.name,
        "threshold": metric.threshold,
        "score": _finite(metric.score),
        "eval_status": code,
    }
    if metric.details:
        entry.update(_rubric_details(metric.details))
    return entry


def _invocation_score(case: CaseResult, metric: MetricResult, index: int) -> Score | None:
    inv = case.invocations[index]
    if metric.name in inv.scores:
        return inv.scores[metric.name]
    if len(metric.per_invocation) == len(case.invocations):
        return metric.per_invocation[index]
    return None


def judge_samples_of(case: CaseResult) -> dict[str, Any]:
    """`{metric: {pass, fail, unstable, unstable_invocations}}` for each judged metric of
    the case whose judge samples were split (`assay.metrics.judged.noise`)."""
    out: dict[str, Any] = {}
    for metric in case.metrics.values():
        split = split_of(metric.details)
        if split is not None:
            out[metric.name] = {
                "pass": split[0],
                "fail": split[1],
                "unstable": is_unstable(metric.details),
                "unstable_invocations": metric.details.get(UNSTABLE_INVOCATIONS, 0),
            }
    return out


def case_to_adk(
    case: CaseResult, *, run_id: str | None = None, eval_set_file: str | None = None
) -> dict[str, Any]:
    """One case run as an ADK `EvalCaseResult`-shaped dict (plus assay's own keys)."""
    per_invocation = []
    for index, inv in enumerate(case.invocations):
        fallback = f"{case.case_id}-{index + 1}"
        source = inv.actual or inv.expected
        if source is None:
            continue
        actual = inv.actual
        if actual is None:
            # The agent failed before answering: keep the user input, no response.
            actual = Turn(id=source.id, user_input=source.user_input)
        results = []
        for metric in case.metrics.values():
            score = _invocation_score(case, metric, index)
            if score is None:
                continue
            results.append(
                _metric_entry(metric.name, score, metric.threshold, metric.status is None)
            )
        per_invocation.append(
            {
                "actual_invocation": turn_to_invocation(actual, fallback),
                "expected_invocation": (
                    turn_to_invocation(inv.expected, fallback) if inv.expected else None
                ),
                "eval_metric_results": results,
            }
        )
    doc: dict[str, Any] = {
        "eval_set_id": case.eval_set_id or "",
        "eval_id": case.case_id,
        "run_index": case.run_index,
        "final_eval_status": case.status.adk_code,
        "status": case.status.value,
        "overall_eval_metric_results": [_overall_entry(m) for m in case.metrics.values()],
        "eval_metric_result_per_invocation": per_invocation,
        # ADK requires a session id; ours names the run, the case and the repetition.
        "session_id": f"{run_id or 'assay'}:{case.eval_set_id or ''}:{case.case_id}:"
        f"{case.run_index}",
        "latency_s": case.latency_s,
        "failure": case.failure,
        "error": case.error,
        "error_type": case.error_type,
        "explanations": {
            m.name: m.explanation for m in case.metrics.values() if m.explanation is not None
        },
    }
    noise = judge_samples_of(case)
    if noise:
        doc["judge_samples"] = noise
    if case.traceback is not None:
        doc["traceback"] = case.traceback
    if eval_set_file is not None:
        doc["eval_set_file"] = eval_set_file
    return doc


def build_report(
    result: EvalResult,
    *,
    eval_set_ids: Sequence[str] | None = None,
    eval_set_files: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The JSON report document `{summary, rows, cases, run_id, eval_set_ids, metrics}`.

    `eval_set_files` maps an eval set id to the file it came from (ADK's deprecated
    `eval_set_file` key is written when known).
    """
    files = eval_set_files or {}
    ids = list(eval_set_ids) if eval_set_ids is not None else _eval_set_ids(result)
    cases = [
        case_to_adk(c, run_id=result.run_id, eval_set_file=files.get(c.eval_set_id or ""))
        for c in result.cases
    ]
    doc: dict[str, Any] = {
        "run_id": result.run_id,
        "eval_set_ids": ids,
        "metrics": list(result.metrics),
        "summary": result.summary,
        "rows": result.rows,
        "cases": cases,
    }
    if result.repeated:
        doc["repeated"] = result.repeated
    return _jsonable(doc)  # type: ignore[no-any-return]


def _eval_set_ids(result: EvalResult) -> list[str]:
    seen: dict[str, None] = {}
    for case in result.cases:
        if case.eval_set_id:
            seen.setdefault(case.eval_set_id, None)
    if not seen and result.eval_set_id:
        seen[result.eval_set_id] = None
    return list(seen)


def write_json(
    result: EvalResult,
    path: str | Path,
    *,
    eval_set_ids: Sequence[str] | None = None,
    eval_set_files: dict[str, str] | None = None,
) -> Path:
    """Write the JSON report to `path` (parent folders are created).

    The document is `build_report`'s, written case by case by the same writer a
    streaming run uses (`assay.report.json_stream`): one case or row per line.
    """
    files = eval_set_files or {}
    writer = JsonReportWriter(
        path,
        run_id=result.run_id,
        eval_set_ids=list(eval_set_ids) if eval_set_ids is not None else _eval_set_ids(result),
        metrics=list(result.metrics),
    )
    try:
        for case in result.cases:
            writer.add_case(
                case_to_adk(
                    case, run_id=result.run_id, eval_set_file=files.get(case.eval_set_id or "")
                )
            )
        for row in result.rows:
            writer.rows.add(row)
        return writer.finish(result.summary, result.repeated)
    except BaseException:
        writer.discard()
        raise
