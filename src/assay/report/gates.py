"""CI gates: a run passes when its pass rate and metric means reach the given minimums.

Without gates any case that does not pass fails the run (exit 1); with gates, the
gates decide: `--min-pass-rate 0.9` tolerates one failing case in ten, and
`--min-mean response_match_score=0.8` requires that metric's mean over scored cases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.text import Text

from assay.core.results import EvalResult, Status
from assay.errors import ConfigError


def parse_min_means(items: list[str] | None) -> dict[str, float]:
    """`--min-mean NAME=VALUE` flags as {metric: minimum mean}."""
    gates: dict[str, float] = {}
    for item in items or []:
        name, sep, raw = item.partition("=")
        try:
            value = float(raw) if sep and name.strip() else math.nan
        except ValueError:
            value = math.nan
        if math.isnan(value):
            raise ConfigError(
                f"--min-mean {item!r}: expected METRIC=MINIMUM, e.g. response_match_score=0.8"
            )
        gates[name.strip()] = value
    return gates


def check_rate(value: float | None, flag: str) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ConfigError(f"{flag} must be between 0 and 1, got {value}")


def failed_gates(
    result: EvalResult, *, min_pass_rate: float | None, min_means: Mapping[str, float]
) -> list[str]:
    """One line per gate the run misses (empty: every gate holds)."""
    cases = result.cases
    scores = {
        name: [
            m.score for c in cases if (m := c.metrics.get(name)) is not None and m.score is not None
        ]
        for name in min_means
    }
    return failed_gates_of(
        sum(c.status is Status.PASSED for c in cases),
        len(cases),
        scores,
        sorted({n for c in cases for n in c.metrics}),
        min_pass_rate=min_pass_rate,
        min_means=min_means,
    )


def failed_gates_of(
    passed: int,
    total: int,
    scores: Mapping[str, Sequence[float]],
    known: Sequence[str],
    *,
    min_pass_rate: float | None,
    min_means: Mapping[str, float],
) -> list[str]:
    """`failed_gates` from counts: passed of total case runs, each gated metric's case
    scores, the run's metric names (a streamed run keeps only these)."""
    failures = []
    if min_pass_rate is not None:
        rate = passed / total if total else 0.0
        if rate < min_pass_rate:
            failures.append(
                f"pass rate {rate:.3f} ({passed}/{total}) < --min-pass-rate {min_pass_rate:g}"
            )
    for name, minimum in min_means.items():
        values = scores.get(name) or []
        if not values:
            failures.append(f"{name}: no case has a score (metrics of the run: {', '.join(known)})")
            continue
        mean = math.fsum(values) / len(values)
        if mean < minimum:
            failures.append(f"{name} mean {mean:.3f} < --min-mean {minimum:g}")
    return failures


def gate_exit_code(
    result: EvalResult,
    min_pass_rate: float | None,
    min_means: Mapping[str, float],
    console: Console,
) -> int:
    """With CI gates the gates decide the exit code (0 or 1), not each case's status."""
    failures = failed_gates(result, min_pass_rate=min_pass_rate, min_means=min_means)
    return report_gates(failures, console)


def report_gates(failures: Sequence[str], console: Console) -> int:
    """Print each failed gate (or that they passed); the exit code they decide."""
    for line in failures:
        console.print(Text(f"gate failed: {line}", style="bold red"), soft_wrap=True)
    if not failures:
        console.print(Text("gates passed", style="bold green"))
    return 1 if failures else 0
