"""The reply cache of model calls: the store's `judge_cache` table, or memory without a store.

Judges use it by default; the simulated user when a run asks for it (its replies are
fresh by default, so a scenario run twice meets a fresh user).

Reads are one indexed query per prompt (all its samples at once) and stay on the event
loop: they take a fraction of a millisecond. Writes are buffered and written in batches,
one transaction each, from a worker thread, keeping the loop free for model calls;
`flush` waits for them. Pending writes are visible to
reads at once, so a prompt judged twice in one run is called once.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import orjson

from assay.errors import StoreError

# Sorted keys: equal requests always hash the same (the options match the store's
# canonical JSON).
_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


#: bumped when what goes into a key changes, so older entries are never read again
KEY_VERSION = 2


def reply_cache_key(
    *,
    backend: str,
    model: str,
    prompt: object,
    sample: int,
    settings: Mapping[str, object],
    endpoint: str = "",
    prompt_version: str | None = None,
    judge_version: str | None = None,
) -> str:
    """A hex SHA-256 of the request; `prompt` is the rendered text or message list.

    `endpoint` is where the model is served (two servers with a model of the same name
    are two judges); `prompt_version` the metric's prompt template id (`name.vN`);
    `judge_version` an aligned judge's `NAME@VERSION` (`assay.judges.align`), so a new
    version of an aligned judge never reads the replies of an older one. Left out of
    the key when None, so the keys of every other request are unchanged.
    """
    payload = {
        "v": KEY_VERSION,
        "backend": backend,
        "endpoint": endpoint,
        "model": model,
        "prompt": prompt,
        "prompt_version": prompt_version,
        "sample": sample,
        "settings": dict(settings),
    }
    if judge_version is not None:
        payload["judge_version"] = judge_version
    try:
        data = orjson.dumps(payload, option=_CANONICAL)
    except TypeError as exc:
        raise StoreError(f"cannot encode value as JSON: {exc}") from exc
    return hashlib.sha256(data).hexdigest()


#: the name the store and `assay cache` know the key function by (the table predates
#: the model layer; its keys are unchanged)
judge_cache_key = reply_cache_key


class CacheLookups(Protocol):
    """Lookups over a held connection (the store's `CacheReader`)."""

    def get_many(self, keys: Iterable[str]) -> dict[str, object]: ...

    def close(self) -> None: ...


class CacheTable(Protocol):
    """The persistent table behind `StoreReplyCache` (the store's `JudgeCache`)."""

    def get_many(self, keys: Iterable[str]) -> dict[str, object]: ...

    def put_many(self, entries: Iterable[tuple[str, str, str, object]]) -> None: ...

    def reader(self) -> CacheLookups:
        """Lookups over one held connection, for many small ones (close it after)."""
        ...


class HasCacheTable(Protocol):
    """A store: anything with a `judge_cache` table."""

    @property
    def judge_cache(self) -> CacheTable: ...


class ReplyCache(Protocol):
    """Where model replies are kept between calls and runs."""

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The cached replies among `keys` (misses are absent)."""
        ...

    def put(self, key: str, *, backend: str, model: str, reply: str) -> None:
        """Remember `reply` under `key` (may be written later; see `flush`)."""
        ...

    async def flush(self) -> None:
        """Wait until every reply put so far is written."""
        ...

    @property
    def write_errors(self) -> list[str]:
        """Why writes failed, one entry per reply not written (the run goes on)."""
        ...


class MemoryReplyCache:
    """Replies kept for the life of this object only (runs without a store)."""

    def __init__(self) -> None:
        self._replies: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._replies)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        return {k: self._replies[k] for k in keys if k in self._replies}

    def put(self, key: str, *, backend: str, model: str, reply: str) -> None:
        self._replies[key] = reply

    async def flush(self) -> None:
        return None

    @property
    def write_errors(self) -> list[str]:
        return []


class NoReplyCache:
    """A reply cache that keeps nothing: every request is a fresh call."""

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        return {}

    def put(self, key: str, *, backend: str, model: str, reply: str) -> None:
        return None

    async def flush(self) -> None:
        return None

    @property
    def write_errors(self) -> list[str]:
        return []


class StoreReplyCache:
    """Replies in the store's judge cache, shared by every run using that store."""

    #: writes handed to the worker thread at once
    batch_size = 64

    def __init__(self, cache: CacheTable) -> None:
        self._cache = cache
        self._pending: dict[str, tuple[str, str, str]] = {}  # key -> (backend, model, reply)
        self._writer: asyncio.Task[None] | None = None
        self._errors: list[str] = []
        self._reader: CacheLookups | None = None  # held from the first lookup to `flush`

    @property
    def write_errors(self) -> list[str]:
        return list(self._errors)

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        missing: list[str] = []
        for key in keys:
            pending = self._pending.get(key)
            if pending is not None:
                found[key] = pending[2]
            else:
                missing.append(key)
        if missing:
            if self._reader is None:
                self._reader = self._cache.reader()
            for key, value in self._reader.get_many(missing).items():
                # Only text replies are ours; anything else is treated as a miss and
                # overwritten by the next reply for that key.
                if isinstance(value, str):
                    found[key] = value
        return found

    def put(self, key: str, *, backend: str, model: str, reply: str) -> None:
        self._pending[key] = (backend, model, reply)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            batch = list(self._pending.items())[: self.batch_size]
            await asyncio.to_thread(self._write, batch)
            for key, entry in batch:
                # A newer reply for the same key may have arrived meanwhile: keep it.
                if self._pending.get(key) is entry:
                    del self._pending[key]

    def _write(self, batch: list[tuple[str, tuple[str, str, str]]]) -> None:
        try:
            self._cache.put_many((key, *entry) for key, entry in batch)
        except StoreError as exc:
            self._errors.extend([str(exc)] * len(batch))

    async def flush(self) -> None:
        while self._writer is not None and not self._writer.done():
            await self._writer
        if self._pending:
            # Puts made outside a running writer (e.g. the loop ended) are written here.
            await self._drain()
        reader, self._reader = self._reader, None
        if reader is not None:  # its connection goes back to the pool
            reader.close()
