"""The evaluation service's FastAPI application (`create_app`)."""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from assay.agents.base import Agent
from assay.service import labels_api, mcp_server, runs_api, schedules, wire
from assay.service._logs import install_log_redaction
from assay.service._threads import shorten_thread_turns
from assay.service.auth import ApiKeyMiddleware, BodyLimitMiddleware
from assay.service.context import ServiceContext
from assay.service.errors import install_handlers
from assay.service.ratelimit import RateLimiter, RateLimitMiddleware
from assay.service.routes import collection_router, generic_router
from assay.service.settings import DEFAULT_LIMITS, NO_BUDGET, JudgeBudget, ServiceLimits
from assay.service.ui_session import SessionSigner, UiLogin
from assay.store import Store
from assay.view import create_view_app

DESCRIPTION = """\
CES-compatible evaluation service: evaluations (golden or scenario), evaluation
datasets, personas, evaluation runs and results of one or more apps (`apps/{app}`).

Authenticate with `Authorization: Bearer <key>` (`assay keys create`). Errors use the
Google API status shape `{"error": {"code", "status", "message", "details"}}`.
"""


def create_app(
    store: Store,
    *,
    auth: bool = True,
    agent: Agent | None = None,
    agent_spec: str | None = None,
    max_body_bytes: int = 4_000_000,
    run_lease_s: float = 120.0,
    case_timeout_s: float = 300.0,
    on_close: Sequence[Callable[[], object]] = (),
    rate_limit: float | None = None,
    rate_burst: int | None = None,
    judge_model: str | None = None,
    files_root: str | Path | None = None,
    ui_secret: bytes | None = None,
    api_docs: bool = True,
    limits: ServiceLimits | None = None,
    judge_budget: JudgeBudget | None = None,
    prices_file: str | None = None,
) -> FastAPI:
    """The service over `store`; `agent` is what evaluation runs call.

    With `agent_spec` (how `agent` was named: module:attr, ADK folder or URL) and a
    store other processes can open, each run executes in a worker process of its own
    that loads the agent from the spec; without, runs execute in this process.

    `auth=False` accepts requests without a key (callers must only allow that on a
    loopback address; `assay serve` does). A run whose server has not sent a heartbeat
    for `run_lease_s` seconds is taken over and resumed by this one; a case run of a run
    this server executes that takes longer than `case_timeout_s` ends in ERROR. `on_close` runs
    when the app shuts down, after its runs have stopped (last first). `rate_limit`:
    requests per second per API key (per client address without auth), in bursts of
    `rate_burst` (default: one second's worth); None: no limit. `judge_model` judges
    what the service itself is asked to judge (Vertex's pointwise and pairwise metrics).
    `files_root`: the folder CES imports and exports may use (`file://` URIs under it);
    None refuses them, so a client cannot make the server read or write its files.
    `ui_secret` signs the viewer's session cookies (`ui_session`); None: a random one,
    so sessions end when the server does (`assay serve --workers` shares one).
    `api_docs=False` serves no `/docs` and `/redoc` pages (they load their scripts from a
    CDN; `/openapi.json` stays).
    `limits`: what one request may bring, on every surface (default: `DEFAULT_LIMITS`).
    `judge_budget`: the caps on the judges of every run the server starts (a request may
    ask for less); `prices_file`: a price table laid over the shipped one (`--prices`).
    """
    install_log_redaction()  # no query string (an API key in `?key=`) in the logs
    ctx = ServiceContext(
        store=store,
        agent=agent,
        agent_spec=agent_spec if agent is not None else None,
        max_body_bytes=max_body_bytes,
        run_lease_s=run_lease_s,
        judge_model=judge_model,
        case_timeout_s=case_timeout_s,
        files_root=Path(files_root).resolve() if files_root is not None else None,
        limits=limits if limits is not None else DEFAULT_LIMITS,
        judge_budget=judge_budget if judge_budget is not None else NO_BUDGET,
        prices_file=prices_file,
    )
    # Entered first, so left last: work started in the background (a large import) is
    # finished when the server shuts down, before the store closes.
    hooks: list[contextlib.AbstractAsyncContextManager[None]] = [_background_finished(ctx)]

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for close in on_close:
                stack.callback(close)
            for hook in hooks:
                await stack.enter_async_context(hook)
            yield

    app = FastAPI(
        title="assay evaluation service",
        description=DESCRIPTION,
        version="1",
        lifespan=lifespan,
        docs_url="/docs" if api_docs else None,
        redoc_url="/redoc" if api_docs else None,
    )
    app.state.ctx = ctx
    app.openapi = functools.partial(_openapi, app)  # type: ignore[method-assign]
    install_handlers(app)
    app.include_router(collection_router)
    # Run routes go before the generic /v1/{name} routes, which would shadow them.
    # The scheduler after the runs' executor: it starts runs through it.
    for install in (runs_api.install, labels_api.install, schedules.install, mcp_server.install):
        hook = install(app, ctx)
        if hook is not None:
            hooks.append(hook)
    app.include_router(generic_router)
    # Google's own wire shapes (CES v1beta REST) over the same context.
    wire.install(app)
    # The viewer's pages (`assay view`) at /ui, behind the same API-key middleware.
    # Without API keys (loopback only), its review queue writes labels as `assay view` does.
    app.mount("/ui", create_view_app(store, local_writes=not auth))
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    if rate_limit is not None:
        # After the key check (it names the client), before the body is read.
        app.add_middleware(RateLimitMiddleware, limiter=RateLimiter(rate_limit, rate_burst))
    if auth:
        # Added last, so it runs first: unauthenticated requests are not read at all.
        signer = SessionSigner(ui_secret)
        app.state.ui_signer = signer
        app.add_middleware(ApiKeyMiddleware, store=store, ui=UiLogin(store, signer))
    return app


@contextlib.asynccontextmanager
async def _background_finished(ctx: ServiceContext) -> AsyncIterator[None]:
    """On shutdown, wait for the threads in `ctx.parts["background"]` to end."""
    yield
    import anyio.to_thread

    threads = ctx.parts.get("background")
    for thread in list(threads) if isinstance(threads, list) else []:
        await anyio.to_thread.run_sync(thread.join)


def freeze_startup_heap() -> None:
    """Put everything allocated so far out of the cyclic garbage collector's reach.

    A server process holds hundreds of thousands of long-lived objects once its app is
    built (modules, pydantic and SQLAlchemy structures, the app). Every full collection
    scanned them all with the GIL held, during which every request in flight waited —
    the service's worst latencies under load. Frozen objects are never collected, so
    call this once per server process after its app is built, not in a process that
    keeps building apps (such as a test suite). It also shortens the process's GIL
    turns (`_threads`).
    """
    gc.collect()
    gc.freeze()
    shorten_thread_turns()


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, minus the 422 it lists on every operation with parameters.

    The service never answers 422: request-validation errors are answered 400
    INVALID_ARGUMENT in the status shape (see `errors.install_handlers`), which every
    route declares.
    """
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                operation.get("responses", {}).pop("422", None)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema
