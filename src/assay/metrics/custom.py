"""Custom metrics: user functions scored like built-in metrics (SPEC §4.4).

Two ways to declare one:

- Vertex style, in Python: `CustomMetric(name="word_count", metric_function=fn)`.
- ADK style, in the eval config: `custom_metrics: {name: {code_config: {name:
  "pkg.module.function"}}}`; the module must be importable (on `PYTHONPATH`).

The function's shape is read from its required positional parameters; it may be
sync or async:

- `fn(row)`: called per invocation with a Vertex-style row dict: `prompt`, `response`,
  `reference`, `predicted_trajectory` and `reference_trajectory` (lists of
  `{tool_name, tool_input}`), plus `case_id`, `expected_response`, `expected_facts`,
  `guidelines`, `retrieved_context`, `expected_retrieved_context`,
  `latency_in_seconds` and the case's extra source columns, when present.
- `fn(actual, expected, case)`: called per invocation with assay's `Turn`,
  `Turn | None` and `EvalCase`.
- `fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario)`:
  ADK's signature, called once per case with ADK objects built from the turns, as
  ADK's custom metric evaluator passes them (needs google-adk).

Per-invocation functions return a number, or a dict holding the score under the
metric's name; other keys become `{name}/{key}` row columns (`explanation` becomes
the score's explanation). ADK-style functions return an ADK `EvaluationResult` (its
`overall_score` and `per_invocation_results[].score` are used) or a number. A function
that raises gives no score with the exception text; other metrics are unaffected.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import math
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any, ClassVar, Literal, cast

from assay.config import EvalConfig
from assay.core.cases import Chunk, EvalCase, ToolCall, Turn
from assay.core.results import MetricResult, Score
from assay.errors import ConfigError
from assay.metrics.base import Metric
from assay.metrics.registry import metric_names

Style = Literal["row", "turn", "adk"]
_ARITIES: tuple[tuple[int, Style], ...] = ((1, "row"), (3, "turn"), (4, "adk"))
SIGNATURES = (
    "fn(row: dict), fn(actual: Turn, expected: Turn | None, case: EvalCase), or ADK's"
    " fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario)"
)


@dataclass(frozen=True)
class CustomMetric:
    """A Vertex-style custom metric: `metric_function(row) -> {name: score, ...}`.

    Any function shape of the module docstring is accepted. `threshold` (optional)
    makes the metric pass/fail; without one a scored row passes.
    """

    name: str
    metric_function: Callable[..., Any]
    threshold: float | None = None
    description: str = ""


# -- the row a Vertex-style function sees -----------------------------------------------


def _trajectory(calls: Sequence[ToolCall]) -> list[dict[str, object]]:
    return [{"tool_name": c.name, "tool_input": dict(c.args)} for c in calls]


def _chunks(chunks: Sequence[Chunk]) -> list[dict[str, object]]:
    return [c.model_dump(exclude_none=True) for c in chunks]


def invocation_row(
    actual: Turn, expected: Turn | None, case: EvalCase, *, single_turn: bool
) -> dict[str, object]:
    """The Vertex-style row of one invocation; absent values are left out, not None."""
    row: dict[str, Any] = {k: v for k, v in case.metadata.items() if isinstance(k, str)}
    row["case_id"] = case.id
    prompt = actual.user_input.text
    if prompt is None and expected is not None:
        prompt = expected.user_input.text
    fields: dict[str, Any] = {
        "prompt": prompt,
        "response": actual.final_response,
        "predicted_trajectory": _trajectory(actual.tool_calls()),
        "latency_in_seconds": actual.latency_s,
        "expected_facts": case.expected_facts,
        "guidelines": case.guidelines,
    }
    if expected is not None:
        fields["reference_trajectory"] = _trajectory(expected.tool_calls())
        fields["reference"] = expected.final_response
    if fields.get("reference") is None and single_turn:
        fields["reference"] = case.expected_response
    if single_turn:
        fields["expected_response"] = case.expected_response
    if any(s.retrieval is not None for s in actual.steps):
        fields["retrieved_context"] = _chunks(actual.retrieved_chunks())
    if case.expected_retrieved_context is not None:
        fields["expected_retrieved_context"] = _chunks(case.expected_retrieved_context)
    row.update({k: v for k, v in fields.items() if v is not None})
    return row


# -- resolving and classifying functions ------------------------------------------------


def _search_folders(config: EvalConfig) -> list[str]:
    """Where ADK would find the code: the config's folder (beside the eval set), then cwd."""
    folders = []
    if config.source:
        folders.append(str(Path(config.source).resolve().parent))
    folders.append(str(Path.cwd()))
    return list(dict.fromkeys(folders))


def resolve_function(
    path: str, *, metric: str, where: str = "config", folders: Sequence[str] = ()
) -> Callable[..., object]:
    """Import `package.module.function`; a clear ConfigError when that is impossible.

    `folders` are tried on `sys.path` (before it) while importing, as ADK puts the eval
    file's folder there; the error names the dotted path and every folder tried.
    """
    at = f"{where}: custom_metrics.{metric}.code_config.name {path!r}"
    module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"{at}: expected a dotted path 'package.module.function'")
    added = [f for f in folders if f not in sys.path]
    sys.path[:0] = added
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        tried = ", ".join(folders) if folders else "sys.path"
        raise ConfigError(
            f"{at}: cannot import module {module_name!r} ({exc}); looked in {tried} and"
            " on sys.path: put it beside the config or add its folder to PYTHONPATH"
        ) from None
    except Exception as exc:  # importing user code can raise anything; report it whole
        raise ConfigError(
            f"{at}: importing module {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not hasattr(module, attr):
        raise ConfigError(f"{at}: module {module_name!r} has no attribute {attr!r}")
    function = getattr(module, attr)
    if not callable(function):
        raise ConfigError(f"{at}: {attr!r} is a {type(function).__name__}, not a function")
    return cast(Callable[..., Any], function)


def function_style(function: Callable[..., object], *, metric: str) -> Style:
    """Which shape the function has, from its positional parameters."""
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        raise ConfigError(
            f"custom metric {metric!r}: cannot read the signature of {function!r};"
            f" expected {SIGNATURES}"
        ) from None
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    required = sum(p.default is inspect.Parameter.empty for p in positional)
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    for arity, style in _ARITIES:
        if required <= arity and (arity <= len(positional) or variadic):
            return style
    raise ConfigError(
        f"custom metric {metric!r}: {getattr(function, '__name__', function)!r} takes"
        f" {required} required positional arguments; expected {SIGNATURES}"
    )


# -- results ------------------------------------------------------------------------------


def _number(value: object, metric: str) -> Score:
    if value is None:
        return Score(None, f"custom metric {metric!r} returned no score")
    if isinstance(value, Real):
        number = float(value)
        if math.isnan(number):
            return Score(None, f"custom metric {metric!r} returned NaN")
        return Score(number)
    return Score(
        None,
        f"custom metric {metric!r} returned {type(value).__name__} as its score; expected a number",
    )


def to_score(value: object, metric: str) -> Score:
    """A per-invocation return value as a Score (see the module docstring)."""
    if isinstance(value, Score):
        return value
    if isinstance(value, Mapping):
        if metric not in value:
            keys = ", ".join(map(str, value)) or "none"
            return Score(
                None, f"custom metric {metric!r} returned a dict without key {metric!r} ({keys})"
            )
        score = _number(value[metric], metric)
        for key, extra in value.items():
            if key == metric:
                continue
            if key == "explanation" and isinstance(extra, str) and score.value is not None:
                score.explanation = extra
            else:
                score.details[str(key)] = extra
        return score
    return _number(value, metric)


async def _awaited(value: Awaitable[object]) -> object:
    return await value


def _settle_sync(value: object, metric: str) -> object:
    """The result of a sync call path; an awaitable is run to completion if possible."""
    if not inspect.isawaitable(value):
        return value
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(value))
    if inspect.iscoroutine(value):
        value.close()
    raise RuntimeError(
        f"custom metric {metric!r} is async and was called synchronously inside a running"
        " event loop; the engine awaits it through ascore_case"
    )


def _failure(metric: str, exc: Exception) -> Score:
    return Score(None, f"custom metric {metric!r} raised {type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class _Raised:
    """Marks a call that raised (kept apart from any value a function may return)."""

    score: Score


# -- ADK objects for ADK-style functions ------------------------------------------------


def _adk(module: str) -> Any:
    """A module of `google.adk.evaluation`, imported only when an ADK-style metric needs it."""
    try:
        return importlib.import_module(f"google.adk.evaluation.{module}")
    except ImportError:
        raise ConfigError(
            "custom metrics with ADK's signature (eval_metric, actual_invocations,"
            " expected_invocations, conversation_scenario) need google-adk:"
            " pip install -e '.[adk]'"
        ) from None


def make_adk_eval_metric(name: str, criterion: object, path: str | None) -> object:
    """ADK's `EvalMetric` for a custom metric, with its criterion when it has a threshold."""
    eval_metrics = _adk("eval_metrics")
    crit = None
    try:
        if isinstance(criterion, Real):
            crit = eval_metrics.BaseCriterion(threshold=float(criterion))
        elif isinstance(criterion, Mapping) and criterion.get("threshold") is not None:
            crit = eval_metrics.BaseCriterion.model_validate(dict(criterion))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"criteria.{name}: not a valid ADK criterion: {exc}") from None
    return eval_metrics.EvalMetric(metric_name=name, criterion=crit, custom_function_path=path)


def to_adk_invocation(turn: Turn) -> object:
    """A Turn as ADK's `Invocation` (tool calls, responses, intermediate messages)."""
    invocation_cls = _adk("eval_case").Invocation
    data: dict[str, Any] = {
        "invocation_id": turn.id or "",
        "user_content": {
            "role": "user",
            "parts": [] if turn.user_input.text is None else [{"text": turn.user_input.text}],
        },
        "final_response": None
        if turn.final_response is None
        else {"role": "model", "parts": [{"text": turn.final_response}]},
        "intermediate_data": {
            "tool_uses": [{"id": c.id, "name": c.name, "args": c.args} for c in turn.tool_calls()],
            "tool_responses": [
                {
                    "id": r.id,
                    "name": r.name,
                    # ADK function responses are objects; it wraps bare values the same way
                    "response": r.response
                    if isinstance(r.response, dict)
                    else {"result": r.response},
                }
                for r in turn.tool_responses()
            ],
            "intermediate_responses": [
                [m.author or "", [{"text": m.text}]] for m in turn.agent_messages()
            ],
        },
        "creation_timestamp": turn.created_at or 0.0,
    }
    fields = invocation_cls.model_fields  # older ADK releases lack the newer fields
    if "duration" in fields and turn.latency_s is not None:
        data["duration"] = turn.latency_s
    if "rubrics" in fields and turn.rubrics:
        data["rubrics"] = [
            {
                "rubric_id": r.id,
                "rubric_content": {"text_property": r.text},
                "type": r.type,
            }
            for r in turn.rubrics
        ]
    return invocation_cls.model_validate(data)


def to_adk_scenario(case: EvalCase) -> object:
    """ADK's `ConversationScenario` for a scenario case that has its two required fields."""
    sc = case.scenario
    if sc is None or sc.starting_prompt is None or sc.conversation_plan is None:
        return None
    return _adk("conversation_scenarios").ConversationScenario(
        starting_prompt=sc.starting_prompt,
        conversation_plan=sc.conversation_plan,
        # a preset id (e.g. NOVICE) resolves in ADK; assay persona objects have no ADK twin
        user_persona=sc.persona if isinstance(sc.persona, str) else None,
    )


# -- the metric -----------------------------------------------------------------------------


class FunctionMetric(Metric):
    """A custom metric computed by a user function; one subclass per metric name."""

    description: ClassVar[str] = "custom metric"

    def __init__(
        self,
        function: Callable[..., object],
        style: Style,
        *,
        threshold: float | None = None,
        adk_eval_metric: Any = None,
    ) -> None:
        super().__init__()
        self.function = function
        self.style = style
        self.threshold = threshold
        self.adk_eval_metric = adk_eval_metric

    def _calls(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> list[tuple[object, ...]]:
        """The argument tuples to call the function with: one per invocation, or per case."""
        if self.style == "adk":
            eval_metric = self.adk_eval_metric.model_copy(deep=True)
            eval_metric.threshold = None  # as ADK's custom metric evaluator does
            complete = bool(expected) and all(e is not None for e in expected)
            return [
                (
                    eval_metric,
                    [to_adk_invocation(a) for a in actual],
                    [to_adk_invocation(e) for e in expected if e is not None] if complete else None,
                    to_adk_scenario(case),
                )
            ]
        single = len(actual) == 1 and case.scenario is None
        if self.style == "row":
            return [
                (invocation_row(a, e, case, single_turn=single),)
                for a, e in zip(actual, expected, strict=True)
            ]
        return [(a, e, case) for a, e in zip(actual, expected, strict=True)]

    def _finish(self, outcomes: list[object], actual: Sequence[Turn]) -> MetricResult:
        if self.style == "adk":
            out = outcomes[0]
            if isinstance(out, _Raised):
                return self.make_result(None, [], explanation=out.score.explanation)
            return self._adk_result(out, actual)
        per = [o.score if isinstance(o, _Raised) else to_score(o, self.name) for o in outcomes]
        return self.result_from_invocations(per)

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        result = self.score_case(case, [actual], [expected])
        return (
            result.per_invocation[0]
            if result.per_invocation
            else Score(result.score, result.explanation)
        )

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        outcomes: list[Any] = []
        try:
            calls = self._calls(case, actual, expected)
        except ValueError as exc:  # a turn ADK's models reject (pydantic's ValidationError)
            return self.make_result(None, [], explanation=_failure(self.name, exc).explanation)
        for args in calls:
            try:
                outcomes.append(_settle_sync(self.function(*args), self.name))
            except Exception as exc:  # user code: its failure is this metric's, not the run's
                outcomes.append(_Raised(_failure(self.name, exc)))
        return self._finish(outcomes, actual)

    async def ascore_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        outcomes: list[Any] = []
        try:
            calls = self._calls(case, actual, expected)
        except ValueError as exc:  # as in score_case
            return self.make_result(None, [], explanation=_failure(self.name, exc).explanation)
        for args in calls:
            try:
                out = self.function(*args)
                outcomes.append(await out if inspect.isawaitable(out) else out)
            except Exception as exc:  # user code, as in score_case
                outcomes.append(_Raised(_failure(self.name, exc)))
        return self._finish(outcomes, actual)

    def _adk_result(self, value: object, actual: Sequence[Turn]) -> MetricResult:
        if value is None or isinstance(value, Real):
            score = _number(value, self.name)
            return self.make_result(score.value, [], explanation=score.explanation)
        if not hasattr(value, "overall_score"):
            return self.make_result(
                None,
                [],
                explanation=f"custom metric {self.name!r} returned {type(value).__name__};"
                " expected an ADK EvaluationResult or a number",
            )
        overall = _number(value.overall_score, self.name)
        results = list(getattr(value, "per_invocation_results", None) or [])
        per = (
            [_number(getattr(r, "score", None), self.name) for r in results]
            if len(results) == len(actual)
            else []
        )
        return self.make_result(overall.value, per, explanation=overall.explanation)


# -- factories for registry.build_metric(custom=...) -------------------------------------------


def _factory(
    name: str,
    function: Callable[..., object],
    *,
    description: str,
    threshold: float | None = None,
    adk_eval_metric: object = None,
) -> Callable[[], Metric]:
    style = function_style(function, metric=name)
    if style == "adk" and adk_eval_metric is None:
        adk_eval_metric = make_adk_eval_metric(name, threshold, None)
    cls = cast(
        type[FunctionMetric],
        type(
            f"CustomMetric_{name}",
            (FunctionMetric,),
            {"name": name, "description": description or f"custom metric {name}"},
        ),
    )

    def build() -> Metric:
        return cls(function, style, threshold=threshold, adk_eval_metric=adk_eval_metric)

    return build


def custom_metric_factories(
    config: EvalConfig,
    extra: Sequence[CustomMetric] = (),
    *,
    wanted: Collection[str] | None = None,
) -> dict[str, Callable[[], Metric]]:
    """name -> factory for the config's `custom_metrics` and the given CustomMetric objects.

    Raises ConfigError for an unimportable function, an unsupported signature, a name
    that shadows a built-in metric, or a name declared twice. Objects with `name` and
    `metric_function` attributes (e.g. Vertex SDK's own CustomMetric) are accepted.
    """
    where = config.source or "config"
    builtin = set(metric_names())
    factories: dict[str, Callable[[], Metric]] = {}

    def claim(name: str, origin: str) -> None:
        if name in builtin:
            raise ConfigError(f"{origin}: custom metric {name!r} has a built-in metric's name")
        if name in factories:
            raise ConfigError(f"{origin}: custom metric {name!r} is declared twice")

    folders = _search_folders(config)
    for name, spec in (config.custom_metrics or {}).items():
        claim(name, where)
        if wanted is not None and name not in wanted:
            continue  # declared but not computed: its code is never imported
        path = spec.code_config.name
        function = resolve_function(path, metric=name, where=where, folders=folders)
        adk_metric = None
        if function_style(function, metric=name) == "adk":
            adk_metric = make_adk_eval_metric(name, config.criteria.get(name), path)
        factories[name] = _factory(
            name, function, description=spec.description or "", adk_eval_metric=adk_metric
        )
    for metric in extra:
        given_name = getattr(metric, "name", None)
        given_function = getattr(metric, "metric_function", None)
        if not isinstance(given_name, str) or not callable(given_function):
            raise ConfigError(
                f"custom metric {metric!r}: expected CustomMetric(name: str, metric_function)"
            )
        claim(given_name, "custom metrics")
        factories[given_name] = _factory(
            given_name,
            given_function,
            description=getattr(metric, "description", "") or "",
            threshold=getattr(metric, "threshold", None),
        )
    return factories
