"""Vertex AI `evaluateInstances`, as the Vertex SDK's evaluation calls it, over assay's metrics.

`vertexai.preview.evaluation.EvalTask(...).evaluate()` (and `vertexai.Client().evals`)
compute every computation-based metric by one `POST
/v1beta1/projects/{p}/locations/{l}:evaluateInstances` per row and metric, with a body
`{"<name>Input": {"metricSpec": {...}, "instances": [...]}}` and an answer
`{"<name>Results": {"<name>MetricValues": [{"score": ...}]}}`. Each instance is turned
into the Vertex row `assay eval` reads (same loader), scored by the registered metric of
the same name (same code), so the SDK gets assay's numbers. The SDK turns a failed call
into a silent NaN, so a valid instance always gets a score and an invalid one a 400
naming its field. The judged metrics (`pointwiseMetricInput`, `pairwiseMetricInput`)
go to the server's judge instead: `vertex_judged`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from assay.engine.scoring import aligned_expected, safe_score
from assay.errors import AssayError
from assay.formats import vertex
from assay.metrics import work
from assay.metrics.registry import build_metric, metric_names
from assay.metrics.tool_calls import ToolCallFormatError, parse_tool_message
from assay.service._storable import check_storable
from assay.service.context import ServiceContext
from assay.service.documents import check_depth, load_json, too_deep
from assay.service.errors import InvalidArgument, ServiceError, from_exception
from assay.service.settings import (
    DEFAULT_LIMITS,
    WORK_LIMITS,
    ServiceLimits,
    WorkLimits,
    count_tokens,
)
from assay.service.wire import vertex_judged

_TEXT = ("prediction", "reference")
_TRAJECTORY = ("predictedTrajectory", "referenceTrajectory")
_ROUGE_NAMES = {
    "rouge1": "rouge_1",
    "rouge2": "rouge_2",
    "rougeL": "rouge_l",
    "rougeLsum": "rouge_l_sum",
}


class Unimplemented(ServiceError):
    http_status, code = 501, "UNIMPLEMENTED"


@dataclass(frozen=True)
class Family:
    """One `<stem>Input` of EvaluateInstancesRequest: its metric, spec and instance fields."""

    stem: str
    metric: Callable[[Mapping[str, Any]], tuple[str, dict[str, Any]]]
    spec_fields: tuple[str, ...]
    instance_fields: tuple[str, ...]


def _fixed(name: str, **renames: str) -> Callable[[Mapping[str, Any]], tuple[str, dict[str, Any]]]:
    def choose(spec: Mapping[str, object]) -> tuple[str, dict[str, Any]]:
        return name, {option: spec[field] for field, option in renames.items() if field in spec}

    return choose


def _rouge(spec: Mapping[str, object]) -> tuple[str, dict[str, Any]]:
    kind = spec.get("rougeType") or "rougeL"
    if not isinstance(kind, str) or kind not in _ROUGE_NAMES:
        raise InvalidArgument.field(
            "rouge_input.metric_spec.rouge_type",
            f"{kind!r} is not a ROUGE type; expected one of {', '.join(_ROUGE_NAMES)}",
        )
    stemmer, split = bool(spec.get("useStemmer")), bool(spec.get("splitSummaries"))
    name = _ROUGE_NAMES[kind]
    if name not in metric_names() and kind == "rouge1" and stemmer:
        # Until the rouge_* family is registered: SPEC §4.3's response_match_score is
        # exactly ROUGE-1 F with the Porter stemmer (the rouge-score numbers).
        return "response_match_score", {}
    return name, {"use_stemmer": stemmer, "split_summaries": split}


FAMILIES: dict[str, Family] = {
    f.stem: f
    for f in (
        Family("exactMatch", _fixed("exact_match"), (), _TEXT),
        Family("bleu", _fixed("bleu", useEffectiveOrder="use_effective_order"),
               ("useEffectiveOrder",), _TEXT),
        Family("rouge", _rouge, ("rougeType", "useStemmer", "splitSummaries"), _TEXT),
        Family("toolCallValid", _fixed("tool_call_valid"), (), _TEXT),
        Family("toolNameMatch", _fixed("tool_name_match"), (), _TEXT),
        Family("toolParameterKeyMatch", _fixed("tool_parameter_key_match"), (), _TEXT),
        Family("toolParameterKvMatch",
               _fixed("tool_parameter_kv_match", useStrictStringMatch="use_strict_string_match"),
               ("useStrictStringMatch",), _TEXT),
        Family("trajectoryExactMatch", _fixed("trajectory_exact_match"), (), _TRAJECTORY),
        Family("trajectoryInOrderMatch", _fixed("trajectory_in_order_match"), (), _TRAJECTORY),
        Family("trajectoryAnyOrderMatch", _fixed("trajectory_any_order_match"), (), _TRAJECTORY),
        Family("trajectoryPrecision", _fixed("trajectory_precision"), (), _TRAJECTORY),
        Family("trajectoryRecall", _fixed("trajectory_recall"), (), _TRAJECTORY),
        Family("trajectorySingleToolUse",
               _fixed("trajectory_single_tool_use", toolName="tool_name"),
               ("toolName",), ("predictedTrajectory",)),
    )
}  # fmt: skip


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def _object(value: object, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """`value` as an object with camelCase keys (proto3 JSON takes either spelling)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgument.field(path, f"expected an object, got {json.dumps(value)}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        camel = _camel(str(key))
        if camel not in allowed:
            message = (
                f"Invalid JSON payload received. Unknown name \"{key}\" at '{path}': "
                "Cannot find field."
            )
            raise InvalidArgument(message, [{"field": path, "description": message}])
        if item is not None:
            out[camel] = item
    return out


def _string(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgument.field(path, f"expected a string, got {json.dumps(value)}")
    return value


def _trajectory(
    value: object, path: str, limits: ServiceLimits = DEFAULT_LIMITS
) -> list[dict[str, Any]]:
    calls = _object(value, path, ("toolCalls",)).get("toolCalls", [])
    if not isinstance(calls, list):
        raise InvalidArgument.field(f"{path}.tool_calls", "expected a list of tool calls")
    steps = []
    for i, raw in enumerate(calls):
        where = f"{path}.tool_calls[{i}]"
        call = _object(raw, where, ("toolName", "toolInput"))
        name = _string(call.get("toolName", ""), f"{where}.tool_name")
        text = _string(call.get("toolInput", ""), f"{where}.tool_input")
        args = load_json(text, f"{where}.tool_input", limits) if text.strip() else {}
        if not isinstance(args, dict):
            raise InvalidArgument.field(f"{where}.tool_input", f"expected a JSON object: {text!r}")
        steps.append({"tool_name": name, "tool_input": args})
    return steps


def _tool_message(
    text: str, path: str, *, strict: bool, limits: ServiceLimits = DEFAULT_LIMITS
) -> tuple[str, list[dict[str, Any]] | None]:
    """Vertex's tool-call string `{"content", "tool_calls": [{"name", "arguments"}]}` as
    (content, trajectory). A prediction that is not one has no valid calls (what
    tool_call_valid scores); a reference that is not one is invalid input. Either
    nested deeper than the limit is invalid input."""
    if not text.strip():
        return "", []
    try:
        message = parse_tool_message(text)
    except ToolCallFormatError as exc:
        if strict:
            raise InvalidArgument.field(path, f"not a Vertex tool-call message: {exc}") from None
        return text, None
    except RecursionError:
        raise too_deep(path, limits.max_depth) from None
    calls = [{"tool_name": c.name, "tool_input": c.args} for c in message.tool_calls]
    check_depth(calls, path, limits)
    return message.content, calls


def _row(
    family: Family,
    instance: Mapping[str, object],
    path: str,
    limits: ServiceLimits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    if family.instance_fields == _TEXT:
        # proto3 JSON leaves empty strings out: an absent field is "".
        prediction = _string(instance.get("prediction", ""), f"{path}.prediction")
        reference = _string(instance.get("reference", ""), f"{path}.reference")
        if family.stem.startswith("tool"):
            row["response"], row["predicted_trajectory"] = _tool_message(
                prediction, f"{path}.prediction", strict=False, limits=limits
            )
            row["reference"], row["reference_trajectory"] = _tool_message(
                reference, f"{path}.reference", strict=True, limits=limits
            )
            return {k: v for k, v in row.items() if v is not None}
        return {"response": prediction, "reference": reference}
    row["predicted_trajectory"] = _trajectory(
        instance.get("predictedTrajectory"), f"{path}.predicted_trajectory", limits
    )
    if "referenceTrajectory" in family.instance_fields:
        # The SDK leaves an empty trajectory out: absent is no calls.
        row["reference_trajectory"] = _trajectory(
            instance.get("referenceTrajectory"), f"{path}.reference_trajectory", limits
        )
    return row


def score_instance(
    family: Family, spec: Mapping[str, object], row: Mapping[str, object], path: str
) -> float:
    """The score assay gives the Vertex row `row` under the family's metric and spec."""
    name, options = family.metric(spec)
    if name not in metric_names():
        raise Unimplemented(f"assay has no metric {name!r} (for {family.stem}Input) yet")
    metric = build_metric(name, options)
    case = vertex.load_data([dict(row)], file=None, mapping=None).cases[0]
    actual = case.actual or []
    result = safe_score(metric, case, actual, aligned_expected(case, actual))
    if result.score is None:
        raise InvalidArgument.field(
            path, f"{name} cannot score this instance: {result.explanation}"
        )
    return float(result.score)


class _Budget:
    """One request's share of the server: tokens per instance and in all, CPU time."""

    def __init__(self, limits: WorkLimits, service: ServiceLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.service = service
        self.tokens = 0

    def instance(self, row: Mapping[str, object], path: str) -> None:
        limits = self.limits
        counted = 0
        for key, text in row.items():
            if not isinstance(text, str):
                continue
            counted += count_tokens(text)
            if counted > limits.max_tokens_per_instance:
                raise InvalidArgument.field(
                    f"{path}.{_SNAKE_FIELDS.get(key, key)}",
                    f"the instance has over {limits.max_tokens_per_instance:,} tokens, the "
                    "limit per instance (tokens: words, numbers and punctuation marks)",
                )
        self.tokens += counted
        if self.tokens > limits.max_tokens_per_request:
            raise InvalidArgument.field(
                path,
                f"the request has over {limits.max_tokens_per_request:,} tokens, the limit "
                "per request: send the instances in several requests",
            )

    def spent(self, path: str) -> None:
        """400 naming the limit once the request's CPU time is over its budget."""
        try:
            work.check()
        except work.WorkBudgetExceeded as exc:
            raise InvalidArgument.field(
                path, f"{exc}: send fewer or shorter instances per request"
            ) from None


_SNAKE_FIELDS = {"response": "prediction", "reference": "reference"}


def evaluate_instances(
    body: object, limits: WorkLimits = WORK_LIMITS, service: ServiceLimits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """The EvaluateInstancesResponse JSON for an EvaluateInstancesRequest JSON, within
    the work `limits` of one request (400 naming the limit beyond them) and the input
    limits of the `service` (depth of the tool calls' JSON)."""
    if not isinstance(body, Mapping):
        raise InvalidArgument("Invalid JSON payload received. Expected an object.")
    given = {_camel(str(k)): v for k, v in body.items() if v is not None and k != "location"}
    inputs = [k for k in given if k.endswith("Input")]
    if len(inputs) != 1 or len(given) != 1:
        raise InvalidArgument.field(
            "metric_inputs",
            "expected exactly one <metric>Input (e.g. trajectoryExactMatchInput, rougeInput); "
            f"got {', '.join(sorted(given)) or 'none'}",
        )
    key = inputs[0]
    family = FAMILIES.get(key.removesuffix("Input"))
    if family is None:
        raise Unimplemented(
            f"assay does not compute {key} (yet); it computes "
            f"{', '.join(sorted(f + 'Input' for f in FAMILIES))}"
        )
    where = _snake(key)
    payload = _object(given[key], where, ("metricSpec", "instances"))
    spec = _object(payload.get("metricSpec"), f"{where}.metric_spec", family.spec_fields)
    instances = payload.get("instances") or []
    if not isinstance(instances, list) or not instances:
        raise InvalidArgument.field(f"{where}.instances", "expected a non-empty list of instances")
    if len(instances) > limits.max_instances_per_request:
        raise InvalidArgument.field(
            f"{where}.instances",
            f"{len(instances):,} instances, over the limit of "
            f"{limits.max_instances_per_request:,} per request",
        )
    with work.cpu_budget(limits.cpu_seconds_per_request):
        values = _scores(family, spec, instances, where, _Budget(limits, service))
    return {f"{family.stem}Results": {f"{family.stem}MetricValues": values}}


def _scores(
    family: Family, spec: Mapping[str, object], instances: list[Any], where: str, budget: _Budget
) -> list[dict[str, Any]]:
    values = []
    for i, raw in enumerate(instances):
        path = f"{where}.instances[{i}]"
        instance = _object(raw, path, family.instance_fields)
        try:
            row = _row(family, instance, path, budget.service)
            budget.instance(row, path)
            values.append({"score": score_instance(family, spec, row, path)})
        except InvalidArgument:
            budget.spent(path)  # a metric stopped by the budget: say so, not "cannot score"
            raise
        except ServiceError:
            raise
        except AssayError as exc:
            raise InvalidArgument.field(path, str(exc)) from None
        budget.spent(path)
    return values


def _judged_input(body: object) -> tuple[str, Any] | None:
    """(stem, payload) when the request is one pointwise or pairwise metric input."""
    if not isinstance(body, Mapping):
        return None
    given = {_camel(str(k)): v for k, v in body.items() if v is not None}
    # The SDK also sends the location and its autorater settings (sampling count,
    # model): assay's judge is the server's, one sample per instance.
    given.pop("location", None)
    given.pop("autoraterConfig", None)
    if set(given) == {"metrics", "instance"}:
        return vertex_judged.METRICS, given
    keys = [k.removesuffix("Input") for k in given]
    if len(keys) == 1 and keys[0] in vertex_judged.STEMS:
        return keys[0], given[f"{keys[0]}Input"]
    return None


def _scoring_limiter(ctx: ServiceContext) -> anyio.CapacityLimiter:
    """The threads requests are scored in (`work_limits.scoring_threads` at once): a
    request waits for its turn, and the event loop keeps serving everyone else."""
    limiter = ctx.parts.get(_LIMITER)
    if not isinstance(limiter, anyio.CapacityLimiter):
        limiter = ctx.parts[_LIMITER] = anyio.CapacityLimiter(ctx.work_limits.scoring_threads)
    return limiter


_LIMITER = "vertex.scoring_limiter"


async def _endpoint(request: Request) -> Response:
    try:
        raw = await request.body()
        limits = request.app.state.ctx.limits
        body = load_json(raw, "body", limits) if raw.strip() else {}
        # 1e400, integers past int64, lone surrogates: named by their path.
        check_storable(body, "", limits.max_depth)
        judged = _judged_input(body)
        if judged is not None:
            ctx = request.app.state.ctx
            stem, payload = judged
            if stem == vertex_judged.METRICS:
                answer = await vertex_judged.evaluate_metrics(ctx, payload)
            else:
                answer = await vertex_judged.evaluate(ctx, stem, payload)
        else:
            ctx = request.app.state.ctx
            answer = await anyio.to_thread.run_sync(
                evaluate_instances, body, ctx.work_limits, limits, limiter=_scoring_limiter(ctx)
            )
    except Exception as exc:  # every failure is answered in the status shape
        return from_exception(exc).response()
    return JSONResponse(answer)


def routes() -> list[Route]:
    """`:evaluateInstances` at the paths the SDKs use (v1 and v1beta1, with or without '/')."""
    return [
        Route(
            f"/{version}/projects/{{project}}/locations/{{location}}{slash}:evaluateInstances",
            _endpoint,
            methods=["POST"],
            include_in_schema=False,
        )
        for version in ("v1beta1", "v1")
        for slash in ("", "/")
    ]
