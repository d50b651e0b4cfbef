"""Metric plugins: a real distribution on a temporary site dir, found by entry point."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.core import EvalCase, Turn
from assay.errors import ConfigError
from assay.metrics import registry

PLUGIN = textwrap.dedent(
    """
    from assay.metrics.base import Metric, MetricOptions
    from assay.core import Score


    class ShoutOptions(MetricOptions):
        mark: str = "!"


    class Shout(Metric):
        name = "shout"
        description = "1 when the response ends with the mark"
        options_model = ShoutOptions
        default_threshold = 1.0

        def score_invocation(self, actual, expected, case):
            return Score(1.0 if (actual.final_response or "").endswith(self.options.mark) else 0.0)


    NOT_A_METRIC = 42
    """
)


def _install(site: Path) -> None:
    """A distribution `acme_metrics` 1.2 with three entry points, as pip would leave it."""
    (site / "acme_metrics.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "acme_metrics-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme_metrics\nVersion: 1.2\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[assay.metrics]\n"
        "shout = acme_metrics:Shout\n"
        "number = acme_metrics:NOT_A_METRIC\n"
        "gone = acme_missing_module:Thing\n",
        encoding="utf-8",
    )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    _install(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.refresh_plugins()
    yield tmp_path
    monkeypatch.undo()
    registry.refresh_plugins()
    sys.modules.pop("acme_metrics", None)


def test_a_plugin_metric_is_namespaced_by_its_distribution(site: Path) -> None:
    assert "acme-metrics/shout" in registry.metric_names()
    assert "shout" not in registry.metric_names()  # never a bare name
    assert registry.metric_source("acme-metrics/shout") == "acme_metrics 1.2 (acme_metrics:Shout)"
    assert registry.metric_source("trajectory_exact_match") == "assay"
    metric = registry.build_metric("acme-metrics/shout", {"mark": "?", "threshold": 0.5})
    assert metric.name == "acme-metrics/shout" and metric.threshold == 0.5
    case = EvalCase(id="c", actual=[Turn(user_input="q", final_response="why?")])
    result = metric.score_case(case, case.actual or [], [None])
    assert result.name == "acme-metrics/shout" and result.score == 1.0


def test_a_broken_plugin_says_why_and_the_rest_still_load(site: Path) -> None:
    broken = registry.broken_plugins()
    assert set(broken) == {"acme-metrics/number", "acme-metrics/gone"}
    assert "not a Metric subclass" in broken["acme-metrics/number"]
    assert "acme_missing_module" in broken["acme-metrics/gone"]
    with pytest.raises(ConfigError, match=r"acme-metrics/gone.*could not be loaded"):
        registry.build_metric("acme-metrics/gone")
    assert "trajectory_exact_match" in registry.metric_names()


def test_evaluate_scores_with_a_plugin_metric(site: Path) -> None:
    import assay

    rows = [{"prompt": "a", "response": "yes!"}, {"prompt": "b", "response": "no"}]
    result = assay.evaluate(rows, metrics=["acme-metrics/shout"])
    assert [r["acme-metrics/shout/score"] for r in result.rows] == [1.0, 0.0]


def test_assay_metrics_lists_plugins_with_their_source(site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path]), "COLUMNS": "300"}
    done = subprocess.run(
        [sys.executable, "-m", "assay", "metrics"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if "acme-metrics/shout" in ln)
    assert "acme_metrics 1.2" in line
    assert any("acme-metrics/gone" in ln and "not loaded" in ln for ln in done.stdout.splitlines())
