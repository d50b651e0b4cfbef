"""GenerateEvaluation and RunEvaluationResultMetrics: evaluations from conversations, and
metrics computed again for a stored result.

assay's conversations are the ones its evaluation runs recorded (CES source EVAL): the
conversation of a result `apps/{a}/evaluations/{e}/results/{r}` is named
`apps/{a}/conversations/{e}-{r}` (a result id is `{run id}-{index}`, and run ids hold
no `-`, so the name splits back from the right).

- GenerateEvaluation (GOLDEN) turns a conversation into a golden evaluation whose turns
  expect exactly what the agent did (each user input, the tool calls with their
  arguments, the final response), stores it in the app and answers it: the regression
  test of a conversation someone judged good. SCENARIO asks the server's judge
  (`assay serve --judge-model`) to state the user's task and rubrics from the
  transcript, for a simulated user to replay.
- RunEvaluationResultMetrics scores a result's recorded conversation again, without
  calling the agent, against its evaluation as it is now (after its expectations were
  edited, say) with the metrics of its run — and, when its run or the server
  (`--judge-model`) names a judge, the judged ones a run with a judgeModel computes —
  and answers the outcome. The stored result is the record of its run and stays.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.cloud import ces_v1beta as ces
from google.protobuf.message import Message

from assay.config import EXPECTATION_CHECKS, golden_checks_called_for
from assay.core.cases import EvalCase, EvalSet, Turn
from assay.core.results import Status
from assay.engine.build import build_metrics
from assay.engine.judging import JudgeRunOptions, run_judges
from assay.engine.scoring import finish_case, score_turns
from assay.errors import InputError
from assay.formats import ces as ces_format
from assay.formats._fit_ces import fit
from assay.service import _results, operations, runs
from assay.service._results import parse_result_id
from assay.service._run_session import EVAL_SET_ID, evaluation_case
from assay.service.context import ServiceContext
from assay.service.errors import FailedPrecondition, InvalidArgument, NotFound
from assay.service.names import RESULTS, check_id, parse_name
from assay.service.settings import ServiceRunSettings
from assay.service.wire import ces_lro
from assay.service.wire._judge import ask, last_object
from assay.service.wire._proto import enum_name, from_json
from assay.service.wire.ces_names import Location, parse_location
from assay.store.eval_results import ResultRow

# Measurements of a played turn, not part of what a golden expects.
_MEASURED = ("latency_s", "usage", "usage_metadata")
_OUTCOMES = {Status.PASSED: "PASS", Status.FAILED: "FAIL", Status.NOT_EVALUATED: "SKIPPED"}


def conversation_id(evaluation_id: str, result_id: str) -> str:
    """The id of the conversation a result recorded."""
    return f"{evaluation_id}-{result_id}"


def _result_id(rid: str, field: str) -> tuple[str, int]:
    try:
        return parse_result_id(rid)
    except InvalidArgument:
        raise InvalidArgument.field(
            field, f"{rid!r} is not a result id ({{run id}}-{{index}})"
        ) from None


def conversation(ctx: ServiceContext, name: str) -> tuple[Location, str, ResultRow]:
    """(Location, app, result row) of a conversation name."""
    where, rest = parse_location(name, "conversation")
    parts = rest.split("/")
    expected = "projects/{project}/locations/{location}/apps/{app}/conversations/{conversation}"
    if len(parts) != 4 or parts[0] != "apps" or parts[2] != "conversations":
        raise InvalidArgument.field("conversation", f"{name!r} is not {expected}")
    app, cid = parts[1], parts[3]
    pieces = cid.rsplit("-", 2)
    if len(pieces) != 3 or not all(pieces):
        raise InvalidArgument.field(
            "conversation",
            f"{cid!r} is not a conversation id of assay: {{evaluation id}}-{{result id}}, the "
            "conversation of apps/{app}/evaluations/{evaluation id}/results/{result id}",
        )
    evaluation_id = check_id(pieces[0], "conversation")
    run_id, index = _result_id(f"{pieces[1]}-{pieces[2]}", "conversation")
    row = runs.state_of(ctx).results.result(app, evaluation_id, run_id, index)
    if row is None:
        raise NotFound(f"conversation {name} not found")
    return where, app, row


def recorded_turns(row: ResultRow) -> list[Turn]:
    """The turns the agent played in a stored result, in order."""
    return [
        Turn.model_validate(inv["actual"])
        for inv in row.document.get("invocations") or []
        if inv.get("actual") is not None
    ]


def golden_body(case_id: str, turns: list[Turn], display_name: str) -> dict[str, Any]:
    """A golden evaluation (CES JSON) expecting exactly `turns`.

    What was measured while the agent played them (latencies, token usage) is no
    expectation and is left out; anything else CES cannot hold is refused.
    """
    reference = [t.model_copy(update={"id": None, "latency_s": None, "error": None}) for t in turns]
    evalset = EvalSet(id=case_id, cases=[EvalCase(id=case_id, reference=reference)])
    fitted, losses = fit(evalset)
    kept = [x.field for x in losses if not x.field.endswith(_MEASURED)]
    if kept:
        raise FailedPrecondition(
            f"the conversation holds what a CES golden evaluation cannot: {', '.join(kept)}"
        )
    dumped = ces_format.dump(fitted)
    body: dict[str, Any] = dumped if "golden" in dumped else dumped["evaluations"][0]
    body.pop("name", None)
    body["displayName"] = display_name
    return body


def generate_evaluation(ctx: ServiceContext, request: Any) -> Message:
    where, app, row = conversation(ctx, request.conversation)
    source = enum_name(ces.Conversation.Source, request.source, "source")
    kind = enum_name(
        ces.GenerateEvaluationRequest.EvaluationType, request.evaluation_type, "evaluation_type"
    )
    if source not in ("SOURCE_UNSPECIFIED", "EVAL"):
        raise NotFound(
            f"no {source} conversation {request.conversation}: assay's conversations are the "
            "ones its evaluation runs recorded (source EVAL)"
        )
    turns = recorded_turns(row)
    if not turns:
        raise FailedPrecondition(
            f"conversation {request.conversation} has no turns (its run failed before the "
            "agent answered): there is nothing to make an evaluation of"
        )
    cid = request.conversation.rsplit("/", 1)[-1]
    if kind in ("EVALUATION_TYPE_UNSPECIFIED", "GOLDEN"):
        body = golden_body(cid, turns, f"Generated from conversation {cid}")
    else:
        body = scenario_body(ctx, turns, f"Scenario of conversation {cid}")
    created = operations.create_resource(ctx, app, "evaluations", body, None)
    evaluation = from_json(ces.Evaluation.pb(), where.expand(created))
    metadata = ces.GenerateEvaluationOperationMetadata.pb()()
    operation: Message = ces_lro.finished(ctx, where, "generate", metadata, evaluation)
    return operation


_ASK_SCENARIO = """Below is a conversation between a user and an AI agent. Write the test
scenario it came from, for a simulated user to replay against the agent: the user's
task (their goal, in the second person, with the facts they gave) and rubrics (short
checks the agent's side of a good conversation passes).

{transcript}

Answer with one JSON object: {{"task": "<the user's goal>", "rubrics": ["<check>", ...]}}"""


def _parse_scenario(reply: str) -> dict[str, Any] | None:
    found = last_object(reply)
    if found is None or not isinstance(found.get("task"), str) or not found["task"].strip():
        return None
    rubrics = found.get("rubrics", [])
    if not isinstance(rubrics, list) or not all(isinstance(r, str) for r in rubrics):
        return None
    return {"task": found["task"].strip(), "rubrics": [r for r in rubrics if r.strip()]}


def scenario_body(ctx: ServiceContext, turns: list[Turn], display_name: str) -> dict[str, Any]:
    """A scenario evaluation (CES JSON) the server's judge wrote from a conversation."""
    if ctx.judge_model is None:
        raise FailedPrecondition(
            "generating a SCENARIO evaluation needs a judge to state the user's goal, and "
            "this server has none: start it with assay serve --judge-model MODEL (or ask "
            "for a GOLDEN evaluation)"
        )
    transcript = "\n".join(_results.transcript(t) for t in turns)
    messages = [{"role": "user", "content": _ASK_SCENARIO.format(transcript=transcript)}]
    scenario, _raw = asyncio.run(ask(ctx.judge_model, messages, _parse_scenario))
    # As many user turns as the conversation had, and room for one more exchange.
    scenario["maxTurns"] = len(turns) + 1
    return {"displayName": display_name, "scenario": scenario}


def _result_row(ctx: ServiceContext, name: str) -> tuple[Location, str, ResultRow]:
    where, short = parse_location(name, "evaluation_result_id")
    parsed = parse_name(short)
    if parsed.kind != RESULTS or parsed.parent is None:
        raise InvalidArgument.field(
            "evaluation_result_id",
            f"{name!r} is not an evaluation result name (projects/{{project}}/locations/"
            "{location}/apps/{app}/evaluations/{evaluation}/results/{result})",
        )
    run_id, index = _result_id(parsed.id, "evaluation_result_id")
    row = runs.state_of(ctx).results.result(parsed.app, parsed.parent, run_id, index)
    if row is None:
        raise NotFound(f"no evaluation result {name!r}")
    return where, parsed.app, row


def _metric_names(
    ctx: ServiceContext, row: ResultRow, case: EvalCase, body: dict[str, Any]
) -> tuple[list[str], str | None]:
    """The metrics of the result's run, and its judge (else the server's): with a judge,
    the judged metrics a run with a judgeModel computes; the golden checks only where
    the evaluation now asks for them, as a run starts."""
    settings = ServiceRunSettings.of_run(ctx.store.get_run(row.run_id))
    model = settings.judge_model or ctx.judge_model
    names = list(settings.metrics)
    if model is not None:
        wanted = [*runs.JUDGED_METRICS, *runs.SCENARIO_METRICS]
        if runs._has_expectations(body):
            wanted.append(runs.EXPECTATION_METRIC)
        names += [m for m in wanted if m not in names]
    elif case.scenario is not None:
        raise FailedPrecondition(
            "a scenario result is scored by an LLM judge, and neither its run nor this "
            "server names one: start assay serve with --judge-model MODEL, or run the "
            "evaluation again with a judgeModel"
        )
    called = golden_checks_called_for([case])
    return [m for m in names if m not in EXPECTATION_CHECKS or m in called], model


async def _score(case: EvalCase, turns: list[Turn], names: list[str], model: str | None) -> Any:
    metrics = build_metrics(names=names)
    async with run_judges(metrics, JudgeRunOptions(model=model) if model else None):
        return metrics, await score_turns(case, turns, metrics)


def run_evaluation_result_metrics(ctx: ServiceContext, request: Any) -> Message:
    where, app, row = _result_row(ctx, request.evaluation_result_id)
    found = ctx.store.resources.get(app, "evaluations", row.case_id)
    if found is None:
        raise NotFound(f"evaluation apps/{app}/evaluations/{row.case_id} no longer exists")
    try:
        # The evaluation with its expectation resources inline, as a run snapshots it.
        body = runs._with_expectations(ctx, app, found.body)
        case = evaluation_case(row.case_id, body)
    except InputError as exc:
        raise FailedPrecondition(f"the evaluation cannot be scored: {exc}") from None
    names, model = _metric_names(ctx, row, case, body)
    turns = recorded_turns(row)
    metrics, results = asyncio.run(_score(case, turns, names, model))
    scored = finish_case(
        case, turns, metrics, results, eval_set_id=EVAL_SET_ID, run_index=row.run_index
    )
    response = from_json(
        ces.RunEvaluationResultMetricsResponse.pb(), {"status": _OUTCOMES[scored.status]}
    )
    metadata = ces.RunEvaluationResultMetricsOperationMetadata.pb()()
    operation: Message = ces_lro.finished(ctx, where, "metrics", metadata, response)
    return operation


METHODS = {
    "GenerateEvaluation": generate_evaluation,
    "RunEvaluationResultMetrics": run_evaluation_result_metrics,
}
