"""Cache of judge replies, so re-running unchanged work makes no judge call (SPEC §5).

A reply is stored under a hash of everything that identifies the judge and the request:
backend, endpoint (base URL, or a local model file with its size and mtime), model,
rendered prompt, the metric's prompt version, sample index and generation settings
(`judge_cache_key`). Only replies the metric could parse are stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Text, bindparam, cast, func, select

from assay.errors import StoreError
from assay.models.cache import judge_cache_key as judge_cache_key
from assay.store._repository import Repository, database_errors, upsert_insert
from assay.store.schema import judge_cache
from assay.store.types import utcnow


@dataclass(frozen=True)
class CacheGroup:
    """The cached replies of one judge model: how many, their size, oldest and newest."""

    backend: str
    model: str
    entries: int
    size_bytes: int
    oldest: datetime | None
    newest: datetime | None


#: a lookup of the replies among some keys, built once (`CacheReader`)
_REPLIES_OF_KEYS = select(judge_cache.c.key, judge_cache.c.reply).where(
    judge_cache.c.key.in_(bindparam("keys", expanding=True))
)
#: the same for one key, the usual lookup (a judge call's): no list to expand per call
_REPLY_OF_KEY = select(judge_cache.c.key, judge_cache.c.reply).where(
    judge_cache.c.key == bindparam("key")
)
#: SQLite's bound-parameter limit, with room to spare
_KEYS_PER_LOOKUP = 500


class JudgeCache(Repository):
    """get / put of judge replies (any JSON value except null) by key."""

    def reader(self) -> CacheReader:
        """Lookups over one held connection (see `CacheReader`); close it after."""
        return CacheReader(self._engine, self.url)

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
        with self._engine.connect() as conn:
            return _replies(conn, keys)

    @database_errors
    def put(self, key: str, *, backend: str, model: str, reply: Any) -> None:
        """Store `reply` under `key`, replacing an earlier reply."""
        if reply is None:
            raise StoreError("a judge reply to cache cannot be None (None means a cache miss)")
        with self._writer.begin() as conn:
            stmt = upsert_insert(conn, judge_cache).values(
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
            stmt = upsert_insert(conn, judge_cache)
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
    def stats(self) -> list[CacheGroup]:
        """Entries and reply size (characters of the stored JSON) per backend and model."""
        size = func.coalesce(func.sum(func.length(cast(judge_cache.c.reply, Text))), 0)
        query = (
            select(
                judge_cache.c.backend,
                judge_cache.c.model,
                func.count(),
                size,
                func.min(judge_cache.c.created_at),
                func.max(judge_cache.c.created_at),
            )
            .group_by(judge_cache.c.backend, judge_cache.c.model)
            .order_by(judge_cache.c.backend, judge_cache.c.model)
        )
        with self._engine.connect() as conn:
            return [
                CacheGroup(backend, model, int(count), int(total), oldest, newest)
                for backend, model, count, total, oldest, newest in conn.execute(query)
            ]

    @database_errors
    def clear(self, *, backend: str | None = None, model: str | None = None) -> int:
        """Delete cached replies (only `backend`'s / `model`'s when given); returns how many."""
        stmt = judge_cache.delete()
        if backend is not None:
            stmt = stmt.where(judge_cache.c.backend == backend)
        if model is not None:
            stmt = stmt.where(judge_cache.c.model == model)
        with self._writer.begin() as conn:
            return conn.execute(stmt).rowcount


class CacheReader(Repository):
    """The judge cache's lookups over one connection held from the first lookup to
    `close`, for the many small lookups of a judged run (one per judge call).

    Checking a connection out of the pool, beginning and ending a transaction around
    each lookup cost several times the lookup itself. The held connection reads in
    autocommit mode, each lookup its own statement, so every lookup sees each reply
    committed before it (by this run's writer thread or another process), and no
    transaction stays open between lookups. One thread at a time (a run's event loop).
    """

    def __init__(self, engine: Any, url: str) -> None:
        super().__init__(engine, url)
        self._conn: Connection | None = None

    @database_errors
    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The cached replies among `keys` (misses are absent from the dict)."""
        if self._conn is None:
            self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            return _replies(self._conn, keys)
        except BaseException:
            self.close()  # a broken connection is not kept
            raise

    def close(self) -> None:
        """Give the connection back to the pool (the next lookup takes one again)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _replies(conn: Connection, keys: Iterable[str]) -> dict[str, Any]:
    """The cached replies among `keys` over `conn`, with statements built once: one key
    (a judge call's lookup) by equality, more in chunks under SQLite's parameter limit."""
    wanted = list(dict.fromkeys(keys))
    if len(wanted) == 1:
        return {key: reply for key, reply in conn.execute(_REPLY_OF_KEY, {"key": wanted[0]})}
    found: dict[str, Any] = {}
    for start in range(0, len(wanted), _KEYS_PER_LOOKUP):
        chunk = wanted[start : start + _KEYS_PER_LOOKUP]
        found.update({key: reply for key, reply in conn.execute(_REPLIES_OF_KEYS, {"keys": chunk})})
    return found
