"""Evaluation config: ADK `test_config.json` / `eval_config.json` (EvalConfig).

`{criteria: {metric: threshold | {threshold, ...options}}, user_simulator_config?,
custom_metrics?}` with keys in snake_case or camelCase. Without a config file the
criteria are ADK's defaults: `tool_trajectory_avg_score: 1.0`, `response_match_score: 0.8`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from assay.errors import ConfigError

DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


class CodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)
    name: str  # dotted path "package.module.function"


class CustomMetricConfig(BaseModel):
    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)
    code_config: CodeConfig
    description: str | None = None
    metric_info: dict[str, Any] | None = None


class EvalConfig(BaseModel):
    """An evaluation config. `criteria` values stay raw; metrics validate their options."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    criteria: dict[str, float | dict[str, Any]] = Field(
        default_factory=lambda: dict(DEFAULT_CRITERIA)
    )
    user_simulator_config: dict[str, Any] | None = None
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    source: str | None = Field(default=None, exclude=True)

    def dump(self) -> dict[str, Any]:
        """The config as ADK writes it (snake_case)."""
        return self.model_dump(exclude_none=True, exclude={"source"})


def parse_config(data: Any, *, source: str | None = None) -> EvalConfig:
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
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(
            f"{where}: invalid eval config: {problems}. Expected "
            "{criteria: {metric: threshold | {threshold, ...}}, user_simulator_config?, "
            "custom_metrics?}"
        ) from None
    cfg.source = source
    return cfg


def _json_type(value: Any) -> str:
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
    return parse_config(data, source=str(p))


def find_config_beside(data_path: str | Path) -> Path | None:
    """ADK looks for `test_config.json` next to the eval set; so do we."""
    folder = Path(data_path).parent
    for name in ("test_config.json", "eval_config.json"):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None
