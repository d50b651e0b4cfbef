"""Judge calls through a vendor's batch interface (`--judge-batch`): about half the price
for work that may wait.

A `BatchQueue` sits between a `ModelClient` and a backend that can batch
(`BatchBackend`: OpenAI-compatible ``/v1/files`` + ``/v1/batches``, Anthropic's Message
Batches). Each call is queued
under its reply-cache key, which is also its ``custom_id`` in the batch; once no new call
has come for `window_s` (or `max_wait_s` after the first, or at `max_items`), the queue
submits one batch, polls it with back-off and resolves every waiting call from the output
and errors files. A call the batch returns as failed (or leaves out) comes back as a
`ModelCallError`, and the client makes it live. The prompts, the reply parsing and the
cache key are those of a live call, so a verdict is the same either way.

The ids of submitted batches and their keys are kept in a `BatchLedger` (the store's
``judge_batches`` table): a run resumed after a crash finds the batch its keys went into
and collects it instead of paying twice. A batch is marked collected only after its
replies are in the reply cache (`settle`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from assay.errors import StoreError
from assay.models.types import BackendReply, GenerationSettings, ModelCallError

logger = logging.getLogger(__name__)

BatchOutcome = BackendReply | ModelCallError


@runtime_checkable
class BatchBackend(Protocol):
    """A backend that can send many requests as one batch."""

    backend: str
    model: str
    endpoint: str

    def batch_request(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> dict[str, Any]:
        """The request body a live call would send for `messages`."""
        ...

    async def submit_batch(self, requests: Mapping[str, dict[str, Any]]) -> str:
        """Submit `requests` (by custom id) as one batch; its id. Raises ModelCallError."""
        ...

    async def collect_batch(self, batch_id: str) -> dict[str, BatchOutcome] | None:
        """The outcome of each request of a finished batch (a failed or missing one is
        a ModelCallError), or None while it runs. Raises ModelCallError."""
        ...


class BatchLedger(Protocol):
    """Where the ids of submitted batches are kept (the store's `JudgeBatches`)."""

    def open_batches(self, *, backend: str, endpoint: str, model: str) -> dict[str, list[str]]:
        """The batches not yet collected: batch id -> the custom ids it holds."""
        ...

    def record(
        self, batch_id: str, *, backend: str, endpoint: str, model: str, keys: Sequence[str]
    ) -> None: ...

    def mark_collected(self, batch_ids: Sequence[str]) -> None: ...


class BatchQueue:
    """Queues one backend's calls into batches and hands each call its own outcome."""

    def __init__(
        self,
        backend: BatchBackend,
        ledger: BatchLedger | None = None,
        *,
        window_s: float = 0.25,
        max_wait_s: float = 2.0,
        max_items: int = 50_000,
        first_poll_s: float = 0.5,
        max_poll_s: float = 30.0,
    ) -> None:
        self.backend = backend
        self.ledger = ledger
        self.window_s = window_s
        self.max_wait_s = max_wait_s
        self.max_items = max_items
        self.first_poll_s = first_poll_s
        self.max_poll_s = max_poll_s
        #: batches submitted by this queue (not those recovered from the ledger)
        self.submitted: list[str] = []
        self._pending: dict[str, dict[str, Any]] = {}
        self._first_at = 0.0
        self._last_at = 0.0
        self._waiters: dict[str, asyncio.Future[BatchOutcome]] = {}
        self._ready: dict[str, BackendReply] = {}
        self._recovered: dict[str, str] | None = None  # key -> batch id
        self._recovered_keys: dict[str, list[str]] = {}
        self._recovering: asyncio.Lock | None = None
        self._collecting: set[str] = set()
        self._collected: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._flusher: asyncio.Task[None] | None = None

    async def call(
        self, key: str, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BatchOutcome:
        """The outcome of one request, by way of a batch (one submitted before a crash
        when the ledger holds `key`)."""
        ready = self._ready.pop(key, None)
        if ready is not None:
            return ready
        await self._recover()
        assert self._recovered is not None
        future: asyncio.Future[BatchOutcome] = asyncio.get_running_loop().create_future()
        self._waiters[key] = future
        batch_id = self._recovered.get(key)
        if batch_id is not None:
            self._start_collecting(batch_id, self._recovered_keys[batch_id])
        else:
            self._queue(key, self.backend.batch_request(messages, settings))
        return await future

    async def holds(self, key: str) -> bool:
        """`key`'s request is in a batch already (submitted before a crash, or collected
        with another call's batch): paid for, whatever this run does with it."""
        if key in self._ready:
            return True
        await self._recover()
        return self._recovered is not None and key in self._recovered

    async def _recover(self) -> None:
        # Once, for every call: a call that came while the ledger was being read must
        # not find it empty (and send again what a batch before a crash holds).
        if self._recovered is not None:
            return
        if self._recovering is None:
            self._recovering = asyncio.Lock()
        async with self._recovering:
            if self._recovered is None:
                self._recovered = await self._read_ledger()

    async def _read_ledger(self) -> dict[str, str]:
        """The open batches of the ledger: key -> batch id (their keys kept by id)."""
        if self.ledger is None:
            return {}
        b = self.backend
        try:
            found = await asyncio.to_thread(
                self.ledger.open_batches, backend=b.backend, endpoint=b.endpoint, model=b.model
            )
        except StoreError as exc:
            logger.warning("cannot read the submitted judge batches: %s", exc)
            return {}
        recovered: dict[str, str] = {}
        for batch_id, keys in found.items():
            self._recovered_keys[batch_id] = list(keys)
            for key in keys:
                recovered[key] = batch_id
        return recovered

    def _queue(self, key: str, request: dict[str, Any]) -> None:
        now = time.monotonic()
        if not self._pending:
            self._first_at = now
        self._last_at = now
        self._pending[key] = request
        if len(self._pending) >= self.max_items:
            self._spawn(self._submit(self._take()))
        elif self._flusher is None or self._flusher.done():
            self._flusher = self._spawn(self._flush_when_quiet())

    def _take(self) -> dict[str, dict[str, Any]]:
        batch, self._pending = self._pending, {}
        return batch

    async def _flush_when_quiet(self) -> None:
        while self._pending:
            now = time.monotonic()
            due = min(self._last_at + self.window_s, self._first_at + self.max_wait_s)
            if now >= due:
                # Submitted and polled in a task of its own: the calls queued while this
                # batch runs start the next window at once, not when it returns.
                self._spawn(self._submit(self._take()))
                return
            await asyncio.sleep(due - now)

    def _spawn(self, work: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _submit(self, batch: dict[str, dict[str, Any]]) -> None:
        if not batch:
            return
        keys = list(batch)
        try:
            batch_id = await self.backend.submit_batch(batch)
        except ModelCallError as exc:
            self._resolve_all(keys, exc)
            return
        self.submitted.append(batch_id)
        if self.ledger is not None:
            b = self.backend
            try:
                await asyncio.to_thread(
                    self.ledger.record,
                    batch_id,
                    backend=b.backend,
                    endpoint=b.endpoint,
                    model=b.model,
                    keys=keys,
                )
            except StoreError as exc:  # the run goes on; only a resume would pay twice
                logger.warning("judge batch %s is not recorded in the store: %s", batch_id, exc)
        await self._collect(batch_id, keys)

    def _start_collecting(self, batch_id: str, keys: list[str]) -> None:
        if batch_id not in self._collecting:
            self._collecting.add(batch_id)
            self._spawn(self._collect(batch_id, keys, first_poll_s=0.0))

    async def _collect(
        self, batch_id: str, keys: list[str], first_poll_s: float | None = None
    ) -> None:
        delay = self.first_poll_s if first_poll_s is None else first_poll_s
        while True:
            await asyncio.sleep(delay)
            delay = min(max(delay, self.first_poll_s) * 2, self.max_poll_s)
            try:
                results = await self.backend.collect_batch(batch_id)
            except ModelCallError as exc:
                if exc.retryable:
                    continue
                self._resolve_all(keys, exc)
                return
            if results is not None:
                break
        for key in keys:
            outcome = results.get(key) or ModelCallError(
                f"batch {batch_id} returned nothing for this request", retryable=False
            )
            future = self._waiters.pop(key, None)
            if future is not None and not future.done():
                future.set_result(outcome)
            elif isinstance(outcome, BackendReply):
                self._ready[key] = outcome  # asked for later in this run
        self._collected.append(batch_id)

    def _resolve_all(self, keys: Sequence[str], error: ModelCallError) -> None:
        for key in keys:
            future = self._waiters.pop(key, None)
            if future is not None and not future.done():
                future.set_result(error)

    async def settle(self) -> None:
        """Mark the batches collected so far as collected in the ledger; call once
        their replies are in the reply cache."""
        done, self._collected = self._collected, []
        if not done or self.ledger is None:
            return
        try:
            await asyncio.to_thread(self.ledger.mark_collected, done)
        except StoreError as exc:
            logger.warning("cannot mark judge batches %s collected: %s", ", ".join(done), exc)

    async def aclose(self) -> None:
        """Stop waiting for batches (they stay open in the ledger for a resume)."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._resolve_all(
            list(self._waiters), ModelCallError("the judge batch was abandoned", retryable=False)
        )
