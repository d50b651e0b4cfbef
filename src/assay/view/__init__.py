"""`assay view`: the local web app over the store; `assay serve` mounts it at `/ui`.

Needs the `service` extra (FastAPI, uvicorn). See `assay.view.app` for the pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from fastapi import FastAPI

    from assay.store import Store


def create_view_app(
    store: Store, *, local_writes: bool = False, cases_root: Path | None = None
) -> FastAPI:
    """The viewer's FastAPI app over `store` (`local_writes`, `cases_root`: see `view.app`)."""
    from assay.view.app import create_view_app as create

    return create(store, local_writes=local_writes, cases_root=cases_root)


__all__ = ["create_view_app"]
