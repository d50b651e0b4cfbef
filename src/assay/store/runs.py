"""Runs and their case results: the repository behind `Store`'s run methods."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from assay.core.error_types import ExecutionState
from assay.core.results import CaseResult, Status
from assay.errors import StoreError
from assay.store._bulk import (
    EXECUTION_STATE,
    STATUS,
    EncodedCase,
    case_row,
    encode_cases,
    insert_encoded,
)
from assay.store._document import expand_document
from assay.store._json import gc_paused
from assay.store._repository import Repository, database_errors, upsert_insert
from assay.store.exceptions import DuplicateCaseResultError, RunNotFoundError
from assay.store.namespace import DEFAULT_LOCATION, DEFAULT_PROJECT, current_namespace
from assay.store.schema import DEFAULT_APP, RunStatus, case_results
from assay.store.schema import runs as runs_table
from assay.store.types import utcnow

CaseKey = tuple[str, str, int]
"""(eval_set_id or "", case_id, run_index): what identifies a case run within a run."""

FINAL_STATUSES = (
    RunStatus.COMPLETED,
    RunStatus.ERROR,
    RunStatus.INTERRUPTED,
    RunStatus.CANCELLED,
)


def case_key(result: CaseResult) -> CaseKey:
    """The key `completed_case_keys` reports for `result`."""
    return (result.eval_set_id or "", result.case_id, result.run_index)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One stored run: what was evaluated, its state and its counts so far.

    Counts are over stored case runs (one per case and repetition); `summary` is the
    engine's summary dict once the run finished, `{}` before.
    """

    id: str
    created_at: datetime
    finished_at: datetime | None
    status: RunStatus
    eval_set_ids: list[str]
    metrics: list[str]
    agent: str | None
    case_count: int
    passed: int
    failed: int
    not_evaluated: int
    summary: dict[str, Any]
    name: str | None = None
    app: str = DEFAULT_APP
    runs: int = 1
    total: int | None = None
    errors: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    updated_at: datetime | None = None
    project: str = DEFAULT_PROJECT
    location: str = DEFAULT_LOCATION
    owner: str | None = None
    lease_until: datetime | None = None


# Crockford base32 (no i, l, o, u): ids are safe to read aloud and type.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_RANDOM_BITS = 30


class _RunIds:
    """Time-ordered ids: 10 chars of milliseconds, 6 random chars.

    Ids sort by creation time; within one millisecond of one process the random part
    increments so ids stay ordered.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def new(self) -> str:
        with self._lock:
            ms = time.time_ns() // 1_000_000
            if ms <= self._last_ms:
                ms, rnd = self._last_ms, self._last_random + 1
                if rnd >= 1 << _RANDOM_BITS:
                    ms, rnd = ms + 1, secrets.randbits(_RANDOM_BITS - 1)
            else:
                # Leave headroom below the top so increments rarely overflow.
                rnd = secrets.randbits(_RANDOM_BITS - 1)
            self._last_ms, self._last_random = ms, rnd
        return _base32(ms, 10) + _base32(rnd, 6)


def _base32(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))


new_run_id = _RunIds().new


class RunRepository(Repository):
    """Runs and case results; every write is one transaction."""

    @database_errors
    def start_run(
        self,
        *,
        eval_set_ids: Sequence[str],
        metrics: Sequence[str],
        config: Mapping[str, Any],
        agent: str | None,
        runs: int,
        name: str | None = None,
        app: str = DEFAULT_APP,
        owner: str | None = None,
        lease_s: float | None = None,
    ) -> str:
        run_id = new_run_id()
        now = utcnow()
        ns = current_namespace()
        values = {
            "id": run_id,
            "project": ns.project,
            "location": ns.location,
            "app": app,
            "name": name,
            "status": RunStatus.RUNNING.value,
            "agent": agent,
            "eval_set_ids": list(eval_set_ids),
            "metrics": list(metrics),
            "config": dict(config),
            "runs": runs,
            "created_at": now,
            "updated_at": now,
            "owner": owner,
            "lease_until": now + timedelta(seconds=lease_s) if owner and lease_s else None,
        }
        with self._writer.begin() as conn:
            conn.execute(insert(runs_table), values)
        return run_id

    @database_errors
    def set_total(self, run_id: str, total: int) -> None:
        with self._writer.begin() as conn:
            self._update_run(conn, run_id, total=total)

    @database_errors
    def add_case_results(
        self, run_id: str, results: Sequence[CaseResult], *, replace: bool = False
    ) -> None:
        if not results:
            return
        if replace:
            self._replace_case_results(run_id, results)
        else:
            self.add_encoded(run_id, encode_cases(results))

    @database_errors
    def add_encoded(self, run_id: str, encoded: Sequence[EncodedCase]) -> None:
        """Insert results already encoded by `_bulk.encode_cases`, in one transaction."""
        if not encoded:
            return
        now = utcnow()
        try:
            increments = _increments(encoded)
            with self._writer.begin() as conn:
                # The run's counters first: its UPDATE also says whether the run exists
                # (one statement fewer while this holds the write turn, `_write_queue`).
                self._update_run(conn, run_id, **increments, updated_at=now)
                insert_encoded(conn, run_id, encoded, now)
        except IntegrityError as exc:
            keys = [(e[0], e[1], e[2]) for e in encoded]
            raise self._integrity_error(run_id, keys, exc) from exc

    def _replace_case_results(self, run_id: str, results: Sequence[CaseResult]) -> None:
        # Last one wins within the batch, as it would across batches.
        latest = list({case_key(r): r for r in results}.values())
        now = utcnow()
        rows = [case_row(run_id, r, now) for r in latest]
        with self._writer.begin() as conn:
            self._require_run(conn, run_id)
            conn.execute(self._upsert(conn), rows)
            self._update_run(conn, run_id, **self._recount(conn, run_id), updated_at=now)

    @database_errors
    def finish_run(
        self,
        run_id: str,
        *,
        summary: Mapping[str, Any] | None,
        status: RunStatus | str,
        error: str | None = None,
    ) -> None:
        if status not in {s.value for s in FINAL_STATUSES}:
            raise StoreError(
                f"cannot finish run {run_id} with status {status!r}; "
                f"expected one of {', '.join(s.value for s in FINAL_STATUSES)}"
            )
        now = utcnow()
        values: dict[str, Any] = {
            "status": RunStatus(status).value,
            "finished_at": now,
            "updated_at": now,
            "error": error,
            "lease_until": None,  # its owner lets it go
        }
        if summary is not None:
            values["summary"] = dict(summary)
        with self._writer.begin() as conn:
            self._require_run(conn, run_id)
            self._update_run(conn, run_id, **self._recount(conn, run_id), **values)

    @database_errors
    def reopen_run(self, run_id: str) -> None:
        """Mark a finished (e.g. interrupted) run RUNNING again, to resume it."""
        with self._writer.begin() as conn:
            self._update_run(
                conn,
                run_id,
                status=RunStatus.RUNNING.value,
                finished_at=None,
                error=None,
                updated_at=utcnow(),
            )

    @database_errors
    def claim_run(
        self, run_id: str, *, owner: str, lease_s: float, seen: RunInfo | None = None
    ) -> bool:
        """Make `owner` the run's owner, RUNNING with a lease of `lease_s` seconds.

        With `seen` (the run as read before), only if its status, owner and lease are
        still the ones read: of several processes claiming one run, exactly one wins.
        """
        now = utcnow()
        c = runs_table.c
        query = update(runs_table).where(c.id == run_id)
        if seen is not None:
            query = query.where(
                c.status == RunStatus(seen.status).value,
                c.owner.is_not_distinct_from(seen.owner),
                c.lease_until.is_not_distinct_from(seen.lease_until),
            )
        values = {
            "status": RunStatus.RUNNING.value,
            "finished_at": None,
            "error": None,
            "updated_at": now,
            "owner": owner,
            "lease_until": now + timedelta(seconds=lease_s),
        }
        with self._writer.begin() as conn:
            if seen is None:
                self._require_run(conn, run_id)
            return bool(conn.execute(query.values(**values)).rowcount)

    @database_errors
    def renew_lease(self, run_id: str, owner: str, lease_s: float) -> bool:
        """Extend a RUNNING run's lease held by `owner`; False if it holds it no more."""
        c = runs_table.c
        query = (
            update(runs_table)
            .where(c.id == run_id, c.owner == owner, c.status == RunStatus.RUNNING.value)
            .values(lease_until=utcnow() + timedelta(seconds=lease_s))
        )
        with self._writer.begin() as conn:
            return bool(conn.execute(query).rowcount)

    @database_errors
    def release_lease(self, run_id: str, owner: str) -> None:
        """Let go of a run left RUNNING (anyone may resume it now)."""
        c = runs_table.c
        query = update(runs_table).where(c.id == run_id, c.owner == owner).values(lease_until=None)
        with self._writer.begin() as conn:
            conn.execute(query)

    @database_errors
    def list_runs(self, limit: int = 50, *, app: str | None = None) -> list[RunInfo]:
        query = (
            select(runs_table)
            .order_by(runs_table.c.created_at.desc(), runs_table.c.id.desc())
            .limit(limit)
        )
        if app is not None:
            query = query.where(runs_table.c.app == app)
        with self._engine.connect() as conn:
            return [_run_info(row) for row in conn.execute(query)]

    @database_errors
    def get_run(self, run_id: str) -> RunInfo:
        with self._engine.connect() as conn:
            row = conn.execute(select(runs_table).where(runs_table.c.id == run_id)).first()
        if row is None:
            raise RunNotFoundError(f"no run with id {run_id!r} in the store")
        return _run_info(row)

    @database_errors
    def find_run(self, ref: str) -> RunInfo:
        """A run by full id, unique id prefix, or `latest`."""
        if not ref:
            raise RunNotFoundError("no run reference given; pass a run id, a prefix or 'latest'")
        if ref == "latest":
            found = self.list_runs(limit=1)
            if not found:
                raise RunNotFoundError("the store holds no runs yet")
            return found[0]
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = select(runs_table).where(runs_table.c.id.like(f"{escaped}%", escape="\\")).limit(6)
        with self._engine.connect() as conn:
            rows = list(conn.execute(query))
        exact = [r for r in rows if r.id == ref]
        if exact or len(rows) == 1:
            return _run_info((exact or rows)[0])
        if not rows:
            raise RunNotFoundError(f"no run id starts with {ref!r}")
        shown = ", ".join(r.id for r in rows[:5])
        raise StoreError(
            f"run reference {ref!r} is ambiguous: matches {shown}; give more of the id"
        )

    @database_errors
    def delete_run(self, run_id: str) -> None:
        with self._writer.begin() as conn:
            self._require_run(conn, run_id)
            # Explicit rather than relying on ON DELETE CASCADE, which SQLite only
            # honours when the connection enabled foreign keys.
            conn.execute(case_results.delete().where(case_results.c.run_id == run_id))
            conn.execute(runs_table.delete().where(runs_table.c.id == run_id))

    @database_errors
    def case_results(self, run_id: str) -> list[dict[str, Any]]:
        query = (
            select(case_results.c.document)
            .where(case_results.c.run_id == run_id)
            .order_by(case_results.c.id)
        )
        with self._engine.connect() as conn, gc_paused():
            self._require_run(conn, run_id)
            return [expand_document(row[0]) for row in conn.execute(query)]

    @database_errors
    def completed_case_keys(self, run_id: str, *, include_errors: bool = True) -> set[CaseKey]:
        c = case_results.c
        query = select(c.eval_set_id, c.case_id, c.run_index).where(c.run_id == run_id)
        if not include_errors:
            query = query.where(c.execution_state != ExecutionState.ERROR.value)
        with self._engine.connect() as conn:
            self._require_run(conn, run_id)
            return {(e, k, i) for e, k, i in conn.execute(query)}

    # -- helpers ------------------------------------------------------------------

    @staticmethod
    def _require_run(conn: Connection, run_id: str) -> None:
        if conn.execute(select(runs_table.c.id).where(runs_table.c.id == run_id)).first() is None:
            raise RunNotFoundError(f"no run with id {run_id!r} in the store")

    @staticmethod
    def _update_run(conn: Connection, run_id: str, **values: object) -> None:
        result = conn.execute(update(runs_table).where(runs_table.c.id == run_id).values(**values))
        if result.rowcount == 0:
            raise RunNotFoundError(f"no run with id {run_id!r} in the store")

    @staticmethod
    def _upsert(conn: Connection) -> Any:
        stmt = upsert_insert(conn, case_results)
        replaced = ("status", "execution_state", "error_type", "latency_s", "created_at")
        return stmt.on_conflict_do_update(
            index_elements=["run_id", "eval_set_id", "case_id", "run_index"],
            set_={name: stmt.excluded[name] for name in (*replaced, "document")},
        )

    @staticmethod
    def _recount(conn: Connection, run_id: str) -> dict[str, int]:
        c = case_results.c
        query = (
            select(c.status, c.execution_state, func.count())
            .where(c.run_id == run_id)
            .group_by(c.status, c.execution_state)
        )
        counts = {"case_count": 0, "passed": 0, "failed": 0, "not_evaluated": 0, "errors": 0}
        for status, state, n in conn.execute(query):
            counts["case_count"] += n
            counts[_COUNT_COLUMN[status]] += n
            if state == ExecutionState.ERROR:
                counts["errors"] += n
        return counts

    def _integrity_error(
        self, run_id: str, keys: Sequence[CaseKey], exc: IntegrityError
    ) -> StoreError:
        """Say which case runs clashed (the transaction was rolled back: look again)."""
        seen: set[CaseKey] = set()
        repeated = []
        for key in keys:
            if key in seen:
                repeated.append(key)
            seen.add(key)
        try:
            stored = self.completed_case_keys(run_id)
        except RunNotFoundError as missing:
            return missing
        clashes = repeated or [k for k in keys if k in stored]
        if not clashes:
            return StoreError(f"could not store case results for run {run_id}: {exc.orig}")
        shown = "; ".join(_describe(k) for k in clashes[:3])
        more = f" and {len(clashes) - 3} more" if len(clashes) > 3 else ""
        where = "given twice in one batch" if repeated else f"already stored in run {run_id}"
        return DuplicateCaseResultError(f"{shown}{more}: {where}")


_COUNT_COLUMN = {
    Status.PASSED.value: "passed",
    Status.FAILED.value: "failed",
    Status.NOT_EVALUATED.value: "not_evaluated",
}


def _increments(encoded: Iterable[EncodedCase]) -> dict[str, Any]:
    counts = {"case_count": 0, "passed": 0, "failed": 0, "not_evaluated": 0, "errors": 0}
    for e in encoded:
        counts["case_count"] += 1
        counts[_COUNT_COLUMN[e[STATUS]]] += 1
        counts["errors"] += e[EXECUTION_STATE] == ExecutionState.ERROR
    return {name: getattr(runs_table.c, name) + n for name, n in counts.items()}


def _describe(key: CaseKey) -> str:
    eval_set, case, index = key
    where = f" of eval set {eval_set!r}" if eval_set else ""
    return f"case {case!r}{where} (run index {index})"


def _run_info(row: Row[Any]) -> RunInfo:
    return RunInfo(
        id=row.id,
        created_at=row.created_at,
        finished_at=row.finished_at,
        status=RunStatus(row.status),
        eval_set_ids=list(row.eval_set_ids),
        metrics=list(row.metrics),
        agent=row.agent,
        case_count=row.case_count,
        passed=row.passed,
        failed=row.failed,
        not_evaluated=row.not_evaluated,
        summary=dict(row.summary or {}),
        name=row.name,
        app=row.app,
        runs=row.runs,
        total=row.total,
        errors=row.errors,
        config=dict(row.config),
        error=row.error,
        updated_at=row.updated_at,
        project=row.project,
        location=row.location,
        owner=row.owner,
        lease_until=row.lease_until,
    )
