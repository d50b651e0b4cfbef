"""`assay labels ...`: people's verdicts on judged results, for scripts (issue #35).

- `assay labels set RUN CASE --metric M --label pass|fail|SCORE [--note TEXT]` stores
  the OS user's label (or `--author NAME`'s) on metric M of one case of a run,
  replacing their own earlier label on it, never anyone else's;
- `assay labels list RUN` shows a run's labels (`--json` for scripts; `--history` every
  label set or deleted, replaced ones included);
- `assay labels delete RUN CASE --metric M` removes one's own label;
- `assay labels export [RUN...] --out labels.jsonl` writes the labels as the labels file
  `assay judge calibrate` reads (one line per person and item);
- `assay labels import FILE` stores the labels of such a file (or any JSONL whose lines
  name `run_id`, `case`, `metric` and `label`), all checked before any is stored.

CASE is a case id, `SET/ID` in a run of several eval sets, `ID#N` for the Nth run of a
case (0-based). Exit codes: 0 done; 2 an unknown run, case or metric (named), a bad
label or a bad line of the file (its number and field).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from assay.cli.common import (
    RunArgument,
    StoreOption,
    command_app,
    stderr_console,
    stdout_console,
    user_errors,
)
from assay.errors import InputError, StoreError

if TYPE_CHECKING:
    from assay.store import Store
    from assay.store.labels import CaseTarget, Label, LabelRepository

labels_app = command_app("labels", "People's labels on judged results: set, list, export, import.")

CaseArgument = Annotated[str, typer.Argument(help="The case: ID, SET/ID, or ID#N for its Nth run.")]
MetricOption = Annotated[str, typer.Option("--metric", "-m", help="The metric labelled.")]
AuthorOption = Annotated[
    str | None, typer.Option("--author", help="Who labels (default: the OS user).")
]


@labels_app.callback()
def _labels_group() -> None:
    """People's labels on judged results: set, list, export, import."""


def _author(author: str | None) -> str:
    from assay.store.labels import local_author

    return author if author is not None else local_author()


@contextmanager
def _run_labels(store: str | None, run: str) -> Iterator[tuple[LabelRepository, str]]:
    """The labels of the store at `store` (which must exist; closed after) and the id of
    the run `run` names in it."""
    from assay.store.reading import find_run, open_existing

    with open_existing(store) as db:
        yield db.labels, find_run(db, run).id


@labels_app.command("set")
def set_command(
    run: RunArgument,
    case: CaseArgument,
    metric: MetricOption,
    label: Annotated[
        str, typer.Option("--label", "-l", help="pass, fail, or a score on the metric's scale.")
    ],
    note: Annotated[str | None, typer.Option("--note", help="Why (shown to reviewers).")] = None,
    author: AuthorOption = None,
    store: StoreOption = None,
) -> None:
    """Label one judged metric of one case of a run (replaces your own earlier label)."""
    with user_errors(), _run_labels(store, run) as (labels, run_id):
        stored = labels.set_label(
            run_id, case, metric=metric, label=label, author=_author(author), note=note
        )
    stdout_console().print(
        f"labelled {stored.case} {stored.metric} = {stored.label} ({stored.verdict}) "
        f"by {stored.author} in run {stored.run_id}",
        highlight=False,
        soft_wrap=True,
    )


@labels_app.command("delete")
def delete_command(
    run: RunArgument,
    case: CaseArgument,
    metric: MetricOption,
    author: AuthorOption = None,
    store: StoreOption = None,
) -> None:
    """Remove your own label on one metric of one case (others' labels stay)."""
    with user_errors(), _run_labels(store, run) as (labels, run_id):
        who = _author(author)
        if not labels.delete_label(run_id, case, metric=metric, author=who):
            raise InputError(f"{who} has no label on {metric} of case {case!r} in run {run_id}")
    stdout_console().print(f"deleted {who}'s label on {case} {metric}", highlight=False)


@labels_app.command("list")
def list_command(
    run: RunArgument,
    metric: Annotated[str | None, typer.Option("--metric", "-m", help="Only this metric.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per label.")] = False,
    history: Annotated[
        bool, typer.Option("--history", help="Every label set or deleted, as JSON lines.")
    ] = False,
    store: StoreOption = None,
) -> None:
    """The labels people gave in a run, oldest first."""
    with user_errors(), _run_labels(store, run) as (labels, run_id):
        found = labels.list_labels([run_id], metric=metric)
        events = labels.history([run_id]) if history else []
    if history:
        for event in events:
            if metric is None or event.metric == metric:
                typer.echo(json.dumps(event.to_dict(), ensure_ascii=False))
        return
    if as_json:
        for item in found:
            typer.echo(json.dumps(item.to_dict(), ensure_ascii=False))
        return
    console = stdout_console()
    if not found:
        console.print(f"no labels in run {run_id} yet: `assay labels set` or `assay view`")
        return
    console.print(_table(found, run_id))


def _table(found: list[Label], run_id: str) -> Table:
    table = Table(title=f"Labels of run {run_id}", title_justify="left")
    for column in ("case", "metric", "label", "verdict", "author", "when", "note"):
        table.add_column(column, overflow="fold")
    for item in found:
        table.add_row(
            item.case,
            item.metric,
            item.label,
            Text(item.verdict, style="green" if item.verdict == "pass" else "red"),
            item.author,
            item.updated_at.strftime("%Y-%m-%d %H:%M"),
            item.note or "",
        )
    return table


@labels_app.command("export")
def export_command(
    runs: Annotated[
        list[str] | None, typer.Argument(help="Runs to export (default: every labelled run).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The labels file to write.")] = Path(
        "labels.jsonl"
    ),
    metric: Annotated[
        str | None,
        typer.Option("--metric", "-m", help="The metric (needed when several are labelled)."),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Write labels as the file `assay judge calibrate` reads (one line per label)."""
    from assay.store.labels import label_pairs
    from assay.store.reading import find_run, open_existing

    with user_errors():
        with open_existing(store) as db:
            ids = [find_run(db, r).id for r in runs] if runs else None
            metric = _one_metric(db, ids, metric)
            items = label_pairs(db, metric=metric, runs=ids)
        if not items:
            raise InputError(f"no labels on {metric} to export")
        out.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(i.calibration_row(), ensure_ascii=False) + "\n" for i in items)
        out.write_text(text, encoding="utf-8")
    stdout_console().print(f"wrote {len(items)} labels on {metric} to {out}", highlight=False)


def _one_metric(db: Store, runs: list[str] | None, metric: str | None) -> str:
    """The metric to export: the one given, or the only one labelled in `runs`."""
    labelled = db.labels.metrics(runs)
    if metric is not None:
        if metric not in labelled:
            where = "these runs" if runs else "the store"
            known = ", ".join(labelled) or "none"
            raise InputError(f"no labels on metric {metric!r} in {where} (labelled: {known})")
        return metric
    if not labelled:
        raise InputError("no labels to export: label results with `assay labels set` first")
    if len(labelled) > 1:
        raise InputError(
            f"labels on several metrics ({', '.join(labelled)}): pick one with --metric "
            "(a labels file holds one metric)"
        )
    return labelled[0]


@dataclass(frozen=True)
class _Line:
    number: int
    run: str
    case: str
    metric: str
    label: Any
    author: str
    note: str | None


def _field(row: dict[str, Any], names: tuple[str, ...], file: str, number: int) -> str:
    for name in names:
        value = row.get(name)
        if isinstance(value, str) and value.strip():
            return value
    raise InputError(
        "missing or not a string", file=file, path=f"line {number} $.{names[0]}",
        expected=f"a key {names[0]!r} (a non-empty string)",
    )  # fmt: skip


def _read_import(path: Path, author: str | None) -> list[_Line]:
    from assay.formats._common import read_text

    file = str(path)
    lines: list[_Line] = []
    for number, raw in enumerate(read_text(path).splitlines(), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise InputError(
                f"not valid JSON: {reason}", file=file, path=f"line {number}"
            ) from None
        if not isinstance(row, dict):
            raise InputError("not a JSON object", file=file, path=f"line {number}")
        label = row.get("human_score", row.get("label"))
        if label is None or isinstance(label, list | dict):
            raise InputError(
                "missing the label", file=file, path=f"line {number} $.label",
                expected="pass, fail or a score",
            )  # fmt: skip
        note = row.get("note")
        lines.append(
            _Line(
                number,
                _field(row, ("run_id", "run"), file, number),
                _field(row, ("case",), file, number),
                _field(row, ("metric",), file, number),
                label,
                author or (row["author"] if isinstance(row.get("author"), str) else _author(None)),
                note if isinstance(note, str) else None,
            )
        )
    if not lines:
        raise InputError("no labels in the file", file=file, expected="one JSON object per line")
    return lines


@labels_app.command("import")
def import_command(
    file: Annotated[Path, typer.Argument(help="JSONL: run_id, case, metric, label per line.")],
    author: AuthorOption = None,
    store: StoreOption = None,
) -> None:
    """Store the labels of a file (`assay labels export` writes one); every line is
    checked first, so a bad line stores nothing."""
    from assay.store.reading import find_run, open_existing

    with user_errors():
        lines = _read_import(file, author)
        with open_existing(store) as db:
            targets: list[tuple[_Line, CaseTarget]] = []
            for line in lines:
                try:
                    target = db.labels.find_case(find_run(db, line.run).id, line.case)
                    target.check_label(line.metric, line.label)
                except StoreError as exc:
                    raise type(exc)(f"{file}: line {line.number}: {exc}") from None
                targets.append((line, target))
            for line, target in targets:
                db.labels.set_label(target.run_id, target, metric=line.metric, label=line.label,
                                    author=line.author, note=line.note)  # fmt: skip
    stderr_console().print(Text(f"imported {len(targets)} labels from {file}", style="dim"))
