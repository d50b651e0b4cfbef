"""JUnit XML: one `<testsuite>` per eval set, one `<testcase>` per case run.

CI systems show a FAILED case as a failure whose message is the failure analysis'
reason (the terminal's line, e.g. `missing call switch_off(device_id="device_4")`) and
whose body lists each failed metric with its score and threshold; a case whose agent
(or a metric) crashed as an error; a NOT_EVALUATED case as skipped, with the reason in
the message.

One writer serves every run (`JUnitWriter`): each case run's `<testcase>` is serialized
as soon as it is scored (in the worker that scored it, for a streamed run:
`testcase_xml`) and spooled to a temporary file per eval set; `finish` writes the
suites' totals, which are only known at the end, then copies each suite's test cases
in, and moves the file into place. A loaded run's `write_junit` feeds it its cases. The
document is the one ElementTree writes for the whole tree, indented (the tests compare
the two).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, EvalResult, Status
from assay.errors import AssayError
from assay.report.analysis import analyze_case
from assay.report.atomic import partial_path, remove_quietly


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


EncodedTestcase = tuple[bytes, str | None, float]
"""A `<testcase>` as UTF-8 XML, the count it adds to ("failures", ...) and its time."""
_COUNTS = ("tests", "failures", "errors", "skipped")


def testcase_xml(case: CaseResult, set_id: str, runs: int = 1) -> EncodedTestcase:
    """One case run's `<testcase>`, indented as it sits in the whole document."""
    holder = ET.Element("testsuite")
    kind = add_testcase(holder, case, set_id, runs)
    testcase = holder[0]
    ET.indent(testcase, level=2)  # testsuites > testsuite > testcase
    return ET.tostring(testcase, encoding="unicode").encode(), kind, case.latency_s or 0.0


def _start_tag(tag: str, attributes: dict[str, str]) -> bytes:
    """`<tag a="...">` escaped as ElementTree escapes it."""
    element = ET.Element(tag, attributes)
    text = ET.tostring(element, encoding="unicode", short_empty_elements=False)
    return text[: -len(f"</{tag}>")].encode()


@dataclass
class _Suite:
    spool: IO[bytes]
    path: Path | None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    time: float = 0.0


class JUnitWriter:
    """The JUnit report of a run, written as its case runs come (see the module
    docstring); `path=None` keeps the spools in memory (`junit_document`)."""

    def __init__(self, path: str | Path | None, *, suite_name: str = "assay") -> None:
        self.target = None if path is None else Path(path)
        self.suite_name = suite_name
        self._suites: dict[str, _Suite] = {}
        if self.target is not None:
            try:
                self.target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._error(exc) from None

    def _error(self, exc: OSError) -> AssayError:
        return AssayError(f"cannot write JUnit report {self.target}: {exc.strerror or exc}")

    def add_case(self, case: CaseResult, set_id: str, runs: int = 1) -> None:
        self.add_encoded(set_id, testcase_xml(case, set_id, runs))

    def add_encoded(self, set_id: str, testcase: EncodedTestcase) -> None:
        encoded, kind, elapsed = testcase
        suite = self._suites.get(set_id)
        try:
            if suite is None:
                suite = self._suites[set_id] = self._open_suite()
            suite.spool.write(b"\n    " + encoded)
        except OSError as exc:
            raise self._error(exc) from None
        suite.counts["tests"] += 1
        if kind is not None:
            suite.counts[kind] += 1
        suite.time += elapsed

    def _open_suite(self) -> _Suite:
        if self.target is None:
            return _Suite(io.BytesIO(), None)
        path = partial_path(self.target, f"{os.getpid()}.{len(self._suites)}").with_suffix(".cases")
        return _Suite(path.open("wb"), path)

    def write_document(self, out: IO[bytes]) -> None:
        """The whole document: the declaration, the totals, then each suite's cases."""
        totals = dict.fromkeys(_COUNTS, 0)
        for suite in self._suites.values():
            for key in _COUNTS:
                totals[key] += suite.counts[key]
        root = {"name": self.suite_name, **{k: str(v) for k, v in totals.items()}}
        root["time"] = f"{sum(s.time for s in self._suites.values()):.3f}"
        out.write(b"<?xml version='1.0' encoding='utf-8'?>\n")
        if not self._suites:
            out.write(ET.tostring(ET.Element("testsuites", root), encoding="unicode").encode())
            return
        out.write(_start_tag("testsuites", root))
        for set_id, suite in self._suites.items():
            counts = {k: str(v) for k, v in suite.counts.items()}
            attributes = {"name": set_id, **counts, "time": f"{suite.time:.3f}"}
            out.write(b"\n  " + _start_tag("testsuite", attributes))
            if isinstance(suite.spool, io.BytesIO):
                out.write(suite.spool.getvalue())
            else:
                assert suite.path is not None  # a spool on disk has its path
                suite.spool.close()
                with suite.path.open("rb") as cases:
                    shutil.copyfileobj(cases, out)
            out.write(b"\n  </testsuite>")
        out.write(b"\n</testsuites>")

    def finish(self) -> Path:
        """Write the document beside the target, move it into place; return its path."""
        if self.target is None:
            raise AssayError("an in-memory JUnit report has no file to finish")
        tmp = partial_path(self.target, str(os.getpid()))
        try:
            with tmp.open("wb") as out:
                self.write_document(out)
            os.replace(tmp, self.target)
        except OSError as exc:
            remove_quietly(tmp)
            raise self._error(exc) from None
        except BaseException:
            remove_quietly(tmp)
            raise
        finally:
            self._cleanup()
        return self.target

    def discard(self) -> None:
        """Remove the spooled cases (the run failed before the report could be written)."""
        self._cleanup()
        if self.target is not None:
            remove_quietly(partial_path(self.target, str(os.getpid())))

    def _cleanup(self) -> None:
        for suite in self._suites.values():
            with contextlib.suppress(OSError):  # a failed flush (full disk): removed anyway
                suite.spool.close()
            if suite.path is not None:
                remove_quietly(suite.path)


def _fill(writer: JUnitWriter, result: EvalResult, suite_name: str) -> JUnitWriter:
    runs = 1 + max((c.run_index for c in result.cases), default=0)
    for case in result.cases:
        set_id = case.eval_set_id or result.eval_set_id or suite_name
        writer.add_case(case, set_id, runs)
    return writer


def junit_document(result: EvalResult, *, suite_name: str = "assay") -> bytes:
    """The JUnit XML document of a finished run, as `write_junit` writes it."""
    out = io.BytesIO()
    _fill(JUnitWriter(None, suite_name=suite_name), result, suite_name).write_document(out)
    return out.getvalue()


def build_junit(result: EvalResult, *, suite_name: str = "assay") -> ET.Element:
    """The `<testsuites>` element for a run."""
    return ET.fromstring(junit_document(result, suite_name=suite_name))


def write_junit(result: EvalResult, path: str | Path) -> Path:
    """Write the JUnit XML report to `path` (replaced whole or not at all)."""
    writer = JUnitWriter(path)
    try:
        _fill(writer, result, "assay")
    except BaseException:
        writer.discard()
        raise
    return writer.finish()
