"""What every request handler of the evaluation service shares: the `ServiceContext`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Request

from assay.agents.base import Agent
from assay.service.settings import (
    DEFAULT_LIMITS,
    NO_BUDGET,
    WORK_LIMITS,
    JudgeBudget,
    ServiceLimits,
    WorkLimits,
)
from assay.store import Resource, Store

# Called on every evaluation rendered: (ctx, stored resource, JSON body to fill in,
# full view?). The runs side registers one that adds run and result fields.
Decorator = Callable[["ServiceContext", Resource, dict[str, Any], bool], None]


@dataclass
class ServiceContext:
    """The store, the agent runs call (None: runs are refused) and the decorators.

    `parts` holds what the app's sides attach to it (the runs side's executor and
    queries under "runs"): the service keeps no state in module globals.
    """

    store: Store
    agent: Agent | None = None
    # How `agent` was named (module:attr, ADK folder, URL): with it, runs execute in
    # worker processes that load the agent themselves (see _run_process).
    agent_spec: str | None = None
    decorators: list[Decorator] = field(default_factory=list)
    max_body_bytes: int = 4_000_000
    # A run whose heartbeat is older than this is taken over by any server over the store.
    run_lease_s: float = 120.0
    # The judge model of the server's own judged answers (Vertex pointwise/pairwise
    # metrics over evaluateInstances); None: those are refused with the reason.
    judge_model: str | None = None
    # Longest a case run (an agent conversation) of a run executed here may take.
    case_timeout_s: float = 300.0
    # The one folder CES imports may read from and exports write into (`file://` URIs);
    # None: the server touches no files for a client.
    files_root: Path | None = None
    # Tokens, instances and CPU one request may ask the server to score (settings.py).
    work_limits: WorkLimits = WORK_LIMITS
    # What one request may bring (bytes, depth, documents, models): every surface.
    limits: ServiceLimits = DEFAULT_LIMITS
    # Caps on the judges of every run this server starts (`--max-judge-usd-per-run`,
    # `--max-judge-calls-per-run`); a request may ask for less, never more.
    judge_budget: JudgeBudget = NO_BUDGET
    # A price table laid over the shipped one (`--prices FILE`) for the runs executed
    # here and the estimates (`evaluations:estimate`).
    prices_file: str | None = None
    parts: dict[str, object] = field(default_factory=dict)


async def get_ctx(request: Request) -> ServiceContext:
    """FastAPI dependency: the app's context (`app.state.ctx`); a coroutine, so FastAPI
    does not hand it to the thread pool."""
    ctx: ServiceContext = request.app.state.ctx
    return ctx
