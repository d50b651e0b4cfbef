"""The CES EvaluationService methods over assay's service core, message in, message out.

Each method takes the request message of `google-cloud-ces` (already parsed from
proto3 JSON or gRPC), turns full names into assay's `apps/...` names, calls the same
functions the `/v1` routes and the MCP tools call (one store, one set of rules), and
renders the answer through the client's message class with every name written in full.
REST (`ces_rest`) and gRPC (`ces_grpc`) both dispatch into `METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.cloud import ces_v1beta as ces
from google.protobuf import empty_pb2
from google.protobuf.message import Message

from assay.service import operations, runs
from assay.service._fields import DATASETS, EVALUATIONS, EXPECTATIONS, SCHEDULES, KindSpec
from assay.service.context import ServiceContext
from assay.service.errors import InvalidArgument
from assay.service.names import parse_kind_name
from assay.service.wire import (
    ces_generate,
    ces_locations,
    ces_lro,
    ces_operations,
    ces_transfer,
)
from assay.service.wire._proto import from_json, to_json
from assay.service.wire.ces_names import Location, app_of, namespace_of, parse_location
from assay.service.wire.ces_operations import Unimplemented
from assay.store.namespace import namespace_scope

Handler = Callable[[ServiceContext, Any], Message]

EVALUATION = ces.Evaluation.pb()
DATASET = ces.EvaluationDataset.pb()
RUN = ces.EvaluationRun.pb()
RESULT = ces.EvaluationResult.pb()
EXPECTATION = ces.EvaluationExpectation.pb()
SCHEDULE = ces.ScheduledEvaluationRun.pb()
_PATTERNS = {
    kind: f"projects/{{project}}/locations/{{location}}/apps/{{app}}/{kind}/{{id}}"
    for kind in (
        "evaluations",
        "evaluationDatasets",
        "evaluationRuns",
        "evaluationExpectations",
        "scheduledEvaluationRuns",
    )
} | {"results": "projects/{project}/locations/{location}/apps/{app}/evaluations/{id}/results/{id}"}
# The default page size the service documents for lists.
DEFAULT_PAGE_SIZE = 50


def _camel(path: str) -> str:
    head, *rest = path.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _named(name: str, kind: str, field: str = "name") -> tuple[Location, str]:
    """(Location, short name) of a full name that must name a resource of `kind`."""
    where, short = parse_location(name, field)
    try:
        parse_kind_name(short, kind, field=field)
    except InvalidArgument:
        pattern = _PATTERNS[kind]
        raise InvalidArgument.field(
            field, f"{name!r} is not a valid resource name; expected {pattern}"
        ) from None
    return where, short


def _unsupported(request: Any, *fields: str) -> None:
    # An empty message counts as unset: clients send `{}` for sub-messages left alone.
    given = {f.name for f, v in request.ListFields() if not isinstance(v, Message) or v.ByteSize()}
    for field in fields:
        if field in given:
            raise InvalidArgument.field(
                _camel(field), "assay does not support this field yet; leave it unset"
            )


def _page_size(value: int) -> int:
    if value < 0:
        raise InvalidArgument.field("page_size", f"must not be negative (got {value})")
    return value or DEFAULT_PAGE_SIZE


def _resource_body(where: Location, app: str, spec: KindSpec, message: Message) -> dict[str, Any]:
    """A resource message as the JSON assay's core takes (short names inside)."""
    body = to_json(message)
    if spec is DATASETS:
        members = body.get("evaluations", [])
        body["evaluations"] = [
            where.short(m, f"evaluation_dataset.evaluations[{i}]") for i, m in enumerate(members)
        ]
    if spec is SCHEDULES and isinstance(body.get("request"), dict):
        request = body["request"]
        field = "scheduled_evaluation_run.request"
        if request.get("app"):
            request["app"] = where.short(request["app"], f"{field}.app")
        request["evaluations"] = [
            where.short(n, f"{field}.evaluations[{i}]")
            for i, n in enumerate(request.get("evaluations", []))
        ]
        if request.get("evaluationDataset"):
            request["evaluationDataset"] = where.short_ref(
                request["evaluationDataset"], f"{field}.evaluation_dataset"
            )
    for part in ("golden", "scenario") if spec is EVALUATIONS else ():
        refs = body.get(part, {}).get("evaluationExpectations")
        if refs:
            body[part]["evaluationExpectations"] = [
                where.short(r, f"evaluation.{part}.evaluation_expectations[{i}]")
                for i, r in enumerate(refs)
            ]
    body.pop("name", None)
    return body


def _out(where: Location, cls: type[Message], rendered: Mapping[str, object]) -> Message:
    return from_json(cls, where.expand(rendered))


# -- evaluations and datasets -----------------------------------------------------------------


def _create(spec: KindSpec, cls: type[Message], field: str) -> Handler:
    def create(ctx: ServiceContext, request: Any) -> Message:
        where, app = app_of(request.parent)
        body = _resource_body(where, app, spec, getattr(request, field))
        rid = getattr(request, f"{field}_id") or None
        return _out(where, cls, operations.create_resource(ctx, app, spec.kind, body, rid))

    return create


def _get(spec: KindSpec, cls: type[Message]) -> Handler:
    def get(ctx: ServiceContext, request: Any) -> Message:
        where, short = _named(request.name, spec.kind)
        return _out(where, cls, operations.get_resource(ctx, short))

    return get


def _list(spec: KindSpec, cls: type[Message]) -> Handler:
    def list_(ctx: ServiceContext, request: Any) -> Message:
        where, app = app_of(request.parent)
        _unsupported(request, "order_by")
        if spec is EVALUATIONS:
            _unsupported(request, "evaluation_filter", "evaluation_run_filter")
        full = bool(getattr(request, "last_ten_results", False))
        found = operations.list_resources(
            ctx,
            app,
            spec.kind,
            page_size=_page_size(request.page_size),
            page_token=request.page_token or None,
            filter=_short_filter(where, request.filter),
            full=full,
        )
        return _out(where, cls, found)

    return list_


def _update(spec: KindSpec, cls: type[Message], field: str) -> Handler:
    def update(ctx: ServiceContext, request: Any) -> Message:
        resource = getattr(request, field)
        where, short = _named(resource.name, spec.kind, f"{field}.name")
        app = short.split("/")[1]
        body = _resource_body(where, app, spec, resource)
        paths = [_camel(p) for p in request.update_mask.paths]
        if not paths:
            # AIP-134: no mask means every field the request sets.
            paths = sorted(k for k in body if k in spec.writable) or ["displayName"]
        body["name"] = short
        return _out(where, cls, operations.update_resource(ctx, short, body, ",".join(paths)))

    return update


def _delete(spec: KindSpec) -> Handler:
    def delete(ctx: ServiceContext, request: Any) -> Message:
        _where, short = _named(request.name, spec.kind)
        force = bool(getattr(request, "force", False))
        operations.delete_resource(ctx, short, force=force, etag=request.etag or None)
        return empty_pb2.Empty()

    return delete


def _short_filter(where: Location, text: str) -> str | None:
    # Filters may quote full names (evaluationRun="projects/.../evaluationRuns/x").
    return text.replace(where.prefix + "/", "") if text else None


# -- runs, results and run_evaluation -----------------------------------------------------


def get_evaluation_run(ctx: ServiceContext, request: Any) -> Message:
    where, short = _named(request.name, "evaluationRuns")
    return _out(where, RUN, runs.get_run(ctx, short))


def list_evaluation_runs(ctx: ServiceContext, request: Any) -> Message:
    where, app = app_of(request.parent)
    _unsupported(request, "filter", "order_by")
    found = runs.list_runs(
        ctx, app, page_size=_page_size(request.page_size), page_token=request.page_token or None
    )
    return _out(where, ces.ListEvaluationRunsResponse.pb(), found)


def delete_evaluation_run(ctx: ServiceContext, request: Any) -> Message:
    # The client waits on an operation here (DeleteEvaluationRunOperationMetadata,
    # answering Empty): the run is deleted now, and the operation is done.
    where, short = _named(request.name, "evaluationRuns")
    runs.delete_run(ctx, short)
    metadata = ces.DeleteEvaluationRunOperationMetadata.pb()()
    return ces_lro.finished(ctx, where, "delete", metadata, empty_pb2.Empty())


def get_evaluation_result(ctx: ServiceContext, request: Any) -> Message:
    where, short = _named(request.name, "results")
    return _out(where, RESULT, runs.get_result(ctx, short))


def list_evaluation_results(ctx: ServiceContext, request: Any) -> Message:
    where, evaluation = _named(request.parent, "evaluations", "parent")
    _unsupported(request, "order_by")
    found = runs.list_results(
        ctx,
        evaluation,
        page_size=_page_size(request.page_size),
        page_token=request.page_token or None,
        filter=_short_filter(where, request.filter),
    )
    return _out(where, ces.ListEvaluationResultsResponse.pb(), found)


def delete_evaluation_result(ctx: ServiceContext, request: Any) -> Message:
    _where, short = _named(request.name, "results")
    runs.delete_result(ctx, short)
    return empty_pb2.Empty()


def run_evaluation(ctx: ServiceContext, request: Any) -> Message:
    where, app = app_of(request.app, "app")
    _unsupported(
        request,
        "persona_run_configs",
        "optimization_config",
        "scheduled_evaluation_run",
        "evaluation_run_caching_settings",
    )
    body = to_json(request)
    body.pop("generateLatencyReport", None)  # assay always records latencies
    body["app"] = app
    body["evaluations"] = [
        where.short(n, f"evaluations[{i}]") for i, n in enumerate(body.get("evaluations", []))
    ]
    if body.get("evaluationDataset"):
        body["evaluationDataset"] = where.short_ref(body["evaluationDataset"], "evaluation_dataset")
    started = runs.start_run(ctx, app, body)
    run_id = started["metadata"]["evaluationRun"].rsplit("/", 1)[-1]
    operation: Message = ces_operations.operation_of_run(ctx, where, run_id)
    return operation


def test_persona_voice(ctx: ServiceContext, request: Any) -> Message:
    app_of(request.app, "app")
    raise Unimplemented(
        "TestPersonaVoice synthesises speech, and assay has no text-to-speech engine: it "
        "evaluates text conversations only (personas' speechConfig is stored, not spoken)"
    )


def upload_evaluation_audio(ctx: ServiceContext, request: Any) -> Message:
    _named(request.name, "evaluations")
    raise Unimplemented(
        "UploadEvaluationAudio needs speech recognition of the audio, which assay does not "
        "have: give the evaluation's user turns as text (userInput.text) instead"
    )


METHODS: dict[str, Handler] = {
    "CreateEvaluation": _create(EVALUATIONS, EVALUATION, "evaluation"),
    "GetEvaluation": _get(EVALUATIONS, EVALUATION),
    "ListEvaluations": _list(EVALUATIONS, ces.ListEvaluationsResponse.pb()),
    "UpdateEvaluation": _update(EVALUATIONS, EVALUATION, "evaluation"),
    "DeleteEvaluation": _delete(EVALUATIONS),
    "CreateEvaluationDataset": _create(DATASETS, DATASET, "evaluation_dataset"),
    "GetEvaluationDataset": _get(DATASETS, DATASET),
    "ListEvaluationDatasets": _list(DATASETS, ces.ListEvaluationDatasetsResponse.pb()),
    "UpdateEvaluationDataset": _update(DATASETS, DATASET, "evaluation_dataset"),
    "DeleteEvaluationDataset": _delete(DATASETS),
    "CreateEvaluationExpectation": _create(EXPECTATIONS, EXPECTATION, "evaluation_expectation"),
    "GetEvaluationExpectation": _get(EXPECTATIONS, EXPECTATION),
    "ListEvaluationExpectations": _list(EXPECTATIONS, ces.ListEvaluationExpectationsResponse.pb()),
    "UpdateEvaluationExpectation": _update(EXPECTATIONS, EXPECTATION, "evaluation_expectation"),
    "DeleteEvaluationExpectation": _delete(EXPECTATIONS),
    "CreateScheduledEvaluationRun": _create(SCHEDULES, SCHEDULE, "scheduled_evaluation_run"),
    "GetScheduledEvaluationRun": _get(SCHEDULES, SCHEDULE),
    "ListScheduledEvaluationRuns": _list(SCHEDULES, ces.ListScheduledEvaluationRunsResponse.pb()),
    "UpdateScheduledEvaluationRun": _update(SCHEDULES, SCHEDULE, "scheduled_evaluation_run"),
    "DeleteScheduledEvaluationRun": _delete(SCHEDULES),
    "RunEvaluation": run_evaluation,
    "GetEvaluationRun": get_evaluation_run,
    "ListEvaluationRuns": list_evaluation_runs,
    "DeleteEvaluationRun": delete_evaluation_run,
    "GetEvaluationResult": get_evaluation_result,
    "ListEvaluationResults": list_evaluation_results,
    "DeleteEvaluationResult": delete_evaluation_result,
    "TestPersonaVoice": test_persona_voice,
    "UploadEvaluationAudio": upload_evaluation_audio,
    **ces_generate.METHODS,
    **ces_transfer.METHODS,
    **ces_operations.METHODS,
    **ces_locations.METHODS,
}


def call(handler: Handler, ctx: ServiceContext, request: Any) -> Message:
    """Run `handler` on `request` within the project and location the request names."""
    namespace = namespace_of(request)
    if namespace is None:
        return handler(ctx, request)
    with namespace_scope(namespace):
        return handler(ctx, request)


# Served, but always answering UNIMPLEMENTED with the reason: audio cannot be processed.
AUDIO_METHODS = frozenset({"TestPersonaVoice", "UploadEvaluationAudio"})
