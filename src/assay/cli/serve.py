"""`assay serve` (the evaluation service) and `assay keys ...` (its API keys).

`serve_command` is mounted as `assay serve`, `keys_app` as `assay keys`. Serving
without authentication is refused unless the server binds a loopback address.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.cli.common import (
    StoreOption,
    command_app,
    options_command,
    stderr_console,
    user_errors,
)
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.service.settings import JudgeBudget

keys_app = command_app("keys", "API keys of the evaluation service (`assay serve`).")

MAX_WORKERS = 64


def _check_workers_can_share(url: str) -> None:
    """Worker processes share the store: an in-memory SQLite one cannot be shared."""
    in_memory = ":memory:" in url or url.rstrip("/") in ("sqlite:", "sqlite:/")
    if url.startswith("sqlite") and in_memory:
        raise ConfigError(
            "--workers > 1 needs a store the processes can share: a SQLite file or "
            "PostgreSQL, not an in-memory database"
        )


@dataclass(frozen=True)
class ServeOptions:
    """`assay serve`'s options: one field per option, its typer declaration and default
    (`options_command` makes the command's parameters of them, in this order)."""

    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1"
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000
    store: StoreOption = None
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help="Accept requests without an API key (loopback only)."),
    ] = False
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Agent evaluation runs call: module:attr, ADK folder or URL."),
    ] = None
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", help="Largest request body accepted.")
    ] = 4_000_000
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info"
    run_lease: Annotated[
        float,
        typer.Option(
            "--run-lease",
            help="Seconds without a heartbeat after which another server takes over a run.",
        ),
    ] = 120.0
    case_timeout: Annotated[
        float,
        typer.Option(
            "--case-timeout",
            help="Seconds one case run of an evaluation run may take before it is an ERROR.",
        ),
    ] = 300.0
    grpc_port: Annotated[
        int | None,
        typer.Option(
            "--grpc-port", help="Also serve CES over gRPC on this port (the 'ces' extra)."
        ),
    ] = None
    rate_limit: Annotated[
        float | None,
        typer.Option(
            "--rate-limit",
            help="Requests per second per API key (per address without auth); 429 beyond.",
        ),
    ] = None
    rate_burst: Annotated[
        int | None,
        typer.Option("--rate-burst", help="Requests a client may make at once (default: rate)."),
    ] = None
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            help="Judge for what the service is asked to judge (Vertex pointwise/pairwise "
            "metrics), e.g. openai:gpt-4o-mini.",
        ),
    ] = None
    allow_model: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-model",
            help="A model run requests may name as judgeModel or userModel, besides "
            "--judge-model (repeatable); any other is refused with 400.",
        ),
    ] = None
    files_root: Annotated[
        Path | None,
        typer.Option(
            "--files-root",
            help="Folder CES imports may read from and exports write into (file:// URIs "
            "under it); default: none, the server touches no files for its clients.",
        ),
    ] = None
    no_docs: Annotated[
        bool,
        typer.Option(
            "--no-docs",
            help="Serve no /docs and /redoc pages (they load their scripts from a CDN).",
        ),
    ] = False
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Server processes sharing the port (use the cores; runs execute in them).",
        ),
    ] = 1
    max_judge_usd_per_run: Annotated[
        float | None,
        typer.Option(
            "--max-judge-usd-per-run",
            help="Stop judging a run before its judges cost more than this many US dollars "
            "(the rest NOT_EVALUATED: judge budget reached); a request may ask for less.",
        ),
    ] = None
    max_judge_calls_per_run: Annotated[
        int | None,
        typer.Option(
            "--max-judge-calls-per-run",
            help="Stop judging a run after this many judge calls; a request may ask for less.",
        ),
    ] = None
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="JSON price table laid over the shipped one, for the runs' judge caps and "
            "estimates.",
        ),
    ] = None


@options_command(ServeOptions)
def serve_command(opts: ServeOptions) -> None:
    """Serve the evaluation API (REST under /v1, MCP at /mcp, docs at /docs)."""
    err = stderr_console()
    with user_errors():
        missing = [m for m in ("fastapi", "uvicorn", "mcp") if importlib.util.find_spec(m) is None]
        if missing:
            raise ConfigError(
                f"assay serve needs {', '.join(missing)}, which is not installed; "
                "pip install -e '.[service]'"
            )
        import uvicorn

        from assay.service.app import create_app
        from assay.service.auth import is_loopback
        from assay.service.settings import ServiceLimits
        from assay.service.workers import SETTINGS_ENV, ServeSettings
        from assay.store import Store

        if opts.no_auth and not is_loopback(opts.host):
            raise ConfigError(
                f"--no-auth is refused on --host {opts.host}: without API keys anyone who can "
                "reach the address could use the service. Bind 127.0.0.1, ::1 or localhost, "
                "or keep auth on and create a key with `assay keys create --name NAME`"
            )
        if opts.max_body_bytes <= 0:
            raise ConfigError(f"--max-body-bytes must be positive (got {opts.max_body_bytes})")
        if not 1.0 <= opts.run_lease <= 86_400.0:
            raise ConfigError(f"--run-lease must be from 1 to 86400 seconds (got {opts.run_lease})")
        if not 0.1 <= opts.case_timeout <= 86_400.0:
            raise ConfigError(
                f"--case-timeout must be from 0.1 to 86400 seconds (got {opts.case_timeout})"
            )
        if opts.rate_limit is not None and not 0 < opts.rate_limit <= 1_000_000:
            raise ConfigError(f"--rate-limit must be above 0 requests/s (got {opts.rate_limit})")
        if opts.rate_burst is not None and (opts.rate_limit is None or opts.rate_burst < 1):
            raise ConfigError("--rate-burst needs --rate-limit, and must be at least 1")
        if opts.judge_model is not None:
            from assay.judges.align import is_aligned_ref, parse_ref
            from assay.models.resolve import parse_model

            # a mistyped model is a usage error at start (an aligned judge's name is
            # looked up in the store by each run)
            if is_aligned_ref(opts.judge_model):
                parse_ref(opts.judge_model)
            else:
                parse_model(opts.judge_model)
        allowed_models = tuple(opts.allow_model or ())
        for model in allowed_models:
            from assay.models.resolve import parse_model

            parse_model(model)
        budget = _judge_budget(opts)
        prices_file = _prices_file(opts.prices)
        if opts.files_root is not None and not opts.files_root.is_dir():
            raise ConfigError(f"--files-root {opts.files_root}: no such folder")
        if not 1 <= opts.workers <= MAX_WORKERS:
            raise ConfigError(f"--workers must be from 1 to {MAX_WORKERS} (got {opts.workers})")
        if opts.workers > 1 and opts.grpc_port == 0:
            raise ConfigError("--grpc-port 0 (any free port) cannot be shared by --workers > 1")
        db = Store.open(opts.store)
        if opts.workers > 1:
            _check_workers_can_share(db.url)
        try:
            loaded = grpc_server = None
            if opts.agent is not None:
                from assay.agents.loader import load_agent

                loaded = load_agent(opts.agent)
            if not opts.no_auth and not any(k.active for k in db.api_keys.list_keys()):
                err.print(
                    Text(
                        "warning: the store has no active API key, so every request will be "
                        f"refused; create one with `assay keys create --name NAME"
                        f"{' --store ' + opts.store if opts.store else ''}`",
                        style="yellow",
                    ),
                    soft_wrap=True,
                )
            if opts.workers > 1:
                settings = ServeSettings(
                    store_url=db.engine.url.render_as_string(hide_password=False),
                    auth=not opts.no_auth,
                    agent=opts.agent,
                    max_body_bytes=opts.max_body_bytes,
                    run_lease_s=opts.run_lease,
                    case_timeout_s=opts.case_timeout,
                    grpc_host=opts.host,
                    grpc_port=opts.grpc_port,
                    rate_limit=opts.rate_limit,
                    rate_burst=opts.rate_burst,
                    judge_model=opts.judge_model,
                    files_root=str(opts.files_root.resolve())
                    if opts.files_root is not None
                    else None,
                    ui_secret=secrets.token_hex(32),  # one /ui session secret for all
                    api_docs=not opts.no_docs,
                    allowed_models=allowed_models,
                    max_judge_usd_per_run=budget.max_usd,
                    max_judge_calls_per_run=budget.max_calls,
                    prices_file=prices_file,
                )
            else:
                app = create_app(
                    db,
                    auth=not opts.no_auth,
                    agent=loaded,
                    agent_spec=opts.agent,
                    max_body_bytes=opts.max_body_bytes,
                    run_lease_s=opts.run_lease,
                    case_timeout_s=opts.case_timeout,
                    rate_limit=opts.rate_limit,
                    rate_burst=opts.rate_burst,
                    judge_model=opts.judge_model,
                    files_root=opts.files_root,
                    api_docs=not opts.no_docs,
                    limits=ServiceLimits(allowed_models=allowed_models),
                    judge_budget=budget,
                    prices_file=prices_file,
                )
                grpc_server = _start_grpc(app, opts.host, opts.grpc_port, auth=not opts.no_auth)
        except BaseException:
            db.close()
            raise
    shown = f"[{opts.host}]" if ":" in opts.host else opts.host
    auth = "off (loopback only)" if opts.no_auth else "API key required"
    processes = f"; {opts.workers} worker processes" if opts.workers > 1 else ""
    err.print(
        f"assay service on http://{shown}:{opts.port} (store {db.url}; auth {auth}{processes}; "
        f"{'no API docs pages' if opts.no_docs else 'API docs at /docs'}; "
        f"the runs in a browser at http://{shown}:{opts.port}/ui)",
        soft_wrap=True,
    )
    if opts.workers > 1:
        # Each worker opens the store and loads the agent itself (see service.workers).
        db.close()
        if opts.grpc_port is not None:
            err.print(
                f"CES over gRPC on {shown}:{opts.grpc_port} (insecure channel)", soft_wrap=True
            )
        os.environ[SETTINGS_ENV] = settings.model_dump_json()
        uvicorn.run(
            "assay.service.workers:app_from_environment",
            factory=True,
            workers=opts.workers,
            host=opts.host,
            port=opts.port,
            log_level=opts.log_level,
        )
        return
    if grpc_server is not None:
        err.print(f"CES over gRPC on {shown}:{grpc_server[1]} (insecure channel)", soft_wrap=True)
    from assay.service.app import freeze_startup_heap

    freeze_startup_heap()
    try:
        uvicorn.run(app, host=opts.host, port=opts.port, log_level=opts.log_level)
    finally:
        if grpc_server is not None:
            grpc_server[0].stop(grace=None)
        db.close()


def _judge_budget(opts: ServeOptions) -> JudgeBudget:
    """The per-run judge caps asked for (a usage error unless positive and finite)."""
    from assay.service.settings import JudgeBudget

    usd, calls = opts.max_judge_usd_per_run, opts.max_judge_calls_per_run
    if usd is not None and not (0 < usd < float("inf")):
        raise ConfigError(f"--max-judge-usd-per-run must be a positive number, got {usd}")
    if calls is not None and calls < 1:
        raise ConfigError(f"--max-judge-calls-per-run must be at least 1, got {calls}")
    return JudgeBudget(max_usd=usd, max_calls=calls)


def _prices_file(path: Path | None) -> str | None:
    """`--prices FILE` as an absolute path (run workers have their own working folder),
    read once now so a broken table is a usage error at start, not a failed run."""
    if path is None:
        return None
    from assay.models.pricing import read_price_file

    resolved = str(path.resolve())
    try:
        read_price_file(resolved)
    except ValueError as exc:
        raise ConfigError(f"--prices: {exc}") from None
    return resolved


def _start_grpc(app: Any, host: str, port: int | None, *, auth: bool) -> tuple[Any, int] | None:
    """Start the CES gRPC server on the app's context when --grpc-port asks for it."""
    if port is None:
        return None
    from assay.service import wire

    if not wire.ces_available() or importlib.util.find_spec("grpc") is None:
        raise ConfigError(
            "--grpc-port needs google-cloud-ces and grpcio, which are not installed; "
            f"{wire.CES_EXTRA_HINT}"
        )
    if not 0 <= port <= 65535:
        raise ConfigError(f"--grpc-port must be a port number (got {port})")
    from assay.service.wire import ces_grpc

    try:
        return ces_grpc.start(app.state.ctx, host, port, auth=auth)
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"cannot serve gRPC on {host}:{port}: {exc}") from None


@keys_app.callback()
def _keys_group() -> None:
    """API keys of the evaluation service (`assay serve`)."""


@keys_app.command("create")
def create_key(
    name: Annotated[str, typer.Option("--name", help="What the key is for (shown in lists).")],
    store: StoreOption = None,
) -> None:
    """Create an API key and print it (it is shown only this once)."""
    from assay.store import Store

    with user_errors(), Store.open(store) as db:
        info, secret = db.api_keys.create(name)
    print(secret)
    stderr_console().print(
        f"created API key {info.id} ({info.name}); send it as 'Authorization: Bearer <key>'. "
        "It cannot be shown again.",
        soft_wrap=True,
    )


@keys_app.command("list")
def list_keys(store: StoreOption = None) -> None:
    """List API keys (never their secrets)."""
    from assay.store import Store

    with user_errors(), Store.open(store) as db:
        keys = db.api_keys.list_keys()
    # Without a terminal (pipes, CI logs) rich would cut the table at 80 columns.
    console = Console() if sys.stdout.isatty() else Console(width=120)
    if not keys:
        console.print("no API keys yet: create one with `assay keys create --name NAME`")
        return
    table = Table(header_style="bold")
    for column in ("id", "name", "created", "last used", "state"):
        table.add_column(column, no_wrap=True)
    for key in keys:
        state = "active" if key.active else f"revoked {_when(key.revoked_at)}"
        table.add_row(key.id, key.name, _when(key.created_at), _when(key.last_used_at), state)
    console.print(table)


@keys_app.command("revoke")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="Id of the key (see `assay keys list`).")],
    store: StoreOption = None,
) -> None:
    """Revoke an API key; requests using it are refused from now on."""
    from assay.store import Store

    with user_errors(), Store.open(store) as db:
        info = db.api_keys.revoke(key_id)
    print(f"revoked API key {info.id} ({info.name})")


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")
