"""Evaluation config: ADK `test_config.json` / `eval_config.json` (EvalConfig).

`{criteria: {metric: threshold | {threshold, ...options}}, user_simulator_config?,
custom_metrics?}` with keys in snake_case or camelCase. Without a config file (and
without `--metric`) the criteria depend on the data (`default_criteria`): CES golden
evaluations get CES's golden checks with CES's default thresholds (`CES_GOLDEN_CRITERIA`),
scenario sets the CES scenario results (`CES_SCENARIO_CRITERIA`), everything else ADK's
defaults `tool_trajectory_avg_score: 1.0`, `response_match_score: 0.8`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel, to_snake

from assay.errors import ConfigError, did_you_mean, warn

if TYPE_CHECKING:
    from assay.core.cases import EvalCase, EvalSet, Turn

DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}

CES_GOLDEN_CRITERIA: dict[str, Any] = {
    # CES EvaluationMetricsThresholds defaults (SPEC 4.2): every expected parameter, every
    # expected call, in order; extra calls FAIL; semantic similarity at least 3 of 4.
    "parameter_correctness_score": 1.0,
    "tool_invocation_score": 1.0,
    "tool_ordered_invocation_score": 1.0,
    "golden_expectations": 1.0,
    "semantic_similarity": 3,
    "hallucination": 1.0,
}
"""The criteria of a CES golden evaluation run when no config names any."""

CES_SCENARIO_CRITERIA: dict[str, Any] = {
    # A CES scenario passes when its task was completed (every expectation met, no
    # hallucination, the user goal as `user_goal_behavior` asks) and its rubrics hold.
    "task_completed": 1.0,
    "scenario_expectations": 1.0,
    "scenario_rubrics": 1.0,
    "hallucination": 1.0,
}
"""The criteria of a scenario run (CES scenarios, ADK conversation scenarios) by default."""

# Which kinds of turn expectation each golden check scores (hallucination: every
# response). A check that nothing in the data asks for is left out of the defaults:
# with nothing to score it would leave every case NOT_EVALUATED.
_CHECKS_BY_EXPECTATION: dict[str, tuple[str, ...]] = {
    "parameter_correctness_score": ("tool_call",),
    "tool_invocation_score": ("tool_call",),
    "tool_ordered_invocation_score": ("tool_call",),
    "golden_expectations": ("tool_response", "agent_transfer", "updated_variables"),
    "semantic_similarity": ("agent_response",),
}
EXPECTATION_CHECKS = frozenset(_CHECKS_BY_EXPECTATION)
"""The golden checks that only score what some turn expectation asks for."""


def expects_checks(turn: Turn) -> bool:
    """Whether a golden turn carries expectations to check, not only tool mocks (an ADK
    case blessed from a run keeps its tool results as mocks beside its native turns)."""
    return any(e.mock_tool_response is None for e in turn.expectations)


def is_ces_golden(evalsets: Sequence[EvalSet]) -> bool:
    """True when every case is a golden conversation carrying CES turn expectations.

    Only CES goldens (Evaluation resources, SCRAPI turn evals) put expectations to
    check on turns; ADK eval sets and row formats never do (tool mocks are no check).
    """
    cases = [c for e in evalsets for c in e.cases]
    return bool(cases) and all(
        c.reference is not None and c.actual is None and any(expects_checks(t) for t in c.reference)
        for c in cases
    )


def is_scenario_set(evalsets: Sequence[EvalSet]) -> bool:
    """True when every case is a scenario for a simulated user (no golden turns)."""
    cases = [c for e in evalsets for c in e.cases]
    return bool(cases) and all(c.scenario is not None and c.reference is None for c in cases)


# ADK's rubric metrics by the rubric type each reads. ADK copies a case's rubrics onto
# every invocation it plays (`LocalEvalService`, also for conversation_scenario cases),
# where each rubric metric takes those of its own type.
_CASE_RUBRIC_CRITERIA: dict[str, tuple[str, float]] = {
    "FINAL_RESPONSE_QUALITY": ("rubric_based_final_response_quality_v1", 0.8),
    "TOOL_USE_QUALITY": ("rubric_based_tool_use_quality_v1", 1.0),
    "TRAJECTORY_QUALITY": ("rubric_based_multi_turn_trajectory_quality_v1", 0.8),
}


def _scenario_criteria(evalsets: Sequence[EvalSet]) -> dict[str, Any]:
    """`CES_SCENARIO_CRITERIA` the scenarios call for, plus ADK's rubric metric of
    each type of rubric the cases hold at case level (where ADK keeps a conversation
    scenario's rubrics; `scenario_rubrics` reads the scenario's own, CES's)."""
    cases = [c for e in evalsets for c in e.cases]
    scenarios = [c.scenario for c in cases if c.scenario is not None]
    wanted = dict(CES_SCENARIO_CRITERIA)
    if not any(s.expectations for s in scenarios):
        del wanted["scenario_expectations"]
    if not any(s.rubrics for s in scenarios):
        del wanted["scenario_rubrics"]
    types = {r.type for c in cases for r in c.rubrics}
    for rubric_type, (metric, threshold) in _CASE_RUBRIC_CRITERIA.items():
        if rubric_type in types:
            wanted[metric] = threshold
    return wanted


def default_criteria(evalsets: Sequence[EvalSet]) -> dict[str, object]:
    """The criteria to use when neither a config nor metric names are given.

    CES goldens: the CES golden checks that the data's expectations call for (see
    `CES_GOLDEN_CRITERIA`); scenarios only: `CES_SCENARIO_CRITERIA` (those the scenarios
    call for); any other data: ADK's defaults.
    """
    if is_scenario_set(evalsets):
        return _scenario_criteria(evalsets)
    if not is_ces_golden(evalsets):
        return dict(DEFAULT_CRITERIA)
    called = golden_checks_called_for([c for e in evalsets for c in e.cases])
    return {
        name: criterion
        for name, criterion in CES_GOLDEN_CRITERIA.items()
        if name not in _CHECKS_BY_EXPECTATION or name in called
    }


def golden_checks_called_for(cases: Sequence[EvalCase]) -> set[str]:
    """The golden checks (of `_CHECKS_BY_EXPECTATION`) some turn expectation of `cases`
    asks for: the others would have nothing to score and leave every case NOT_EVALUATED."""
    kinds = {
        kind
        for c in cases
        for t in c.reference or []
        for x in t.expectations
        for kind in x.model_fields_set
        if kind != "note" and getattr(x, kind) is not None
    }
    return {name for name, asks in _CHECKS_BY_EXPECTATION.items() if kinds.intersection(asks)}


class CodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)
    name: str  # dotted path "package.module.function"


class CustomMetricConfig(BaseModel):
    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)
    code_config: CodeConfig
    description: str | None = None
    metric_info: dict[str, Any] | None = None


#: the `user_simulator_config.type` values of google-adk 2.13's config union
USER_SIMULATOR_TYPES = ("llm_backed", "llm_audio")


class EvalConfig(BaseModel):
    """An evaluation config. `criteria` values stay raw; metrics validate their options."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    criteria: dict[str, float | dict[str, Any]] = Field(
        default_factory=lambda: dict(DEFAULT_CRITERIA)
    )
    user_simulator_config: dict[str, Any] | None = None
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    #: ADK's Live (bidirectional streaming) settings: accepted, kept, not used by assay
    live_model_config: dict[str, Any] | None = None
    source: str | None = Field(default=None, exclude=True)

    @field_validator("user_simulator_config")
    @classmethod
    def _simulator_type(cls, value: dict[str, object] | None) -> dict[str, object] | None:
        # As ADK 2.13's discriminated union: a missing or null `type` is the legacy
        # "llm_backed"; any other value must name one of its simulator configs.
        kind = (value or {}).get("type")
        if kind is not None and kind not in USER_SIMULATOR_TYPES:
            known = ", ".join(repr(t) for t in USER_SIMULATOR_TYPES)
            raise ValueError(
                f"type {kind!r} is not a user simulator google-adk knows ({known}; a config"
                " without `type` means 'llm_backed')"
            )
        return value

    def dump(self) -> dict[str, object]:
        """The config as ADK writes it (snake_case)."""
        return self.model_dump(exclude_none=True, exclude={"source"})


def parse_config(data: object, *, source: str | None = None) -> EvalConfig:
    where = source or "config"
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{where}: expected a JSON object with 'criteria', got {_json_type(data)}"
        )
    criteria = data.get("criteria")
    if isinstance(criteria, Mapping):
        # Checked before pydantic, which would quietly read `true` as the threshold 1.0.
        for name, criterion in criteria.items():
            if isinstance(criterion, bool) or not isinstance(
                criterion, int | float | str | Mapping
            ):
                raise ConfigError(
                    f"{where}: criteria.{name}: expected a number (threshold) or an object "
                    f"{{threshold, ...options}}, got {_json_type(criterion)}"
                )
    try:
        cfg = EvalConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}:"
            f" {err['msg'].removeprefix('Value error, ')}"
            + (_close_key(err["loc"]) if err["type"] == "extra_forbidden" else "")
            for err in exc.errors()
        )
        raise ConfigError(
            f"{where}: invalid eval config: {problems}. Expected "
            "{criteria: {metric: threshold | {threshold, ...}}, user_simulator_config?, "
            "custom_metrics?}"
        ) from None
    cfg.source = source
    _warn_unused(cfg, where)
    return cfg


def _close_key(loc: tuple[int | str, ...]) -> str:
    """` (did you mean 'criteria'?)` for a misspelt top-level key of the config."""
    if len(loc) != 1:
        return ""
    fields = EvalConfig.model_fields
    known = [n for n in fields if n != "source"]
    known += [f.alias for n, f in fields.items() if f.alias and n != "source"]
    return did_you_mean(str(loc[0]), known)


# The `user_simulator_config` keys assay's simulated user reads (snake or camel case).
_SIMULATOR_KEYS_USED = frozenset({"type", "model", "max_allowed_invocations"})


def _warn_unused(cfg: EvalConfig, where: str) -> None:
    """One warning per part of an ADK config that assay accepts but does not act on."""
    if cfg.live_model_config is not None:
        warn(
            f"{where}: live_model_config is accepted and kept, but assay runs agents without"
            " ADK's Live (streaming) API, so it has no effect"
        )
    unused = sorted(
        key
        for key in (cfg.user_simulator_config or {})
        if to_snake(key) not in _SIMULATOR_KEYS_USED
    )
    if unused:
        warn(
            f"{where}: user_simulator_config {', '.join(unused)} accepted but not used by"
            " assay's simulated user (it reads type, model, max_allowed_invocations)"
        )


def _json_type(value: object) -> str:
    names = {type(None): "null", bool: "boolean", list: "list", dict: "object"}
    return names.get(type(value), type(value).__name__)


def load_config(path: str | Path) -> EvalConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise ConfigError(f"{p}: nested too deeply to read (not a config file?)") from None
    return parse_config(data, source=str(p))


def find_config_beside(data_path: str | Path) -> Path | None:
    """ADK looks for `test_config.json` next to the eval set; so do we (in the folder
    itself when the data is a folder)."""
    path = Path(data_path)
    folder = path if path.is_dir() else path.parent
    for name in ("test_config.json", "eval_config.json"):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None
