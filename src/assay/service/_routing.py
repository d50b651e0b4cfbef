"""Route plumbing that keeps the request path lean.

FastAPI runs a plain `def` endpoint in the thread pool and then, because the endpoint
was not a coroutine, validates its return value in the thread pool again: two thread
hand-offs per request on top of the API-key check's one. `OffloadedRoute` makes every
sync endpoint a coroutine that runs the body in the thread pool once (the store's
calls block, so they must stay off the event loop). Its JSON answer (a dict of plain
JSON values, as every route returns) is encoded with orjson in that same thread and
handed back as a finished `Response`, which FastAPI sends as is: no second pass that
validates the dict against `dict[str, Any]` and serialises it again on the loop.
Signatures are unchanged (FastAPI reads the wrapped function's parameters and return
annotation), so routes, OpenAPI and errors stay as they are.

These routes only wait on the store, and they run on threads of their own: at most
`READ_THREADS` reads (GET) and `WRITE_THREADS` writes at a time per process, the rest
queued in arrival order, instead of Starlette's shared pool of 40. Forty request
threads on two cores fought over the GIL: the thread holding the store's write turn
(`assay.store._write_queue`) waited behind dozens of others after each SQLite call,
and every writer queued behind it. Measured with `bench/service_load.py`, p99 over
all requests fell from the shared pool to 8 + 8 threads and again to 4 + 4, and rose
again with fewer write threads (the figures: bench/README.md, issue #15). Reads
and writes have separate limits so that writers waiting for the write turn never hold
the slots reads need. `ASSAY_READ_THREADS` / `ASSAY_WRITE_THREADS` override them
(docs/service.md).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import weakref
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import orjson
from anyio import CapacityLimiter
from fastapi.routing import APIRoute
from starlette.responses import Response

READ_THREADS = int(os.environ.get("ASSAY_READ_THREADS", "4"))
WRITE_THREADS = int(os.environ.get("ASSAY_WRITE_THREADS", "4"))

# One pair of limiters per event loop (a test suite runs apps on many loops in turn).
_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, CapacityLimiter]] = (
    weakref.WeakKeyDictionary()
)


def _limiter(write: bool) -> CapacityLimiter:
    loop = asyncio.get_running_loop()
    pair = _LIMITERS.get(loop)
    if pair is None:
        pair = _LIMITERS[loop] = {
            False: CapacityLimiter(READ_THREADS),
            True: CapacityLimiter(WRITE_THREADS),
        }
    return pair[write]


def in_thread(endpoint: Callable[..., object], *, write: bool = True) -> Callable[..., Any]:
    """`endpoint` as a coroutine function that runs it in a thread, at most
    `WRITE_THREADS` (or `READ_THREADS` with `write=False`) at a time per event loop."""

    def answer(*args: object, **kwargs: object) -> Any:
        result = endpoint(*args, **kwargs)
        if type(result) is dict:
            try:
                return Response(orjson.dumps(result), media_type="application/json")
            except TypeError:
                pass  # a value orjson does not write (an int beyond 64 bits): FastAPI's path
        return result

    @functools.wraps(endpoint)
    async def offloaded(*args: Any, **kwargs: Any) -> Any:
        call = functools.partial(answer, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=_limiter(write))

    return offloaded


class OffloadedRoute(APIRoute):
    """An `APIRoute` whose sync endpoint hops to the thread pool once per request."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            methods = {m.upper() for m in kwargs.get("methods") or ()}
            endpoint = in_thread(endpoint, write=not methods <= {"GET", "HEAD"})
        super().__init__(path, endpoint, **kwargs)
