"""A judge measured against the labels people stored (`assay judge calibrate --from-store`).

The labelled items of the store (`assay.store.labels.label_pairs`) are judged again by
the judge asked for, through `acalibrate` (a `RunSession`, the judge cache in the
store), once per item however many people labelled it; each person's label is then
compared with that verdict (`assay.report.label_agreement`). The run's own judge, whose
verdicts are stored with the cases, is compared with the labels by `stored_agreement`
without calling any model (the viewer's run page).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.engine.calibrate import ROW_FORMATS, CalibrationReport, ItemVerdict, LabelledSet
from assay.errors import InputError
from assay.formats import format_module
from assay.metrics.judged.base import JudgedMetric
from assay.report.label_agreement import AgreementReport, RatedItem, agreement_report
from assay.store.labels import FAIL, PASS, LabelledItem, group_by_item, label_pairs

if TYPE_CHECKING:
    from assay.store import Store

#: what a labelled item is called in a calibration run: the run and the case
ITEM_SEPARATOR = "/"


@dataclass(frozen=True)
class StoreCalibration:
    """The agreement of a judge with the stored labels, and each item's verdicts."""

    agreement: AgreementReport
    #: one per labelled item: run, case, people's labels, the judge's verdict and why
    items: list[dict[str, Any]]
    judge_stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.agreement.to_dict()
        data["judge_stats"] = dict(self.judge_stats)
        data["results"] = self.items
        data["disagreements"] = [i for i in self.items if i["disagreements"]]
        return data


def item_id(item: LabelledItem) -> str:
    """The case id an item gets in the calibration run: `RUN/CASE`."""
    return f"{item.run_id}{ITEM_SEPARATOR}{item.case}"


def labelled_set(groups: Sequence[list[LabelledItem]], name: str) -> LabelledSet:
    """One case per labelled item (the first person's label as the set's own)."""
    rows: list[dict[str, Any]] = []
    for group in groups:
        first = group[0]
        rows.append({**first.inputs, "id": item_id(first)})
    evalset = format_module(ROW_FORMATS[0]).load_data(rows, file=name, mapping=None)
    evalset.id = name
    ids = [case.id for case in evalset.cases]
    verdicts = [group[0].verdict == PASS for group in groups]
    return LabelledSet(evalset=evalset, labels=dict(zip(ids, verdicts, strict=True)))


def _pass_fail(report: CalibrationReport, case_id: str) -> tuple[str | None, ItemVerdict | None]:
    positive = report.outcomes[0]
    for verdict in report.items:
        if verdict.case_id == case_id:
            judged = None if verdict.judge is None else PASS if verdict.judge == positive else FAIL
            return judged, verdict
    return None, None


def rated(groups: Sequence[list[LabelledItem]], judges: Sequence[str | None]) -> list[RatedItem]:
    """The items as `agreement_report` takes them."""
    return [
        RatedItem(item_id(g[0]), tuple((i.author, i.verdict) for i in g), judge)
        for g, judge in zip(groups, judges, strict=True)
    ]


def _item_row(
    group: list[LabelledItem], judge: str | None, verdict: ItemVerdict | None
) -> dict[str, Any]:
    return {
        "run": group[0].run_id,
        "case": group[0].case,
        "labels": [
            {"author": i.author, "label": i.label, "verdict": i.verdict, "note": i.note}
            for i in group
        ],
        "judge": judge,
        "score": verdict.score if verdict is not None else None,
        "explanation": verdict.explanation if verdict is not None else None,
        "disagreements": [i.author for i in group if judge is not None and i.verdict != judge],
    }


def labelled_groups(
    store: Store, *, metric: str, runs: Sequence[str] | None
) -> list[list[LabelledItem]]:
    """The store's labels on `metric`, grouped per item; InputError when there are none."""
    items = label_pairs(store, metric=metric, runs=runs)
    if not items:
        where = f" in run(s) {', '.join(runs)}" if runs else ""
        known = store.labels.metrics(runs)
        hint = f" (labelled metrics: {', '.join(known)})" if known else ""
        raise InputError(f"no labels on metric {metric!r}{where}{hint}")
    return list(group_by_item(items).values())


async def acalibrate_from_store(
    store: Store,
    *,
    metric: JudgedMetric,
    judge: str,
    runs: Sequence[str] | None = None,
    use_cache: bool = True,
    concurrency: int = 8,
    timeout_s: float = 60.0,
    seed: int = 0,
) -> StoreCalibration:
    """Judge every labelled item of `metric` again with `judge` and compare with people."""
    from assay.session.calibrate import acalibrate

    groups = labelled_groups(store, metric=metric.name, runs=runs)
    labelled = labelled_set(groups, f"labels-{metric.name}")
    report = await acalibrate(
        labelled,
        metric=metric,
        judge=judge,
        store=store,
        use_cache=use_cache,
        concurrency=concurrency,
        timeout_s=timeout_s,
    )
    verdicts = [_pass_fail(report, item_id(g[0])) for g in groups]
    agreement = agreement_report(
        rated(groups, [v[0] for v in verdicts]), metric=metric.name, judge=judge, seed=seed
    )
    rows = [_item_row(g, v[0], v[1]) for g, v in zip(groups, verdicts, strict=True)]
    return StoreCalibration(agreement, rows, dict(report.judge_stats))


def stored_agreement(store: Store, run_id: str, *, seed: int = 0) -> list[AgreementReport]:
    """Per labelled metric of the run: its own judge's stored verdicts against people."""
    reports = []
    for metric in store.labels.metrics([run_id]):
        groups = list(group_by_item(label_pairs(store, metric=metric, runs=[run_id])).values())
        if groups:
            judges = [g[0].judge for g in groups]
            reports.append(
                agreement_report(
                    rated(groups, judges), metric=metric, judge="this run's judge", seed=seed
                )
            )
    return reports
