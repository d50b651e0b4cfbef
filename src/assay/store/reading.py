"""Reading stored runs back as results: for `assay runs show`, `compare`, `report`, `view`.

Commands that only read must not create an empty store where the user mistyped a
path, so `open_existing` refuses a SQLite file that does not exist.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter

from assay.core.results import CaseResult, EvalResult
from assay.errors import StoreError
from assay.store.connect import resolve_url
from assay.store.exceptions import RunNotFoundError
from assay.store.runs import RunInfo
from assay.store.store import Store

_CASES = TypeAdapter(list[CaseResult])


def open_existing(url: str | None) -> Store:
    """Open a store that already exists (a SQLite file must be there; None: the default).

    Raises StoreError naming the path and what to do when the file is missing.
    """
    resolved = resolve_url(url)
    if resolved.get_backend_name() == "sqlite" and resolved.database not in (None, "", ":memory:"):
        path = Path(resolved.database or "")
        if not path.is_file():
            where = "the default store .assay/assay.db" if url is None else f"store {url!r}"
            raise StoreError(
                f"{where} does not exist ({path}); run `assay eval ...` first, or pass "
                "--store URL of an existing store"
            )
    return Store.open(url)


def load_result(db: Store, info: RunInfo) -> EvalResult:
    """The stored run as an `EvalResult` (cases and summary; rows are not stored)."""
    cases = _CASES.validate_python(db.case_results(info.id))
    result = EvalResult(
        summary=dict(info.summary),
        cases=cases,
        run_id=info.id,
        eval_set_id=info.eval_set_ids[0] if len(info.eval_set_ids) == 1 else None,
        metrics=list(info.metrics),
    )
    return result


def find_run(db: Store, ref: str) -> RunInfo:
    """The run named by `ref`: a full id, a unique prefix, `latest`, or `latest~N` (the
    Nth run before the latest, so `assay compare latest~1 latest` compares the last two)."""
    base, sep, back = ref.partition("~")
    if base == "latest" and sep:
        if not back.isdigit():
            raise RunNotFoundError(f"run reference {ref!r}: expected latest~N with N a number")
        newest = db.list_runs(limit=int(back) + 1)
        if len(newest) <= int(back):
            raise RunNotFoundError(
                f"run reference {ref!r}: the store holds only {len(newest)} run(s)"
            )
        return newest[int(back)]
    return db.find_run(ref)


def load_run(db: Store, ref: str) -> tuple[RunInfo, EvalResult]:
    """The run named by `ref` (see `find_run`) and its result."""
    info = find_run(db, ref)
    return info, load_result(db, info)


def load_stored_run(url: str | None, ref: str) -> tuple[RunInfo, EvalResult]:
    """The run named by `ref` and its result, read from the store at `url`, which must
    exist (`open_existing`) and is closed after."""
    with open_existing(url) as db:
        return load_run(db, ref)
