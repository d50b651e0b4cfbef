"""`assay cache stats|clear`: the judge reply cache kept in the store.

Judge replies are cached in the store under a key of everything that identifies the
judge and the request (backend, endpoint, model, prompt and its version, settings,
sample). `stats` shows what is kept per backend and model; `clear` drops it, all of it
or one backend's / model's, so the next run asks the judges again.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from assay.cli.common import StoreOption, command_app, stdout_console, user_errors

cache_app = command_app("cache", "The judge reply cache: see what it holds, or clear it.")


@cache_app.callback()
def _cache_group() -> None:
    """The judge reply cache: see what it holds, or clear it."""


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


@cache_app.command("stats")
def stats_command(store: StoreOption = None) -> None:
    """Cached judge replies per backend and model: entries, size, oldest and newest."""
    with user_errors():
        from assay.store.reading import open_existing

        with open_existing(store) as db:
            groups = db.judge_cache.stats()
    console = stdout_console()
    if not groups:
        console.print("the judge cache is empty")
        return
    table = Table("backend", "model", "entries", "size", "oldest", "newest")
    for g in groups:
        table.add_row(
            g.backend,
            g.model,
            str(g.entries),
            _size(g.size_bytes),
            g.oldest.strftime("%Y-%m-%d %H:%M") if g.oldest else "",
            g.newest.strftime("%Y-%m-%d %H:%M") if g.newest else "",
        )
    console.print(table)
    entries = sum(g.entries for g in groups)
    size = sum(g.size_bytes for g in groups)
    console.print(f"total: {entries} cached replies, {_size(size)}")


@cache_app.command("clear")
def clear_command(
    store: StoreOption = None,
    backend: Annotated[
        str | None, typer.Option(help="Only this backend's replies (openai, gemini, ...).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Only this model's replies.")] = None,
) -> None:
    """Delete cached judge replies, so the next run asks the judges again."""
    with user_errors():
        from assay.store.reading import open_existing

        with open_existing(store) as db:
            removed = db.judge_cache.clear(backend=backend, model=model)
    which = " ".join(p for p in (backend, model) if p)
    stdout_console().print(
        f"removed {removed} cached judge repl{'y' if removed == 1 else 'ies'}"
        + (f" of {which}" if which else "")
    )
