"""JUnit XML: one `<testsuite>` per eval set, one `<testcase>` per case run.

CI systems show a FAILED case as a failure whose message is the failure analysis'
reason (the terminal's line, e.g. `missing call switch_off(device_id="device_4")`) and
whose body lists each failed metric with its score and threshold; a case whose agent
(or a metric) crashed as an error; a NOT_EVALUATED case as skipped, with the reason in
the message.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from assay.model.error_types import ErrorType
from assay.model.results import CaseResult, EvalResult, Status
from assay.report.analysis import analyze_case
from assay.report.atomic import replaced_whole


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


def failed_metrics_text(case: CaseResult) -> list[str]:
    """One line per failed metric: `name: score 0.5 < threshold 1 (explanation)`."""
    lines = []
    for metric in case.metrics.values():
        if metric.status is Status.FAILED:
            line = f"{metric.name}: score {_fmt(metric.score)} < threshold {_fmt(metric.threshold)}"
            if metric.explanation:
                line += f" ({metric.explanation})"
            lines.append(line)
    return lines


def not_evaluated_reason(case: CaseResult) -> str:
    """Why a case has no verdict: the agent error, else each unscored metric's reason."""
    if case.error:
        return case.error
    reasons = [
        f"{m.name}: {m.explanation or 'no score'}"
        for m in case.metrics.values()
        if m.status is Status.NOT_EVALUATED
    ]
    return "; ".join(reasons) or "no metric produced a score"


def _case_name(case: CaseResult, runs: int) -> str:
    return f"{case.case_id} [run {case.run_index + 1}]" if runs > 1 else case.case_id


def add_testcase(parent: ET.Element, case: CaseResult, set_id: str, runs: int) -> str | None:
    """Append the `<testcase>` of one case run to `parent`; return the suite count it
    adds to besides "tests" ("failures", "errors", "skipped") or None for a pass."""
    elapsed = case.latency_s or 0.0
    tc = ET.SubElement(
        parent,
        "testcase",
        name=_case_name(case, runs),
        classname=set_id,
        time=f"{elapsed:.3f}",
    )
    if case.failure or (
        case.status is Status.NOT_EVALUATED
        and case.error_type in (ErrorType.METRIC_CALCULATION_FAILURE, ErrorType.TOOL_NOT_RUN)
    ):
        # The agent (or a metric) crashed, or a FAKE tool call had no mock: an error of
        # the run, not a verdict on quality (and never a pass).
        reason = not_evaluated_reason(case)
        error = ET.SubElement(tc, "error", message=reason, type=case.error_type or "ERROR")
        error.text = reason
        return "errors"
    if case.status is Status.FAILED:
        lines = failed_metrics_text(case)
        # The message is the terminal's reason line (failure analysis); the body lists
        # every failed metric with its score, threshold and explanation.
        found = analyze_case(case)
        reason = found.reason() if found is not None else "; ".join(lines) or "failed"
        failure = ET.SubElement(tc, "failure", message=reason, type="FAILED")
        failure.text = "\n".join([reason, *lines])
        return "failures"
    if case.status is Status.NOT_EVALUATED:
        ET.SubElement(tc, "skipped", message=f"NOT_EVALUATED: {not_evaluated_reason(case)}")
        return "skipped"
    return None


def build_junit(result: EvalResult, *, suite_name: str = "assay") -> ET.Element:
    """The `<testsuites>` element for a run."""
    suites: dict[str, list[CaseResult]] = {}
    for case in result.cases:
        suites.setdefault(case.eval_set_id or result.eval_set_id or suite_name, []).append(case)
    runs = 1 + max((c.run_index for c in result.cases), default=0)
    root = ET.Element("testsuites", name=suite_name)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for set_id, cases in suites.items():
        suite = ET.SubElement(root, "testsuite", name=set_id)
        counts = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        suite_time = 0.0
        for case in cases:
            suite_time += case.latency_s or 0.0
            kind = add_testcase(suite, case, set_id, runs)
            if kind is not None:
                counts[kind] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{suite_time:.3f}")
        total_time += suite_time
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    return root


def write_junit(result: EvalResult, path: str | Path) -> Path:
    """Write the JUnit XML report to `path`."""
    tree = ET.ElementTree(build_junit(result))
    ET.indent(tree)
    target = Path(path)
    with replaced_whole(target, "JUnit report") as tmp:
        tree.write(tmp, encoding="utf-8", xml_declaration=True)
    return target
