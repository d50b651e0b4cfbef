"""The README stays true: its metrics and formats tables (its blocks run in test_docs)."""

from __future__ import annotations

import re
from pathlib import Path

from assay.cli import FORMAT_DESCRIPTIONS
from assay.formats import FORMAT_MODULES
from assay.metrics import metric_names

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def _table_names(heading: str) -> set[str]:
    section = README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))


def test_every_registered_metric_is_in_the_metrics_table() -> None:
    documented = _table_names("Metrics")
    missing = set(metric_names()) - documented
    assert not missing, f"README metrics table lacks: {sorted(missing)}"
    unknown = documented - set(metric_names())
    assert not unknown, f"README lists metrics that are not registered: {sorted(unknown)}"


def test_every_format_is_documented() -> None:
    assert _table_names("Formats") == set(FORMAT_MODULES)
    assert set(FORMAT_DESCRIPTIONS) == set(FORMAT_MODULES)


# The tour's commands and snippets themselves run in tests/test_docs.py, with every
# other shell and Python block of the README and docs/.
