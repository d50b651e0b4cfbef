"""The one JUnit writer: the document it writes, case by case, is the one ElementTree
writes for the whole tree of the same case runs, byte for byte (issue #34 merged the
loaded run's `write_junit` and the streamed run's writer into `JUnitWriter`)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_samples import sample_result

from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, EvalResult, MetricResult, Status
from assay.errors import AssayError
from assay.report.junit import JUnitWriter, add_testcase, build_junit, junit_document, write_junit


def whole_tree(result: EvalResult, suite_name: str = "assay") -> bytes:
    """The reference: the `<testsuites>` tree built whole, indented and written by
    ElementTree (what `write_junit` wrote before the writers were merged)."""
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
    tree = ET.ElementTree(root)
    ET.indent(tree)
    out = io.BytesIO()
    tree.write(out, encoding="utf-8", xml_declaration=True)
    return out.getvalue()


# XML 1.0 text: no control characters but tab and newline, no surrogates.
_char = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff")
_text = st.lists(_char | st.sampled_from(["\t", "\n", "<", "&", '"', "'", "]]>"]), max_size=12).map(
    "".join
)
_score = st.none() | st.floats(min_value=0, max_value=1)


@st.composite
def _metric(draw: st.DrawFn, name: str) -> MetricResult:
    return MetricResult(
        name=name,
        score=draw(_score),
        threshold=draw(_score),
        status=draw(st.none() | st.sampled_from(Status)),
        explanation=draw(st.none() | _text),
        error_type=draw(st.none() | st.sampled_from(ErrorType)),
    )


@st.composite
def _case(draw: st.DrawFn) -> CaseResult:
    names = draw(st.lists(st.sampled_from(["a", "b", "c/d"]), unique=True, max_size=3))
    return CaseResult(
        case_id=draw(_text.filter(bool)),
        status=draw(st.sampled_from(Status)),
        metrics={n: draw(_metric(n)) for n in names},
        run_index=draw(st.integers(0, 2)),
        latency_s=draw(st.none() | st.floats(min_value=0, max_value=1e4)),
        failure=draw(st.booleans()),
        error=draw(st.none() | _text),
        error_type=draw(st.none() | st.sampled_from(ErrorType)),
        eval_set_id=draw(st.none() | st.sampled_from(["home", "other", "<&>"])),
    )


_results = st.builds(
    lambda cases, set_id: EvalResult(summary={}, cases=cases, eval_set_id=set_id),
    st.lists(_case(), max_size=8),
    st.none() | st.sampled_from(["set", "x y"]),
)


@settings(max_examples=150, deadline=None)
@given(_results)
def test_the_writer_writes_the_whole_trees_bytes(result: EvalResult) -> None:
    assert junit_document(result) == whole_tree(result)


@settings(max_examples=40, deadline=None)
@given(result=_results)
def test_the_file_is_the_document(
    tmp_path_factory: pytest.TempPathFactory, result: EvalResult
) -> None:
    target = tmp_path_factory.mktemp("junit") / "sub" / "junit.xml"
    assert write_junit(result, target) == target
    assert target.read_bytes() == whole_tree(result)
    assert [p.name for p in target.parent.iterdir()] == ["junit.xml"]  # no spool left


def test_build_junit_is_the_written_tree(tmp_path: Path) -> None:
    result = sample_result()
    written = ET.parse(write_junit(result, tmp_path / "j.xml")).getroot()
    assert ET.tostring(build_junit(result)) == ET.tostring(written)
    assert written.get("tests") == "4"


def test_cases_added_one_by_one_spool_on_disk_until_finish(tmp_path: Path) -> None:
    result = sample_result()
    writer = JUnitWriter(tmp_path / "j.xml")
    for case in result.cases:
        writer.add_case(case, case.eval_set_id or "assay")
    spools = sorted(p.name for p in tmp_path.iterdir())
    assert spools and all(name.endswith(".cases") for name in spools)
    assert not (tmp_path / "j.xml").exists()
    writer.finish()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.xml"]
    assert (tmp_path / "j.xml").read_bytes() == whole_tree(result)


def test_a_discarded_writer_leaves_nothing_and_keeps_an_earlier_report(tmp_path: Path) -> None:
    (tmp_path / "j.xml").write_text("earlier")
    writer = JUnitWriter(tmp_path / "j.xml")
    writer.add_case(sample_result().cases[0], "home")
    writer.discard()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.xml"]
    assert (tmp_path / "j.xml").read_text() == "earlier"


def test_a_report_where_a_directory_is_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "j.xml").mkdir()
    with pytest.raises(AssayError, match=r"cannot write JUnit report .*j\.xml"):
        write_junit(sample_result(), tmp_path / "j.xml")
    assert [p.name for p in tmp_path.iterdir()] == ["j.xml"]
