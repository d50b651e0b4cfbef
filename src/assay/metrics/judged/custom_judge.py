"""Custom LLM judges from the user's own instructions, with Databricks' output names.

Custom judges (SPEC §4.4) apply the user's own instructions, with an assessment type:

- `ANSWER`: one yes/no per row, columns `response/llm_judged/{name}/rating|rationale|
  error_message`, summary `response/llm_judged/{name}/rating/percentage`; the row
  passes on `yes` (default threshold 1.0).
- `RETRIEVAL`: one yes/no per retrieved chunk, score = precision (chunks rated yes ÷
  retrieved), columns `retrieval/llm_judged/{name}/ratings|rationales|error_messages|
  precision`, summary `.../precision/average`; no default threshold (reported only).

Python: `CustomJudge("polite", "The response is polite to the user.")` is a metric like
any other (`assay.evaluate(data, metrics=[judge])`). Config (`test_config.json`): a
criterion whose object has a `custom_judge` key,

    "criteria": {"polite": {"custom_judge": {"instructions": "...",
                                             "assessment_type": "ANSWER"},
                            "threshold": 1.0,
                            "judge_model_options": {"num_samples": 3}}}

read by `custom_judge_factories`. The judge sees the request, the response, the
expected response or facts, the retrieved context and the guidelines when the row has
them (a RETRIEVAL judge sees the request and one chunk). Instructions may place inputs
themselves with `{request}`, `{response}`, `{expected_response}`, `{expected_facts}`,
`{retrieved_context}` (for RETRIEVAL: the chunk) or `{guidelines}`; other braces are
left as written. A row lacking an input the instructions name is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from assay.core.cases import Chunk, EvalCase, Turn
from assay.core.results import Score
from assay.errors import ConfigError
from assay.judges.types import JudgeModelOptions
from assay.metrics.base import Metric, MetricOptions, is_custom_judge_criterion
from assay.metrics.judged.base import JudgeClient, JudgedOptions
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.yes_no import (
    Messages,
    VotedJudge,
    answer_columns,
    ask_yes_no,
    chunk_columns,
    expected_response_of,
    judge_chunks,
    render_chunk,
    render_chunks,
    request_of,
    single_turn,
)
from assay.metrics.registry import check_threshold, metric_names
from assay.metrics.stats import mean

AssessmentType = Literal["ANSWER", "RETRIEVAL"]
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_PLACEHOLDER = re.compile(
    r"\{(request|response|expected_response|expected_facts|retrieved_context|guidelines)\}"
)
#: what a RETRIEVAL judge sees: the request and one chunk
_RETRIEVAL_INPUTS = frozenset({"request", "retrieved_context"})
_SHAPE = (
    "{custom_judge: {instructions: str, assessment_type: ANSWER | RETRIEVAL},"
    " threshold?, judge_model_options?}"
)


def _upper_case(value: object) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


class CustomJudgeOptions(JudgedOptions):
    """A custom judge's instructions and assessment type (ANSWER or RETRIEVAL)."""

    instructions: str
    assessment_type: AssessmentType = "ANSWER"

    @field_validator("instructions")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("instructions must not be empty")
        return value

    _upper = field_validator("assessment_type", mode="before")(_upper_case)


def _guidelines_text(guidelines: list[str] | dict[str, list[str]] | None) -> str | None:
    if isinstance(guidelines, Mapping):
        lines = [f"- [{name}] {g}" for name, items in guidelines.items() for g in items]
    else:
        lines = [f"- {g}" for g in guidelines or []]
    return "\n".join(lines) or None


class CustomJudge(VotedJudge):
    """An LLM judge applying the user's `instructions` (see the module docstring).

    `CustomJudge(name, instructions, assessment_type="ANSWER", threshold=None,
    judge_model_options=None, description=None)`; `judge_model_options` takes the same
    keys as in a config (`judge_model`, `num_samples`, `temperature`, ...). Each
    instance gets a class of its own so that its `name` is a class attribute, as for
    every registered metric.
    """

    options_model: ClassVar[type[MetricOptions]] = CustomJudgeOptions
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    def __new__(cls, name: str, *args: object, **kwargs: object) -> CustomJudge:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(
                f"custom judge name {name!r}: expected letters, digits, '_', '-' or '.'"
                " (it becomes part of the output column names)"
            )
        if name in metric_names():
            raise ConfigError(
                f"custom judge name {name!r} is a built-in metric's name; choose another"
            )
        # `description` is read here: it is a class attribute of every metric
        description = kwargs.get("description") or f"custom LLM judge {name}"
        per_name = type(f"CustomJudge[{name}]", (cls,), {"name": name, "description": description})
        return super().__new__(per_name)

    def __init__(
        self,
        name: str,
        instructions: str,
        assessment_type: str = "ANSWER",
        *,
        threshold: float | None = None,
        judge_model_options: JudgeModelOptions | Mapping[str, Any] | None = None,
        description: str | None = None,
    ) -> None:
        raw: dict[str, Any] = {"instructions": instructions, "assessment_type": assessment_type}
        if threshold is not None:
            raw["threshold"] = threshold
        if judge_model_options is not None:
            raw["judge_model_options"] = judge_model_options
        try:
            options = CustomJudgeOptions.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"custom judge {name!r}: {_problems(exc)}") from None
        super().__init__(options)
        # Scores are a yes (1) / no (0), or the share of chunks rated yes: 0..1.
        check_threshold(name, options.threshold, self.score_range)
        if options.threshold is None and options.assessment_type == "ANSWER":
            self.threshold = 1.0  # a row passes on "yes", as for the built-in judges
        self.instructions = options.instructions
        self.assessment_type: AssessmentType = options.assessment_type
        self.placeholders = frozenset(_PLACEHOLDER.findall(options.instructions))
        unavailable = sorted(self.placeholders - _RETRIEVAL_INPUTS)
        if self.assessment_type == "RETRIEVAL" and unavailable:
            names = ", ".join(f"{{{u}}}" for u in unavailable)
            raise ConfigError(
                f"custom judge {name!r}: a RETRIEVAL judge sees the request and one chunk"
                f" ({{request}}, {{retrieved_context}}), so its instructions cannot use {names}"
            )

    def __repr__(self) -> str:
        return f"<custom judge {self.name} {self.assessment_type} threshold={self.threshold}>"

    @property
    def prefix(self) -> str:
        step = "response" if self.assessment_type == "ANSWER" else "retrieval"
        return f"{step}/llm_judged/{self.name}"

    # -- prompts ------------------------------------------------------------------------------

    def _render(self, template: str, values: dict[str, str | None]) -> Messages:
        """Fill the instructions' placeholders; the other inputs go in tagged blocks."""
        instructions = _PLACEHOLDER.sub(lambda m: values[m.group(1)] or "", self.instructions)
        tags = {"retrieved_context": "chunk"} if template == "custom_retrieval" else {}
        blocks = [
            f"<{tags.get(k, k)}>\n{v}\n</{tags.get(k, k)}>"
            for k, v in values.items()
            if v and k not in self.placeholders
        ]
        return get_prompt(template).render(instructions=instructions, inputs="\n\n".join(blocks))

    def answer_messages(
        self, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Messages | str:
        """The ANSWER prompt for a row, or why the row cannot be judged."""
        facts = [f for f in case.expected_facts or [] if f.strip()] if single_turn(case) else []
        values: dict[str, str | None] = {
            "request": request_of(actual, expected),
            "response": actual.final_response or None,
            "expected_response": expected_response_of(expected, case),
            "expected_facts": "\n".join(f"- {f}" for f in facts) or None,
            "retrieved_context": render_chunks(actual.retrieved_chunks()) or None,
            "guidelines": _guidelines_text(case.guidelines),
        }
        missing = sorted(k for k in self.placeholders if not values.get(k))
        if missing:
            names = ", ".join(f"{{{m}}}" for m in missing)
            return f"the instructions use {names}, which this row does not have"
        return self._render("custom_answer", values)

    def chunk_messages(self, chunk: Chunk, request: str) -> Messages:
        """The RETRIEVAL prompt for one chunk."""
        values: dict[str, str | None] = {
            "request": request,
            "retrieved_context": render_chunk(chunk),
        }
        return self._render("custom_retrieval", values)

    # -- scoring --------------------------------------------------------------------------------

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        if self.assessment_type == "ANSWER":
            if not actual.final_response:
                return Score(None, "no response to judge")
            messages = self.answer_messages(actual, expected, case)
            if isinstance(messages, str):
                return Score(None, messages)
            return (await ask_yes_no(self, judge, messages)).score()
        request = request_of(actual, expected)
        if request is None:
            return Score(None, "no request to judge the retrieved chunks against")
        chunks = actual.retrieved_chunks()
        if not chunks:
            return Score(None, "no retrieved context to judge")
        return await judge_chunks(self, judge, chunks, lambda c: self.chunk_messages(c, request))

    def row_columns(self, score: Score) -> dict[str, Any]:
        cols = super().row_columns(score)
        if self.assessment_type == "ANSWER":
            cols.update(answer_columns(self.prefix, score))
        else:
            cols.update(chunk_columns(self.prefix, score))
        return cols

    def summary_columns(self, values: Sequence[float]) -> dict[str, Any]:
        cols = super().summary_columns(values)
        if self.assessment_type == "ANSWER":
            cols[f"{self.prefix}/rating/percentage"] = mean(
                [1.0 if v >= 1.0 else 0.0 for v in values]
            )
        else:
            cols[f"{self.prefix}/precision/average"] = mean(values)
        return cols


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
    )


# -- config form ---------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class CustomJudgeSpec(_Strict):
    instructions: str
    assessment_type: AssessmentType = "ANSWER"
    description: str | None = None

    _upper = field_validator("assessment_type", mode="before")(_upper_case)


class CustomJudgeCriterion(_Strict):
    """A criterion declaring a custom judge (see the module docstring)."""

    custom_judge: CustomJudgeSpec
    threshold: float | None = None
    judge_model_options: JudgeModelOptions | None = None


def custom_judge_from_criterion(
    name: str, criterion: Mapping[str, object], *, where: str = "config"
) -> CustomJudge:
    """The custom judge a criterion declares; ConfigError naming the bad field."""
    at = f"{where}: criteria.{name}"
    if isinstance(criterion.get("threshold"), bool):
        raise ConfigError(f"{at}.threshold: expected a number, got a boolean")
    try:
        spec = CustomJudgeCriterion.model_validate(dict(criterion))
    except ValidationError as exc:
        raise ConfigError(f"{at}: {_problems(exc)}. Expected {_SHAPE}") from None
    try:
        return CustomJudge(
            name,
            spec.custom_judge.instructions,
            spec.custom_judge.assessment_type,
            threshold=spec.threshold,
            judge_model_options=spec.judge_model_options,
            description=spec.custom_judge.description,
        )
    except ConfigError as exc:
        raise ConfigError(f"{at}: {exc}. Expected {_SHAPE}") from None


def custom_judge_factories(
    criteria: Mapping[str, Any], *, where: str = "config", reserved: Sequence[str] = ()
) -> dict[str, Callable[[], Metric]]:
    """name -> factory for every criterion declaring a custom judge, validated now.

    `reserved` are names a custom judge may not take (the built-in metric names and
    other custom metrics); for `registry.build_metric(name, criterion, custom=...)`.
    """
    factories: dict[str, Callable[[], Metric]] = {}
    for name, criterion in criteria.items():
        if not is_custom_judge_criterion(criterion):
            continue
        if name in reserved:
            raise ConfigError(
                f"{where}: criteria.{name}: a custom judge may not take the name"
                " of a built-in or custom metric"
            )
        custom_judge_from_criterion(name, criterion, where=where)  # fail early, with the path

        def build(name: str = name, criterion: Mapping[str, Any] = criterion) -> Metric:
            return custom_judge_from_criterion(name, criterion, where=where)

        factories[name] = build
    return factories
