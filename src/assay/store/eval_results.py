"""Queries of the evaluation service over stored runs and case results.

The service keeps its evaluation runs in the `runs` table (marked by a `service` key in
their config) and every result in `case_results`, whose `case_id` is the evaluation id.
These read-side queries (per-evaluation history, paging, progress counts) and the
run-ownership writes (claiming a run to resume it, heartbeats) are what `Store`'s
generic run methods do not offer.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, bindparam, delete, func, select, update

from assay.core.error_types import ExecutionState
from assay.core.results import Status
from assay.core.verdict import is_pass
from assay.store._document import expand_document
from assay.store._repository import Repository, database_errors
from assay.store.namespace import current_namespace
from assay.store.runs import RunInfo, _run_info
from assay.store.schema import RunStatus, case_results, resources, runs
from assay.store.types import utcnow

SERVICE_KEY = "service"
"""The key of `runs.config` holding a service run's request and evaluations."""


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One stored case run of an evaluation (the evaluation is its `case_id`)."""

    row_id: int
    run_id: str
    case_id: str
    run_index: int
    status: Status
    execution_state: ExecutionState
    created_at: datetime
    document: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Progress:
    """Counts of one run's stored results, in CES's progress terms."""

    completed: int = 0
    passed: int = 0
    failed: int = 0
    error: int = 0


def _result_columns() -> list[Any]:
    c = case_results.c
    return [
        c.id,
        c.run_id,
        c.case_id,
        c.run_index,
        c.status,
        c.execution_state,
        c.created_at,
        c.document,
    ]


def _row(row: Any) -> ResultRow:
    return ResultRow(
        row_id=row.id,
        run_id=row.run_id,
        case_id=row.case_id,
        run_index=row.run_index,
        status=Status(row.status),
        execution_state=ExecutionState(row.execution_state),
        created_at=row.created_at,
        document=expand_document(row.document),
    )


def _app_runs(app: str) -> Any:
    """Runs of `app` in the current namespace (project and location)."""
    ns = current_namespace()
    return and_(runs.c.project == ns.project, runs.c.location == ns.location, runs.c.app == app)


def _of_evaluation(app: str, evaluation_id: str) -> Any:
    return and_(
        case_results.c.case_id == evaluation_id,
        case_results.c.run_id == runs.c.id,
        _app_runs(app),
    )


# The hot read statements are built once per shape with bound parameters: a reused
# statement keeps its cache key, so SQLAlchemy does not rebuild and re-hash the
# expression tree on every request (see `assay.store.resources`).
_OF_EVALUATION = and_(
    case_results.c.case_id == bindparam("evaluation_id"),
    case_results.c.run_id == runs.c.id,
    runs.c.project == bindparam("project"),
    runs.c.location == bindparam("location"),
    runs.c.app == bindparam("app"),
)
_WATERMARK = select(func.count(), func.max(case_results.c.id)).where(_OF_EVALUATION)


@functools.cache
def _results_query(by_run: bool, after: bool, before: bool) -> Select[Any]:
    c = case_results.c
    query = select(*_result_columns()).where(_OF_EVALUATION)
    if by_run:
        query = query.where(c.run_id == bindparam("run_id"))
    if after:
        return query.where(c.id > bindparam("after")).order_by(c.id).limit(bindparam("limit"))
    if before:
        query = query.where(c.id < bindparam("before"))
    return query.order_by(c.id.desc()).limit(bindparam("limit"))


def _evaluation_params(app: str, evaluation_id: str) -> dict[str, Any]:
    ns = current_namespace()
    return {
        "evaluation_id": evaluation_id,
        "project": ns.project,
        "location": ns.location,
        "app": app,
    }


class EvaluationResults(Repository):
    """The service's queries (build with `EvaluationResults.of(store)`)."""

    @database_errors
    def results(
        self,
        app: str,
        evaluation_id: str,
        *,
        limit: int,
        before: int | None = None,
        after: int | None = None,
        run_id: str | None = None,
    ) -> list[ResultRow]:
        """Results of one evaluation: newest first (`before` a row id), or oldest first
        from `after` (a row id) when given."""
        query = _results_query(run_id is not None, after is not None, before is not None)
        params = {
            **_evaluation_params(app, evaluation_id),
            "run_id": run_id,
            "after": after,
            "before": before,
            "limit": limit,
        }
        with self._engine.connect() as conn:
            return [_row(r) for r in conn.execute(query, params)]

    @database_errors
    def result(self, app: str, evaluation_id: str, run_id: str, run_index: int) -> ResultRow | None:
        """One result by its evaluation, run and run index; None when there is none."""
        query = select(*_result_columns()).where(
            _of_evaluation(app, evaluation_id),
            case_results.c.run_id == run_id,
            case_results.c.run_index == run_index,
        )
        with self._engine.connect() as conn:
            row = conn.execute(query.limit(1)).first()
        return None if row is None else _row(row)

    @database_errors
    def delete_results(
        self,
        app: str,
        evaluation_id: str,
        *,
        run_id: str | None = None,
        run_index: int | None = None,
    ) -> int:
        """Delete the evaluation's results (all, or one by run and index); how many went.

        Results are children of their evaluation: deleting it deletes them, so an
        evaluation created again under the same id starts without history.
        """
        c = case_results.c
        app_runs = select(runs.c.id).where(_app_runs(app))
        where = [c.case_id == evaluation_id, c.run_id.in_(app_runs)]
        if run_id is not None:
            where.append(c.run_id == run_id)
        if run_index is not None:
            where.append(c.run_index == run_index)
        with self._writer.begin() as conn:
            gone = conn.execute(delete(case_results).where(*where))
        return int(gone.rowcount or 0)

    @database_errors
    def watermark(self, app: str, evaluation_id: str) -> tuple[int, int]:
        """(count, highest row id) of the evaluation's results: changes with every write."""
        with self._engine.connect() as conn:
            count, top = conn.execute(_WATERMARK, _evaluation_params(app, evaluation_id)).one()
        return int(count), int(top or 0)

    @database_errors
    def progress(self, run_id: str) -> Progress:
        c = case_results.c
        query = (
            select(c.status, c.execution_state, func.count())
            .where(c.run_id == run_id)
            .group_by(c.status, c.execution_state)
        )
        counts = {"completed": 0, "passed": 0, "failed": 0, "error": 0}
        with self._engine.connect() as conn:
            for status, state, n in conn.execute(query):
                if state == ExecutionState.ERROR:
                    counts["error"] += n
                    continue
                counts["completed"] += n
                # NOT_EVALUATED is no pass (assay.core.verdict): CES counts it failed.
                counts["passed" if is_pass(status) else "failed"] += n
        return Progress(**counts)

    @database_errors
    def runs_page(self, app: str, *, limit: int, before: str | None = None) -> list[RunInfo]:
        """The app's runs, newest first, with ids below `before` (a page token)."""
        query = select(runs).where(_app_runs(app))
        if before is not None:
            query = query.where(runs.c.id < before)
        query = query.order_by(runs.c.id.desc()).limit(limit)
        with self._engine.connect() as conn:
            return [_run_info(r) for r in conn.execute(query)]

    @database_errors
    def unfinished_service_runs(self) -> list[RunInfo]:
        """Service runs left RUNNING or INTERRUPTED (candidates for resuming)."""
        states = (RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value)
        query = select(runs).where(runs.c.status.in_(states)).order_by(runs.c.id)
        with self._engine.connect() as conn:
            found = [_run_info(r) for r in conn.execute(query)]
        return [r for r in found if SERVICE_KEY in r.config]

    @database_errors
    def claim(self, run: RunInfo, config: Mapping[str, Any]) -> bool:
        """Take over `run` (a new owner in its config, status RUNNING) if nobody else did.

        A compare-and-set on the run's status and update time as read: of several
        servers starting at once, exactly one wins.
        """
        where = [runs.c.id == run.id, runs.c.status == run.status]
        if run.updated_at is not None:
            where.append(runs.c.updated_at == run.updated_at)
        values = {
            "config": dict(config),
            "status": RunStatus.RUNNING.value,
            "finished_at": None,
            "error": None,
            "updated_at": utcnow(),
        }
        with self._writer.begin() as conn:
            changed = conn.execute(update(runs).where(*where).values(**values))
        return changed.rowcount == 1

    @database_errors
    def heartbeat(self, run_id: str, instance: str) -> bool:
        """Mark a running run as alive (its update time) if executor `instance` owns it.

        False when the run is no longer this owner's: another server took it over (or
        it was deleted or finished), so the caller must stop executing it.
        """
        with self._writer.begin() as conn:
            row = conn.execute(
                select(runs.c.config).where(
                    runs.c.id == run_id, runs.c.status == RunStatus.RUNNING.value
                )
            ).first()
            owner = (row.config.get(SERVICE_KEY) or {}).get("owner") or {} if row else {}
            if owner.get("instance") != instance:
                return False
            conn.execute(update(runs).where(runs.c.id == run_id).values(updated_at=utcnow()))
        return True

    @database_errors
    def cancel(self, run_id: str, message: str) -> bool:
        """Mark an unfinished service run CANCELLED; False if it had already finished.

        A compare-and-set on the status: a run that completes at the same moment stays
        COMPLETED. Its owner sees the status at its next heartbeat and stops.
        """
        unfinished = (RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value)
        now = utcnow()
        values = {
            "status": RunStatus.CANCELLED.value,
            "error": message,
            "finished_at": now,
            "updated_at": now,
        }
        with self._writer.begin() as conn:
            changed = conn.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.status.in_(unfinished))
                .values(**values)
            )
        return changed.rowcount == 1

    @database_errors
    def set_service_flag(self, run_id: str, flag: str, value: Any) -> None:
        """Set one key of a service run's config (e.g. that its operation was deleted)."""
        with self._writer.begin() as conn:
            query = select(runs.c.config).where(runs.c.id == run_id).with_for_update()
            row = conn.execute(query).first()
            if row is None:
                return
            config = dict(row.config)
            config[SERVICE_KEY] = {**(config.get(SERVICE_KEY) or {}), flag: value}
            conn.execute(update(runs).where(runs.c.id == run_id).values(config=config))

    @database_errors
    def locations(self, project: str) -> list[str]:
        """The locations of `project` that hold resources or runs, sorted."""
        queries = [
            select(resources.c.location).where(resources.c.project == project).distinct(),
            select(runs.c.location).where(runs.c.project == project).distinct(),
        ]
        found: set[str] = set()
        with self._engine.connect() as conn:
            for query in queries:
                found.update(row.location for row in conn.execute(query))
        return sorted(found)
