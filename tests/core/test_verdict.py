"""The one verdict rule (assay.core.verdict) that every surface uses."""

from __future__ import annotations

import pytest

from assay.core.error_types import ErrorType
from assay.core.results import Status
from assay.core.verdict import case_status, ces_evaluation_status, is_pass

P, F, N = Status.PASSED, Status.FAILED, Status.NOT_EVALUATED


def test_a_case_passes_only_when_every_metric_passed_and_the_run_completed() -> None:
    assert case_status([P, P, None], None) is P
    assert case_status([P, N], None) is N
    assert case_status([P, F, N], None) is F
    assert case_status([None], None) is N  # nothing scored is no pass


@pytest.mark.parametrize("error_type", [e for e in ErrorType if e.name != "RUNTIME_FAILURE"])
def test_an_incomplete_run_never_passes(error_type: ErrorType) -> None:
    expected = P if error_type is ErrorType.METRIC_CALCULATION_FAILURE else N
    assert case_status([P], error_type) is expected
    assert case_status([F], error_type) is F


def test_an_agent_crash_or_timeout_fails_the_case() -> None:
    assert case_status([P], ErrorType.RUNTIME_FAILURE) is F


def test_only_passed_is_a_pass_on_every_wire() -> None:
    assert [is_pass(s) for s in (P, F, N)] == [True, False, False]
    assert [ces_evaluation_status(s.value) for s in (P, F, N)] == ["PASS", "FAIL", "FAIL"]
