"""`Store`: the one object callers use to reach runs, results, resources and the cache."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from sqlalchemy import Engine

from assay.core.results import CaseResult
from assay.store._bulk import EncodedCase
from assay.store.aligned_judges import AlignedJudgeRepository
from assay.store.api_keys import ApiKeyRepository
from assay.store.connect import create_store_engine, migrate, resolve_url, wal_checkpoints
from assay.store.judge_batches import JudgeBatches
from assay.store.judge_cache import JudgeCache
from assay.store.labels import LabelRepository
from assay.store.resources import ResourceRepository
from assay.store.runs import CaseKey, RunInfo, RunRepository
from assay.store.schema import DEFAULT_APP, RunStatus
from assay.store.secrets import SecretRepository


class Store:
    """Runs and results (plus CES resources and the judge cache) in SQLite or PostgreSQL.

    Open with `Store.open(url)`; the schema is migrated to the newest revision on open.
    Safe to share between threads; several processes may use one store at once.
    """

    def __init__(self, engine: Engine, url: str) -> None:
        """Wrap an engine whose schema is already migrated; prefer `Store.open`."""
        self._engine = engine
        self._url = url
        self._runs = RunRepository(engine, url)
        self.resources = ResourceRepository(engine, url)
        """Evaluations, evaluation datasets and personas (CES resources)."""
        self.judge_cache = JudgeCache(engine, url)
        """Judge replies by request hash."""
        self.judge_batches = JudgeBatches(engine, url)
        """Judge batches submitted to a vendor (`--judge-batch`), until collected."""
        self.api_keys = ApiKeyRepository(engine, url)
        """API keys of the REST service."""
        self.secrets = SecretRepository(engine, url)
        """Per-store secrets of the services (e.g. the page-token signing key)."""
        self.aligned_judges = AlignedJudgeRepository(engine, url)
        """Judges aligned to people's labels, by name and version (`assay judge align`)."""
        self.labels = LabelRepository(engine, url)
        """People's labels on judged results (`store/labels.py`)."""

    @classmethod
    def open(cls, url: str | None = None) -> Store:
        """Open (creating and migrating as needed) the store at `url`.

        None means the SQLite file `.assay/assay.db` in the working directory. See
        `assay.store.connect` for the accepted URLs; others raise StoreError.
        """
        resolved = resolve_url(url)
        shown = resolved.render_as_string(hide_password=True)
        engine = create_store_engine(resolved)
        try:
            migrate(engine, shown)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, shown)

    @property
    def url(self) -> str:
        """The store's URL, password hidden."""
        return self._url

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, for queries the repositories do not offer."""
        return self._engine

    def start_run(
        self,
        *,
        eval_set_ids: Sequence[str],
        metrics: Sequence[str],
        config: Mapping[str, object],
        agent: str | None,
        runs: int,
        name: str | None = None,
        app: str = DEFAULT_APP,
        owner: str | None = None,
        lease_s: float | None = None,
    ) -> str:
        """Record a new RUNNING run and return its id (short, unique, time-ordered).

        `owner` (`store.lease.Owner`) holds it for `lease_s` seconds, renewed by
        `renew_lease` (`store.lease.LeaseKeeper`)."""
        return self._runs.start_run(
            eval_set_ids=eval_set_ids,
            metrics=metrics,
            config=config,
            agent=agent,
            runs=runs,
            name=name,
            app=app,
            owner=owner,
            lease_s=lease_s,
        )

    def claim_run(
        self, run_id: str, *, owner: str, lease_s: float, seen: RunInfo | None = None
    ) -> bool:
        """Take a run over to resume it: RUNNING, owned by `owner` with a lease. With
        `seen`, only if nobody changed its status, owner or lease since (compare-and-set:
        of several processes claiming it, one wins); False otherwise."""
        return self._runs.claim_run(run_id, owner=owner, lease_s=lease_s, seen=seen)

    def renew_lease(self, run_id: str, owner: str, lease_s: float) -> bool:
        """Extend the lease `owner` holds on a RUNNING run; False if it holds it no more."""
        return self._runs.renew_lease(run_id, owner, lease_s)

    def release_lease(self, run_id: str, owner: str) -> None:
        """Let go of a run left RUNNING, so another process may resume it at once."""
        self._runs.release_lease(run_id, owner)

    def set_total(self, run_id: str, total: int) -> None:
        """Record how many case runs the run will produce (for progress displays)."""
        self._runs.set_total(run_id, total)

    def add_case_results(
        self, run_id: str, results: Sequence[CaseResult], *, replace: bool = False
    ) -> None:
        """Store a batch of case results in one transaction and update the run's counts.

        A case run already stored raises DuplicateCaseResultError and stores nothing of
        the batch, unless `replace` is true (then the new result replaces it).
        """
        self._runs.add_case_results(run_id, results, replace=replace)

    def add_encoded(self, run_id: str, encoded: Sequence[EncodedCase]) -> None:
        """Store results encoded by `encode_case` (elsewhere, e.g. in worker processes)
        in one transaction, as `add_case_results` does."""
        self._runs.add_encoded(run_id, encoded)

    def finish_run(
        self,
        run_id: str,
        *,
        summary: Mapping[str, object] | None,
        status: RunStatus | str,
        error: str | None = None,
    ) -> None:
        """Mark the run COMPLETED, ERROR or INTERRUPTED; counts are recomputed.

        `summary` None keeps the stored one; `error` is the message of an ERROR run.
        """
        self._runs.finish_run(run_id, summary=summary, status=status, error=error)

    def reopen_run(self, run_id: str) -> None:
        """Mark a finished run RUNNING again, before resuming it."""
        self._runs.reopen_run(run_id)

    def list_runs(self, limit: int = 50, *, app: str | None = None) -> list[RunInfo]:
        """The newest `limit` runs, newest first."""
        return self._runs.list_runs(limit, app=app)

    def get_run(self, run_id: str) -> RunInfo:
        """The run with this id; RunNotFoundError if there is none."""
        return self._runs.get_run(run_id)

    def find_run(self, ref: str) -> RunInfo:
        """A run by full id, unique id prefix, or `latest`."""
        return self._runs.find_run(ref)

    def delete_run(self, run_id: str) -> None:
        """Delete the run and its case results."""
        self._runs.delete_run(run_id)

    def case_results(self, run_id: str) -> list[dict[str, Any]]:
        """The run's `CaseResult.to_dict()` documents, in the order they were stored."""
        return self._runs.case_results(run_id)

    def completed_case_keys(self, run_id: str, *, include_errors: bool = True) -> set[CaseKey]:
        """(eval_set_id or "", case_id, run_index) of every stored case run (for resume).

        With `include_errors` false, case runs whose execution failed are left out, so
        a resume runs them again (store them with `replace=True`).
        """
        return self._runs.completed_case_keys(run_id, include_errors=include_errors)

    def checkpointing(self) -> contextlib.AbstractContextManager[None]:
        """While other processes write to this store (a pool's workers), copy their
        commits from a SQLite file's WAL into the database in a thread of this one,
        off the writers' way (`connect.wal_checkpoints`); nothing for PostgreSQL."""
        return wal_checkpoints(self._engine)

    def close(self) -> None:
        """Release the store's connections."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self._url!r})"
