"""The terminal views print what they printed before their modules were merged
(issue #34: `console_stream` and `console_case` folded into `console` and
`console_runs`, one module per purpose). `data/console_golden.json` holds each
scenario's text as the separate modules printed it at 787c084."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from report_samples import failed_case, passed_case, sample_result
from rich.console import Console

from assay.core.results import CaseResult, EvalResult, Status
from assay.engine.tally import Tally
from assay.errors import ConfigError
from assay.report.console import (
    TracebackPrinter,
    render_results,
    render_streamed,
    summary_text,
    tally_summary_text,
    traceback_hint,
)
from assay.report.console_runs import (
    print_cases,
    run_header,
    runs_table,
    select_case,
    short_ids,
)

GOLDEN = Path(__file__).parent / "data" / "console_golden.json"


def _console(width: int) -> Console:
    return Console(record=True, width=width, color_system=None, file=io.StringIO())


def _big() -> EvalResult:
    result = sample_result()
    cases = []
    for i in range(60):
        case = copy.deepcopy(passed_case() if i % 10 else failed_case())
        case.case_id = f"case_{i:02d}"
        case.run_index = i % 2
        cases.append(case)
    result.cases = cases
    return result


def _tally(result: EvalResult) -> Tally:
    names = list(dict.fromkeys(n for c in result.cases for n in c.metrics))
    tally = Tally(names)
    for case in result.cases:
        tally.add(case)
    return tally


def _crashed() -> CaseResult:
    case = copy.deepcopy(sample_result().cases[-1])
    case.traceback = 'Traceback (most recent call last):\n  File "agent.py", line 3\n[bold]x\n'
    return case


def _infos() -> list[SimpleNamespace]:
    return [
        SimpleNamespace(
            id=f"{prefix}{'0' * 24}",
            name=name,
            created_at=datetime(2026, 1, day, 10, 30, 5),
            finished_at=datetime(2026, 1, day, 10, 31, 0) if day % 2 else None,
            status="finished" if day % 2 else "running",
            error=None if day != 3 else "boom [red]",
            eval_set_ids=["home", "garden"][: 1 + day % 2],
            agent=None if day == 2 else "pkg.agent:root",
            metrics=["response_match_score", "tool_trajectory_avg_score"],
            config={"criteria": {"response_match_score": 0.8}},
            runs=1 + day % 3,
            case_count=10 * day,
            passed=7 * day,
            failed=2 * day,
            not_evaluated=day,
        )
        for day, prefix, name in (
            (1, "abcdef12", None),
            (2, "abcdef13", "nightly [b]"),
            (3, "ffff0000", "a long run name that does not fit"),
        )
    ]


def _results(width: int) -> str:
    console = _console(width)
    render_results(sample_result(), console)
    render_results(_big(), console)
    console.print(summary_text(_big()))
    return console.export_text()


def _streamed(width: int) -> str:
    console = _console(width)
    result = _big()
    tally = _tally(result)
    failing = [c for c in result.cases if c.status is not Status.PASSED][:3]
    render_streamed(tally, {"response_match_score/mean": 0.5}, failing, console)
    render_streamed(_tally(sample_result()), {}, [], console)
    console.print(tally_summary_text(Tally(["m"])))
    return console.export_text()


def _one_case(width: int) -> str:
    console = _console(width)
    cases = [*sample_result().cases, _crashed()]
    print_cases(console, select_case(cases, "crash"))
    print_cases(console, select_case(cases, "home/turn_off"))
    try:
        select_case([dataclasses.replace(cases[0], case_id=f"c{i}") for i in range(25)], "nope")
    except ConfigError as exc:
        console.print(str(exc), markup=False)
    return console.export_text()


def _live(width: int) -> str:
    console = _console(width)
    printer = TracebackPrinter(console)
    printer.on_start(2)
    printer.on_case_done(sample_result().cases[0])
    printer.on_case_done(_crashed())
    printer.on_finish(None)
    console.print(traceback_hint("run-1", [_crashed()], counted=True), markup=False)
    console.print(traceback_hint(None, [_crashed()], counted=False), markup=False)
    return console.export_text()


def _stored(width: int) -> str:
    console = _console(width)
    infos = _infos()
    short = short_ids([i.id for i in infos])
    console.print(runs_table(infos, width=width, short=short))
    for info in infos:
        console.print(run_header(info))
    return console.export_text()


SCENARIOS: dict[str, Callable[[int], str]] = {
    "results": _results,
    "streamed": _streamed,
    "one_case": _one_case,
    "live": _live,
    "stored": _stored,
}
WIDTHS = (40, 80, 132)


def render_all() -> dict[str, str]:
    return {f"{name}@{w}": draw(w) for name, draw in SCENARIOS.items() for w in WIDTHS}


@pytest.mark.parametrize("key", [f"{n}@{w}" for n in SCENARIOS for w in WIDTHS])
def test_the_view_prints_what_it_printed_before(key: str) -> None:
    name, _, width = key.partition("@")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))[key]
    assert SCENARIOS[name](int(width)) == expected


if __name__ == "__main__":  # python tests/report/test_console_unchanged.py: rewrite
    GOLDEN.write_text(json.dumps(render_all(), indent=1, ensure_ascii=False) + "\n")
