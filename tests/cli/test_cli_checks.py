"""Deterministic check metrics end to end: test_config criteria, --metric, evaluate()."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import assay
from assay.cli import app

runner = CliRunner()

ORDER = '{"order": 123, "status": "shipped"}'
ROWS = [
    {"id": "order", "prompt": "Where is my order?", "response": ORDER, "reference": ORDER},
    {"id": "greet", "prompt": "Hi", "response": "Hello! How can I help?",
     "reference": "Hello, how can I help?"},
]  # fmt: skip


def _rows(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    return path


def test_criteria_with_options_from_test_config(tmp_path: Path) -> None:
    data = _rows(tmp_path)
    config = tmp_path / "test_config.json"
    config.write_text(
        json.dumps({"criteria": {"contains_any": {"values": ["order", "help"]},
                                 "levenshtein": {"threshold": 0.7, "case_sensitive": False}}}),
        encoding="utf-8",
    )  # fmt: skip
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["eval", str(data), "--no-store", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["summary"]["contains_any/mean"] == 1.0
    assert 0.7 < report["summary"]["levenshtein/mean"] < 1.0


def test_metric_flag_with_threshold_and_vertex_names(tmp_path: Path) -> None:
    data = _rows(tmp_path)
    flags = ["-m", "exact_match", "-m", "rouge_l=0.5", "-m", "is_json"]
    result = runner.invoke(app, ["eval", str(data), "--no-store", *flags])
    assert result.exit_code == 1, result.output  # "greet" is neither exact nor JSON
    greet = next(line for line in result.output.splitlines() if " greet " in line)
    assert "FAILED" in greet


def test_bad_criterion_options_exit_2_naming_the_criterion(tmp_path: Path) -> None:
    data = _rows(tmp_path)
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"criteria": {"regex_match": {"pattern": "(unclosed"}}}), "utf-8")
    result = runner.invoke(app, ["eval", str(data), "--no-store", "--config", str(config)])
    assert result.exit_code == 2
    assert "regex_match" in result.output and "invalid regular expression" in result.output
    assert "Traceback" not in result.output
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"criteria": {"json_schema": {"schema": {"type": 5}}}}), "utf-8")
    result = runner.invoke(app, ["eval", str(data), "--no-store", "--config", str(schema)])
    assert result.exit_code == 2
    assert "json_schema" in result.output and "invalid JSON schema" in result.output


def test_evaluate_takes_check_metrics_with_options(tmp_path: Path) -> None:
    result = assay.evaluate(
        str(_rows(tmp_path)),
        metrics={"json_schema": {"schema": {"type": "object", "required": ["order"]}},
                 "starts_with": {"value": "hello", "case_sensitive": False}},
    )  # fmt: skip
    assert result.summary["json_schema/mean"] == 0.5
    assert result.summary["starts_with/mean"] == 0.5


def _priced_rows(tmp_path: Path) -> Path:
    """MLflow rows whose responses carry token usage (1M input, 0 output tokens)."""
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 0}
    row = {
        "request": "Summarise the contract.",
        "response": {"choices": [{"message": {"content": "It is short."}}], "usage": usage},
    }
    path = tmp_path / "priced.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def test_prices_flag_overrides_the_shipped_table(tmp_path: Path) -> None:
    data = _priced_rows(tmp_path)
    config = tmp_path / "cost.json"
    config.write_text(
        json.dumps({"criteria": {"max_cost": {"usd": 1.0, "model": "gpt-4o-mini"}}}), "utf-8"
    )
    shipped = runner.invoke(
        app, ["eval", str(data), "--from", "mlflow", "--config", str(config), "--no-store"]
    )
    assert shipped.exit_code == 0, shipped.output  # $0.15 per million input tokens
    prices = tmp_path / "prices.json"
    table = {"models": {"gpt-4o-mini": {"input_per_million": 3, "output_per_million": 9}}}
    prices.write_text(json.dumps(table), "utf-8")
    args = ["eval", str(data), "--from", "mlflow", "--config", str(config), "--no-store"]
    dearer = runner.invoke(app, [*args, "--prices", str(prices)])
    assert dearer.exit_code == 1, dearer.output  # $3 > $1
    assert "FAILED" in dearer.output
    broken = tmp_path / "broken.json"
    broken.write_text("{", "utf-8")
    bad = runner.invoke(app, [*args, "--prices", str(broken)])
    assert bad.exit_code == 2
    assert "--prices: prices file" in bad.output and "is not JSON" in bad.output


def test_assay_metrics_lists_family_and_range() -> None:
    result = runner.invoke(app, ["metrics"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    # Grouped by family (a heading `family: ...`), one line per metric under it.
    rows, family = {}, ""
    for line in result.output.splitlines():
        if line and not line.startswith(" ") and ": " in line:
            family = line.split(":")[0]
        elif line.startswith("  "):
            rows[line.split()[0]] = f"{family} {line}"
    assert rows["contains"].startswith("checks") and "0..1" in rows["contains"]
    assert rows["rouge_l_sum"].startswith("vertex") and "0..1" in rows["rouge_l_sum"]
    assert rows["max_cost"].startswith("budgets")
    assert "-1..1" in rows["embedding_similarity"]
