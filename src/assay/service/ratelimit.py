"""Per-client request rate limits of the evaluation service (`assay serve --rate-limit`).

A token bucket per client: an API key (its id, set by `ApiKeyMiddleware`, which runs
first), or the client's address when auth is off or for the public documentation
paths. A bucket holds `burst` tokens and refills at `rate` per second; a request takes
one, and one that finds the bucket empty is answered `429 RESOURCE_EXHAUSTED` with a
`Retry-After` header, before it is read or reaches a route. Buckets live in the server
process: with `--workers N` each worker keeps its own, so a client can get up to N
times the rate in total (the kernel spreads its connections over the workers).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from assay.service.errors import RateLimited

#: clients remembered at once; the least recently seen are forgotten first (a full
#: bucket is what a forgotten client gets back, so forgetting is never stricter)
MAX_CLIENTS = 10_000


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """Token buckets keyed by client; `take` says whether a request may go ahead."""

    def __init__(
        self, rate: float, burst: int | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not rate > 0:
            raise ValueError(f"the rate must be positive (got {rate})")
        self.rate = rate
        self.burst = max(1, burst if burst is not None else math.ceil(rate))
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()  # gRPC handlers share the limiter from threads

    def take(self, client: str) -> float:
        """0 if `client` may make a request now (one token taken), else the seconds to wait."""
        now = self._clock()
        with self._lock:
            bucket = self._buckets.pop(client, None)
            if bucket is None:
                bucket = _Bucket(float(self.burst), now)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            self._buckets[client] = bucket
            if len(self._buckets) > MAX_CLIENTS:
                self._buckets.popitem(last=False)
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return 0.0
            return (1 - bucket.tokens) / self.rate


def client_of(scope: Scope) -> str:
    """Who a request counts against: its API key, else the client's address."""
    key = (scope.get("state") or {}).get("api_key")
    if key is not None:
        return f"key:{key.id}"
    client = scope.get("client")
    return f"addr:{client[0]}" if client else "addr:unknown"


class RateLimitMiddleware:
    """Answers 429 to a client over its rate; everything else passes through."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        wait = self.limiter.take(client_of(scope))
        if wait > 0:
            retry = max(1, math.ceil(wait))
            limit = f"{self.limiter.rate:g} requests/s (bursts of {self.limiter.burst})"
            error = RateLimited(
                f"rate limit exceeded: this client may make {limit}; retry in {retry} s"
            )
            await error.response({"Retry-After": str(retry)})(scope, receive, send)
            return
        await self.app(scope, receive, send)
