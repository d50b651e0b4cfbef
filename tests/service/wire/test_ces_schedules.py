"""Scheduled evaluation runs through Google's CES client, executed by `assay serve`.

The scheduler's clock is replaced by a fake one where a test needs times; the one test
of the real loop only waits (boundedly) for the run a due-now schedule starts.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from google.api_core import exceptions
from google.cloud import ces_v1beta as ces
from google.protobuf import timestamp_pb2
from service_server import RunningServer
from test_ces_expectations_ops import Client, clients  # noqa: F401 - the fixture
from test_ces_rest import PARENT, golden_evaluation

from assay.service import schedules
from assay.service._schedule_times import next_time

T0 = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)  # a Monday
Frequency = ces.ScheduledEvaluationRun.SchedulingConfig.Frequency


def _stamp(moment: datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def _schedule(evaluation: str, **config: object) -> ces.ScheduledEvaluationRun:
    return ces.ScheduledEvaluationRun(
        display_name="nightly",
        active=True,
        request=ces.RunEvaluationRequest(app=PARENT, evaluations=[evaluation]),
        scheduling_config=ces.ScheduledEvaluationRun.SchedulingConfig(**config),
    )


def _wait_done(client: Client, run_name: str) -> ces.EvaluationRun:
    for _ in range(600):
        run = client.get_evaluation_run(name=run_name)
        if run.state != ces.EvaluationRun.EvaluationRunState.RUNNING:
            return run
        time.sleep(0.05)
    raise AssertionError(f"{run_name} did not finish")


def test_schedule_crud_and_execution_on_a_fake_clock(
    clients: tuple[RunningServer, Client],  # noqa: F811
) -> None:
    served, client = clients
    ctx = served._server.config.app.state.ctx
    scheduler = schedules.scheduler_of(ctx)
    now = [T0 - timedelta(hours=1)]
    scheduler.clock = lambda: now[0]
    # Only this test's ticks (and the ones a create or update wakes) run from here on.
    scheduler.tick_s = 3600
    scheduler.wake()
    made = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    schedule = client.create_scheduled_evaluation_run(
        parent=PARENT,
        scheduled_evaluation_run=_schedule(
            made.name, frequency=Frequency.DAILY, start_time=_stamp(T0)
        ),
        scheduled_evaluation_run_id="nightly",
    )
    assert schedule.name == f"{PARENT}/scheduledEvaluationRuns/nightly"
    assert schedule.next_scheduled_execution_time == T0
    assert schedule.total_executions == 0 and schedule.active
    assert list(schedule.request.evaluations) == [made.name]
    assert [s.name for s in client.list_scheduled_evaluation_runs(parent=PARENT)] == [schedule.name]

    assert scheduler.tick() == []  # not due yet
    now[0] = T0 + timedelta(minutes=1)
    started = scheduler.tick()
    assert len(started) == 1
    run_name = f"projects/acme/locations/us/{started[0]}"
    assert scheduler.tick() == []  # taken: the next time moved on
    after = client.get_scheduled_evaluation_run(name=schedule.name)
    assert after.total_executions == 1
    assert after.next_scheduled_execution_time == T0 + timedelta(days=1)
    run = _wait_done(client, run_name)
    assert run.state == ces.EvaluationRun.EvaluationRunState.COMPLETED
    assert run.scheduled_evaluation_run == schedule.name
    assert run.display_name == "nightly #1" and list(run.evaluations) == [made.name]
    scheduler.tick()
    settled = client.get_scheduled_evaluation_run(name=schedule.name)
    assert settled.last_completed_run == run_name

    # Inactive schedules do not run; a stale etag is refused.
    paused = client.update_scheduled_evaluation_run(
        scheduled_evaluation_run=ces.ScheduledEvaluationRun(
            name=schedule.name, active=False, etag=settled.etag
        ),
        update_mask={"paths": ["active"]},
    )
    assert not paused.active
    with pytest.raises((exceptions.Conflict, exceptions.Aborted)):
        client.update_scheduled_evaluation_run(
            scheduled_evaluation_run=ces.ScheduledEvaluationRun(
                name=schedule.name, description="x", etag=after.etag
            ),
            update_mask={"paths": ["description"]},
        )
    now[0] = T0 + timedelta(days=3)
    assert scheduler.tick() == []
    assert len(list(client.list_evaluation_runs(parent=PARENT))) == 1

    # Bad schedules name the field.
    with pytest.raises(exceptions.BadRequest) as no_frequency:
        client.create_scheduled_evaluation_run(
            parent=PARENT, scheduled_evaluation_run=_schedule(made.name)
        )
    assert "schedulingConfig.frequency" in no_frequency.value.message
    with pytest.raises(exceptions.BadRequest) as missing:
        client.create_scheduled_evaluation_run(
            parent=PARENT,
            scheduled_evaluation_run=_schedule(
                f"{PARENT}/evaluations/nope", frequency=Frequency.DAILY
            ),
        )
    assert "request.evaluations[0]" in missing.value.message
    client.delete_scheduled_evaluation_run(name=schedule.name)
    with pytest.raises(exceptions.NotFound):
        client.get_scheduled_evaluation_run(name=schedule.name)


def test_a_due_schedule_is_started_by_the_server(
    clients: tuple[RunningServer, Client],  # noqa: F811
) -> None:
    _served, client = clients
    made = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    # No start time: due at once, and run once (NONE).
    schedule = client.create_scheduled_evaluation_run(
        parent=PARENT, scheduled_evaluation_run=_schedule(made.name, frequency=Frequency.NONE)
    )
    for _ in range(600):
        runs = list(client.list_evaluation_runs(parent=PARENT))
        if runs:
            break
        time.sleep(0.05)
    assert [r.scheduled_evaluation_run for r in runs] == [schedule.name]
    _wait_done(client, runs[0].name)
    got = client.get_scheduled_evaluation_run(name=schedule.name)
    assert got.total_executions == 1 and not got.next_scheduled_execution_time


def test_series_of_times() -> None:
    daily = {"frequency": "DAILY"}
    assert next_time(daily, T0, T0 + timedelta(days=2, hours=1)) == T0 + timedelta(days=3)
    weekly_days = {"frequency": "WEEKLY", "daysOfWeek": [3, 5]}  # Wednesday, Friday
    assert next_time(weekly_days, T0, T0) == T0 + timedelta(days=2)
    assert next_time(weekly_days, T0, T0 + timedelta(days=2)) == T0 + timedelta(days=4)
    biweekly = {"frequency": "BIWEEKLY", "daysOfWeek": [1]}
    assert next_time(biweekly, T0, T0) == T0 + timedelta(days=14)
    assert next_time({"frequency": "NONE"}, T0, T0) is None
