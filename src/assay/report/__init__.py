"""Reports of a run: terminal table, JSON (ADK-compatible cases), JUnit XML, CSV rows."""

from assay.report.console import render_results, summary_text
from assay.report.csv_report import write_csv
from assay.report.json_report import build_report, case_to_adk, write_json
from assay.report.junit import build_junit, write_junit
from assay.report.writers import write_reports

__all__ = [
    "build_junit",
    "build_report",
    "case_to_adk",
    "render_results",
    "summary_text",
    "write_csv",
    "write_json",
    "write_junit",
    "write_reports",
]
