"""Validation of resource bodies before they are stored, and the `invalid` flag.

Evaluation bodies go through assay's CES loader, so an evaluation the service accepts
is one `assay eval` can run, and a bad golden is refused with the path of the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from assay.agents.base import Agent, app_details_of
from assay.core.cases import EvalCase
from assay.formats import ces
from assay.service._fields import (
    DATASETS,
    EVALUATIONS,
    EXPECTATIONS,
    PERSONAS,
    SCHEDULES,
    KindSpec,
)
from assay.service._schedule_times import check_config
from assay.service.errors import InvalidArgument
from assay.service.names import parse_kind_name
from assay.service.settings import BUDGET_FIELD
from assay.store import Store

MAX_DISPLAY_NAME = 512
INT32_MAX = 2**31 - 1
_SPEECH_CONFIG = {"speakingRate": (int, float), "environment": (str,), "voiceId": (str,)}


def validate(
    store: Store, app: str, spec: KindSpec, resource_id: str, body: Mapping[str, object]
) -> None:
    """Raise INVALID_ARGUMENT (naming the field) unless `body` is a valid resource."""
    for field in spec.required:
        if body.get(field) in (None, ""):
            raise InvalidArgument.field(field, f"required: an {spec.singular} needs a {field}")
    display = body["displayName"]
    if not isinstance(display, str) or len(display) > MAX_DISPLAY_NAME or not display.strip():
        raise InvalidArgument.field(
            "displayName", f"expected a non-blank string of at most {MAX_DISPLAY_NAME} characters"
        )
    _optional_str(body, "description")
    if spec is EVALUATIONS:
        _evaluation(resource_id, body)
        _expectation_refs(store, app, body)
    elif spec is EXPECTATIONS:
        _expectation(body)
    elif spec is SCHEDULES:
        _schedule(store, app, body)
    elif spec is DATASETS:
        _dataset(store, app, body)
    elif spec is PERSONAS:
        _persona(body)


def _tags(body: Mapping[str, object]) -> None:
    tags = body.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidArgument.field("tags", "expected a list of strings")


def _expectation(body: Mapping[str, object]) -> None:
    _tags(body)
    criteria = body["llmCriteria"]
    if not isinstance(criteria, Mapping) or set(criteria) - {"prompt"}:
        raise InvalidArgument.field("llmCriteria", "expected an object {prompt}")
    prompt = criteria.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidArgument.field(
            "llmCriteria.prompt", "required: the criterion the judge checks, a non-blank string"
        )


def expectation_refs(body: Mapping[str, object]) -> list[tuple[str, str]]:
    """(field path, reference) of each expectation resource an evaluation names."""
    found = []
    for part in ("golden", "scenario"):
        section = body.get(part)
        refs = section.get("evaluationExpectations", []) if isinstance(section, Mapping) else []
        for i, ref in enumerate(refs if isinstance(refs, list) else []):
            if isinstance(ref, str):
                found.append((f"{part}.evaluationExpectations[{i}]", ref))
    return found


def _expectation_refs(store: Store, app: str, body: Mapping[str, object]) -> None:
    # CES evaluations name expectation resources of their own app; they must exist, so a
    # run can turn each into the judged criterion it stands for.
    for field, ref in expectation_refs(body):
        parsed = parse_kind_name(ref, EXPECTATIONS.kind, field=field)
        if parsed.app != app:
            raise InvalidArgument.field(field, f"{ref!r} belongs to another app than {app!r}")
        if store.resources.get(app, EXPECTATIONS.kind, parsed.id) is None:
            raise InvalidArgument.field(
                field, f"no evaluation expectation {ref!r}; create it first"
            )


_SCHEDULED_REQUEST = frozenset(
    {
        "app", "evaluations", "evaluationDataset", "displayName", "appVersion", "runCount",
        "config", "goldenRunMethod", "judgeModel", "userModel", "generateLatencyReport",
        BUDGET_FIELD,
    }
)  # fmt: skip


def _schedule(store: Store, app: str, body: Mapping[str, object]) -> None:
    check_config(body["schedulingConfig"])
    if not isinstance(body.get("active", False), bool):
        raise InvalidArgument.field("active", "expected true or false")
    request = body["request"]
    if not isinstance(request, Mapping):
        raise InvalidArgument.field("request", "expected a RunEvaluationRequest object")
    unknown = sorted(set(request) - _SCHEDULED_REQUEST)
    if unknown:
        raise InvalidArgument.field(
            f"request.{unknown[0]}", "not a field a scheduled run can set (or not supported)"
        )
    if request.get("app") not in (None, app, f"apps/{app}"):
        raise InvalidArgument.field("request.app", f"a schedule of app {app!r} runs that app")
    names = request.get("evaluations") or []
    dataset = request.get("evaluationDataset")
    if not names and not dataset:
        raise InvalidArgument.field(
            "request.evaluations", "required: the evaluations (or an evaluationDataset) to run"
        )
    if not isinstance(names, list):
        raise InvalidArgument.field("request.evaluations", "expected a list of evaluation names")
    for i, name in enumerate(names):
        _existing(store, app, name, "evaluations", f"request.evaluations[{i}]")
    if dataset:
        _existing(store, app, dataset, "evaluationDatasets", "request.evaluationDataset")


def _existing(store: Store, app: str, name: object, kind: str, field: str) -> None:
    if not isinstance(name, str):
        raise InvalidArgument.field(field, "expected a resource name")
    parsed = parse_kind_name(name, kind, field=field)
    if parsed.app != app:
        raise InvalidArgument.field(field, f"{name!r} belongs to another app than {app!r}")
    if store.resources.get(app, kind, parsed.id) is None:
        raise InvalidArgument.field(field, f"no {kind} {name!r}; create it first")


def _optional_str(body: Mapping[str, object], field: str) -> None:
    if field in body and not isinstance(body[field], str):
        raise InvalidArgument.field(field, f"expected a string, got {type(body[field]).__name__}")


def _evaluation(resource_id: str, body: Mapping[str, Any]) -> None:
    _tags(body)
    inputs = [k for k in ("golden", "scenario") if k in body]
    if len(inputs) != 1:
        found = " and ".join(inputs) if inputs else "neither"
        raise InvalidArgument.field(
            "golden", f"an evaluation needs exactly one of golden or scenario (got {found})"
        )
    scenario = body.get("scenario")
    if isinstance(scenario, Mapping) and "maxTurns" in scenario:
        turns = scenario["maxTurns"]
        # CES declares maxTurns an int32; a run of zero or fewer turns is no run.
        if isinstance(turns, bool) or not isinstance(turns, int) or not 1 <= turns <= INT32_MAX:
            raise InvalidArgument.field(
                "scenario.maxTurns", f"expected an integer from 1 to {INT32_MAX}, got {turns!r}"
            )
    # Raises InputError with the JSON path; the error handler maps it to a field violation.
    to_case(body["displayName"], body)


def to_case(resource_id: str, body: Mapping[str, object]) -> EvalCase:
    """The evaluation as an assay case (its id is the resource id)."""
    evalset = ces.load_data({**body, "name": resource_id}, file=None, mapping=None)
    return evalset.cases[0]


def _dataset(store: Store, app: str, body: Mapping[str, object]) -> None:
    names = body.get("evaluations", [])
    if not isinstance(names, list):
        raise InvalidArgument.field("evaluations", "expected a list of evaluation names")
    seen: set[str] = set()
    for i, name in enumerate(names):
        field = f"evaluations[{i}]"
        if not isinstance(name, str):
            raise InvalidArgument.field(field, "expected an evaluation name (a string)")
        parsed = parse_kind_name(name, "evaluations", field=field)
        if parsed.app != app:
            raise InvalidArgument.field(field, f"{name!r} belongs to another app than {app!r}")
        if name in seen:
            raise InvalidArgument.field(field, f"{name!r} is listed twice")
        seen.add(name)
        if store.resources.get(app, "evaluations", parsed.id) is None:
            raise InvalidArgument.field(field, f"no evaluation {name!r}; create it first")


def _persona(body: Mapping[str, object]) -> None:
    _optional_str(body, "personality")
    config = body.get("speechConfig")
    if config is None:
        return
    if not isinstance(config, Mapping):
        raise InvalidArgument.field("speechConfig", "expected an object")
    for key, value in config.items():
        types = _SPEECH_CONFIG.get(key)
        if types is None:
            raise InvalidArgument.field(
                f"speechConfig.{key}", f"unknown field; expected {', '.join(_SPEECH_CONFIG)}"
            )
        if isinstance(value, bool) or not isinstance(value, types):
            expected = "a number" if key == "speakingRate" else "a string"
            raise InvalidArgument.field(f"speechConfig.{key}", f"expected {expected}")


def known_names(agent: Agent | None) -> frozenset[str] | None:
    """Agent and tool names the agent declares, or None when it does not say."""
    details = app_details_of(agent) if agent is not None else None
    agents = details.get("agent_details") if details else None
    if not isinstance(agents, Mapping) or not agents:
        return None
    names: set[str] = set()
    for key, value in agents.items():
        names.add(str(key))
        if isinstance(value, Mapping):
            names.update(_declared_names(value.get("tool_declarations", [])))
    return frozenset(names)


def _declared_names(value: object) -> Iterator[str]:
    # Declarations come flat ({name, ...}) or grouped ({function_declarations: [...]}).
    if isinstance(value, list):
        for item in value:
            yield from _declared_names(item)
    elif isinstance(value, Mapping):
        if isinstance(value.get("name"), str):
            yield value["name"]
        for key in ("function_declarations", "functionDeclarations"):
            yield from _declared_names(value.get(key, []))


def is_invalid(resource_id: str, body: Mapping[str, object], known: frozenset[str] | None) -> bool:
    """CES `invalid`: the evaluation names a tool or agent the app does not have."""
    if known is None:
        return False
    # CES goldens may name tools by resource path (.../tools/ID); the ID is what counts.
    return any(
        name not in known and name.rsplit("/", 1)[-1] not in known
        for name in _referenced_names(to_case(resource_id, body))
    )


def _referenced_names(case: EvalCase) -> Iterator[str]:
    for turn in case.reference or []:
        for step in turn.steps:
            if step.agent_transfer is not None:
                yield step.agent_transfer.target_agent
        for exp in turn.expectations:
            for call in (exp.tool_call, exp.tool_response, exp.mock_tool_response):
                if call is not None:
                    yield call.name
            if exp.agent_transfer:
                yield exp.agent_transfer
    if case.scenario is not None:
        for sexp in case.scenario.expectations:
            if sexp.tool_expectation is not None:
                yield sexp.tool_expectation.expected_tool_call.name
