"""Judge batches submitted to a vendor's batch interface (`--judge-batch`), until collected.

Each row is one batch: its id at the vendor, the judge it went to (backend, endpoint,
model) and the reply-cache keys of its requests. A run resumed after a crash reads the
open batches of its judges and collects them instead of paying for the requests again
(`assay.models.batch`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import insert, select, update

from assay.store._repository import Repository, database_errors
from assay.store.schema import judge_batches
from assay.store.types import utcnow


class JudgeBatches(Repository):
    """The `BatchLedger` of `assay.models.batch`, in the store."""

    @database_errors
    def open_batches(self, *, backend: str, endpoint: str, model: str) -> dict[str, list[str]]:
        """The batches of this judge not yet collected: batch id -> its keys."""
        t = judge_batches
        query = select(t.c.batch_id, t.c.request_keys).where(
            t.c.backend == backend,
            t.c.endpoint == endpoint,
            t.c.model == model,
            t.c.collected_at.is_(None),
        )
        with self._engine.connect() as conn:
            return {
                batch_id: [str(k) for k in keys]
                for batch_id, keys in conn.execute(query)
                if isinstance(keys, list)
            }

    @database_errors
    def record(
        self, batch_id: str, *, backend: str, endpoint: str, model: str, keys: Sequence[str]
    ) -> None:
        """Remember a batch just submitted."""
        with self._writer.begin() as conn:
            conn.execute(
                insert(judge_batches).values(
                    batch_id=batch_id,
                    backend=backend,
                    endpoint=endpoint,
                    model=model,
                    request_keys=list(keys),
                    submitted_at=utcnow(),
                )
            )

    @database_errors
    def mark_collected(self, batch_ids: Sequence[str]) -> None:
        """The batches' replies are in the judge cache: never collect them again."""
        if not batch_ids:
            return
        with self._writer.begin() as conn:
            conn.execute(
                update(judge_batches)
                .where(judge_batches.c.batch_id.in_(list(batch_ids)))
                .values(collected_at=utcnow())
            )
