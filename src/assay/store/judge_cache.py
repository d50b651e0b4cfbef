"""Cache of judge replies, so re-running unchanged work makes no judge call (SPEC §5).

A reply is stored under a hash of everything that determines it: backend, model,
rendered prompt, sample index and generation settings (`judge_cache_key`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from assay.errors import StoreError
from assay.judges.cache import judge_cache_key as judge_cache_key
from assay.store._repository import Repository, database_errors
from assay.store.schema import judge_cache
from assay.store.types import utcnow


class JudgeCache(Repository):
    """get / put of judge replies (any JSON value except null) by key."""

    @database_errors
    def get(self, key: str) -> Any | None:
        """The cached reply, or None on a miss."""
        with self._engine.connect() as conn:
            return conn.execute(
                select(judge_cache.c.reply).where(judge_cache.c.key == key)
            ).scalar_one_or_none()

    @database_errors
    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The cached replies among `keys` (misses are absent from the dict)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        with self._engine.connect() as conn:
            # Chunked to stay under SQLite's bound-parameter limit.
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                query = select(judge_cache.c.key, judge_cache.c.reply).where(
                    judge_cache.c.key.in_(chunk)
                )
                found.update({key: reply for key, reply in conn.execute(query)})
        return found

    @database_errors
    def put(self, key: str, *, backend: str, model: str, reply: Any) -> None:
        """Store `reply` under `key`, replacing an earlier reply."""
        if reply is None:
            raise StoreError("a judge reply to cache cannot be None (None means a cache miss)")
        with self._writer.begin() as conn:
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            stmt = dialect.insert(judge_cache).values(
                key=key, backend=backend, model=model, reply=reply, created_at=utcnow()
            )
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["key"],
                    set_={
                        "backend": stmt.excluded.backend,
                        "model": stmt.excluded.model,
                        "reply": stmt.excluded.reply,
                        "created_at": stmt.excluded.created_at,
                    },
                )
            )

    @database_errors
    def put_many(self, entries: Iterable[tuple[str, str, str, Any]]) -> None:
        """Store (key, backend, model, reply) entries in one transaction, later ones winning.

        One commit for many replies: a commit per reply costs about a millisecond on
        SQLite, which a judged run of thousands of calls would otherwise pay each time.
        """
        rows: dict[str, dict[str, Any]] = {}
        now = utcnow()
        for key, backend, model, reply in entries:
            if reply is None:
                raise StoreError("a judge reply to cache cannot be None (None means a cache miss)")
            rows[key] = {
                "key": key,
                "backend": backend,
                "model": model,
                "reply": reply,
                "created_at": now,
            }
        if not rows:
            return
        with self._writer.begin() as conn:
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            stmt = dialect.insert(judge_cache)
            upsert = stmt.on_conflict_do_update(
                index_elements=["key"],
                set_={
                    "backend": stmt.excluded.backend,
                    "model": stmt.excluded.model,
                    "reply": stmt.excluded.reply,
                    "created_at": stmt.excluded.created_at,
                },
            )
            conn.execute(upsert, list(rows.values()))

    @database_errors
    def clear(self) -> int:
        """Delete every cached reply; returns how many there were."""
        with self._writer.begin() as conn:
            return conn.execute(judge_cache.delete()).rowcount
