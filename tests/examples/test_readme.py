"""The metrics and formats tables stay true (docs/metric-list.md, docs/convert.md; the
README links to both, and every block of the README and docs runs in test_docs)."""

from __future__ import annotations

import re
from pathlib import Path

from assay.cli import FORMAT_DESCRIPTIONS
from assay.formats import FORMAT_MODULES
from assay.metrics import metric_names

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _table_names(page: str, heading: str) -> set[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split(f"{heading}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))


def test_every_registered_metric_is_in_the_metrics_table() -> None:
    documented = _table_names("metric-list.md", "# Every metric")
    missing = set(metric_names()) - documented
    assert not missing, f"the metrics table lacks: {sorted(missing)}"
    unknown = documented - set(metric_names())
    assert not unknown, f"the metrics table lists unregistered metrics: {sorted(unknown)}"


def test_every_format_is_documented() -> None:
    assert _table_names("convert.md", "## The formats (`--from`, `--to`)") == set(FORMAT_MODULES)
    assert set(FORMAT_DESCRIPTIONS) == set(FORMAT_MODULES)


# The tour's commands and snippets themselves run in tests/test_docs.py, with every
# other shell and Python block of the README and docs/.
