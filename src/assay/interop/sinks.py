"""A finished run's sinks beyond assay's store: ADK eval history and MLflow tracking.

`RunSink`s (`assay.session.sinks`) that a `RunSession` hands its completed run to,
after the report files (MLflow attaches them); never given an interrupted run's partial
result. `check_sinks` runs before the run starts so a sink that cannot work (an
unreachable MLflow server) fails the command first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.results import EvalResult
from assay.session.sinks import FinishedRun, RunSink


@dataclass(frozen=True, slots=True)
class SinkOptions:
    adk_history: bool = True
    mlflow_uri: str | None = None
    mlflow_experiment: str | None = None
    #: the ADK agent folder to write history into (default: the agent's own folder)
    adk_folder: str | Path | None = None


def check_sinks(options: SinkOptions) -> None:
    if options.adk_history and options.adk_folder is not None:
        from assay.interop.adk_history import app_for_folder

        app_for_folder(options.adk_folder)
    if options.mlflow_uri is not None:
        from assay.interop.mlflow_log import check_tracking_uri

        check_tracking_uri(options.mlflow_uri)


def interop_sinks(
    options: SinkOptions, *, agent_spec: str | None, agent: object, params: Mapping[str, object]
) -> list[RunSink]:
    """The sinks `options` turn on, in the order they run (ADK history, then MLflow)."""
    sinks: list[RunSink] = []
    if options.adk_history:
        sinks.append(AdkHistorySink(agent_spec, agent, options.adk_folder))
    if options.mlflow_uri is not None:
        sinks.append(MlflowSink(options.mlflow_uri, options.mlflow_experiment, params))
    return sinks


@dataclass(frozen=True)
class AdkHistorySink:
    """An ADK agent's run also goes where `adk web` shows eval history."""

    agent_spec: str | None
    agent: Any
    folder: str | Path | None = None
    partial: bool = False

    def deliver(self, run: FinishedRun) -> list[str]:
        return _adk_history(run.result, self.agent_spec, self.agent, self.folder)


@dataclass(frozen=True)
class MlflowSink:
    """The run logged to MLflow, with the report files written before it as artifacts."""

    uri: str
    experiment: str | None
    params: Mapping[str, Any]
    partial: bool = False

    def deliver(self, run: FinishedRun) -> list[str]:
        from assay.interop.mlflow_log import log_run

        run_id = log_run(
            run.result,
            self.uri,
            experiment=self.experiment,
            params=self.params,
            artifacts=list(run.artifacts),
        )
        return [f"logged MLflow run {run_id} to {self.uri}"]


def _adk_history(
    result: EvalResult, spec: str | None, agent: object, folder: str | Path | None
) -> list[str]:
    from assay.agents.adk import AdkAgent

    if not isinstance(agent, AdkAgent):
        return []
    from assay.interop.adk_history import (
        AdkApp,
        app_for_agent,
        app_for_agent_spec,
        app_for_folder,
        write_history,
    )

    app: AdkApp | None = app_for_folder(folder) if folder is not None else None
    app = app or app_for_agent_spec(spec) or app_for_agent(agent)
    if app is None:
        return []
    return [f"wrote ADK eval history {path}" for path in write_history(result, app)]
