"""The MCP tools of the evaluation service: names, input schemas, hints and handlers.

Tool names and arguments follow CES's MCP server: collections are addressed by
`parent` (`apps/{app}`), resources by `name`, updates take the resource object (with
its `name` and, for a guarded write, its `etag`) and a required `updateMask`. Every
handler calls the same operations as the REST routes and returns the JSON CES would.
Hints: get/list are read-only and idempotent, delete is destructive and idempotent,
create/update/run are neither (CES marks update_evaluation so); none is open-world.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.service import operations, run_estimate, runs
from assay.service.errors import InvalidArgument
from assay.service.names import check_app

if TYPE_CHECKING:
    from assay.service.context import ServiceContext

Handler = Callable[["ServiceContext", Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


PARENT = _string("The app: apps/{app}")
PAGE = {
    "pageSize": {"type": "integer", "minimum": 0, "description": "Page size (default 50)."},
    "pageToken": _string("nextPageToken of the previous page."),
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _app_of(args: Mapping[str, object], field: str = "parent") -> str:
    value = args.get(field)
    if not isinstance(value, str) or not value.startswith("apps/"):
        raise InvalidArgument.field(field, "expected the app as apps/{app}")
    return check_app(value.removeprefix("apps/"))


def _str_arg(args: Mapping[str, object], field: str) -> str:
    value = args.get(field)
    if not isinstance(value, str) or not value:
        raise InvalidArgument.field(field, "required string")
    return value


def _object_arg(args: Mapping[str, object], field: str) -> dict[str, Any]:
    value = args.get(field)
    if not isinstance(value, dict):
        raise InvalidArgument.field(field, "required object")
    return value


def _page(args: Mapping[str, Any]) -> dict[str, Any]:
    return {"page_size": int(args.get("pageSize") or 50), "page_token": args.get("pageToken")}


def _read_tool(
    name: str, description: str, input_schema: dict[str, Any], handler: Handler
) -> ToolSpec:
    """A get/list tool: read-only and idempotent."""
    return ToolSpec(name, description, input_schema, handler, read_only=True, idempotent=True)


def _crud_tools(kind: str, singular: str, snake: str, title: str) -> list[ToolSpec]:
    """create/get/list/update/delete tools of one resource collection."""
    id_field = f"{singular}Id"
    body_schema = {"type": "object", "description": f"The {title} as CES JSON (camelCase)."}
    article = "an" if title[0] in "aeiou" else "a"
    is_evaluation = kind == "evaluations"

    def create(ctx: ServiceContext, args: Mapping[str, Any]) -> dict[str, Any]:
        resource_id = args.get(id_field)
        return operations.create_resource(
            ctx, _app_of(args), kind, _object_arg(args, singular), resource_id
        )

    def get(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
        full = bool(args.get("includeLastTenResults"))
        return operations.get_resource(ctx, _str_arg(args, "name"), full=full)

    def list_(ctx: ServiceContext, args: Mapping[str, Any]) -> dict[str, Any]:
        return operations.list_resources(
            ctx,
            _app_of(args),
            kind,
            filter=args.get("filter"),
            full=bool(args.get("includeLastTenResults")),
            **_page(args),
        )

    def update(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
        body = _object_arg(args, singular)
        mask = args.get("updateMask")
        if not isinstance(mask, str) or not mask.strip():
            raise InvalidArgument.field(
                "updateMask", "required: the comma-separated fields to change"
            )
        name = body.get("name")
        if not isinstance(name, str):
            raise InvalidArgument.field(f"{singular}.name", "required: the resource to update")
        return operations.update_resource(ctx, name, body, mask)

    def delete(ctx: ServiceContext, args: Mapping[str, Any]) -> dict[str, Any]:
        operations.delete_resource(
            ctx, _str_arg(args, "name"), force=bool(args.get("force")), etag=args.get("etag")
        )
        return {}

    name_arg = {"name": _string(f"The {title}: apps/{{app}}/{kind}/{{id}}")}
    last_ten = (
        {"includeLastTenResults": {"type": "boolean", "description": "Add lastTenResults."}}
        if is_evaluation
        else {}
    )
    list_props: dict[str, Any] = {"parent": PARENT, **PAGE, **last_ten}
    list_props["filter"] = _string(
        'Terms joined by AND: tags:"x", dataset:"ID", displayName:"x"'
        if is_evaluation
        else 'displayName:"x"'
    )
    delete_props: dict[str, Any] = {
        **name_arg,
        "etag": _string("Delete only if this is the current etag."),
    }
    if is_evaluation:
        delete_props["force"] = {
            "type": "boolean",
            "description": "Also remove it from the datasets that list it.",
        }
    return [
        ToolSpec(
            f"create_{snake}",
            f"Create {article} {title} in an app.",
            _schema(
                {"parent": PARENT, singular: body_schema, id_field: _string("Id to give it.")},
                ["parent", singular],
            ),
            create,
        ),
        _read_tool(
            f"get_{snake}",
            f"Get {article} {title} by name.",
            _schema({**name_arg, **last_ten}, ["name"]),
            get,
        ),
        _read_tool(
            f"list_{snake}s",
            f"List the {title}s of an app.",
            _schema(list_props, ["parent"]),
            list_,
        ),
        ToolSpec(
            f"update_{snake}",
            f"Update {article} {title}. Always pass an update mask; a stale etag is rejected.",
            _schema(
                {
                    singular: {
                        **body_schema,
                        "description": f"The {title} with its name (and etag).",
                    },
                    "updateMask": _string("Comma-separated field paths to change (required)."),
                },
                [singular, "updateMask"],
            ),
            update,
        ),
        ToolSpec(
            f"delete_{snake}",
            f"Delete {article} {title}.",
            _schema(delete_props, ["name"]),
            delete,
            destructive=True,
            idempotent=True,
        ),
    ]


def _run_evaluation(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
    request = {k: v for k, v in args.items() if k != "app"}
    return runs.start_run(ctx, _app_of(args, "app"), request)


def _estimate_run(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
    request = {k: v for k, v in args.items() if k != "app"}
    return run_estimate.estimate(ctx, _app_of(args, "app"), request)


def _get_run(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
    return runs.get_run(ctx, _str_arg(args, "name"))


def _list_runs(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
    return runs.list_runs(ctx, _app_of(args), **_page(args))


def _get_result(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
    return runs.get_result(ctx, _str_arg(args, "name"))


def _list_results(ctx: ServiceContext, args: Mapping[str, Any]) -> dict[str, Any]:
    return runs.list_results(
        ctx, _str_arg(args, "parent"), filter=args.get("filter"), **_page(args)
    )


RUN_SCHEMA = _schema(
    {
        "app": PARENT,
        "evaluations": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Evaluation ids or names to run.",
        },
        "evaluationDataset": _string("A dataset (id or name) whose evaluations to run."),
        "displayName": _string("Display name of the run."),
        "appVersion": _string("The app version evaluated (groups aggregated metrics)."),
        "runCount": {"type": "integer", "minimum": 1, "description": "Runs per evaluation."},
        "config": {
            "type": "object",
            "properties": {"toolCallBehaviour": {"enum": ["REAL", "FAKE", "MIXED"]}},
            "description": "EvaluationConfig: toolCallBehaviour REAL (default) or FAKE.",
        },
        "goldenRunMethod": {"enum": ["STABLE", "NAIVE"], "description": "Golden replay."},
        "judgeModel": _string(
            "LLM judge for semantic similarity / hallucination: the server's --judge-model"
            " or an --allow-model."
        ),
        "userModel": _string("Model of the simulated user for scenarios."),
        "assayJudgeBudget": {
            "type": "object",
            "properties": {
                "maxUsd": {"type": "number"},
                "maxCalls": {"type": "integer", "minimum": 1},
            },
            "additionalProperties": False,
            "description": "A lower cap on the run's judges than the server's: US dollars"
            " (maxUsd) and calls (maxCalls); judged checks past it are NOT_EVALUATED.",
        },
    },
    ["app"],
)


def _build() -> list[ToolSpec]:
    tools = _crud_tools("evaluations", "evaluation", "evaluation", "evaluation")
    tools += [
        ToolSpec(
            "run_evaluation",
            "Run evaluations (or a dataset) in the background; returns an operation whose "
            "metadata.evaluationRun names the run to poll.",
            RUN_SCHEMA,
            _run_evaluation,
        ),
        _read_tool(
            "estimate_evaluation_run",
            "What run_evaluation with these arguments would cost, running nothing: judge "
            "calls, cache hits, tokens and US dollars per metric and judge model, agent "
            "calls, and whether that passes the run's judge budget.",
            RUN_SCHEMA,
            _estimate_run,
        ),
        _read_tool(
            "get_evaluation_run",
            "Get an evaluation run: state and progress.",
            _schema({"name": _string("apps/{app}/evaluationRuns/{id}")}, ["name"]),
            _get_run,
        ),
        _read_tool(
            "list_evaluation_runs",
            "List an app's evaluation runs, newest first.",
            _schema({"parent": PARENT, **PAGE}, ["parent"]),
            _list_runs,
        ),
        _read_tool(
            "get_evaluation_result",
            "Get an evaluation result.",
            _schema({"name": _string("apps/{app}/evaluations/{id}/results/{result}")}, ["name"]),
            _get_result,
        ),
        _read_tool(
            "list_evaluation_results",
            "List an evaluation's results, newest first.",
            _schema(
                {
                    "parent": _string("The evaluation: apps/{app}/evaluations/{id}"),
                    **PAGE,
                    "filter": _string('evaluationRun="apps/{app}/evaluationRuns/{id}"'),
                },
                ["parent"],
            ),
            _list_results,
        ),
    ]
    tools += _crud_tools(
        "evaluationDatasets", "evaluationDataset", "evaluation_dataset", "evaluation dataset"
    )
    tools += _crud_tools("personas", "persona", "persona", "persona")
    tools += _label_tools()
    return tools


LABEL_TARGET = {
    "run": _string("A run id (or a unique prefix of one)."),
    "case": _string("The case: its id, SET/ID, or ID#N for its Nth run."),
    "metric": _string("The metric labelled."),
}


def _label_tools() -> list[ToolSpec]:
    """People's labels on judged results (`service/labels_api.py`); the author is the
    caller's API key's name."""
    from assay.service import labels_api

    def list_(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
        case, metric = args.get("case"), args.get("metric")
        return labels_api.list_labels(
            ctx, _str_arg(args, "run"), case if isinstance(case, str) else None,
            metric if isinstance(metric, str) else None,
        )  # fmt: skip

    def set_(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
        body = {k: args[k] for k in ("metric", "label", "note") if k in args}
        return labels_api.set_label(ctx, _str_arg(args, "run"), _str_arg(args, "case"), body,
                                    labels_api.mcp_caller())  # fmt: skip

    def delete(ctx: ServiceContext, args: Mapping[str, object]) -> dict[str, Any]:
        run, case, metric = (_str_arg(args, k) for k in ("run", "case", "metric"))
        return labels_api.delete_label(ctx, run, case, metric, labels_api.mcp_caller())

    label = {"type": ["string", "number", "boolean"],
             "description": "pass, fail, or a score on the metric's scale"}  # fmt: skip
    return [
        _read_tool(
            "list_labels",
            "List people's labels of a run (or of one case, one metric).",
            _schema(LABEL_TARGET, ["run"]),
            list_,
        ),
        ToolSpec(
            "set_label",
            "Label one metric of one case of a run (replaces the caller's own label on it).",
            _schema(
                {**LABEL_TARGET, "label": label, "note": _string("Why.")},
                ["run", "case", "metric", "label"],
            ),
            set_,
            idempotent=True,
        ),
        ToolSpec(
            "delete_label",
            "Remove the caller's own label on one metric of one case.",
            _schema(LABEL_TARGET, ["run", "case", "metric"]),
            delete,
            destructive=True,
        ),
    ]


TOOLS: dict[str, ToolSpec] = {tool.name: tool for tool in _build()}
