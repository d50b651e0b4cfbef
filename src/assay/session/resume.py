"""Resuming an interrupted run from the store.

A run is identified by what decides its results: the eval set ids, the metric names,
the config (criteria plus the run options that change results: run counts, tool
behaviour, run method, simulated user) and the agent. `find_resumable` finds the
newest unfinished (RUNNING or INTERRUPTED) run of exactly that; `Resumption` loads its
completed case runs so the engine skips them (`arun(skip=..., previous=...)`) and the
final summary still covers every case. A run killed outright stays RUNNING in the
store, so it is found the same way as one stopped with Ctrl-C — but only once its
owner is gone (`store.lease`): a run another live process is executing is never
resumed (`find_resumable` skips it, `Resumption.claim` takes a run over only if nobody
else took it first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assay.core.results import CaseResult
from assay.store.lease import LEASE_S, owner_alive
from assay.store.schema import RunStatus

if TYPE_CHECKING:
    from assay.store import Store, StoreRecorder
    from assay.store.runs import RunInfo

UNFINISHED = (RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value)


#: the key of a stored run's config that records where the run was made (git commit,
#: assay version); not part of the run's identity
ENVIRONMENT_KEY = "environment"


def find_resumable(
    db: Store,
    *,
    eval_set_ids: Sequence[str],
    metrics: Sequence[str],
    config: Mapping[str, object],
    agent: str | None,
    app: str | None = None,
    busy: list[RunInfo] | None = None,
) -> RunInfo | None:
    """The newest unfinished run of exactly this evaluation whose owner is gone, if any
    (where it was made, the config's `ENVIRONMENT_KEY`, does not count).

    Runs of this evaluation another live process is executing are skipped, and added
    to `busy` when given.
    """
    wanted = json.loads(json.dumps(dict(config)))  # as the store gives it back
    wanted.pop(ENVIRONMENT_KEY, None)
    for info in db.list_runs(limit=200, app=app):
        stored = {k: v for k, v in info.config.items() if k != ENVIRONMENT_KEY}
        if (
            info.status in UNFINISHED
            and info.eval_set_ids == list(eval_set_ids)
            and info.metrics == list(metrics)
            and info.agent == agent
            and stored == wanted
        ):
            if not owner_alive(info):
                return info
            if busy is not None:
                busy.append(info)
    return None


@dataclass
class Resumption:
    """The completed part of a run being resumed (empty for a new run)."""

    run_id: str
    skip: set[tuple[str, str, int]] = field(default_factory=set)
    previous: list[CaseResult] = field(default_factory=list)

    @classmethod
    def load(
        cls, db: Store, run_id: str, *, owner: str | None = None, lease_s: float = LEASE_S
    ) -> Resumption:
        """Mark the run RUNNING again (held by `owner`), then read its stored case runs."""
        if owner is None:
            db.reopen_run(run_id)
        else:
            db.claim_run(run_id, owner=owner, lease_s=lease_s)
        return cls._read(db, run_id)

    @classmethod
    def claim(
        cls, db: Store, found: RunInfo, *, owner: str, lease_s: float = LEASE_S
    ) -> Resumption | None:
        """Take over `found` (as `find_resumable` read it) and read its case runs; None
        when another process claimed it first."""
        if not db.claim_run(found.id, owner=owner, lease_s=lease_s, seen=found):
            return None
        return cls._read(db, found.id)

    @classmethod
    def _read(cls, db: Store, run_id: str) -> Resumption:
        from pydantic import TypeAdapter

        reader = TypeAdapter(CaseResult)
        previous = [reader.validate_python(doc) for doc in db.case_results(run_id)]
        return cls(run_id, db.completed_case_keys(run_id), previous)

    def recorder(self, db: Store) -> StoreRecorder:
        """A recorder for the run whose total counts the case runs already done too."""
        from assay.store import StoreRecorder

        already = len(self.skip)

        class _Recorder(StoreRecorder):
            def on_start(self, total: int) -> None:
                # The engine counts the case runs still to do; the run's total counts all.
                super().on_start(total + already)

        return _Recorder(db, self.run_id)
