"""When a CES ScheduledEvaluationRun is due: its scheduling config as a series of times.

`schedulingConfig` is `{frequency, startTime?, daysOfWeek?}`. The series starts at
`startTime` (the create time when unset); DAILY adds a day, WEEKLY and BIWEEKLY a week
or two, or, with `daysOfWeek` (ISO days, 1 = Monday ... 7 = Sunday), step to the next
of those days at the start time's time of day (BIWEEKLY: in every other week counted
from the start's week). NONE runs once. After a run the next time is the first of the
series after now: a server that was down starts one run, not one per missed time.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from assay.service.errors import InvalidArgument

FREQUENCIES = ("NONE", "DAILY", "WEEKLY", "BIWEEKLY")
_STEP_DAYS = {"DAILY": 1, "WEEKLY": 7, "BIWEEKLY": 14}
# More steps than any series needs to pass a year of missed times, day by day.
_MAX_STEPS = 800


def parse_time(value: object, field: str) -> datetime:
    """An RFC 3339 time as a UTC datetime; INVALID_ARGUMENT naming `field` otherwise."""
    if not isinstance(value, str):
        raise InvalidArgument.field(field, f"expected an RFC 3339 time, got {value!r}")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument.field(
            field, f"{value!r} is not an RFC 3339 time (e.g. 2026-01-02T09:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise InvalidArgument.field(field, f"{value!r} has no time zone; end it with Z")
    return moment.astimezone(UTC)


def check_config(config: object) -> None:
    """INVALID_ARGUMENT (naming the field) unless `config` is a valid schedulingConfig."""
    field = "schedulingConfig"
    if not isinstance(config, Mapping):
        raise InvalidArgument.field(field, "expected an object {frequency, startTime, daysOfWeek}")
    unknown = sorted(set(config) - {"frequency", "startTime", "daysOfWeek"})
    if unknown:
        raise InvalidArgument.field(f"{field}.{unknown[0]}", "unknown field")
    frequency = config.get("frequency")
    if frequency not in FREQUENCIES:
        raise InvalidArgument.field(
            f"{field}.frequency", f"required: one of {', '.join(FREQUENCIES)} (got {frequency!r})"
        )
    if "startTime" in config:
        parse_time(config["startTime"], f"{field}.startTime")
    days = config.get("daysOfWeek", [])
    if not isinstance(days, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 7 for d in days
    ):
        raise InvalidArgument.field(
            f"{field}.daysOfWeek", "expected ISO days of the week, 1 (Monday) to 7 (Sunday)"
        )
    if days and frequency not in ("WEEKLY", "BIWEEKLY"):
        raise InvalidArgument.field(
            f"{field}.daysOfWeek", f"only WEEKLY and BIWEEKLY schedules name days (not {frequency})"
        )


def start_of(config: Mapping[str, object], created: datetime) -> datetime:
    if "startTime" in config:
        return parse_time(config["startTime"], "schedulingConfig.startTime")
    return created


def _in_series(config: Mapping[str, Any], start: datetime, moment: datetime) -> bool:
    days = config.get("daysOfWeek") or []
    if moment.isoweekday() not in days:
        return False
    if config["frequency"] != "BIWEEKLY":
        return True
    start_week = start.date() - timedelta(days=start.isoweekday() - 1)
    return ((moment.date() - start_week).days // 7) % 2 == 0


def first_time(config: Mapping[str, object], start: datetime) -> datetime:
    """The first time of the series (the start, or the first named day from it)."""
    if not config.get("daysOfWeek"):
        return start
    moment = start
    for _ in range(_MAX_STEPS):
        if _in_series(config, start, moment):
            return moment
        moment += timedelta(days=1)
    return moment


def next_time(config: Mapping[str, Any], start: datetime, now: datetime) -> datetime | None:
    """The first time of the series after `now` (None: a NONE schedule that has run)."""
    frequency = config["frequency"]
    if frequency == "NONE":
        return None
    moment = first_time(config, start)
    if moment > now:
        return moment
    if not config.get("daysOfWeek"):
        step = timedelta(days=_STEP_DAYS[frequency])
        missed = (now - moment) // step + 1
        return moment + missed * step
    # Named days: walk day by day from the last full week before now.
    moment += timedelta(days=max(0, (now - moment).days - 14))
    for _ in range(_MAX_STEPS):
        moment += timedelta(days=1)
        if moment > now and _in_series(config, start, moment):
            return moment
    return None
