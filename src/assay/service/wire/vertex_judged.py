"""Vertex's judged metrics over `evaluateInstances`, answered by assay's judges.

The Vertex SDK sends every model-based metric — its `PointwiseMetric` /
`PairwiseMetric`, and the named ones (`coherence`, `fluency`, `safety`,
`groundedness`, ... from `MetricPromptTemplateExamples`), which are such metrics with
Google's templates — as `pointwiseMetricInput` or `pairwiseMetricInput`:
`{"metricSpec": {"metricPromptTemplate": ..., "systemInstruction"?: ...},
"instance": {"jsonInstance": "{\"prompt\": ..., \"response\": ...}"}}`. assay fills the
template's `{variables}` from the instance, asks the server's judge (`assay serve
--judge-model`) with one closing instruction on the answer's shape, and answers
`pointwiseMetricResult {score, explanation}` or `pairwiseMetricResult {pairwiseChoice,
explanation}` (with `customOutput.rawOutputs` when the spec asks for the raw output).

Invalid input is 400 naming the field; no judge configured is FAILED_PRECONDITION
saying how to configure one; a judge that fails or answers out of shape (twice) is
UNAVAILABLE with what it said: the SDK reports these, never a made-up score.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from assay.service.context import ServiceContext
from assay.service.documents import load_json
from assay.service.errors import FailedPrecondition, InvalidArgument, ServiceError
from assay.service.settings import WorkLimits, count_tokens
from assay.service.wire._judge import ask, last_object

POINTWISE, PAIRWISE = "pointwiseMetric", "pairwiseMetric"
METRICS = "metrics"
STEMS = (POINTWISE, PAIRWISE)
_SPEC_FIELDS = (
    "metricPromptTemplate",
    "systemInstruction",
    "customOutputFormatConfig",
    "candidateResponseFieldName",
    "baselineResponseFieldName",
)
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SYSTEM = "You are an expert evaluator. Follow the rating instructions exactly."
_ASK_POINTWISE = (
    "\n\nEnd your answer with one JSON object on its own line: "
    '{"score": <your rating as a number>, "explanation": "<why, in one or two sentences>"}'
)
_ASK_PAIRWISE = (
    "\n\nEnd your answer with one JSON object on its own line: "
    '{"choice": "BASELINE" | "CANDIDATE" | "TIE", "explanation": "<why>"}, where '
    "BASELINE is the baseline response ({baseline}) and CANDIDATE the other ({candidate})."
)
_CHOICES = {"BASELINE": "BASELINE", "A": "BASELINE", "CANDIDATE": "CANDIDATE", "B": "CANDIDATE",
            "TIE": "TIE", "SAME": "TIE"}  # fmt: skip


class Unimplemented(ServiceError):
    http_status, code = 501, "UNIMPLEMENTED"


def _fields(value: object, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgument.field(path, "expected an object")
    out = {}
    for key, item in value.items():
        camel = re.sub(r"_([a-z])", lambda m: m[1].upper(), str(key))
        if camel not in allowed:
            raise InvalidArgument.field(
                path, f"Invalid JSON payload received. Unknown name \"{key}\" at '{path}'"
            )
        if item is not None:
            out[camel] = item
    return out


def _instance(value: object, path: str) -> dict[str, Any]:
    given = _fields(value, path, ("jsonInstance", "contentMapInstance"))
    if "contentMapInstance" in given:
        raise InvalidArgument.field(
            f"{path}.content_map_instance",
            "assay judges text: give the instance as json_instance (multimodal content "
            "maps are not supported)",
        )
    raw = given.get("jsonInstance")
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidArgument.field(f"{path}.json_instance", "required: a JSON object as a string")
    parsed = load_json(raw, f"{path}.json_instance")
    if not isinstance(parsed, dict):
        raise InvalidArgument.field(f"{path}.json_instance", "expected a JSON object")
    return parsed


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render(template: str, instance: Mapping[str, object]) -> str:
    """The template with each `{variable}` the instance has replaced by its value."""
    return _VARIABLE.sub(lambda m: _text(instance[m[1]]) if m[1] in instance else m[0], template)


def checked_render(
    template: str, instance: Mapping[str, object], limits: WorkLimits, path: str
) -> tuple[str, int]:
    """(`render(template, instance)`, its tokens), refused 400 naming `path` and the limit
    when the prompt would pass the tokens per instance: counted before it is built, so
    a template repeating a long variable cannot make the server build a huge prompt."""
    total = count_tokens(_VARIABLE.sub(" ", template))
    counted: dict[str, int] = {}
    for match in _VARIABLE.finditer(template):
        name = match[1]
        if name not in counted:
            counted[name] = count_tokens(_text(instance[name]) if name in instance else match[0])
        total += counted[name]
        if total > limits.max_tokens_per_instance:
            raise InvalidArgument.field(
                path,
                f"the judge's prompt would have over {limits.max_tokens_per_instance:,} "
                "tokens, the limit per instance",
            )
    return render(template, instance), total


def parse_pointwise(reply: str) -> dict[str, Any] | None:
    """{score, explanation} from a judge's reply; None if it has no numeric score."""
    found = last_object(reply)
    if found is None:
        return None
    score = found.get("score")
    if isinstance(score, str):
        try:
            score = float(score)
        except ValueError:
            return None
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return None
    return {"score": float(score), "explanation": _text(found.get("explanation", ""))}


def parse_pairwise(reply: str) -> dict[str, Any] | None:
    """{pairwiseChoice, explanation} from a judge's reply; None without a known choice."""
    found = last_object(reply)
    choice = found.get("choice") if found is not None else None
    if found is None or not isinstance(choice, str) or choice.upper() not in _CHOICES:
        return None
    return {
        "pairwiseChoice": _CHOICES[choice.upper()],
        "explanation": _text(found.get("explanation", "")),
    }


async def evaluate(ctx: ServiceContext, stem: str, payload: Mapping[str, object]) -> dict[str, Any]:
    """The EvaluateInstancesResponse JSON for a pointwise or pairwise metric input."""
    where = f"{'pointwise' if stem == POINTWISE else 'pairwise'}_metric_input"
    given = _fields(payload, where, ("metricSpec", "instance"))
    spec = _fields(given.get("metricSpec"), f"{where}.metric_spec", _SPEC_FIELDS)
    template = spec.get("metricPromptTemplate")
    if not isinstance(template, str) or not template.strip():
        raise InvalidArgument.field(
            f"{where}.metric_spec.metric_prompt_template", "required: the judge's prompt template"
        )
    instance = _instance(given.get("instance"), f"{where}.instance")
    if ctx.judge_model is None:
        raise FailedPrecondition(
            f"{where} needs a judge, and this server has none: start it with "
            "assay serve --judge-model MODEL (e.g. openai:gpt-4o-mini)"
        )
    prompt, _tokens = checked_render(
        template, instance, ctx.work_limits, f"{where}.metric_spec.metric_prompt_template"
    )
    if stem == POINTWISE:
        prompt += _ASK_POINTWISE
        parse: Any = parse_pointwise
    else:
        baseline = spec.get("baselineResponseFieldName") or "baseline_model_response"
        candidate = spec.get("candidateResponseFieldName") or "response"
        prompt += _ASK_PAIRWISE.replace("{baseline}", baseline).replace("{candidate}", candidate)
        parse = parse_pairwise
    system = spec.get("systemInstruction")
    messages = [
        {"role": "system", "content": system if isinstance(system, str) and system else _SYSTEM},
        {"role": "user", "content": prompt},
    ]
    result, raw = await ask(ctx.judge_model, messages, parse)
    output = spec.get("customOutputFormatConfig")
    if isinstance(output, Mapping) and (
        output.get("returnRawOutput") or output.get("return_raw_output")
    ):
        result["customOutput"] = {"rawOutputs": {"rawOutput": [raw]}}
    return {f"{stem}Result": result}


# -- the newer client: {"metrics": [{"llmBasedMetricSpec": ...}], "instance": {...}} --------


def _instance_text(value: object, path: str) -> str:
    """The text of an EvaluationInstance.InstanceData (`text`, or its contents' parts)."""
    data = _fields(value, path, ("text", "contents"))
    if "text" in data:
        return _text(data["text"])
    contents = _fields(data.get("contents"), f"{path}.contents", ("contents",)).get("contents", [])
    if not isinstance(contents, list):
        raise InvalidArgument.field(f"{path}.contents.contents", "expected a list of contents")
    texts = []
    for content in contents:
        parts = content.get("parts", []) if isinstance(content, Mapping) else None
        if not isinstance(parts, list):
            raise InvalidArgument.field(f"{path}.contents.contents", "expected contents with parts")
        texts += [
            p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
    return "\n".join(texts)


def _variables(value: object) -> dict[str, Any]:
    """The template variables an EvaluationInstance gives: prompt, response, reference and
    other_data's entries."""
    allowed = ("prompt", "response", "reference", "otherData", "rubricGroups", "agentData",
               "agentEvalData")  # fmt: skip
    instance = _fields(value, "instance", allowed)
    out: dict[str, Any] = {}
    for key in ("prompt", "response", "reference"):
        if key in instance:
            out[key] = _instance_text(instance[key], f"instance.{key}")
    other = _fields(instance.get("otherData"), "instance.other_data", ("mapInstance",))
    entries = other.get("mapInstance") or {}
    if not isinstance(entries, Mapping):
        raise InvalidArgument.field("instance.other_data.map_instance", "expected an object")
    for key, item in entries.items():
        out[str(key)] = _instance_text(item, f"instance.other_data.map_instance[{key!r}]")
    return out


async def evaluate_metrics(ctx: ServiceContext, body: Mapping[str, object]) -> dict[str, Any]:
    """`{"metrics": [...], "instance": {...}}` -> `{"metricResults": [...]}`: each LLM-based
    (or pointwise) metric spec judged by the server's judge on the instance."""
    metrics = body.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        raise InvalidArgument.field("metrics", "expected a non-empty list of metrics")
    limits = ctx.work_limits
    if len(metrics) > limits.max_instances_per_request:
        raise InvalidArgument.field(
            "metrics", f"{len(metrics):,} metrics, over the limit of "
            f"{limits.max_instances_per_request:,} per request",
        )  # fmt: skip
    variables = _variables(body.get("instance"))
    results = []
    tokens = 0
    for i, raw in enumerate(metrics):
        path = f"metrics[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidArgument.field(path, "expected an object")
        metric = {re.sub(r"_([a-z])", lambda m: m[1].upper(), str(k)): v for k, v in raw.items()}
        kind = next((k for k in ("llmBasedMetricSpec", "pointwiseMetricSpec") if k in metric), None)
        spec = metric.get(kind) if kind is not None else None
        if kind is not None and not isinstance(spec, Mapping):
            raise InvalidArgument.field(f"{path}.{kind}", "expected an object")
        if not isinstance(spec, Mapping):
            kinds = ", ".join(sorted(k for k in metric if k.endswith("Spec"))) or "none"
            raise Unimplemented(
                f"{path}: assay judges llm_based_metric_spec and pointwise_metric_spec "
                f"metrics (a prompt template) with its own judge; got {kinds} (Google-hosted "
                "predefined and computation specs are not served here)"
            )
        template = spec.get("metricPromptTemplate", spec.get("metric_prompt_template"))
        if not isinstance(template, str) or not template.strip():
            raise InvalidArgument.field(
                f"{path}.llm_based_metric_spec.metric_prompt_template",
                "required: the judge's prompt template",
            )
        if ctx.judge_model is None:
            raise FailedPrecondition(
                f"{path} needs a judge, and this server has none: start it with "
                "assay serve --judge-model MODEL (e.g. openai:gpt-4o-mini)"
            )
        where = f"{path}.llm_based_metric_spec.metric_prompt_template"
        prompt, counted = checked_render(template, variables, limits, where)
        tokens += counted
        if tokens > limits.max_tokens_per_request:
            raise InvalidArgument.field(
                where, f"the judge's prompts would have over "
                f"{limits.max_tokens_per_request:,} tokens, the limit per request",
            )  # fmt: skip
        system = spec.get("systemInstruction", spec.get("system_instruction"))
        messages = [
            {
                "role": "system",
                "content": system if isinstance(system, str) and system else _SYSTEM,
            },
            {"role": "user", "content": prompt + _ASK_POINTWISE},
        ]
        verdict, _raw = await ask(ctx.judge_model, messages, parse_pointwise)
        results.append(verdict)
    return {"metricResults": results}
