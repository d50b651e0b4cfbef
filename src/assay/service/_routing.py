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
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import orjson
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response


def in_thread(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """`endpoint` as a coroutine function that runs it in the thread pool."""

    def answer(*args: Any, **kwargs: Any) -> Any:
        result = endpoint(*args, **kwargs)
        if type(result) is dict:
            try:
                return Response(orjson.dumps(result), media_type="application/json")
            except TypeError:
                pass  # a value orjson does not write (an int beyond 64 bits): FastAPI's path
        return result

    @functools.wraps(endpoint)
    async def offloaded(*args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(answer, *args, **kwargs)

    return offloaded


class OffloadedRoute(APIRoute):
    """An `APIRoute` whose sync endpoint hops to the thread pool once per request."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            endpoint = in_thread(endpoint)
        super().__init__(path, endpoint, **kwargs)
