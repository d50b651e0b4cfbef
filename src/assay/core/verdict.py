"""The one verdict rule of a case run, used by every surface that shows one.

CLI reports, `assay.evaluate`, the store's counts (`assay runs`) and the service's CES
results (`evaluationStatus`, progress and aggregated pass counts) all decide through
these functions, so one run never shows two verdicts:

- a case is PASSED only when every requested metric passed and the agent could do its
  job: an agent crash or timeout (RUNTIME_FAILURE) fails it; any other reason the run
  did not complete as asked (a FAKE tool call no mock answered, quota, simulated user,
  not supported, bad case settings) keeps what was scored but never lets it pass;
- on CES's two-valued wire (`PASS | FAIL`) only PASSED is `PASS`: NOT_EVALUATED is
  not a pass.
"""

from __future__ import annotations

from collections.abc import Iterable

from assay.core.error_types import ErrorType
from assay.core.results import Status, combine_statuses

CES_PASS, CES_FAIL = "PASS", "FAIL"


def case_status(metric_statuses: Iterable[Status | None], error_type: ErrorType | None) -> Status:
    """The case's status from its metrics' statuses (None: informational) and why the
    run did not complete, if it did not."""
    statuses = [s for s in metric_statuses if s is not None]
    if error_type == ErrorType.RUNTIME_FAILURE:
        # The agent under test crashed or timed out: that is a failure of the case.
        return Status.FAILED
    if error_type is not None and error_type != ErrorType.METRIC_CALCULATION_FAILURE:
        # The run did not complete as asked: what was scored may still fail the case,
        # but it cannot pass on a partial or faked-without-answer conversation.
        statuses.append(Status.NOT_EVALUATED)
    return combine_statuses(statuses)


def is_pass(status: Status | str) -> bool:
    """Whether a case status (or its stored value) counts as a pass anywhere."""
    return Status(status) is Status.PASSED


def ces_evaluation_status(status: Status | str) -> str:
    """CES `evaluationStatus` of a completed case run: PASS only for PASSED."""
    return CES_PASS if is_pass(status) else CES_FAIL
