"""The Python API of `assay.cases` (what `assay cases ...` runs).

    from assay.cases import add_from_run
    written = add_from_run("home.evalset.json", "latest", cases=["two_devices_off"],
                           update=True, store="sqlite:///.assay/assay.db")
    print(written.updated, written.diff)

Each function returns a `WriteResult` (`assay.cases.edit.Edit`): the cases added,
updated (their expectations replaced), left unchanged or removed, the readers that
validated the new text, and the diff. With `dry_run=True` nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.cases.edit import Edit, loaded_cases, plan_add, plan_played, plan_remove, save
from assay.cases.sources import (
    Played,
    from_ces_conversation,
    from_run,
    from_stored_conversation,
    from_traces,
    is_conversation_name,
)
from assay.cases.target import new_text, read_target
from assay.core.cases import EvalCase, SessionInput
from assay.errors import InputError

WriteResult = Edit


@dataclass(frozen=True)
class Listed:
    """One case of a file, as `assay cases list` shows it."""

    id: str
    turns: int
    tool_calls: int
    kind: str  # "golden" or "scenario"


def new_file(path: str | Path, fmt: str = "adk", *, set_id: str | None = None) -> Path:
    """Create an empty eval set of `fmt` at `path` (refused when the file exists)."""
    p = Path(path)
    if p.exists():
        raise InputError("already exists (assay cases new never overwrites)", file=str(p))
    text = new_text(fmt, set_id or p.name.split(".")[0], p)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("x", encoding="utf-8", newline="") as out:
        out.write(text)
    return p


def list_cases(path: str | Path) -> tuple[str, list[Listed]]:
    """The file's format and its cases."""
    target = read_target(Path(path))
    listed = []
    for case in loaded_cases(target):
        turns = case.reference or []
        calls = sum(
            1
            for t in turns
            for item in [*t.steps, *t.expectations]
            if getattr(item, "tool_call", None) is not None
        )
        kind = "scenario" if case.scenario is not None else "golden"
        listed.append(Listed(case.id, len(turns), calls, kind))
    return target.fmt, listed


def remove_case(path: str | Path, case_ids: Sequence[str], *, dry_run: bool = False) -> WriteResult:
    """Remove cases by id; the other cases keep their text."""
    edit = plan_remove(Path(path), case_ids)
    if not dry_run:
        save(edit)
    return edit


def write_cases(
    path: str | Path,
    cases: Sequence[EvalCase],
    *,
    update: bool = False,
    dry_run: bool = False,
) -> WriteResult:
    """Write `cases` (any `EvalCase`: goldens, scenarios) into the eval set at `path`,
    in its format, checked and kept as `add_cases` keeps it; with `update`, a case the
    file has is replaced (fields assay does not know are kept)."""
    edit = plan_add(Path(path), cases, update=update)
    if not dry_run:
        save(edit)
    return edit


def add_cases(
    path: str | Path,
    played: Sequence[Played],
    *,
    update: bool = False,
    session_input: SessionInput | None = None,
    dry_run: bool = False,
) -> WriteResult:
    """Write each played conversation as a case expecting what the agent did."""
    if not played:
        raise InputError("no case to add: the source holds no chosen conversation")
    edit = plan_played(Path(path), played, update=update, session_input=session_input)
    if not dry_run:
        save(edit)
    return edit


def add_from_run(
    file: str | Path,
    run: str,
    *,
    cases: Sequence[str] | None = None,
    failed: bool = False,
    update: bool = False,
    store: str | None = None,
    dry_run: bool = False,
) -> WriteResult:
    """Cases from a stored run: each chosen case run becomes a case expecting what the
    agent did (`update`: an existing case's expectations are replaced, "bless")."""
    played = from_run(run, cases=cases, failed=failed, store=store)
    return add_cases(file, played, update=update, dry_run=dry_run)


def add_from_trace(
    file: str | Path,
    traces: str | Path,
    *,
    sessions: Sequence[str] | None = None,
    update: bool = False,
    dry_run: bool = False,
) -> WriteResult:
    """Cases from the conversations of an OpenTelemetry / OpenInference / MLflow trace file."""
    return add_cases(file, from_traces(traces, sessions=sessions), update=update, dry_run=dry_run)


def add_from_ces(
    file: str | Path,
    conversation: str | Path,
    *,
    case_id: str | None = None,
    update: bool = False,
    store: str | None = None,
    dry_run: bool = False,
) -> WriteResult:
    """A case from a CES `Conversation` JSON file, or from a conversation `assay serve`
    recorded, by its name (`apps/A/conversations/{evaluation}-{run id}-{index}`)."""
    name = str(conversation)
    if is_conversation_name(name) and not Path(name).exists():
        played = [from_stored_conversation(name, store=store, case_id=case_id)]
    else:
        played = [from_ces_conversation(conversation, case_id=case_id)]
    return add_cases(file, played, update=update, dry_run=dry_run)
