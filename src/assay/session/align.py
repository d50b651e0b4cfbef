"""Aligning a judge to people's labels (issue #35): MemAlign's two memories, measured
on held-out labels.

From labelled items (a labels file, or the labels people gave in the store) and a
judged metric with its base judge model, `aalign` builds an aligned judge
(`assay.judges.align.AlignedJudgeSpec`):

- **guidelines** (semantic memory): the judge model is shown the items where it
  disagreed with people (inputs, its verdict and reasoning, the people's verdict and
  note) and asked for short general rules that would have led it to their verdicts;
- **examples** (episodic memory): the most informative labelled items, shown with the
  people's verdict: the disagreements first, then borderline items (the judge's
  samples split), both labels taken in turn and no response twice, within a character
  budget.

It is measured by k-fold cross-validation: the items are split into `folds` parts
(stratified by label); for each part, an aligned judge is built from the other parts
only and scored on that part, so no item is ever scored by a judge built from it.
The base judge's verdicts on the same items give kappa before; the report has each
fold's kappa before and after, their means, the pooled kappa over all held-out items
and a paired bootstrap interval of the gain. A gain whose interval reaches 0 is
reported as "no reliable gain". The judge that is kept is built from every item.

Each scoring is a `RunSession` through `assay.session.calibrate.acalibrate`, every
judge call through one `JudgePool` (its cache in the store), so running an alignment
again asks the judge nothing new.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from assay.core.cases import EvalCase
from assay.engine.calibrate import (
    CalibrationReport,
    ItemVerdict,
    LabelledSet,
    build_judged_metric,
    outcome_names,
    parse_human_label,
)
from assay.errors import AssayError, ConfigError, InputError
from assay.judges.agreement import cohen_kappa, confusion_matrix
from assay.judges.align import (
    AlignedExample,
    AlignedJudges,
    AlignedJudgeSpec,
    check_name,
    render_example,
)
from assay.judges.types import JudgeModelOptions
from assay.metrics.judged.context import response_text, user_prompt_text
from assay.models.types import ModelCallError
from assay.session.calibrate import acalibrate

if TYPE_CHECKING:
    from assay.judges.client import JudgePool
    from assay.models.cache import HasCacheTable

#: the prompt template id of the distillation request (part of its cache key)
GUIDELINES_PROMPT_VERSION = "align_guidelines.v1"
#: where the distillation prompt lists the disagreements (the stand-in looks for it)
DISAGREEMENTS_TAG = "<disagreements>"
_GUIDELINE_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(?P<text>\S.*)$")
#: longest guideline kept (a model that writes an essay is cut short)
GUIDELINE_CHARS = 400


class AlignmentError(AssayError):
    """The judge scored too few labelled items to align it (exit 1, as a calibration
    with no scored item): it is the judge failing, not the command's usage."""

    exit_code = 1


@dataclass(frozen=True)
class AlignOptions:
    """How `aalign` builds and measures an aligned judge."""

    folds: int = 5
    max_examples: int = 6
    #: characters of rendered examples at most (about a quarter of that in tokens)
    example_chars: int = 6000
    max_guidelines: int = 8
    #: disagreements shown to the judge model when it distils guidelines, at most
    max_disagreements: int = 24
    bootstrap: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.folds < 2:
            raise ConfigError(f"--folds must be at least 2, got {self.folds}")
        if self.max_examples < 0:
            raise ConfigError(f"--max-examples must be 0 or more, got {self.max_examples}")
        if self.example_chars < 0:
            raise ConfigError(f"--example-chars must be 0 or more, got {self.example_chars}")
        if self.max_guidelines < 0:
            raise ConfigError(f"--max-guidelines must be 0 or more, got {self.max_guidelines}")
        if self.bootstrap < 100:
            raise ConfigError(f"bootstrap resamples must be at least 100, got {self.bootstrap}")


@dataclass(frozen=True)
class FoldResult:
    """One fold: built from `train` items, scored on `test` items it never saw."""

    index: int
    train: int
    test: int
    kappa_before: float | None
    kappa_after: float | None
    accuracy_before: float | None
    accuracy_after: float | None
    guidelines: int
    examples: int

    def to_dict(self) -> dict[str, object]:
        return {
            "fold": self.index,
            "train": self.train,
            "test": self.test,
            "kappa_before": self.kappa_before,
            "kappa_after": self.kappa_after,
            "accuracy_before": self.accuracy_before,
            "accuracy_after": self.accuracy_after,
            "guidelines": self.guidelines,
            "examples": self.examples,
        }


@dataclass(frozen=True)
class AlignmentReport:
    """What `aalign` built and how it measured on held-out labels."""

    metric: str
    judge: str
    #: the aligned judge built from every item (version 0 until stored)
    spec: AlignedJudgeSpec
    folds: list[FoldResult]
    #: items labelled, items both judges scored (the statistics' items)
    items: int
    compared: int
    #: pooled over every held-out item
    kappa_before: float | None
    kappa_after: float | None
    accuracy_before: float | None
    accuracy_after: float | None
    #: kappa after minus before, pooled, and its paired bootstrap interval
    gain: float | None
    gain_interval: tuple[float, float] | None
    #: paired bootstrap intervals of the pooled kappas
    kappa_before_interval: tuple[float, float] | None = None
    kappa_after_interval: tuple[float, float] | None = None
    confidence: float = 0.95
    #: item ids the base judge (or an aligned one) gave no verdict
    unscored: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    judge_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_before(self) -> float | None:
        return _mean([f.kappa_before for f in self.folds])

    @property
    def mean_after(self) -> float | None:
        return _mean([f.kappa_after for f in self.folds])

    @property
    def verdict(self) -> str:
        """ "gain", "no reliable gain" (the interval reaches 0) or "worse"."""
        if self.gain_interval is None:
            return "no reliable gain"
        low, high = self.gain_interval
        if low > 0:
            return "gain"
        if high < 0:
            return "worse"
        return "no reliable gain"

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (`assay judge align --json`)."""
        return {
            "metric": self.metric,
            "judge": self.judge,
            "items": self.items,
            "compared": self.compared,
            "folds": [f.to_dict() for f in self.folds],
            "kappa_before": self.kappa_before,
            "kappa_after": self.kappa_after,
            "mean_kappa_before": self.mean_before,
            "mean_kappa_after": self.mean_after,
            "accuracy_before": self.accuracy_before,
            "accuracy_after": self.accuracy_after,
            "gain": self.gain,
            "gain_interval": _listed(self.gain_interval),
            "kappa_before_interval": _listed(self.kappa_before_interval),
            "kappa_after_interval": _listed(self.kappa_after_interval),
            "confidence": self.confidence,
            "verdict": self.verdict,
            "unscored": list(self.unscored),
            "warnings": list(self.warnings),
            "aligned_judge": self.spec.to_dict(),
            "judge_stats": dict(self.judge_stats),
        }

    def summary(self) -> dict[str, object]:
        """What the stored judge keeps of this report."""
        data = self.to_dict()
        data.pop("aligned_judge")
        data.pop("judge_stats")
        return data


def _listed(interval: tuple[float, float] | None) -> list[float] | None:
    return list(interval) if interval is not None else None


# ----------------------------------------------------------------------------- items


def case_inputs(case: EvalCase) -> dict[str, str]:
    """What an example shows of a labelled item: prompt, reference and response."""
    turns = case.actual or case.reference or []
    inputs: dict[str, str] = {}
    if turns:
        prompt = user_prompt_text(turns[0].user_input)
        if prompt:
            inputs["prompt"] = prompt
    expected = case.reference[-1].final_response if case.reference else None
    reference = expected or case.expected_response
    if reference:
        inputs["reference"] = reference
    if case.actual:
        response = response_text(case.actual[-1])
        if response:
            inputs["response"] = response
    return inputs


def _note(case: EvalCase) -> str | None:
    note = case.metadata.get("note")
    return str(note) if isinstance(note, str) and note.strip() else None


class LabelledItemLike(Protocol):
    """A label from the store (`assay.store.labels.LabelledItem`)."""

    @property
    def run_id(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def note(self) -> str | None: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...


def labelled_set_from_items(items: Sequence[LabelledItemLike]) -> tuple[LabelledSet, list[str]]:
    """The store's labels as a `LabelledSet` (one case per run and case), and what was
    left out: an item labelled by several people takes their majority verdict; a tie,
    or a label that is a score rather than pass/fail, is left out (named in the list).
    """
    from assay.formats import detect_format, format_module

    votes: dict[tuple[str, str], list[bool]] = {}
    inputs: dict[tuple[str, str], dict[str, Any]] = {}
    notes: dict[tuple[str, str], str] = {}
    left_out: list[str] = []
    for item in items:
        key = (item.run_id, item.case_id)
        try:
            # The store's verdicts are words; a number is a score on the metric's scale
            # (even 1 or 0, which in a labels file would read as pass or fail).
            verdict = (
                None
                if _is_number(item.label)
                else parse_human_label(item.label, file="store", line=0, case_id=item.case_id)
            )
        except InputError:
            verdict = None
        if verdict is None:
            left_out.append(f"{item.run_id}/{item.case_id}: label {item.label!r} is a score")
            continue
        votes.setdefault(key, []).append(verdict)
        inputs.setdefault(key, dict(item.inputs))
        if item.note:
            notes.setdefault(key, item.note)
    rows: list[dict[str, Any]] = []
    verdicts: list[bool] = []
    for key, said in votes.items():
        yes = sum(said)
        if yes * 2 == len(said):
            left_out.append(f"{key[0]}/{key[1]}: people are split {yes}-{len(said) - yes}")
            continue
        row = {k: v for k, v in inputs[key].items() if k != "label"}
        row["id"] = f"{key[0]}/{key[1]}"
        if key in notes:
            row["note"] = notes[key]
        rows.append(row)
        verdicts.append(yes * 2 > len(said))
    if not rows:
        raise ConfigError("no labelled item to align on" + _named(left_out))
    fmt = detect_format(rows, Path("labels.jsonl"))
    evalset = format_module(fmt).load_data(rows, file="store labels", mapping=None)
    evalset.id = evalset.id or "store-labels"
    ids = [case.id for case in evalset.cases]
    labelled = LabelledSet(evalset, dict(zip(ids, verdicts, strict=True)), {}, fmt)
    return labelled, left_out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _named(left_out: Sequence[str]) -> str:
    return f" (left out: {'; '.join(left_out[:5])})" if left_out else ""


def _subset(labelled: LabelledSet, ids: Sequence[str]) -> LabelledSet:
    wanted = set(ids)
    cases = [c for c in labelled.evalset.cases if c.id in wanted]
    evalset = labelled.evalset.model_copy(update={"cases": cases})
    return LabelledSet(
        evalset,
        {cid: labelled.labels[cid] for cid in labelled.labels if cid in wanted},
        {cid: line for cid, line in labelled.lines.items() if cid in wanted},
        labelled.format,
    )


def stratified_folds(labels: Mapping[str, bool], folds: int, seed: int) -> list[list[str]]:
    """`folds` parts of the item ids, each label spread evenly over them (shuffled)."""
    rng = random.Random(seed)
    parts: list[list[str]] = [[] for _ in range(folds)]
    start = 0
    for value in (True, False):
        ids = [cid for cid, label in labels.items() if label is value]
        rng.shuffle(ids)
        for i, cid in enumerate(ids):
            parts[(start + i) % folds].append(cid)
        start = (start + len(ids)) % folds
    return parts


# ----------------------------------------------------------------------------- memories


def choose_examples(
    items: Sequence[ItemVerdict],
    cases: Mapping[str, EvalCase],
    names: tuple[str, str],
    options: AlignOptions,
) -> tuple[AlignedExample, ...]:
    """The most informative labelled items as examples (episodic memory).

    Disagreements first (at most two thirds of the places while other items remain),
    then borderline items (the judge's samples split), then the rest; within each group
    the people's two verdicts in turn; no response twice; as many as `max_examples`
    and `example_chars` allow.
    """

    def rank(item: ItemVerdict) -> int:
        if item.agrees is False:
            return 0
        if item.agreement is not None and item.agreement < 1.0:
            return 1
        return 2

    def ordered(group: int) -> list[ItemVerdict]:
        members = [i for i in items if rank(i) == group]
        by_label = [[i for i in members if i.human == n] for n in names]
        return [i for pair in _zip_longest(*by_label) for i in pair if i is not None]

    groups = [ordered(g) for g in (0, 1, 2)]
    first_share = max(1, (2 * options.max_examples) // 3)
    passes = [groups[0][:first_share], groups[1] + groups[2], groups[0][first_share:]]
    chosen: list[AlignedExample] = []
    seen: set[str] = set()
    used = 0
    for candidates in passes:
        for item in candidates:
            if len(chosen) >= options.max_examples:
                return tuple(chosen)
            inputs = case_inputs(cases[item.case_id])
            response = inputs.get("response", "")
            if response in seen:
                continue
            example = AlignedExample(inputs, item.human, _note(cases[item.case_id]))
            size = len(render_example(example, len(chosen) + 1))
            if used + size > options.example_chars:
                continue
            seen.add(response)
            used += size
            chosen.append(example)
    return tuple(chosen)


def _zip_longest(*lists: list[ItemVerdict]) -> list[tuple[ItemVerdict | None, ...]]:
    longest = max((len(x) for x in lists), default=0)
    return [tuple(x[i] if i < len(x) else None for x in lists) for i in range(longest)]


def guidelines_prompt(
    metric: str, disagreements: Sequence[tuple[ItemVerdict, EvalCase]], options: AlignOptions
) -> list[dict[str, str]]:
    """The request asking the judge model for guidelines from its disagreements."""
    system = (
        f"You review the verdicts an LLM judge gave for the metric {metric!r}. Human"
        " reviewers disagreed with the judge on the cases below. Write at most"
        f" {options.max_guidelines} short, general guidelines that would have led the judge"
        " to the reviewers' verdicts: name the patterns the judge got wrong, do not quote"
        " single cases. Reply with the guidelines only, one per line, each starting"
        ' with "- ".'
    )
    shown: list[str] = []
    for item, case in disagreements[: options.max_disagreements]:
        example = AlignedExample(case_inputs(case), item.human, _note(case))
        body = render_example(example, len(shown) + 1)
        judged = (
            f"<judge_verdict>{item.judge}</judge_verdict>\n"
            f"<judge_reasoning>{(item.explanation or '').strip()}</judge_reasoning>\n"
        )
        shown.append(body.replace("<human_verdict>", judged + "<human_verdict>", 1))
    user = f"{DISAGREEMENTS_TAG}\n" + "\n".join(shown) + "\n</disagreements>"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_guidelines(reply: str, limit: int) -> tuple[str, ...]:
    """The guideline lines of a reply (bulleted or numbered), deduplicated, at most
    `limit`; a reply with no bullet at all counts each non-empty line."""
    lines = [line for line in reply.splitlines() if line.strip()]
    bulleted = [m["text"] for line in lines if (m := _GUIDELINE_LINE.match(line))]
    found = bulleted or [line.strip() for line in lines]
    out: list[str] = []
    for text in found:
        text = " ".join(text.split())[:GUIDELINE_CHARS]
        if text and text not in out:
            out.append(text)
    return tuple(out[:limit])


async def distil_guidelines(
    pool: JudgePool,
    judge: str,
    metric: str,
    disagreements: Sequence[tuple[ItemVerdict, EvalCase]],
    options: AlignOptions,
    *,
    judge_options: JudgeModelOptions | None = None,
) -> tuple[str, ...]:
    """Guidelines from the judge model (semantic memory); none without disagreements.
    Raises ModelCallError when the judge model cannot answer."""
    if not disagreements or options.max_guidelines == 0:
        return ()
    client = pool.judge(judge, judge_options)
    replies = await client.generate(
        guidelines_prompt(metric, disagreements, options),
        1,
        {"temperature": 0.0},
        prompt_version=GUIDELINES_PROMPT_VERSION,
    )
    return parse_guidelines(replies[0], options.max_guidelines)


# ----------------------------------------------------------------------------- statistics


def _kappa_and_accuracy(
    pairs: Sequence[tuple[str, str]], names: tuple[str, str]
) -> tuple[float | None, float | None]:
    if not pairs:
        return None, None
    matrix = confusion_matrix(pairs, names)
    return cohen_kappa(matrix), matrix.agreed / matrix.total


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


Interval = tuple[float, float]


@dataclass(frozen=True)
class KappaIntervals:
    """Paired bootstrap percentile intervals of kappa before, after, and the gain."""

    before: Interval | None
    after: Interval | None
    gain: Interval | None


def bootstrap_kappas(
    triples: Sequence[tuple[str, str, str]],
    names: tuple[str, str],
    *,
    resamples: int,
    seed: int,
    confidence: float = 0.95,
) -> KappaIntervals:
    """Percentile intervals over (human, before, after) triples resampled together
    (paired): kappa before, after, and after - before. An interval is None when fewer
    than half the resamples define it (kappa is undefined on a one-label sample)."""
    rng = random.Random(seed)
    n = len(triples)
    if n < 2:
        return KappaIntervals(None, None, None)
    befores: list[float] = []
    afters: list[float] = []
    gains: list[float] = []
    for _ in range(resamples):
        sample = [triples[rng.randrange(n)] for _ in range(n)]
        before = cohen_kappa(confusion_matrix(((h, b) for h, b, _ in sample), names))
        after = cohen_kappa(confusion_matrix(((h, a) for h, _, a in sample), names))
        if before is not None:
            befores.append(before)
        if after is not None:
            afters.append(after)
        if before is not None and after is not None:
            gains.append(after - before)
    return KappaIntervals(
        _percentiles(befores, resamples, confidence),
        _percentiles(afters, resamples, confidence),
        _percentiles(gains, resamples, confidence),
    )


def bootstrap_gain(
    triples: Sequence[tuple[str, str, str]],
    names: tuple[str, str],
    *,
    resamples: int,
    seed: int,
    confidence: float = 0.95,
) -> Interval | None:
    """The interval of kappa(after) - kappa(before) of `bootstrap_kappas`."""
    return bootstrap_kappas(
        triples, names, resamples=resamples, seed=seed, confidence=confidence
    ).gain


def _percentiles(values: list[float], resamples: int, confidence: float) -> Interval | None:
    if len(values) < resamples // 2:
        return None
    values.sort()
    tail = (1.0 - confidence) / 2
    return (values[int(tail * (len(values) - 1))], values[round((1.0 - tail) * (len(values) - 1))])


# ----------------------------------------------------------------------------- aligning


@dataclass
class _Run:
    """What one alignment shares: the pool, the metric's settings, the labels."""

    pool: JudgePool
    aligned: AlignedJudges
    metric: str
    judge: str
    samples: int | None
    base_url: str | None
    criterion: Mapping[str, Any] | None
    options: AlignOptions
    labelled: LabelledSet
    cases: dict[str, EvalCase]
    names: tuple[str, str]
    warnings: list[str]

    async def score(self, labelled: LabelledSet, judge: str) -> CalibrationReport:
        scorer = build_judged_metric(
            self.metric,
            judge=judge,
            samples=self.samples,
            base_url=self.base_url,
            criterion=self.criterion,
        )
        return await acalibrate(labelled, metric=scorer, judge=judge, pool=self.pool)

    async def build(self, name: str, items: Sequence[ItemVerdict]) -> AlignedJudgeSpec:
        """An aligned judge from `items` (the base judge's verdicts on them)."""
        wrong = [(i, self.cases[i.case_id]) for i in items if i.agrees is False]
        scorer = build_judged_metric(
            self.metric, judge=self.judge, base_url=self.base_url, criterion=self.criterion
        )
        try:
            guidelines = await distil_guidelines(
                self.pool,
                self.judge,
                self.metric,
                wrong,
                self.options,
                judge_options=scorer.judge_options,
            )
        except ModelCallError as exc:
            self.warnings.append(f"{name}: no guidelines, the judge model failed: {exc}")
            guidelines = ()
        examples = choose_examples(items, self.cases, self.names, self.options)
        return AlignedJudgeSpec(
            name=name,
            version=1,
            metric=self.metric,
            judge_model=self.judge,
            guidelines=guidelines,
            examples=examples,
        )


async def aalign(
    labels: LabelledSet,
    *,
    metric: str,
    judge: str,
    name: str,
    samples: int | None = None,
    base_url: str | None = None,
    criterion: Mapping[str, Any] | None = None,
    store: HasCacheTable | None = None,
    use_cache: bool = True,
    concurrency: int = 8,
    timeout_s: float = 60.0,
    options: AlignOptions | None = None,
) -> AlignmentReport:
    """Build an aligned judge for `metric` over `judge` from `labels`, measured by
    k-fold cross-validation (see the module). The judge is not stored: the caller
    stores `report.spec` (`Store.aligned_judges.add`)."""
    from assay.judges.client import JudgePool

    check_name(name)
    opts = options or AlignOptions()
    base = build_judged_metric(
        metric, judge=judge, samples=samples, base_url=base_url, criterion=criterion
    )
    names = outcome_names(base)
    counts = Counter(labels.labels.values())
    if min(counts[True], counts[False]) < 1:
        raise ConfigError(
            f"aligning needs items of both verdicts; the labels are all"
            f" {names[0] if counts[True] else names[1]}"
        )
    if len(labels.labels) < opts.folds * 2:
        raise ConfigError(
            f"{len(labels.labels)} labelled items are too few for {opts.folds} folds:"
            f" give at least {opts.folds * 2} (or fewer --folds)"
        )
    aligned = AlignedJudges()
    pool = JudgePool(
        store=store,
        default_model=judge,
        concurrency=concurrency,
        use_cache=use_cache,
        timeout_s=timeout_s,
        aligned=aligned,
    )
    run = _Run(
        pool=pool,
        aligned=aligned,
        metric=metric,
        judge=judge,
        samples=samples,
        base_url=base_url,
        criterion=criterion,
        options=opts,
        labelled=labels,
        cases={c.id: c for c in labels.evalset.cases},
        names=names,
        warnings=[],
    )
    try:
        return await _align(run, name)
    finally:
        await pool.aclose()


async def _align(run: _Run, name: str) -> AlignmentReport:
    opts = run.options
    before_report = await run.score(run.labelled, run.judge)
    before = {i.case_id: i for i in before_report.items}
    scored = {cid: v for cid, v in run.labelled.labels.items() if before[cid].scored}
    _check_scored(before_report, scored, opts.folds)
    parts = stratified_folds(scored, opts.folds, opts.seed)
    after: dict[str, ItemVerdict] = {}
    folds: list[FoldResult] = []
    for index, test in enumerate(parts, 1):
        train = [before[cid] for part in parts if part is not test for cid in part]
        spec = await run.build(f"{name[:100]}.fold{index}", train)
        run.aligned.add(spec)
        scored_fold = await run.score(_subset(run.labelled, test), f"aligned:{spec.ref}")
        after.update({i.case_id: i for i in scored_fold.items})
        folds.append(_fold(index, train, test, before, after, spec, run.names))
    final = await run.build(name, [before[cid] for part in parts for cid in part])
    triples = [
        (before[cid].human, str(before[cid].judge), str(after[cid].judge))
        for cid in scored
        if cid in after and after[cid].scored
    ]
    kappa_b, acc_b = _kappa_and_accuracy([(h, b) for h, b, _ in triples], run.names)
    kappa_a, acc_a = _kappa_and_accuracy([(h, a) for h, _, a in triples], run.names)
    intervals = bootstrap_kappas(triples, run.names, resamples=opts.bootstrap, seed=opts.seed)
    unscored = [cid for cid in run.labelled.labels if cid not in scored or not after[cid].scored]
    report = AlignmentReport(
        metric=run.metric,
        judge=run.judge,
        spec=final,
        folds=folds,
        items=len(run.labelled.labels),
        compared=len(triples),
        kappa_before=kappa_b,
        kappa_after=kappa_a,
        accuracy_before=acc_b,
        accuracy_after=acc_a,
        gain=None if kappa_a is None or kappa_b is None else kappa_a - kappa_b,
        gain_interval=intervals.gain,
        kappa_before_interval=intervals.before,
        kappa_after_interval=intervals.after,
        unscored=unscored,
        warnings=run.warnings,
        judge_stats=run.pool.stats.summary(),
    )
    spec = replace(final, version=0, kappa_before=kappa_b, kappa_after=kappa_a)
    return replace(report, spec=replace(spec, report=report.summary()))


def _check_scored(report: CalibrationReport, scored: Mapping[str, bool], folds: int) -> None:
    """AlignmentError unless the base judge scored enough items of both verdicts."""
    counts = Counter(scored.values())
    if len(scored) >= folds * 2 and counts[True] and counts[False]:
        return
    why = next((i.explanation for i in report.unscored if i.explanation), None)
    raise AlignmentError(
        f"the judge scored {len(scored)} of {len(report.items)} labelled items"
        f" ({counts[True]} {report.outcomes[0]}, {counts[False]} {report.outcomes[1]} by"
        f" the people's labels): {folds} folds need at least {folds * 2}, of both verdicts"
        + (f"; the judge said: {why}" if why else "")
    )


def _fold(
    index: int,
    train: Sequence[ItemVerdict],
    test: Sequence[str],
    before: Mapping[str, ItemVerdict],
    after: Mapping[str, ItemVerdict],
    spec: AlignedJudgeSpec,
    names: tuple[str, str],
) -> FoldResult:
    both = [cid for cid in test if after.get(cid) is not None and after[cid].scored]
    kb, ab = _kappa_and_accuracy([(before[c].human, str(before[c].judge)) for c in both], names)
    ka, aa = _kappa_and_accuracy([(after[c].human, str(after[c].judge)) for c in both], names)
    return FoldResult(
        index=index,
        train=len(train),
        test=len(test),
        kappa_before=kb,
        kappa_after=ka,
        accuracy_before=ab,
        accuracy_after=aa,
        guidelines=len(spec.guidelines),
        examples=len(spec.examples),
    )


def align(labels: LabelledSet, **kwargs: Any) -> AlignmentReport:
    """Synchronous `aalign` (not for use inside a running event loop)."""
    return asyncio.run(aalign(labels, **kwargs))


__all__ = [
    "AlignOptions",
    "AlignmentError",
    "AlignmentReport",
    "FoldResult",
    "aalign",
    "align",
    "labelled_set_from_items",
]
