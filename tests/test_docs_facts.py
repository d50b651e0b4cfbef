"""What the docs state about the code stays true: the metric table (docs/metric-list.md)
against the registry (`assay metrics`), and every repository path the docs name."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from assay.cli import app
from assay.metrics.registry import get_metric_class, metric_names

REPO = Path(__file__).resolve().parents[1]
METRIC_LIST = (REPO / "docs" / "metric-list.md").read_text(encoding="utf-8")
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Paths the docs name that are not this repository's: ADK's layout of a user's project.
NOT_OURS = {"tests/eval_data"}


def _metric_table() -> dict[str, str]:
    return dict(re.findall(r"^\| `([a-z0-9_]+)` \| ([^|]+?) \|", METRIC_LIST, flags=re.MULTILINE))


def test_metric_table_lists_every_registered_metric_and_no_other() -> None:
    assert set(_metric_table()) == set(metric_names())


def test_metric_table_families_are_assay_metrics_families() -> None:
    listed = runner_rows()
    for name, family in _metric_table().items():
        cls = get_metric_class(name)
        judged = family.endswith(" (judge)")
        assert family.removesuffix(" (judge)").lower() == cls.family == listed[name], name
        assert judged == ("judge" in cls.needs), f"{name}: '(judge)' mark vs needs"


def runner_rows() -> dict[str, str]:
    """The family column of `assay metrics`, by metric name."""
    result = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    rows, family = {}, ""
    for line in result.output.splitlines():
        if line and not line.startswith(" ") and ": " in line:  # a family's heading
            family = line.split(":")[0]
        elif line.startswith("  ") and line.split()[0] in set(metric_names()):
            rows[line.split()[0]] = family
    return rows


def test_every_repository_path_the_docs_name_exists() -> None:
    pattern = re.compile(r"\b((?:bench|examples|tests|src/assay)/[A-Za-z0-9_./-]*[A-Za-z0-9_])")
    missing = []
    for doc in DOCS:
        for path in pattern.findall(doc.read_text(encoding="utf-8")):
            if path not in NOT_OURS and not (REPO / path).exists():
                missing.append(f"{doc.relative_to(REPO)}: {path}")
    assert not missing, missing


def test_every_bench_script_the_docs_run_exists() -> None:
    runs = [
        (doc, m) for doc in DOCS
        for m in re.findall(r"python (\S+\.py)", doc.read_text(encoding="utf-8"))
    ]  # fmt: skip
    assert any(path.startswith("bench/") for _, path in runs)
    for doc, path in runs:
        assert (REPO / path).is_file(), f"{doc.name} runs {path}, which does not exist"
