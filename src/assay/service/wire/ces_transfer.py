"""ImportEvaluations and the Export* methods of CES, over local files and inline content.

Exports render each resource exactly as Get* answers it (proto3 JSON, full names) into
one document — `{"evaluations": [...], "evaluationResults": [...]}`,
`{"evaluationRuns": [...]}` or `{"evaluationResults": [...]}` — in the format the
request names (JSON unless YAML), answered inline (`*_content`) or written into the
folder `export_options.gcs_uri` names (`ces_files`: local paths only). ImportEvaluations
reads such a document (or one Evaluation, or a list of them) from `gcs_uri`, makes
golden evaluations of the conversations of `conversation_list`, or reads
`csv_content` (`ces_csv`), and creates the evaluations in the app: an export of one app
imported into another gives equal evaluations. An evaluation whose id is taken is
handled as `import_options.conflict_resolution_strategy` says (OVERWRITE, SKIP,
DUPLICATE); unset, it is reported as failed, as is any evaluation the service refuses.
Every method answers a finished long-running operation (`ces_lro`).
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from google.cloud import ces_v1beta as ces
from google.cloud.ces_v1beta.types import agent_service
from google.protobuf.message import Message

from assay.service import operations, runs
from assay.service.context import ServiceContext
from assay.service.errors import InvalidArgument, ServiceError, from_exception
from assay.service.names import RESULTS, RUNS, new_id, parse_name
from assay.service.wire import ces_csv, ces_files, ces_generate, ces_lro
from assay.service.wire._proto import enum_name, from_json, parse, to_json
from assay.service.wire.ces_names import Location, app_of, parse_location

_Strategy = ces.ImportEvaluationsRequest.ImportOptions.ConflictResolutionStrategy
_WRITABLE = ("displayName", "description", "tags", "golden", "scenario")
_PAGE = 500


def _format(request: Any) -> str:
    value = request.export_options.export_format
    return enum_name(ces.ExportOptions.ExportFormat, value, "export_options.export_format")


def _rendered(where: Location, cls: type[Message], body: dict[str, Any]) -> dict[str, Any]:
    """assay's JSON of a resource as the client's message renders it (full names)."""
    return to_json(from_json(cls, where.expand(body)))


def _short(where: Location, name: str, field: str, kind: str, parent: str) -> str:
    short = where.short(name, field)
    parsed = parse_name(short)
    owner = (
        f"apps/{parsed.app}"
        if parsed.kind != RESULTS
        else f"apps/{parsed.app}/evaluations/{parsed.parent}"
    )
    if parsed.kind != kind or owner != parent:
        raise InvalidArgument.field(
            field, f"{name!r} is not a {kind} resource of {where.full(parent)}"
        )
    return short


def _names(request: Any) -> list[str]:
    if not request.names:
        raise InvalidArgument.field("names", "required: the resource names to export")
    return list(request.names)


def _results_of(ctx: ServiceContext, where: Location, evaluation: str) -> Iterator[dict[str, Any]]:
    token: str | None = None
    while True:
        page = runs.list_results(ctx, evaluation, page_size=_PAGE, page_token=token)
        for result in page["evaluationResults"]:
            yield _rendered(where, ces.EvaluationResult.pb(), result)
        token = page.get("nextPageToken")
        if not token:
            return


def _deliver(
    ctx: ServiceContext, request: Any, stem: str, document: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """(response fields, content key) after writing `document` where the request says."""
    content = ces_files.render(document, _format(request))
    uri = request.export_options.gcs_uri
    if not uri:
        return {"content": content}, "content"
    return {
        "uri": ces_files.write(
            uri,
            "export_options.gcs_uri",
            stem,
            content,
            _format(request),
            ctx.files_root,
            ctx.limits,
        )
    }, "uri"


def export_evaluations(ctx: ServiceContext, request: Any) -> Message:
    where, app = app_of(request.parent)
    if not (request.include_evaluations or request.include_evaluation_results):
        raise InvalidArgument.field(
            "include_evaluations", "set include_evaluations or include_evaluation_results (or both)"
        )
    started = ces_lro.now()
    evaluations: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    for i, name in enumerate(_names(request)):
        short = _short(where, name, f"names[{i}]", "evaluations", f"apps/{app}")
        try:
            body = operations.get_resource(ctx, short)
        except ServiceError as exc:
            failed[name] = exc.message
            continue
        if request.include_evaluations:
            evaluations.append(_rendered(where, ces.Evaluation.pb(), body))
        if request.include_evaluation_results:
            results.extend(_results_of(ctx, where, short))
    document: dict[str, Any] = {}
    if request.include_evaluations:
        document["evaluations"] = evaluations
    if request.include_evaluation_results:
        document["evaluationResults"] = results
    delivered, key = _deliver(ctx, request, "evaluations", document)
    response = ces.ExportEvaluationsResponse.pb()(failed_evaluations=failed)
    if key == "content":
        response.evaluations_content = delivered["content"]
    else:
        response.evaluations_uri = delivered["uri"]
    metadata = agent_service.OperationMetadata.pb()(create_time=started, end_time=ces_lro.now())
    return ces_lro.finished(ctx, where, "export", metadata, response)


def export_evaluation_runs(ctx: ServiceContext, request: Any) -> Message:
    where, app = app_of(request.parent)
    found = [
        _rendered(
            where,
            ces.EvaluationRun.pb(),
            runs.get_run(ctx, _short(where, n, f"names[{i}]", RUNS, f"apps/{app}")),
        )
        for i, n in enumerate(_names(request))
    ]
    delivered, key = _deliver(ctx, request, "evaluationRuns", {"evaluationRuns": found})
    response = ces.ExportEvaluationRunsResponse.pb()()
    if key == "content":
        response.evaluation_runs_content = delivered["content"]
    else:
        response.evaluation_runs_uri = delivered["uri"]
    metadata = ces.ExportEvaluationRunsOperationMetadata.pb()()
    return ces_lro.finished(ctx, where, "export", metadata, response)


def export_evaluation_results(ctx: ServiceContext, request: Any) -> Message:
    where, evaluation = parse_location(request.parent, "parent")
    parsed = parse_name(evaluation)
    if parsed.kind != "evaluations":
        raise InvalidArgument.field("parent", f"{request.parent!r} is not an evaluation name")
    found = [
        _rendered(
            where,
            ces.EvaluationResult.pb(),
            runs.get_result(ctx, _short(where, n, f"names[{i}]", RESULTS, evaluation)),
        )
        for i, n in enumerate(_names(request))
    ]
    delivered, key = _deliver(ctx, request, "evaluationResults", {"evaluationResults": found})
    response = ces.ExportEvaluationResultsResponse.pb()()
    if key == "content":
        response.evaluation_results_content = delivered["content"]
    else:
        response.evaluation_results_uri = delivered["uri"]
    metadata = ces.ExportEvaluationResultsOperationMetadata.pb()()
    return ces_lro.finished(ctx, where, "export", metadata, response)


# -- import -------------------------------------------------------------------------------


def _evaluations_in(document: object, field: str) -> list[Any]:
    if isinstance(document, dict) and "evaluations" in document:
        items = document["evaluations"]
    elif isinstance(document, dict) and ("golden" in document or "scenario" in document):
        items = [document]
    else:
        items = document
    if not isinstance(items, list):
        raise InvalidArgument.field(
            field,
            "expected {evaluations: [...]} (as ExportEvaluations writes), one Evaluation, "
            "or a list of them",
        )
    return items


def _body(where: Location, app: str, item: object, path: str) -> tuple[str | None, dict[str, Any]]:
    """(id from its name, writable body) of an Evaluation in proto3 JSON."""
    clean = to_json(parse(ces.Evaluation.pb(), item, path))
    for part in ("golden", "scenario"):
        refs = clean.get(part, {}).get("evaluationExpectations")
        if refs:  # expectation resources of the app it is imported into, by id
            clean[part]["evaluationExpectations"] = [
                f"apps/{app}/evaluationExpectations/{r.rsplit('/', 1)[-1]}" for r in refs
            ]
    name = clean.get("name", "")
    rid = name.rsplit("/", 1)[-1] if "/evaluations/" in name else None
    return rid, {k: clean[k] for k in _WRITABLE if k in clean}


def _import_one(
    ctx: ServiceContext, app: str, rid: str | None, body: dict[str, Any], strategy: int
) -> dict[str, Any] | None:
    """Create (or overwrite) one evaluation; None when skipped."""
    exists = rid is not None and ctx.store.resources.get(app, "evaluations", rid) is not None
    if exists and strategy == _Strategy.SKIP:
        return None
    if exists and strategy == _Strategy.OVERWRITE:
        mask = ",".join(_WRITABLE)
        return operations.update_resource(ctx, f"apps/{app}/evaluations/{rid}", body, mask)
    if exists and strategy != _Strategy.DUPLICATE:
        raise InvalidArgument(
            f"evaluation apps/{app}/evaluations/{rid} already exists; set "
            "import_options.conflict_resolution_strategy to OVERWRITE, SKIP or DUPLICATE"
        )
    if strategy == _Strategy.DUPLICATE and (exists or _display_taken(ctx, app, body)):
        rid = new_id()
        body = {**body, "displayName": f"{body.get('displayName', '')} ({rid})"}
    return operations.create_resource(ctx, app, "evaluations", body, rid)


def _display_taken(ctx: ServiceContext, app: str, body: dict[str, Any]) -> bool:
    name = body.get("displayName")
    return any(
        r.display_name == name for r in ctx.store.resources.list_resources(app, "evaluations")
    )


def _sources(
    ctx: ServiceContext, where: Location, app: str, request: Any
) -> tuple[list[tuple[str, Callable[[], tuple[str | None, dict[str, Any]]]]], str]:
    """(label, thunk making (id, body)) per evaluation to import, and a status note."""
    source = request.WhichOneof("source")
    if source == "gcs_uri":
        path, document = ces_files.read(
            request.gcs_uri, "gcs_uri", "evaluations", ctx.files_root, ctx.limits
        )
        items = _evaluations_in(document, "gcs_uri")
        results = document.get("evaluationResults") if isinstance(document, dict) else None
        skipped = len(results) if isinstance(results, list) else 0
        note = (
            f"{skipped} evaluation results in {path} were not imported: assay keeps the "
            "results of its own runs only"
            if skipped
            else ""
        )
        return [
            (
                f"evaluations[{i}]",
                functools.partial(_body, where, app, item, f"evaluations[{i}]"),
            )
            for i, item in enumerate(items)
        ], note
    if source == "conversation_list":
        return [
            (name, functools.partial(_from_conversation, ctx, where, name))
            for name in request.conversation_list.conversations
        ], ""
    if source == "csv_content":
        parsed = ces_csv.evaluations(request.csv_content, "csv_content", ctx.limits)
        return [(label, functools.partial(_given, body)) for label, body in parsed], ""
    raise InvalidArgument.field(
        "source", "set one of gcs_uri (a local file:// path), conversation_list or csv_content"
    )


def _given(body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    return None, body


def _from_conversation(
    ctx: ServiceContext, where: Location, name: str
) -> tuple[str | None, dict[str, Any]]:
    there, _app, row = ces_generate.conversation(ctx, name)
    if there != where:
        raise InvalidArgument.field("conversation_list", f"{name!r} is not in {where.prefix}")
    cid = name.rsplit("/", 1)[-1]
    turns = ces_generate.recorded_turns(row)
    return None, ces_generate.golden_body(cid, turns, f"Generated from conversation {cid}")


_Source = tuple[str, Callable[[], tuple[str | None, dict[str, Any]]]]


def _write_batch(
    ctx: ServiceContext,
    where: Location,
    app: str,
    batch: Sequence[_Source],
    strategy: int,
    response: Any,
) -> None:
    """Import one batch: evaluations new to the app in one store transaction, those
    whose id is taken one at a time (as the conflict strategy says)."""
    outcomes: list[dict[str, Any] | ServiceError | None] = []
    fresh: list[tuple[int, dict[str, Any]]] = []
    for _label, make in batch:
        try:
            rid, body = make()
            if rid is None:
                fresh.append((len(outcomes), body))
                outcomes.append(None)
            else:
                outcomes.append(_import_one(ctx, app, rid, body, strategy))
        except Exception as exc:  # one bad evaluation does not stop the others
            outcomes.append(from_exception(exc))
    written = operations.create_evaluations(
        ctx,
        app,
        [body for _, body in fresh],
        one=lambda body: _import_one(ctx, app, None, body, strategy) or {},
    )
    for (index, _body), created in zip(fresh, written, strict=True):
        outcomes[index] = created
    for (label, _make), outcome in zip(batch, outcomes, strict=True):
        if isinstance(outcome, ServiceError):
            response.error_messages.append(f"{label}: {outcome.message}")
            response.import_failure_count += 1
        elif outcome:
            response.evaluations.append(_evaluation_message(where, outcome))


def _import_all(
    ctx: ServiceContext,
    where: Location,
    app: str,
    sources: Sequence[_Source],
    strategy: int,
    progress: Callable[[int], None] | None = None,
) -> Any:
    response = ces.ImportEvaluationsResponse.pb()()
    size = ctx.limits.import_batch
    for start in range(0, len(sources), size):
        _write_batch(ctx, where, app, sources[start : start + size], strategy, response)
        if progress is not None:
            progress(min(start + size, len(sources)))
    return response


def _metadata(started: object, note: str, ended: bool = False) -> Any:
    return ces.ImportEvaluationsOperationMetadata.pb()(
        create_time=started, end_time=ces_lro.now() if ended else None, status_message=note
    )


_TIMES = (("createTime", "create_time"), ("updateTime", "update_time"))


def _evaluation_message(where: Location, body: dict[str, Any]) -> Any:
    """The evaluation as the client's message; its times set directly (protobuf's JSON
    parser reads them with strptime, the slowest part of a large import's answer)."""
    rest = {k: v for k, v in body.items() if k not in ("createTime", "updateTime")}
    message = from_json(ces.Evaluation.pb(), where.expand(rest))
    for key, field in _TIMES:
        if isinstance(body.get(key), str):
            getattr(message, field).FromDatetime(datetime.fromisoformat(body[key]))
    return message


def _in_background(
    ctx: ServiceContext,
    where: Location,
    app: str,
    sources: Sequence[_Source],
    strategy: int,
    note: str,
) -> Message:
    """Answer a pending operation at once; a thread writes the batches and finishes it.

    The thread runs in a copy of the request's context (its project and location).
    """
    started = ces_lro.now()
    total = len(sources)
    op = ces_lro.pending(ctx, where, "import", _metadata(started, f"0 of {total} imported"))
    name = op.name  # type: ignore[attr-defined]

    def progress(done: int) -> None:
        status = f"{done} of {total} evaluations written"
        ces_lro.update(ctx, where, name, _metadata(started, status))

    def work() -> None:
        try:
            response = _import_all(ctx, where, app, sources, strategy, progress)
        except Exception as exc:  # the operation says why; the server goes on
            ces_lro.update(
                ctx, where, name, _metadata(started, note, True), done=True,
                error=from_exception(exc),
            )  # fmt: skip
            return
        ces_lro.update(
            ctx, where, name, _metadata(started, note, True), done=True, response=response
        )

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(work,), name="assay-import")
    background = ctx.parts.setdefault("background", [])
    assert isinstance(background, list)
    background[:] = [t for t in background if t.is_alive()]
    background.append(thread)  # the app waits for it when it shuts down
    thread.start()
    return op


def import_evaluations(ctx: ServiceContext, request: Any) -> Message:
    where, app = app_of(request.parent)
    started = ces_lro.now()
    strategy = int(request.import_options.conflict_resolution_strategy)
    field = "import_options.conflict_resolution_strategy"
    enum_name(_Strategy, strategy, field)  # a number the enum lacks is INVALID_ARGUMENT
    sources, note = _sources(ctx, where, app, request)
    if len(sources) > ctx.limits.import_batch:
        # More than one batch: a long-running operation, as CES's own.
        return _in_background(ctx, where, app, sources, strategy, note)
    response = _import_all(ctx, where, app, sources, strategy)
    metadata = ces.ImportEvaluationsOperationMetadata.pb()(
        create_time=started, end_time=ces_lro.now(), status_message=note
    )
    return ces_lro.finished(ctx, where, "import", metadata, response)


METHODS = {
    "ExportEvaluations": export_evaluations,
    "ExportEvaluationRuns": export_evaluation_runs,
    "ExportEvaluationResults": export_evaluation_results,
    "ImportEvaluations": import_evaluations,
}
