"""MLflow tracking: a finished assay run logged as `mlflow.genai.evaluate` users expect.

One MLflow run in the named experiment (default `assay`), holding:

- params: the eval sets, the agent, the metrics with their thresholds, the judge model,
  runs per case;
- metrics: the run summary's numbers (`{metric}/mean`, `{metric}/pass_rate`,
  `row_count`, judge call counts, ...), names made MLflow-safe;
- the per-row results table, logged with `log_table` as `eval_results_table.json`
  (the table MLflow's evaluation UI shows);
- the JSON report (and the JUnit file / HTML report when written) as artifacts;
- tags `assay.run_id`, `assay.status`, `mlflow.runName`.

`check_tracking_uri` is called before a run starts, so an unreachable tracking server
fails the command at once instead of after an hour of agent calls.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.core.results import EvalResult
from assay.errors import AssayError, ConfigError

INSTALL_HINT = "pip install -e '.[mlflow]'"
TABLE_NAME = "eval_results_table.json"
DEFAULT_EXPERIMENT = "assay"
_SAFE = re.compile(r"[^A-Za-z0-9_\-. /:]")


def require_mlflow() -> None:
    if importlib.util.find_spec("mlflow") is None:
        raise ConfigError(f"--mlflow needs the mlflow extra: {INSTALL_HINT}")


def check_tracking_uri(uri: str) -> None:
    """Fail now, with a clear message, when `uri` cannot take a run."""
    require_mlflow()
    if uri.startswith(("http://", "https://")):
        import httpx

        try:
            httpx.get(uri.rstrip("/") + "/health", timeout=5.0)
        except httpx.HTTPError as exc:
            raise ConfigError(
                f"--mlflow {uri}: the tracking server does not answer"
                f" ({type(exc).__name__}: {exc}); start it or give another URI"
            ) from None
        return
    if uri.startswith("sqlite:///"):
        folder = Path(uri.removeprefix("sqlite:///")).parent
    elif uri.startswith("file:"):
        folder = Path(uri.removeprefix("file://").removeprefix("file:")).parent
    elif "://" in uri:
        return  # databricks, postgresql, ...: MLflow says what is wrong when it connects
    else:
        folder = Path(uri).parent
    if not folder.is_dir():
        raise ConfigError(f"--mlflow {uri}: folder {folder} does not exist")


def _metric_name(name: str) -> str:
    return _SAFE.sub("_", name)[:250]


def summary_metrics(summary: Mapping[str, object]) -> dict[str, float]:
    """The summary's finite numbers, under MLflow-safe names."""
    out: dict[str, float] = {}
    for key, value in summary.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(float(value)):
            out[_metric_name(str(key))] = float(value)
    return out


def _table(rows: Sequence[Mapping[str, object]]) -> dict[str, list[object]]:
    """The rows as columns (what `log_table` takes), values made JSON-safe."""
    columns: dict[str, list[Any]] = {}
    for row in rows:
        for key in row:
            columns.setdefault(str(key), [])
    for row in rows:
        for key, column in columns.items():
            value = row.get(key)
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            elif value is not None and not isinstance(value, str | int | float | bool):
                value = json.dumps(value, default=str, ensure_ascii=False)
            column.append(value)
    return columns


def log_run(
    result: EvalResult,
    tracking_uri: str,
    *,
    experiment: str | None = None,
    params: Mapping[str, object] | None = None,
    artifacts: Sequence[Path] = (),
    run_name: str | None = None,
) -> str:
    """Log `result` as one MLflow run; returns the MLflow run id."""
    require_mlflow()
    import mlflow

    from assay.report.json_report import build_report

    try:
        mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_experiment(experiment or DEFAULT_EXPERIMENT)
        with mlflow.start_run(run_name=run_name or result.run_id) as run:
            if params:
                mlflow.log_params({k: _param(v) for k, v in params.items()})
            mlflow.log_metrics(summary_metrics(result.summary))
            if result.rows:
                mlflow.log_table(_table(result.rows), artifact_file=TABLE_NAME)
            mlflow.set_tags(
                {"assay.run_id": result.run_id or "", "assay.status": result.status.value}
            )
            with tempfile.TemporaryDirectory() as tmp:
                report = Path(tmp) / "assay_report.json"
                report.write_text(
                    json.dumps(build_report(result), indent=2, allow_nan=False), encoding="utf-8"
                )
                mlflow.log_artifact(str(report))
            for path in artifacts:
                mlflow.log_artifact(str(path))
            run_id: str = run.info.run_id
    except AssayError:
        raise
    except Exception as exc:  # MLflow's own errors come in many types; name the URI
        raise AssayError(
            f"--mlflow {tracking_uri}: logging the run failed: {type(exc).__name__}: {exc}"
        ) from None
    return run_id


def _param(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text[:6000]  # MLflow's limit on a param value
