"""`assay serve --workers N`: the service in N processes sharing one port.

uvicorn's supervisor starts N worker processes and keeps them running; each builds its
own app with `app_from_environment` from the settings `assay serve` checked and wrote
to `SETTINGS_ENV` (the store is already migrated by then, so workers only open it).
The store is the only shared state: API keys, resources, etags, page tokens (signed
with the store's secret) and run ownership (heartbeats and leases) already work across
servers, so they work across workers. Each worker executes the runs it starts; a run
whose worker dies is taken over by another within the lease. With `--grpc-port`,
every worker serves gRPC on the same port too (SO_REUSEPORT, which gRPC sets on Linux).
"""

from __future__ import annotations

import os

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

SETTINGS_ENV = "ASSAY_SERVE_SETTINGS"


class ServeSettings(BaseModel):
    """What each worker needs to build the same app (version 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    store_url: str
    auth: bool = True
    agent: str | None = None
    max_body_bytes: int = Field(default=4_000_000, gt=0)
    run_lease_s: float = Field(default=120.0, ge=1.0, le=86_400.0)
    case_timeout_s: float = Field(default=300.0, ge=0.1, le=86_400.0)
    grpc_host: str = "127.0.0.1"
    grpc_port: int | None = Field(default=None, ge=1, le=65_535)
    rate_limit: float | None = Field(default=None, gt=0)
    rate_burst: int | None = Field(default=None, ge=1)
    judge_model: str | None = None
    files_root: str | None = None
    #: hex of the secret signing the viewer's session cookies (the same in every worker)
    ui_secret: str | None = None
    api_docs: bool = True
    allowed_models: tuple[str, ...] = ()
    max_judge_usd_per_run: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_judge_calls_per_run: int | None = Field(default=None, ge=1)
    prices_file: str | None = None


def app_from_environment() -> FastAPI:
    """The app of one worker process, from `SETTINGS_ENV` (uvicorn's app factory)."""
    raw = os.environ.get(SETTINGS_ENV)
    if not raw:
        raise RuntimeError(f"{SETTINGS_ENV} is not set: start workers with `assay serve`")
    settings = ServeSettings.model_validate_json(raw)
    from assay.service.app import create_app
    from assay.service.settings import JudgeBudget, ServiceLimits
    from assay.store import Store

    store = Store.open(settings.store_url)
    closing = [store.close]
    try:
        agent = None
        if settings.agent is not None:
            from assay.agents.loader import load_agent

            agent = load_agent(settings.agent)
        app = create_app(
            store,
            auth=settings.auth,
            agent=agent,
            agent_spec=settings.agent,
            max_body_bytes=settings.max_body_bytes,
            run_lease_s=settings.run_lease_s,
            case_timeout_s=settings.case_timeout_s,
            on_close=closing,
            rate_limit=settings.rate_limit,
            rate_burst=settings.rate_burst,
            judge_model=settings.judge_model,
            files_root=settings.files_root,
            ui_secret=bytes.fromhex(settings.ui_secret) if settings.ui_secret else None,
            api_docs=settings.api_docs,
            limits=ServiceLimits(allowed_models=settings.allowed_models),
            judge_budget=JudgeBudget(
                max_usd=settings.max_judge_usd_per_run,
                max_calls=settings.max_judge_calls_per_run,
            ),
            prices_file=settings.prices_file,
        )
        if settings.grpc_port is not None:
            from assay.service.wire import ces_grpc

            server, _port = ces_grpc.start(
                app.state.ctx, settings.grpc_host, settings.grpc_port, auth=settings.auth
            )
            # `create_app` reads `closing` at start-up, so this is stopped too (first).
            closing.append(lambda: server.stop(grace=None))
    except BaseException:
        store.close()
        raise
    from assay.service.app import freeze_startup_heap

    freeze_startup_heap()
    return app
