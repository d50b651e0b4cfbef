"""A streamed run with metrics the row kernel does not compute says so once, naming
them (issue #34): on stderr in the CLI, as an `AssayWarning` in the API. The kernel
falls back per metric (its other metrics stay on it), so only those are named."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import assay
from assay.errors import AssayWarning
from assay.metrics.registry import build_metric
from assay.rows.batch import kernel_available
from assay.rows.plan import KernelKind, RowPlan, kernel_kind
from assay.session.streaming import off_fast_path

needs_kernel = pytest.mark.skipif(
    not kernel_available(), reason="the row kernel is not compiled here: no warning to give"
)
LEAN = {"trajectory_exact_match": 1.0, "response_match_score": 0.6}
OFF = "not computed by the row kernel"
TAIL = "(slower per row); the kernel computes the run's other metrics"


def _rows(n: int) -> list[dict[str, Any]]:
    calls = [{"tool_name": "search", "tool_input": {"q": "paris"}}]
    return [
        {"id": f"case-{i}", "prompt": f"trip {i}", "response": "nine", "reference": "nine",
         "predicted_trajectory": calls if i % 3 else [], "reference_trajectory": calls}
        for i in range(n)
    ]  # fmt: skip


def _eval(tmp_path: Path, criteria: dict[str, Any], rows: int, *extra: str) -> Any:
    """`assay eval` run as the program is (its warnings shown as the CLI shows them)."""
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(rows)), encoding="utf-8")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "assay", "eval", str(data), "--config", str(config), "--quiet",
         "--out", str(out), *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.exists(), done.stderr[-2000:]
    return done


@needs_kernel
def test_the_cli_names_the_metric_the_kernel_does_not_compute(tmp_path: Path) -> None:
    criteria = {**LEAN, "tool_parameter_kv_match": 0.5}
    result = _eval(tmp_path, criteria, 120, "--workers", "2")
    lines = [line for line in result.stderr.splitlines() if "row kernel" in line]
    said = (
        f"warning: metric 'tool_parameter_kv_match' is {OFF}: scored by its own Python on "
        f"each row {TAIL}"
    )
    assert lines == [said]


def test_the_cli_says_nothing_when_the_kernel_computes_every_metric(tmp_path: Path) -> None:
    result = _eval(tmp_path, LEAN, 120)
    assert "row kernel" not in result.stderr
    assert result.returncode == 1, result.stderr  # a third of the rows miss their call


def test_a_small_run_which_takes_no_kernel_says_nothing(tmp_path: Path) -> None:
    # Up to the console's case table (50 rows) every case is kept whole: no kernel.
    result = _eval(tmp_path, {**LEAN, "tool_parameter_kv_match": 0.5}, 20)
    assert "row kernel" not in result.stderr


@needs_kernel
def test_the_api_warns_naming_every_metric_the_kernel_leaves(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(30)), encoding="utf-8")
    metrics = ["trajectory_exact_match", "tool_name_match", "tool_parameter_kv_match"]
    with pytest.warns(AssayWarning) as caught:
        result = assay.evaluate(str(data), metrics=metrics, keep_cases=5)
    messages = [str(w.message) for w in caught if "row kernel" in str(w.message)]
    assert messages == [f"metrics 'tool_name_match', 'tool_parameter_kv_match' are {OFF}: "
                        f"scored by their own Python on each row {TAIL}"]  # fmt: skip
    assert result.summary["case_count"] == 30


def test_the_api_says_nothing_for_a_kernel_run(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(30)), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssayWarning)
        result = assay.evaluate(str(data), metrics=list(LEAN), keep_cases=5)
    assert result.summary["case_count"] == 30


def test_two_metrics_of_one_name_are_named_too() -> None:
    one = build_metric("trajectory_exact_match", {})
    assert off_fast_path([one]) is None
    assert off_fast_path([]) is None
    message = off_fast_path([one, build_metric("trajectory_exact_match", {})])
    assert message is not None and "'trajectory_exact_match'" in message


_NAMES = ["trajectory_exact_match", "trajectory_recall", "response_match_score",
          "tool_call_count_v1", "tool_name_match", "tool_parameter_kv_match",
          "rouge_1"]  # fmt: skip


@given(st.lists(st.sampled_from(_NAMES), max_size=6))
@settings(max_examples=60, deadline=None)
def test_the_message_names_exactly_the_metrics_the_kernel_leaves(names: list[str]) -> None:
    metrics = [build_metric(name, {}) for name in names]
    message = off_fast_path(metrics)
    plan = RowPlan.of(metrics)
    if plan is None:  # no metric, or two of one name: the whole run is the reference's
        assert (message is None) == (not metrics)
        if metrics:
            assert message is not None and "every row is scored by the reference" in message
        return
    unknown = [m.name for m in metrics if kernel_kind(m) is KernelKind.PYTHON]
    assert plan.in_python == unknown
    if not unknown:
        assert message is None
        return
    assert message is not None and OFF in message
    assert all(repr(n) in message for n in unknown)
    # A metric the kernel computes is never named.
    assert not any(repr(m.name) in message for m in metrics if m.name not in unknown)


def test_no_warning_where_the_kernel_does_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ASSAY_PURE_PYTHON=1 every row is the reference path's: nothing is said of
    the metrics the kernel would leave."""
    monkeypatch.setenv("ASSAY_PURE_PYTHON", "1")  # for the `assay eval` subprocess
    result = _eval(tmp_path, {**LEAN, "tool_parameter_kv_match": 0.5}, 120, "--workers", "2")
    assert "row kernel" not in result.stderr
