"""ADK evaluation configs (`test_config.json` / `eval_config.json`, SPEC §2.3).

A config is not an eval set: it is read by `assay.config.load_config` / `parse_config`
and passed with `--config`. This module detects configs (so a config given as data gets
a clear message) and writes them in snake_case as google-adk's `EvalConfig` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_snake

from assay.config import EvalConfig
from assay.core.cases import EvalSet
from assay.errors import UnknownFormatError

NAME = "adk-config"

# Criterion options whose values are ADK structures (all keys snake_case when written);
# other option values may be keyed by user names (tools, arguments) and keep their keys.
_STRUCTURED_OPTIONS = frozenset({"judge_model_options", "rubrics"})
_NOT_AN_EVAL_SET = "is an evaluation config (criteria), not an eval set; pass it with --config"


def detect(path: Path | None, data: object) -> bool:
    """A JSON object with `criteria`."""
    return isinstance(data, Mapping) and "criteria" in data


def load_data(
    data: object, *, file: str | None, mapping: Mapping[str, str] | None = None
) -> EvalSet:
    """Configs are not eval sets: always raises, pointing at `--config`."""
    raise UnknownFormatError(_NOT_AN_EVAL_SET, file=file, expected="an eval set file")


def dump(evalset: EvalSet) -> object:
    """Eval sets cannot be written as configs: always raises."""
    raise UnknownFormatError(
        f"eval set {evalset.id!r} cannot be written as adk-config, which holds evaluation "
        "configs; use dump_config / write_config for an EvalConfig",
        expected="a format of eval sets: adk, adk-legacy, vertex, mlflow, ces or trace",
    )


def write(evalset: EvalSet, path: Path) -> None:
    """Eval sets cannot be written as configs: always raises."""
    dump(evalset)


def _snake_all(value: object) -> object:
    if isinstance(value, Mapping):
        return {to_snake(k): _snake_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_all(v) for v in value]
    return value


def _criterion(value: float | dict[str, object]) -> float | dict[str, object]:
    if not isinstance(value, dict):
        return value
    out = {}
    for key, option in value.items():
        name = to_snake(key)
        out[name] = _snake_all(option) if name in _STRUCTURED_OPTIONS else option
    return out


def dump_config(cfg: EvalConfig) -> dict[str, object]:
    """The config as google-adk writes `test_config.json` (snake_case keys)."""
    out: dict[str, Any] = {"criteria": {name: _criterion(v) for name, v in cfg.criteria.items()}}
    if cfg.user_simulator_config is not None:
        out["user_simulator_config"] = _snake_all(cfg.user_simulator_config)
    if cfg.live_model_config is not None:
        out["live_model_config"] = _snake_all(cfg.live_model_config)
    if cfg.custom_metrics is not None:
        out["custom_metrics"] = {
            name: _snake_all(metric.model_dump(exclude_none=True))
            for name, metric in cfg.custom_metrics.items()
        }
    return out


def write_config(cfg: EvalConfig, path: Path) -> None:
    """Write `dump_config(cfg)` as indented UTF-8 JSON."""
    text = json.dumps(dump_config(cfg), indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


__all__ = ["NAME", "detect", "dump", "dump_config", "load_data", "write", "write_config"]
