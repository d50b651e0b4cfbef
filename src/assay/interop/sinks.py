"""A finished run's sinks beyond assay's store: ADK eval history and MLflow tracking.

Small functions over the finished `EvalResult`, called by `assay eval` after its
reports; `check_sinks` runs before the run starts so a sink that cannot work (an
unreachable MLflow server) fails the command first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.model.results import EvalResult


@dataclass(frozen=True, slots=True)
class SinkOptions:
    adk_history: bool = True
    mlflow_uri: str | None = None
    mlflow_experiment: str | None = None


def check_sinks(options: SinkOptions) -> None:
    if options.mlflow_uri is not None:
        from assay.interop.mlflow_log import check_tracking_uri

        check_tracking_uri(options.mlflow_uri)


def run_sinks(
    result: EvalResult,
    options: SinkOptions,
    *,
    agent_spec: str | None,
    agent: Any,
    params: Mapping[str, Any],
    artifacts: Sequence[Path] = (),
) -> list[str]:
    """Write the run to every configured sink; returns one line per thing written."""
    lines: list[str] = []
    if options.adk_history:
        lines += _adk_history(result, agent_spec, agent)
    if options.mlflow_uri is not None:
        from assay.interop.mlflow_log import log_run

        run_id = log_run(
            result,
            options.mlflow_uri,
            experiment=options.mlflow_experiment,
            params=params,
            artifacts=artifacts,
        )
        lines.append(f"logged MLflow run {run_id} to {options.mlflow_uri}")
    return lines


def _adk_history(result: EvalResult, spec: str | None, agent: Any) -> list[str]:
    """An ADK agent's run also goes where `adk web` shows eval history."""
    from assay.agents.adk import AdkAgent

    if not isinstance(agent, AdkAgent):
        return []
    from assay.interop.adk_history import app_for_agent_spec, write_history

    app = app_for_agent_spec(spec)
    if app is None:
        return []
    return [f"wrote ADK eval history {path}" for path in write_history(result, app)]
