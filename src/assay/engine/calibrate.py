"""Calibration: how well a judge agrees with human labels (SPEC §5).

A labels file holds one JSON object per line: the inputs the judged metric needs, in
the columns of a row format (Vertex: `prompt`, `response`, `reference`; Databricks:
`request`, `response`, `expected_response`, `retrieved_context`, ...), plus the human
verdict `label`. Each line becomes a case and is scored by the metric through the same
engine and judge machinery as `assay eval`; the judge's verdict is the metric's
pass/fail outcome (score against its threshold). Agreement is reported as accuracy,
Cohen's kappa and a confusion matrix. Items the judge could not score (every sample
failed or was unparseable) are listed apart and left out of the statistics: they are
not the judge disagreeing, they are the judge not answering. The statistics themselves
are in `assay.judges.agreement` (re-exported here).

This module holds what a calibration is (the labels file, the verdicts, the report);
running one is `assay.session.calibrate.acalibrate`, a `RunSession` like every run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.core.cases import EvalSet
from assay.core.results import EvalResult, MetricResult, Status
from assay.errors import ConfigError, InputError
from assay.formats import detect_format, format_module
from assay.formats._common import read_text, type_name
from assay.judges.agreement import ConfusionMatrix as ConfusionMatrix
from assay.judges.agreement import accuracy as accuracy
from assay.judges.agreement import cohen_kappa as cohen_kappa
from assay.judges.agreement import confusion_matrix as confusion_matrix
from assay.metrics.base import Metric
from assay.metrics.judged.base import JudgedMetric
from assay.metrics.registry import build_metric, get_metric_class, metric_names

LABEL_KEY = "label"
#: human verdicts accepted for the positive / negative outcome (case-insensitive)
POSITIVE_WORDS = frozenset({"valid", "yes", "true", "pass", "passed", "correct", "1", "positive"})
NEGATIVE_WORDS = frozenset(
    {"invalid", "no", "false", "fail", "failed", "incorrect", "0", "negative"}
)
#: the row formats a labels file may use
ROW_FORMATS = ("vertex", "mlflow")


# ----------------------------------------------------------------------------- labels file


@dataclass(frozen=True)
class LabelledSet:
    """The labelled items as one eval set, with the human verdict of each case."""

    evalset: EvalSet
    #: case id -> True (positive) / False (negative), in file order
    labels: dict[str, bool]
    #: case id -> line of the labels file (for reports)
    lines: dict[str, int] = field(default_factory=dict)
    format: str = "vertex"


def parse_human_label(value: Any, *, file: str, line: int, case_id: str | None) -> bool:
    """A human verdict as positive (True) / negative (False).

    Accepts booleans, 1/0 and the words of POSITIVE_WORDS / NEGATIVE_WORDS.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int | str):
        word = str(value).strip().lower()
        if word in POSITIVE_WORDS:
            return True
        if word in NEGATIVE_WORDS:
            return False
    raise InputError(
        f"unknown label {value!r} ({type_name(value)})",
        file=file,
        case_id=case_id,
        path=f"line {line} $.{LABEL_KEY}",
        expected=(
            f"one of {', '.join(sorted(POSITIVE_WORDS))} (positive) or "
            f"{', '.join(sorted(NEGATIVE_WORDS))} (negative), or a boolean"
        ),
    )


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) per non-blank line of a JSON Lines file."""
    file = str(path)
    rows: list[tuple[int, dict[str, Any]]] = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON: {exc.msg} at column {exc.colno}", file=file, path=f"line {lineno}"
            ) from None
        except RecursionError:
            raise InputError(
                "nested too deeply to read", file=file, path=f"line {lineno}"
            ) from None
        if not isinstance(obj, Mapping):
            raise InputError(
                f"got {type_name(obj)}", file=file, path=f"line {lineno}", expected="a JSON object"
            )
        rows.append((lineno, dict(obj)))
    if not rows:
        raise InputError("no labelled items", file=file, expected="one JSON object per line")
    return rows


def load_labels(path: str | Path, fmt: str | None = None) -> LabelledSet:
    """Read a labels file: each line's `label` plus a row of a row format (detected).

    Raises InputError naming the file, line and key for a missing or unknown label, and
    the row format's own located errors for the inputs.
    """
    p = Path(path)
    file = str(p)
    numbered = _rows(p)
    verdicts: list[bool] = []
    rows: list[dict[str, Any]] = []
    for lineno, row in numbered:
        ident = row.get("id")
        case_id = str(ident) if ident is not None else None
        if row.get(LABEL_KEY) is None:
            raise InputError(
                "missing the human label",
                file=file,
                case_id=case_id,
                path=f"line {lineno} $.{LABEL_KEY}",
                expected='a key "label", e.g. "valid" / "invalid" or "yes" / "no"',
            )
        verdicts.append(
            parse_human_label(row.pop(LABEL_KEY), file=file, line=lineno, case_id=case_id)
        )
        rows.append(row)
    if fmt is None:
        fmt = detect_format(rows, p)
    if fmt not in ROW_FORMATS:
        raise InputError(
            f"labelled items read as {fmt!r} rows",
            file=file,
            expected=(
                "rows of the vertex format (prompt, response, reference) or the mlflow "
                "format (request, response, expected_response, retrieved_context, ...)"
            ),
        )
    evalset: EvalSet = format_module(fmt).load_data(rows, file=file, mapping=None)
    if not evalset.id:
        evalset.id = p.stem
    if len(evalset.cases) != len(verdicts):
        raise InputError(
            f"{len(verdicts)} labelled lines made {len(evalset.cases)} cases",
            file=file,
            expected="one case per line",
        )
    ids = [case.id for case in evalset.cases]
    return LabelledSet(
        evalset=evalset,
        labels=dict(zip(ids, verdicts, strict=True)),
        lines={cid: lineno for cid, (lineno, _) in zip(ids, numbered, strict=True)},
        format=fmt,
    )


# ----------------------------------------------------------------------------- running


@dataclass(frozen=True)
class ItemVerdict:
    """One labelled item: the human verdict and the judge's (None: not scored)."""

    case_id: str
    line: int | None
    human: str
    judge: str | None
    score: float | None = None
    #: the judge's rationale, or why there is no verdict
    explanation: str | None = None
    #: share of the judge's samples that agreed with its majority
    agreement: float | None = None

    @property
    def scored(self) -> bool:
        return self.judge is not None

    @property
    def agrees(self) -> bool | None:
        """Whether judge and humans agree; None when the judge gave no verdict."""
        return None if self.judge is None else self.judge == self.human

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"id": data.pop("case_id"), **data}


@dataclass(frozen=True)
class CalibrationReport:
    """Agreement of one judge with the human labels, for one judged metric."""

    metric: str
    judge: str
    samples: int
    #: (positive, negative) outcome names, e.g. ("valid", "invalid")
    outcomes: tuple[str, str]
    items: list[ItemVerdict]
    #: the run's `judge/...` counters (calls, cache hits, retries, errors, tokens)
    judge_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def scored(self) -> list[ItemVerdict]:
        return [i for i in self.items if i.scored]

    @property
    def unscored(self) -> list[ItemVerdict]:
        """Items the judge gave no verdict on; not counted in the statistics."""
        return [i for i in self.items if not i.scored]

    @property
    def disagreements(self) -> list[ItemVerdict]:
        return [i for i in self.items if i.agrees is False]

    @property
    def matrix(self) -> ConfusionMatrix:
        return confusion_matrix(
            ((i.human, i.judge) for i in self.items if i.judge is not None), self.outcomes
        )

    @property
    def accuracy(self) -> float | None:
        return accuracy(self.matrix)

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.matrix)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (what `--out` writes)."""
        return {
            "metric": self.metric,
            "judge": self.judge,
            "samples": self.samples,
            "positive": self.outcomes[0],
            "negative": self.outcomes[1],
            "items": len(self.items),
            "scored": len(self.scored),
            "unscored": len(self.unscored),
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "confusion_matrix": self.matrix.to_dict(),
            "disagreements": [i.to_dict() for i in self.disagreements],
            "unscored_items": [i.to_dict() for i in self.unscored],
            "results": [i.to_dict() for i in self.items],
            "judge_stats": dict(self.judge_stats),
        }


def outcome_names(metric: Metric) -> tuple[str, str]:
    """How the metric names its positive and negative outcomes."""
    if metric.name == "final_response_match_v2":
        return ("valid", "invalid")
    if metric.family == "databricks":
        return ("yes", "no")
    return ("pass", "fail")


def build_judged_metric(
    name: str,
    *,
    judge: str,
    samples: int | None = None,
    base_url: str | None = None,
    criterion: Mapping[str, Any] | None = None,
) -> JudgedMetric:
    """The judged metric `name` with its criterion and the judge options given.

    Raises ConfigError for an unknown metric or one that is not LLM-judged.
    """
    raw: dict[str, Any] = dict(criterion or {})
    judge_options: dict[str, Any] = dict(raw.get("judge_model_options") or {})
    judge_options["judge_model"] = judge
    if samples is not None:
        if samples < 1:
            raise ConfigError(f"--samples must be at least 1, got {samples}")
        judge_options["num_samples"] = samples
    if base_url is not None:
        judge_options["base_url"] = base_url
    raw["judge_model_options"] = judge_options
    # Checked on the class first: other metrics reject judge_model_options as unknown.
    if issubclass(get_metric_class(name), JudgedMetric):
        metric = build_metric(name, raw)
        if isinstance(metric, JudgedMetric):
            return metric
    judged = [n for n in metric_names() if issubclass(get_metric_class(n), JudgedMetric)]
    raise ConfigError(
        f"metric {name!r} is not judged by an LLM, so there is no judge to calibrate; "
        f"judged metrics are: {', '.join(judged)}"
    )


def item_verdict(
    labelled: LabelledSet, case_id: str, result: MetricResult | None, names: tuple[str, str]
) -> ItemVerdict:
    """One labelled item: the human verdict and the judge's, from the metric's result."""
    human = names[0] if labelled.labels[case_id] else names[1]
    line = labelled.lines.get(case_id)
    if result is None:
        return ItemVerdict(case_id, line, human, None, explanation="the case was not scored")
    per = result.per_invocation[0] if len(result.per_invocation) == 1 else None
    agreement = result.details.get("agreement")
    if agreement is None and per is not None:
        agreement = per.details.get("agreement")
    explanation = (per.explanation if per is not None else None) or result.explanation
    if result.status is Status.PASSED:
        judge: str | None = names[0]
    elif result.status is Status.FAILED:
        judge = names[1]
    else:
        judge = None
    return ItemVerdict(
        case_id,
        line,
        human,
        judge,
        score=result.score,
        explanation=explanation,
        agreement=agreement if isinstance(agreement, int | float) else None,
    )


def calibration_report(
    labelled: LabelledSet, scorer: JudgedMetric, judge: str, result: EvalResult
) -> CalibrationReport:
    """The report of a run of `scorer` over the labelled items: each item's verdicts (in
    file order) and the run's `judge/...` counters."""
    by_case = {case.case_id: case.metrics.get(scorer.name) for case in result.cases}
    names = outcome_names(scorer)
    items = [item_verdict(labelled, cid, by_case.get(cid), names) for cid in labelled.labels]
    stats = {k: v for k, v in result.summary.items() if k.startswith("judge/")}
    return CalibrationReport(
        metric=scorer.name,
        judge=judge,
        samples=scorer.num_samples,
        outcomes=names,
        items=items,
        judge_stats=stats,
    )
