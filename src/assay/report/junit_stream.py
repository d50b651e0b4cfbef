"""The JUnit report of a streamed run, written as the case runs come.

`write_junit` builds the whole `<testsuites>` tree from a finished `EvalResult`; a
streamed run of a million rows keeps no results. Here each case run's `<testcase>` is
serialized as soon as it is scored (in the worker that scored it: `testcase_xml`) and
spooled to a temporary file per eval set; `finish` writes the suites' totals, which are
only known at the end, then copies each suite's test cases in, and moves the file into
place. The file is the one `write_junit` writes for the same case runs, byte for byte
(the tests compare the two).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from assay.errors import AssayError
from assay.model.results import CaseResult
from assay.report.atomic import remove_quietly
from assay.report.junit import add_testcase

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
    path: Path
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    time: float = 0.0


class JUnitStreamWriter:
    """`--junit` of a streamed run (see the module docstring)."""

    def __init__(self, path: str | Path, *, suite_name: str = "assay") -> None:
        self.target = Path(path)
        self.suite_name = suite_name
        self._suites: dict[str, _Suite] = {}
        self._tmp = self.target.with_name(f".{self.target.name}.{os.getpid()}.partial")
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> AssayError:
        return AssayError(f"cannot write JUnit report {self.target}: {exc.strerror or exc}")

    def add_case(self, case: CaseResult, set_id: str) -> None:
        self.add_encoded(set_id, testcase_xml(case, set_id))

    def add_encoded(self, set_id: str, testcase: EncodedTestcase) -> None:
        encoded, kind, elapsed = testcase
        suite = self._suites.get(set_id)
        try:
            if suite is None:
                path = self.target.with_name(
                    f".{self.target.name}.{os.getpid()}.{len(self._suites)}.cases"
                )
                suite = self._suites[set_id] = _Suite(path.open("wb"), path)
            suite.spool.write(b"\n    " + encoded)
        except OSError as exc:
            raise self._error(exc) from None
        suite.counts["tests"] += 1
        if kind is not None:
            suite.counts[kind] += 1
        suite.time += elapsed

    def finish(self) -> Path:
        """Write the document (totals first, then each suite's cases); return its path."""
        totals = dict.fromkeys(_COUNTS, 0)
        for suite in self._suites.values():
            for key in _COUNTS:
                totals[key] += suite.counts[key]
        root = {"name": self.suite_name, **{k: str(v) for k, v in totals.items()}}
        root["time"] = f"{sum(s.time for s in self._suites.values()):.3f}"
        try:
            with self._tmp.open("wb") as out:
                out.write(b"<?xml version='1.0' encoding='utf-8'?>\n")
                if not self._suites:
                    element = ET.Element("testsuites", root)
                    out.write(ET.tostring(element, encoding="unicode").encode())
                else:
                    out.write(_start_tag("testsuites", root))
                    for set_id, suite in self._suites.items():
                        counts = {k: str(v) for k, v in suite.counts.items()}
                        attributes = {"name": set_id, **counts, "time": f"{suite.time:.3f}"}
                        out.write(b"\n  " + _start_tag("testsuite", attributes))
                        suite.spool.close()
                        with suite.path.open("rb") as cases:
                            shutil.copyfileobj(cases, out)
                        out.write(b"\n  </testsuite>")
                    out.write(b"\n</testsuites>")
            os.replace(self._tmp, self.target)
        except OSError as exc:
            remove_quietly(self._tmp)
            raise self._error(exc) from None
        except BaseException:
            remove_quietly(self._tmp)
            raise
        finally:
            self._cleanup()
        return self.target

    def discard(self) -> None:
        """Remove the spooled cases (the run failed before the report could be written)."""
        self._cleanup()
        remove_quietly(self._tmp)

    def _cleanup(self) -> None:
        for suite in self._suites.values():
            with contextlib.suppress(OSError):  # a failed flush (full disk): removed anyway
                suite.spool.close()
            remove_quietly(suite.path)
