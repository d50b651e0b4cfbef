"""What a CES `Evaluation` can hold of an eval set: `fit` for writing CES.

Translations (nothing is lost): reference steps and final responses become golden
expectations (`assay.formats._golden`); ADK session state becomes the first turn's
`userInput.variables` (a golden) or the scenario's `variableOverrides`; an ADK
conversation plan becomes the scenario task when there is none. Case rubrics become
`evaluationExpectations` references to expectation resources written beside the
evaluations.

Everything else the `Evaluation` message has no field for is a `Loss`: recorded turns,
turn ids, timings, usage and errors, per-turn rubrics, rubric types, retrievals, agent
names of intermediate replies, session app name and user id, timestamps, the row
formats' expected answers, scenario starting prompts, personas and initiators, notes of
scenario expectations, and metadata keys that are not `Evaluation` fields.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.core.cases import (
    EvalCase,
    EvalSet,
    Expectation,
    Initiator,
    Scenario,
    Step,
    ToolResponse,
    Turn,
)
from assay.formats._ces_parts import AUDIO, DISPLAY, REFS, RESOURCES, ROOT_SPANS
from assay.formats._golden import answer_to_final_response, as_expectations
from assay.formats._loss import Loss, Losses

# `Evaluation` fields (proto JSON names) a case's metadata may carry through.
EVALUATION_FIELDS = frozenset(
    {"evaluationDatasets", "createTime", "createdBy", "updateTime", "lastUpdatedBy",
     "evaluationRuns", "etag", "aggregatedMetrics", "lastCompletedResult", "invalid",
     "lastTenResults", "evaluationMetricsThresholdOverride",
     "evaluationMetricsConfigOverride"}
)  # fmt: skip
KEPT_METADATA = EVALUATION_FIELDS | {DISPLAY, REFS, ROOT_SPANS}
_ROW_FIELDS = (
    "actual", "expected_response", "expected_facts", "expected_retrieved_context",
    "guidelines", "final_session_state", "created_at",
)  # fmt: skip
_TURN_FIELDS = ("id", "latency_s", "usage", "error", "created_at")

Drop = Callable[[str], None]


def fit(evalset: EvalSet) -> tuple[EvalSet, list[Loss]]:
    """The set as CES holds it, and what CES cannot hold (see the module doc)."""
    es = evalset.model_copy(deep=True)
    losses = Losses()
    for name in ("name", "description", "created_at"):
        # No CES resource holds a set: a file of several is `{evaluations: [...]}`.
        if getattr(es, name) is not None:
            losses.add(None, name)
            setattr(es, name, None)
    for key in [k for k in es.metadata if k != RESOURCES]:
        losses.add(None, f"metadata.{key}")
        del es.metadata[key]
    cases = []
    texts: dict[str, str] = {}  # one resource per rubric id across the set
    for case in es.cases:

        def drop(name: str, case_id: str = case.id) -> None:
            losses.add(case_id, name)

        if _fit_case(case, drop):
            kept = []
            for r in case.rubrics:
                if texts.setdefault(r.id, r.text or "") != (r.text or ""):
                    drop("rubrics[] (an id another rubric of the set has, with another text)")
                else:
                    kept.append(r)
            case.rubrics = kept
            cases.append(case)
    es.cases = cases
    return es, losses.items


def _fit_case(case: EvalCase, drop: Drop) -> bool:
    """Fit `case` in place; False when no Evaluation can hold it at all."""
    answer_to_final_response(case)  # the golden's last agentResponse
    for name in _ROW_FIELDS:
        if getattr(case, name) is not None:
            drop(name)
            setattr(case, name, None)
    for key in [k for k in case.metadata if k not in KEPT_METADATA]:
        drop(f"metadata.{key}")
        del case.metadata[key]
    if not isinstance(case.metadata.get(DISPLAY, ""), str):
        drop(f"metadata.{DISPLAY}")
        del case.metadata[DISPLAY]
    for r in case.rubrics:
        if r.type is not None:
            drop("rubrics[].type")
            r.type = None
    _fit_session(case, drop)
    if case.scenario is not None:
        if case.reference is not None:
            drop("reference (beside a scenario)")
            case.reference = None
        _fit_scenario(case.scenario, drop)
        if case.scenario.task is None:
            # `task` is what CES's simulated user acts on (a required field of
            # Evaluation.Scenario); without it the file is no scenario CES can run.
            drop("the case (its scenario has no task, which CES requires)")
            return False
        return True
    if case.reference is None:
        drop("the case (it has neither golden turns nor a scenario)")
        return False
    case.reference = [_fit_turn(t, drop) for t in case.reference]
    return True


def _fit_session(case: EvalCase, drop: Drop) -> None:
    s = case.session_input
    if s is None:
        return
    case.session_input = None
    if s.app_name is not None:
        drop("session_input.app_name")
    if s.user_id is not None:
        drop("session_input.user_id")
    if not s.state:
        return
    if case.scenario is not None and not case.scenario.variable_overrides:
        case.scenario.variable_overrides = s.state
    elif case.scenario is None and case.reference and (first := case.reference[0].user_input):
        if first.variables is None:
            first.variables = s.state
        else:
            drop("session_input.state")
    else:
        drop("session_input.state")


def _fit_response(r: ToolResponse | None, path: str, drop: Drop) -> None:
    if r is None:
        return
    if r.response is not None and not isinstance(r.response, dict):
        drop(f"{path}.response (not a JSON object)")
        r.response = None
    if r.latency_s is not None:
        drop(f"{path}.latency_s")
        r.latency_s = None


def _fit_turn(t: Turn, drop: Drop) -> Turn:
    for name in _TURN_FIELDS:
        if getattr(t, name) is not None:
            drop(f"reference[].{name}")
            setattr(t, name, None)
    if t.rubrics:
        drop("reference[].rubrics")
        t.rubrics = []
    ui = t.user_input
    kinds: set[str] = set()
    blobs = []
    for b in ui.blobs:
        kind = blob_kind(b.mime_type)
        if kind in kinds:
            drop(f"reference[].user_input.blobs[] (a second {kind} in one turn)")
        else:
            kinds.add(kind)
            blobs.append(b)
    ui.blobs = blobs
    for r in ui.tool_responses:
        _fit_response(r, "reference[].user_input.tool_responses[]", drop)
    moved: list[Step] = []
    kept: list[Step] = []
    for s in t.steps:
        if s.retrieval is not None:
            drop("reference[].steps[].retrieval")
        elif s.agent_transfer is not None:
            if moved:
                drop("reference[].steps[].agent_transfer (after other steps)")
            else:
                kept.append(s)
        else:
            if s.agent_message is not None and s.agent_message.author is not None:
                drop("reference[].steps[].agent_message.author")
                s.agent_message.author = None
            _fit_response(s.tool_response, "reference[].steps[].tool_response", drop)
            moved.append(s)
    if t.final_response is None and not t.expectations and moved and moved[-1].agent_message:
        # CES has one kind of agent reply: read back, the last one is the final response.
        drop("reference[].steps[].agent_message (last in a turn without final_response)")
        moved.pop()
    for e in t.expectations:
        _fit_expectation(e, drop)
    said = Turn(steps=moved, final_response=t.final_response, expectations=t.expectations)
    t.steps, t.final_response, t.expectations = kept, None, as_expectations(said)
    return t


def _fit_expectation(e: Expectation, drop: Drop) -> None:
    _fit_response(e.tool_response, "reference[].expectations[].tool_response", drop)
    _fit_response(e.mock_tool_response, "reference[].expectations[].mock_tool_response", drop)


def _fit_scenario(sc: Scenario, drop: Drop) -> None:
    if sc.starting_prompt is not None:
        drop("scenario.starting_prompt")
        sc.starting_prompt = None
    if sc.conversation_plan is not None:
        if sc.task is None:
            sc.task = sc.conversation_plan
        else:
            drop("scenario.conversation_plan")
        sc.conversation_plan = None
    if sc.persona is not None:
        drop("scenario.persona")
        sc.persona = None
    if sc.initiator != Initiator.USER:
        drop("scenario.initiator")
        sc.initiator = Initiator.USER
    for i, r in enumerate(sc.rubrics):
        # CES scenario rubrics are plain strings, read back as rubric-1, rubric-2, ...
        if r.id != f"rubric-{i + 1}":
            drop("scenario.rubrics[].id")
            r.id = f"rubric-{i + 1}"
        if r.type is not None:
            drop("scenario.rubrics[].type")
            r.type = None
    for e in sc.expectations:
        if e.note is not None:
            drop("scenario.expectations[].note")
            e.note = None
        if e.tool_expectation is not None:
            _fit_response(
                e.tool_expectation.mock_tool_response,
                "scenario.expectations[].tool_expectation.mock_tool_response",
                drop,
            )


def blob_kind(mime_type: str) -> str:
    """The `userInput` key a blob of this type is written under."""
    if mime_type == AUDIO:
        return "audio"
    return "image" if mime_type.startswith("image/") else "blob"


def synth_resource(rubric_id: str, text: str) -> dict[str, object]:
    """The EvaluationExpectation resource a rubric is written as."""
    return {DISPLAY: rubric_id, "llmCriteria": {"prompt": text}}


def is_synth(resource: dict[str, object]) -> bool:
    """Whether a resource says no more than a rubric (display name and prompt)."""
    criteria = resource.get("llmCriteria")
    return (
        set(resource) <= {DISPLAY, "llmCriteria"}
        and isinstance(criteria, dict)
        and set(criteria) == {"prompt"}
    )
