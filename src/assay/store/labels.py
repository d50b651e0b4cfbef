"""People's labels on judged results (issue #35): the `labels` table and what reads it.

A label is one person's verdict on one metric of one case run of a stored run: `pass` /
`fail`, or a score on the metric's scale (its verdict is the score against the metric's
threshold), with a note, who gave it (the API key's name in the service, the OS user
locally) and when. Several people may label one item; a person labelling it again
replaces their own label, never another's.

A case is named as the viewer names it (`case_ref`): its id, `SET/ID` when the run has
several eval sets, and `#N` for the Nth repetition (0-based) of a run with `--runs`. An
unknown run, case or metric raises `LabelTargetNotFoundError` (a `RunNotFoundError`
for the run) naming it; a label that is neither a verdict nor a number on the metric's
scale raises `LabelValueError` naming the field.

`label_pairs` gives each label with the case's inputs and the run's judge verdict, which
is what `assay labels export` writes (the labels file `assay judge calibrate` reads),
what `assay judge calibrate --from-store` scores and what `assay judge align` learns from.
"""

from __future__ import annotations

import getpass
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeAlias, cast

from sqlalchemy import Row, and_, delete, insert, select

from assay.errors import InputError, StoreError
from assay.store._document import expand_document
from assay.store._repository import Repository, database_errors, upsert_insert
from assay.store.exceptions import RunNotFoundError
from assay.store.schema import case_results, label_history, labels
from assay.store.schema import runs as runs_table
from assay.store.types import utcnow

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
"""A JSON document's value."""

PASS, FAIL = "pass", "fail"
#: words a person may give for a verdict (case-insensitive), as the labels file takes them
PASS_WORDS = frozenset({"pass", "passed", "yes", "true", "valid", "correct", "positive", "1"})
FAIL_WORDS = frozenset({"fail", "failed", "no", "false", "invalid", "incorrect", "negative", "0"})
MAX_NOTE_CHARS = 10_000
MAX_AUTHOR_CHARS = 256


class LabelTargetNotFoundError(StoreError):
    """The case or the metric a label names is not in the run (the service answers 404)."""


class LabelValueError(StoreError):
    """A label, note or author that cannot be stored; the message names the field."""


def local_author() -> str:
    """Who labels from this machine's command line or `assay view`: the OS user."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return os.environ.get("USER") or "local"


def case_ref(eval_set_id: str, case_id: str, run_index: int) -> str:
    """How a case run is named: `ID`, `SET/ID` with an eval set, `#N` past the first run."""
    base = f"{eval_set_id}/{case_id}" if eval_set_id else case_id
    return f"{base}#{run_index}" if run_index else base


def _ref_forms(eval_set_id: str, case_id: str, run_index: int) -> set[str]:
    """Every name that picks this case run: with or without the set and `#N`."""
    forms = {f"{eval_set_id}/{case_id}#{run_index}", f"{case_id}#{run_index}"}
    if eval_set_id:
        forms.add(f"{eval_set_id}/{case_id}")
    forms.add(case_id)
    return forms


def _candidate_ids(ref: str) -> list[str]:
    """The case ids `ref` may name (ids may hold `/` and `#` themselves): the whole of
    it, and what follows each `/` with or without a `#N` suffix."""
    bases = [ref]
    head, sep, tail = ref.rpartition("#")
    if sep and tail.isdigit():
        bases.append(head)
    found = set(bases)
    for base in bases:
        found.update(base[i + 1 :] for i, ch in enumerate(base) if ch == "/")
    return sorted(found)


@dataclass(frozen=True, slots=True)
class CaseTarget:
    """A case run of a run, with its stored `CaseResult` document."""

    run_id: str
    eval_set_id: str
    case_id: str
    run_index: int
    document: dict[str, Any]

    @property
    def ref(self) -> str:
        return case_ref(self.eval_set_id, self.case_id, self.run_index)

    def check_label(self, metric: str, label: object) -> tuple[str, float | None, str]:
        """`parse_label` of `label` for `metric` of this case, on the metric's scale;
        LabelTargetNotFoundError when the case has no such metric."""
        result = self.metric(metric)
        threshold = result.get("threshold")
        return parse_label(
            label,
            threshold=float(threshold) if isinstance(threshold, int | float) else None,
            scale_max=_scale_max(result),
        )

    def metric(self, name: str) -> dict[str, Any]:
        """The stored result of metric `name`; LabelTargetNotFoundError if it has none."""
        metrics = self.document.get("metrics") or {}
        found = metrics.get(name)
        if not isinstance(found, dict):
            known = ", ".join(sorted(metrics)) or "none"
            raise LabelTargetNotFoundError(
                f"metric {name!r} was not scored on case {self.ref!r} of run "
                f"{self.run_id!r} (its metrics: {known})"
            )
        return found


@dataclass(frozen=True, slots=True)
class Label:
    """One person's stored label on one metric of one case run."""

    run_id: str
    eval_set_id: str
    case_id: str
    run_index: int
    metric: str
    author: str
    #: "pass" / "fail", or the score as given ("0.75")
    label: str
    score: float | None
    #: "pass" / "fail": the label, or the score against the metric's threshold
    verdict: str
    note: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def case(self) -> str:
        return case_ref(self.eval_set_id, self.case_id, self.run_index)

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "run": self.run_id,
            "case": self.case,
            "eval_set_id": self.eval_set_id,
            "case_id": self.case_id,
            "run_index": self.run_index,
            "metric": self.metric,
            "author": self.author,
            "label": self.label,
            "score": self.score,
            "verdict": self.verdict,
            "note": self.note,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class LabelEvent:
    """One label set (as it was then) or deleted (`label`, `verdict`, `note` None)."""

    run_id: str
    case: str
    metric: str
    author: str
    action: str
    label: str | None
    verdict: str | None
    note: str | None
    at: datetime

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "run": self.run_id, "case": self.case, "metric": self.metric,
            "author": self.author, "action": self.action, "label": self.label,
            "verdict": self.verdict, "note": self.note, "at": self.at.isoformat(),
        }  # fmt: skip


def _history(
    target: CaseTarget, metric: str, author: str, action: str, at: datetime
) -> dict[str, object]:
    return {
        "run_id": target.run_id, "eval_set_id": target.eval_set_id, "case_id": target.case_id,
        "run_index": target.run_index, "metric": metric, "author": author, "action": action,
        "at": at,
    }  # fmt: skip


@dataclass(frozen=True)
class LabelledItem:
    """One person's label with everything needed to judge the item again.

    `label` is "pass" / "fail" or a number as text; `score` the number (None for a
    verdict); `inputs` the case as a row of the labels file `assay judge calibrate`
    reads (Vertex columns: `prompt`, `response`, `reference` when the case had one,
    `history` for the turns before the last of a conversation). `verdict` is what the
    label amounts to ("pass" / "fail"); `judge` the verdict the run's judge gave
    ("pass" / "fail", None when it did not score the item), `judge_score` its score,
    `threshold` the metric's, `unstable` whether the judge's samples straddled the
    threshold.
    """

    run_id: str
    case_id: str
    metric: str
    author: str
    label: str
    score: float | None
    note: str | None
    inputs: dict[str, JsonValue]
    eval_set_id: str = ""
    run_index: int = 0
    verdict: str = PASS
    judge: str | None = None
    judge_score: float | None = None
    threshold: float | None = None
    unstable: bool = False
    rationale: str | None = None
    updated_at: datetime | None = field(default=None, compare=False)

    @property
    def case(self) -> str:
        return case_ref(self.eval_set_id, self.case_id, self.run_index)

    @property
    def item_key(self) -> tuple[str, str, str, int, str]:
        """What identifies the labelled item, whoever labelled it."""
        return (self.run_id, self.eval_set_id, self.case_id, self.run_index, self.metric)

    def calibration_row(self) -> dict[str, JsonValue]:
        """The line of a labels file (`assay judge calibrate LABELS`) for this label.

        The id names the run, the case and the person, so that two people's labels on
        one item are two lines."""
        row: dict[str, JsonValue] = {"id": f"{self.run_id}/{self.case}@{self.author}"}
        row.update(self.inputs)
        row["label"] = self.verdict
        row["metric"] = self.metric
        row["author"] = self.author
        row["run_id"] = self.run_id
        row["case"] = self.case
        if self.score is not None:
            row["human_score"] = self.score
        if self.note:
            row["note"] = self.note
        return row


def parse_label(
    value: object, *, threshold: float | None, scale_max: float | None = None
) -> tuple[str, float | None, str]:
    """(label as stored, score or None, verdict) of what a person gave.

    Verdict words (PASS_WORDS / FAIL_WORDS) are stored as "pass" / "fail"; a number is a
    score on the metric's scale, whose verdict is the score against `threshold`.
    LabelValueError names `label` for anything else (NaN and infinities included), for a
    score on a metric without threshold, and for one outside 0..`scale_max`.
    """
    if isinstance(value, bool):
        return (PASS, None, PASS) if value else (FAIL, None, FAIL)
    text = str(value).strip() if isinstance(value, str | int | float) else None
    if text is None or not text:
        raise LabelValueError("label: expected pass, fail or a score on the metric's scale")
    word = text.lower()
    if word in PASS_WORDS and not isinstance(value, float):
        return PASS, None, PASS
    if word in FAIL_WORDS and not isinstance(value, float):
        return FAIL, None, FAIL
    try:
        score = float(text)
    except ValueError:
        raise LabelValueError(
            f"label: {text[:80]!r} is neither pass, fail nor a number on the metric's scale"
        ) from None
    if not math.isfinite(score):
        raise LabelValueError(f"label: {text[:80]!r} is not a finite number")
    if threshold is None:
        raise LabelValueError(
            "label: this metric has no threshold, so a score says no verdict; label it pass or fail"
        )
    if score < 0 or (scale_max is not None and score > scale_max):
        top = f"{scale_max:g}" if scale_max is not None else "its top"
        raise LabelValueError(f"label: {score:g} is outside the metric's scale 0..{top}")
    return f"{score:g}", score, PASS if score >= threshold else FAIL


def _scale_max(metric: Mapping[str, Any]) -> float | None:
    """The top of a metric's scale as far as its stored result shows: 1 when its threshold
    and score are within 0..1 (most judged metrics), else unknown."""
    values = [v for v in (metric.get("threshold"), metric.get("score")) if v is not None]
    if values and all(isinstance(v, int | float) and 0 <= v <= 1 for v in values):
        return 1.0
    return None


def judge_verdict(metric: Mapping[str, Any]) -> str | None:
    """The run's judge verdict on a stored metric result: "pass", "fail" or None."""
    status = metric.get("status")
    return PASS if status == "PASSED" else FAIL if status == "FAILED" else None


def sample_scores(metric: Mapping[str, Any]) -> list[float]:
    """The scores of the judge's samples on a stored metric result, where it kept them
    (`details.sample_scores` of the result or of its invocations)."""
    found: list[float] = []
    sources = [metric.get("details") or {}]
    sources += [(p or {}).get("details") or {} for p in metric.get("per_invocation") or []]
    for details in sources:
        scores = details.get("sample_scores") if isinstance(details, Mapping) else None
        if isinstance(scores, list):
            found.extend(float(s) for s in scores if isinstance(s, int | float))
    return found


def is_unstable(metric: Mapping[str, Any]) -> bool:
    """Whether the judge's samples on this item straddle the threshold: some sample
    scores pass and some fail, or (with no sample scores kept) the samples' verdicts
    were not unanimous (`agreement` under 1), or the result says `unstable`.

    A result the run marked (`details.unstable`, `assay.metrics.sample_split`) is what
    the run says: its invocations are judged one by one, so two stable invocations on
    either side of the threshold are not an unstable item. The fallbacks read results
    stored without the mark."""
    from assay.metrics.sample_split import UNSTABLE

    details = metric.get("details") or {}
    if isinstance(details, Mapping) and isinstance(details.get(UNSTABLE), bool):
        return bool(details[UNSTABLE])
    threshold = metric.get("threshold")
    scores = sample_scores(metric)
    if scores and isinstance(threshold, int | float):
        return min(scores) < threshold <= max(scores)
    for per in metric.get("per_invocation") or []:
        d = (per or {}).get("details") or {}
        agreement, samples = d.get("agreement"), d.get("samples")
        split = isinstance(agreement, int | float) and agreement < 1
        if isinstance(samples, int) and samples > 1 and split:
            return True
    return False


def rationale(metric: Mapping[str, Any]) -> str | None:
    """The judge's explanation on a stored metric result (its first invocation's)."""
    for per in metric.get("per_invocation") or []:
        text = (per or {}).get("explanation")
        if text:
            return str(text)
    text = metric.get("explanation")
    return str(text) if text else None


def case_inputs(document: Mapping[str, Any]) -> dict[str, JsonValue]:
    """A stored case as a Vertex row of a labels file: its last turn's `prompt`,
    `response` and `reference`, and the turns before as `history`."""
    from assay.core.cases import Turn
    from assay.formats._vertex_history import dump_history

    turns: list[Turn] = []
    for inv in document.get("invocations") or []:
        actual = inv.get("actual") or inv.get("expected")
        if actual is not None:
            turns.append(Turn.model_validate(actual))
    invocations = document.get("invocations") or []
    row: dict[str, JsonValue] = {}
    if not turns:
        return row
    last = turns[-1]
    row["prompt"] = last.user_input.text or ""
    row["response"] = last.final_response or ""
    expected = (invocations[-1] or {}).get("expected") if invocations else None
    if isinstance(expected, Mapping) and expected.get("final_response") is not None:
        row["reference"] = str(expected["final_response"])
    if len(turns) > 1:

        def fail(message: str) -> InputError:
            return InputError(message)

        try:
            row["history"] = cast("list[JsonValue]", list(dump_history(turns[:-1], fail)))
        except InputError:
            # Turns the history column cannot hold (tool results, blobs): text only.
            row["history"] = [
                {"role": role, "content": text}
                for t in turns[:-1]
                for role, text in (("user", t.user_input.text), ("model", t.final_response))
                if text
            ]
    return row


def _label(row: Row[Any]) -> Label:
    return Label(
        run_id=row.run_id,
        eval_set_id=row.eval_set_id,
        case_id=row.case_id,
        run_index=row.run_index,
        metric=row.metric,
        author=row.author,
        label=row.label,
        score=row.score,
        verdict=row.verdict,
        note=row.note,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _clean_author(author: str) -> str:
    text = author.strip()
    if not text or len(text) > MAX_AUTHOR_CHARS or any(ord(c) < 32 for c in text):
        raise LabelValueError(
            f"author: expected a name of 1 to {MAX_AUTHOR_CHARS} printable characters"
        )
    return text


def _clean_note(note: str | None) -> str | None:
    if note is None or not note.strip():
        return None
    if len(note) > MAX_NOTE_CHARS:
        raise LabelValueError(f"note: longer than {MAX_NOTE_CHARS} characters")
    if "\x00" in note:
        raise LabelValueError("note: holds a NUL character")
    return note


class LabelRepository(Repository):
    """The `labels` table: set, list and delete people's labels, and read them back with
    their cases (`pairs`)."""

    @database_errors
    def find_case(self, run_id: str, ref: str) -> CaseTarget:
        """The case run of `run_id` named `ref` (see `case_ref`).

        RunNotFoundError for an unknown run; LabelTargetNotFoundError naming `ref` when
        no case run or several match (then it lists their names).
        """
        c = case_results.c
        with self._engine.connect() as conn:
            if (
                conn.execute(select(runs_table.c.id).where(runs_table.c.id == run_id)).first()
                is None
            ):
                raise RunNotFoundError(f"no run with id {run_id!r} in the store")
            keys = conn.execute(
                select(c.id, c.eval_set_id, c.case_id, c.run_index).where(
                    c.run_id == run_id, c.case_id.in_(_candidate_ids(ref))
                )
            ).all()
            matches = [k for k in keys if ref in _ref_forms(k.eval_set_id, k.case_id, k.run_index)]
            if not matches:
                raise LabelTargetNotFoundError(f"no case {ref!r} in run {run_id!r}")
            if len(matches) > 1:
                names = ", ".join(sorted(case_ref(k[1], k[2], k[3]) for k in matches)[:10])
                raise LabelTargetNotFoundError(
                    f"case {ref!r} of run {run_id!r} is ambiguous: name one of {names}"
                )
            found = matches[0]
            doc = conn.execute(select(c.document).where(c.id == found.id)).scalar_one()
        return CaseTarget(run_id, found.eval_set_id, found.case_id, found.run_index,
                          expand_document(doc))  # fmt: skip

    @database_errors
    def set_label(
        self,
        run_id: str,
        case: str | CaseTarget,
        *,
        metric: str,
        label: object,
        author: str,
        note: str | None = None,
    ) -> Label:
        """Store `author`'s label on `metric` of the case (replacing their own earlier
        one on that item, no one else's) and return it as stored."""
        target = case if isinstance(case, CaseTarget) else self.find_case(run_id, case)
        text, score, verdict = target.check_label(metric, label)
        who, note = _clean_author(author), _clean_note(note)
        now = utcnow()
        values = {
            "run_id": target.run_id,
            "eval_set_id": target.eval_set_id,
            "case_id": target.case_id,
            "run_index": target.run_index,
            "metric": metric,
            "author": who,
            "label": text,
            "score": score,
            "verdict": verdict,
            "note": note,
            "created_at": now,
            "updated_at": now,
        }
        with self._writer.begin() as conn:
            stmt = upsert_insert(conn, labels).values(values)
            stmt = stmt.on_conflict_do_update(
                index_elements=[
                    "run_id",
                    "eval_set_id",
                    "case_id",
                    "run_index",
                    "metric",
                    "author",
                ],
                set_={
                    k: stmt.excluded[k] for k in ("label", "score", "verdict", "note", "updated_at")
                },
            )
            conn.execute(stmt)
            row = conn.execute(select(labels).where(self._item(target, metric, who))).one()
            event = _history(target, metric, who, "set", now)
            event.update(label=text, verdict=verdict, note=note)
            conn.execute(insert(label_history), event)
        return _label(row)

    @database_errors
    def delete_label(
        self, run_id: str, case: str | CaseTarget, *, metric: str, author: str
    ) -> bool:
        """Remove `author`'s own label on the item; False when they had none."""
        target = case if isinstance(case, CaseTarget) else self.find_case(run_id, case)
        target.metric(metric)
        with self._writer.begin() as conn:
            done = conn.execute(delete(labels).where(self._item(target, metric, author)))
            if done.rowcount:
                conn.execute(insert(label_history),
                             _history(target, metric, author, "delete", utcnow()))  # fmt: skip
        return bool(done.rowcount)

    @database_errors
    def history(self, runs: Sequence[str] | None = None) -> list[LabelEvent]:
        """Every label set or deleted in `runs` (None: every run), oldest first."""
        query = select(label_history).order_by(label_history.c.id)
        if runs is not None:
            query = query.where(label_history.c.run_id.in_(list(runs)))
        with self._engine.connect() as conn:
            return [
                LabelEvent(
                    row.run_id,
                    case_ref(row.eval_set_id, row.case_id, row.run_index),
                    row.metric,
                    row.author,
                    row.action,
                    row.label,
                    row.verdict,
                    row.note,
                    row.at,
                )
                for row in conn.execute(query)
            ]

    @database_errors
    def list_labels(
        self,
        runs: Sequence[str] | None = None,
        *,
        case: CaseTarget | None = None,
        metric: str | None = None,
        author: str | None = None,
    ) -> list[Label]:
        """Labels, oldest first: of `runs` (None: every run), of one case, one metric or
        one person."""
        query = select(labels).order_by(labels.c.id)
        if runs is not None:
            query = query.where(labels.c.run_id.in_(list(runs)))
        if case is not None:
            query = query.where(self._case(case))
        if metric is not None:
            query = query.where(labels.c.metric == metric)
        if author is not None:
            query = query.where(labels.c.author == author)
        with self._engine.connect() as conn:
            return [_label(row) for row in conn.execute(query)]

    @database_errors
    def metrics(self, runs: Sequence[str] | None = None) -> list[str]:
        """The metrics labelled in `runs` (None: anywhere), sorted."""
        query = select(labels.c.metric).distinct()
        if runs is not None:
            query = query.where(labels.c.run_id.in_(list(runs)))
        with self._engine.connect() as conn:
            return sorted(conn.execute(query).scalars())

    @database_errors
    def pairs(self, *, metric: str, runs: Sequence[str] | None = None) -> list[LabelledItem]:
        """Each label on `metric` (of `runs`, None: every run) with its case; see
        `label_pairs`."""
        lab, c = labels.c, case_results.c
        joined = labels.join(
            case_results,
            and_(c.run_id == lab.run_id, c.eval_set_id == lab.eval_set_id,
                 c.case_id == lab.case_id, c.run_index == lab.run_index),
        )  # fmt: skip
        query = select(labels, c.document).select_from(joined).where(lab.metric == metric)
        if runs is not None:
            query = query.where(lab.run_id.in_(list(runs)))
        query = query.order_by(lab.run_id, c.id, lab.author)
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [_item(row) for row in rows]

    @staticmethod
    def _case(target: CaseTarget) -> Any:
        return and_(
            labels.c.run_id == target.run_id,
            labels.c.eval_set_id == target.eval_set_id,
            labels.c.case_id == target.case_id,
            labels.c.run_index == target.run_index,
        )

    def _item(self, target: CaseTarget, metric: str, author: str) -> Any:
        return and_(self._case(target), labels.c.metric == metric, labels.c.author == author)


def _item(row: Row[Any]) -> LabelledItem:
    document = expand_document(row.document)
    result = (document.get("metrics") or {}).get(row.metric) or {}
    threshold = result.get("threshold")
    return LabelledItem(
        run_id=row.run_id,
        case_id=row.case_id,
        metric=row.metric,
        author=row.author,
        label=row.label,
        score=row.score,
        note=row.note,
        inputs=case_inputs(document),
        eval_set_id=row.eval_set_id,
        run_index=row.run_index,
        verdict=row.verdict,
        judge=judge_verdict(result),
        judge_score=result.get("score") if isinstance(result.get("score"), int | float) else None,
        threshold=float(threshold) if isinstance(threshold, int | float) else None,
        unstable=is_unstable(result),
        rationale=rationale(result),
        updated_at=row.updated_at,
    )


class HasLabels(Protocol):
    """A `Store` (anything with its `labels` repository)."""

    @property
    def labels(self) -> LabelRepository: ...


def label_pairs(
    store: HasLabels, *, metric: str, runs: Sequence[str] | None = None
) -> list[LabelledItem]:
    """Every person's label on `metric` in `runs` (None: every run of the store), each
    with the labelled case's inputs and the run's own judge verdict on it.

    `store` is a `Store`. One `LabelledItem` per label: an item two people labelled
    appears twice, once per author (`item_key` groups them). Ordered by run, then the
    order the cases were stored in, then author. `LabelledItem.calibration_row()` is
    the item as a line of the labels file `assay judge calibrate` reads (what
    `assay labels export` writes). Unknown runs give no items; call `store.find_run`
    first to name them to the user.
    """
    return store.labels.pairs(metric=metric, runs=runs)


def group_by_item(
    items: Iterable[LabelledItem],
) -> dict[tuple[str, str, str, int, str], list[LabelledItem]]:
    """Labels grouped per labelled item (several people on one item), in order."""
    grouped: dict[tuple[str, str, str, int, str], list[LabelledItem]] = {}
    for item in items:
        grouped.setdefault(item.item_key, []).append(item)
    return grouped
