"""Counters of model calls: calls, cache hits, retries, errors and tokens, per backend."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Self

#: the counters, in the order the summary and the CLI show them
COUNTERS: tuple[str, ...] = (
    "calls",
    "cache_hits",
    "retries",
    "errors",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
)


@dataclass
class CallCounts:
    """One set of counters.

    - `calls`: requests sent to a backend (each retry is a call too);
    - `cache_hits`: samples answered from the cache (or by an identical request
      already in flight), with no call;
    - `retries`: calls repeated after a retryable failure;
    - `errors`: samples that failed for good (after their retries);
    - `input_tokens` / `output_tokens`: as reported by the backends;
    - `cached_tokens`: the input tokens the vendors read from their prompt caches.
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class CallStats(CallCounts):
    """Totals over every backend, plus the same counters per backend name."""

    per_backend: dict[str, CallCounts] = field(default_factory=dict)
    #: replies that could not be written to the cache (the run went on without them)
    cache_write_errors: int = 0

    def _bump(self, backend: str, name: str, amount: int = 1) -> None:
        setattr(self, name, getattr(self, name) + amount)
        counts = self.per_backend.get(backend)
        if counts is None:
            counts = self.per_backend[backend] = CallCounts()
        setattr(counts, name, getattr(counts, name) + amount)

    def record_call(self, backend: str) -> None:
        self._bump(backend, "calls")

    def record_tokens(
        self, backend: str, input_tokens: int, output_tokens: int, cached_tokens: int = 0
    ) -> None:
        self._bump(backend, "input_tokens", input_tokens)
        self._bump(backend, "output_tokens", output_tokens)
        if cached_tokens:
            self._bump(backend, "cached_tokens", cached_tokens)

    def record_cache_hits(self, backend: str, count: int = 1) -> None:
        self._bump(backend, "cache_hits", count)

    def record_retry(self, backend: str) -> None:
        self._bump(backend, "retries")

    def record_error(self, backend: str) -> None:
        self._bump(backend, "errors")

    def snapshot(self) -> Self:
        """A copy of the counters now (to report one run of a shared pool, see `since`)."""
        return type(self)(
            **self.as_dict(),
            per_backend={k: CallCounts(**v.as_dict()) for k, v in self.per_backend.items()},
            cache_write_errors=self.cache_write_errors,
        )

    def since(self, earlier: CallStats) -> Self:
        """The work done since `earlier` (a snapshot of these stats)."""
        per_backend: dict[str, CallCounts] = {}
        for backend, counts in self.per_backend.items():
            before = earlier.per_backend.get(backend, CallCounts()).as_dict()
            delta = {k: v - before[k] for k, v in counts.as_dict().items()}
            if any(delta.values()):
                per_backend[backend] = CallCounts(**delta)
        before_totals = earlier.as_dict()
        return type(self)(
            **{k: v - before_totals[k] for k, v in self.as_dict().items()},
            per_backend=per_backend,
            cache_write_errors=self.cache_write_errors - earlier.cache_write_errors,
        )

    def as_dict(self) -> dict[str, int]:
        """The totals only."""
        return {name: getattr(self, name) for name in COUNTERS}
