"""`assay eval --mlflow URI`: the run logged to a real MLflow 3 tracking store (SQLite),
read back with MLflow's own client; an unusable URI fails before the agent runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from assay.cli import app

REPO = Path(__file__).resolve().parents[2]
HOME = REPO / "examples" / "home_automation" / "home.evalset.json"
AGENT = "examples.home_automation.agent:root_agent"


def test_the_run_metrics_table_and_reports_land_in_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent imports from the checkout; MLflow writes artifacts under ./mlruns of
    # the working directory, which must not be the checkout.
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "eval", str(HOME), "--agent", AGENT, "--no-store", "--out", str(out),
            "--mlflow", uri, "--mlflow-experiment", "home-automation",
        ],
    )  # fmt: skip
    assert result.exit_code == 1, result.output  # four cases fail on purpose
    assert "logged MLflow run" in result.output.replace("\n", "")
    report = json.loads(out.read_text())

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("home-automation")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    metrics = run.data.metrics
    for name in ("tool_trajectory_avg_score/mean", "response_match_score/mean", "row_count"):
        assert metrics[name] == pytest.approx(report["summary"][name])
    assert json.loads(run.data.params["eval_sets"]) == ["home_automation"]
    assert run.data.params["agent"] == AGENT
    assert json.loads(run.data.params["criteria"])["response_match_score"] == 0.7
    assert run.data.tags["assay.status"] == "FAILED"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"eval_results_table.json", "assay_report.json", "report.json"} <= artifacts

    import mlflow

    mlflow.set_tracking_uri(uri)
    table = mlflow.load_table("eval_results_table.json", run_ids=[run.info.run_id])
    assert len(table) == len(report["rows"]) == 19  # one row per turn of the 14 cases
    assert "tool_trajectory_avg_score/score" in table.columns


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("http://127.0.0.1:9/", "the tracking server does not answer"),
        ("sqlite:///{tmp}/no/such/folder/mlflow.db", "does not exist"),
    ],
)
def test_an_unusable_tracking_uri_fails_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str, message: str
) -> None:
    # The agent imports from the checkout; MLflow writes artifacts under ./mlruns of
    # the working directory, which must not be the checkout.
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.chdir(tmp_path)
    calls = tmp_path / "calls.log"
    (tmp_path / "counting_bot.py").write_text(
        f"def answer(prompt):\n    open({str(calls)!r}, 'a').write(prompt)\n    return prompt\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(
        app,
        [
            "eval", str(HOME), "--agent", "counting_bot:answer", "--no-store",
            "--mlflow", uri.format(tmp=tmp_path),
        ],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", " ")
    assert not calls.exists()  # the agent never ran


def test_without_mlflow_installed_the_message_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)
    result = CliRunner().invoke(
        app, ["eval", str(HOME), "--no-store", "--mlflow", f"sqlite:///{tmp_path}/m.db"]
    )
    assert result.exit_code == 2
    assert "pip install -e '.[mlflow]'" in result.output


def test_evaluate_logs_to_mlflow_like_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assay
    from assay.errors import AssayError

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    rows = [
        {"prompt": "Capital of France?", "response": "Paris.", "reference": "Paris."},
        {"prompt": "Capital of Peru?", "response": "Lyon.", "reference": "Lima."},
    ]
    result = assay.evaluate(
        rows, metrics={"exact_match": 1.0}, mlflow=uri, mlflow_experiment="from-python"
    )
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("from-python")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert (
        run.data.metrics["exact_match/mean"]
        == pytest.approx(result.summary["exact_match/mean"])
        == pytest.approx(0.5)
    )
    assert run.data.tags["assay.status"] == "FAILED"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert "eval_results_table.json" in artifacts
    # An unusable tracking URI fails before anything is scored.
    with pytest.raises(AssayError, match="does not exist"):
        assay.evaluate(rows, metrics=["exact_match"], mlflow="sqlite:///no/such/dir/m.db")
