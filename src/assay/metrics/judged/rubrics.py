"""Rubric judging shared by the rubric-based metrics: prompt lines, reply schema, votes.

One judge call per invocation assesses every rubric (as ADK does); each sample gives a
yes/no per rubric id. Per rubric, the samples vote (tie = no); a sample that does not
mention a rubric is left out of that rubric's vote, and a reply with no usable verdict
at all is unparseable.

Replies are asked for as JSON; a reply in the labelled-block layout ADK's own rubric
judges are prompted for (`ID: ...` / `Property: ...` / `Rationale: ...` / `Verdict: ...`
per rubric) is read too, so a judge model tuned to ADK's prompts, or a reply recorded
from one, gives the same verdicts in assay as in ADK.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assay.core.cases import Rubric
from assay.core.results import Score
from assay.metrics.judged.asking import no_parse_reason
from assay.metrics.judged.parsing import field, parse_json_object, parse_yes_no
from assay.metrics.judged.voting import binary_vote
from assay.metrics.sample_split import sample_scores_detail
from assay.metrics.stats import mean

#: rubric id -> the verdicts a sample gave it, in order (a reply in ADK's labelled
#: layout may judge one rubric twice, and ADK counts both in the vote), each with its
#: rationale
Verdicts = dict[str, list[tuple[bool, str | None]]]


def render_rubrics(rubrics: Sequence[Rubric], *, types: bool = False) -> str:
    """The property list of a rubric prompt, one `[id: ...]` line per rubric; with
    `types`, a typed rubric shows its type too (`[id: ...] [type: TOOL_USE_QUALITY]`)."""
    return "\n".join(
        f"- [id: {r.id}]" + (f" [type: {r.type}]" if types and r.type else "") + f" {r.text or ''}"
        for r in rubrics
    )


def rubric_schema(rubrics: Sequence[Rubric]) -> dict[str, Any]:
    """The reply schema: one `{id, rationale, verdict}` entry per rubric id."""
    item = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "enum": [r.id for r in rubrics]},
            "rationale": {"type": "string"},
            "verdict": {"type": "string", "enum": ["yes", "no"]},
        },
        "required": ["id", "rationale", "verdict"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "rubrics": {
                "type": "array",
                "items": item,
                "minItems": len(rubrics),
                "maxItems": len(rubrics),
            }
        },
        "required": ["rubrics"],
        "additionalProperties": False,
    }


# Typographic characters judges put in echoed texts, as their plain forms (ADK 2.13 maps
# the same six: curly single and double quotes, en and em dashes).
_PLAIN = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)
# What ADK 2.13 strips from both ends of an echoed property text before matching it.
_DECORATION = " *_`#>-\u2022\"'"


def normalize_property(text: str | None) -> str:
    """A rubric's property text as ADK 2.13 matches it to a judge's echo: NFKC, curly
    quotes and dashes made plain, runs of whitespace as one space, markdown and bullet
    decoration (`*`, `_`, backticks, `#`, `>`, `-`, `\u2022`, quotes) stripped from both
    ends, lower case. A missing text normalizes to ""."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_PLAIN)
    return " ".join(text.split()).strip(_DECORATION).lower()


def _norm_id(text: str) -> str:
    # Judges echo ids in JSON replies with markdown, quotes or other spacing.
    text = unicodedata.normalize("NFKC", text)
    return " ".join(text.split()).strip(" *_`\"'[]").lower()


def parse_rubric_reply(reply: str, rubrics: Sequence[Rubric]) -> Verdicts | None:
    """The yes/no verdicts (and rationales) per rubric id in one sample, or None.

    JSON entries are matched to rubrics by id, then by property text; an object mapping
    ids straight to verdicts (`{"concise": "yes"}`) is accepted too. A reply without
    such JSON is read as ADK's labelled blocks (`_parse_labelled_blocks`).
    """
    obj = parse_json_object(reply)
    if obj is None:
        return _parse_labelled_blocks(reply, rubrics)
    by_id = {_norm_id(r.id): r.id for r in rubrics}
    by_text = {normalize_property(r.text): r.id for r in rubrics}
    found: Verdicts = {}
    entries = field(obj, "rubrics", "properties", "verdicts", "results")
    if isinstance(entries, list):
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            key = field(entry, "id", "rubric_id")
            text = field(entry, "property", "text")
            rubric_id = by_id.get(_norm_id(str(key))) if key is not None else None
            if rubric_id is None and isinstance(text, str):
                rubric_id = by_text.get(normalize_property(text))
            verdict = parse_yes_no(field(entry, "verdict", "rating", "answer"))
            if rubric_id is None or verdict is None or rubric_id in found:
                continue
            rationale = field(entry, "rationale", "reasoning", "reason")
            found[rubric_id] = [(verdict, rationale if isinstance(rationale, str) else None)]
    else:
        for key, value in obj.items():
            rubric_id = by_id.get(_norm_id(str(key)))
            verdict = parse_yes_no(value)
            if rubric_id is not None and verdict is not None:
                found[rubric_id] = [(verdict, None)]
    return found or _parse_labelled_blocks(reply, rubrics)


# ADK 2.13's labelled layout, exactly as its parser reads it: `ID: ` and `Property: `
# only at the start of a line (after blanks), `Rationale: ` and `Verdict: ` anywhere;
# each label is case-sensitive and followed by one space.
_ID_LINE = re.compile(r"^\s*ID: (.*)$", re.MULTILINE)
_PROPERTY_LINE = re.compile(r"^\s*Property: (.*)$", re.MULTILINE)
_RATIONALE = re.compile(r"Rationale: (.*)")
_VERDICT = re.compile(r"Verdict: (.*)")


def _verdict_word(text: str) -> bool | None:
    # As ADK: "yes" anywhere means met, else "no" anywhere means not met.
    lowered = text.lower()
    return True if "yes" in lowered else False if "no" in lowered else None


def _parse_labelled_blocks(reply: str, rubrics: Sequence[Rubric]) -> Verdicts | None:
    """Verdicts from the `ID:` / `Property:` / `Rationale:` / `Verdict:` layout, read
    as ADK 2.13 reads it.

    - Unless the reply has as many `Property:` lines as `Rationale:` and `Verdict:`
      labels, nothing is read: a reply cut short (one block without its verdict)
      could otherwise hide a failed rubric behind the complete ones.
    - The n-th property goes with the n-th rationale and verdict; its id is the last
      `ID:` line between the previous property and this one.
    - A block names its rubric by exact id, else by its property text as
      `normalize_property` sees it; a block naming no known rubric is skipped.
    - Every matched block counts, so a rubric judged twice in one reply votes twice.
    """
    properties = list(_PROPERTY_LINE.finditer(reply))
    rationales = _RATIONALE.findall(reply)
    verdicts = [_verdict_word(v) for v in _VERDICT.findall(reply)]
    if not len(properties) == len(rationales) == len(verdicts):
        return None
    ids = list(_ID_LINE.finditer(reply))
    by_id = {r.id: r.id for r in rubrics}
    by_text = {normalize_property(r.text): r.id for r in rubrics}
    found: Verdicts = {}
    for i, (prop, rationale, verdict) in enumerate(
        zip(properties, rationales, verdicts, strict=True)
    ):
        after = properties[i - 1].start() if i else -1
        named = [m.group(1).strip() for m in ids if after < m.start() < prop.start()]
        rubric_id = by_id.get(named[-1]) if named and named[-1] else None
        if rubric_id is None:
            rubric_id = by_text.get(normalize_property(prop.group(1).strip()))
        if rubric_id is None or verdict is None:
            continue
        found.setdefault(rubric_id, []).append((verdict, rationale.strip() or None))
    return found or None


@dataclass(frozen=True, slots=True)
class RubricOutcome:
    """One rubric on one invocation: 1.0 yes / 0.0 no, None when no sample judged it."""

    rubric_id: str
    score: float | None
    agreement: float | None
    rationale: str | None


def vote_rubrics(
    replies: Sequence[str], rubrics: Sequence[Rubric]
) -> tuple[list[RubricOutcome], int]:
    """Per-rubric majority votes over the samples, and the count of unparseable samples."""
    parsed = [parse_rubric_reply(text, rubrics) for text in replies]
    usable = [p for p in parsed if p is not None]
    outcomes: list[RubricOutcome] = []
    for rubric in rubrics:
        samples = [entry for p in usable for entry in p.get(rubric.id, [])]
        vote = binary_vote([s[0] for s in samples])
        if vote.label is None:
            outcomes.append(RubricOutcome(rubric.id, None, None, None))
            continue
        rationale = next((s[1] for s in samples if s[0] == vote.label and s[1]), None)
        outcomes.append(
            RubricOutcome(rubric.id, 1.0 if vote.label else 0.0, vote.agreement, rationale)
        )
    return outcomes, len(parsed) - len(usable)


def _sample_score(reply: str, rubrics: Sequence[Rubric]) -> float | None:
    """What one sample alone would score: the share of rubrics it says are met (None
    when it decides no rubric)."""
    parsed = parse_rubric_reply(reply, rubrics)
    if parsed is None:
        return None
    decided = [1.0 if entries[0][0] else 0.0 for entries in parsed.values() if entries]
    return mean(decided) if decided else None


def rubric_score(replies: Sequence[str], rubrics: Sequence[Rubric]) -> Score:
    """One invocation's score from the judge's samples: the mean of its decided rubrics.

    Details: `rubric_scores` (id → 1.0 / 0.0 / None), `agreement` (mean over the
    decided rubrics), `samples` and `unparseable`.
    """
    outcomes, unparseable = vote_rubrics(replies, rubrics)
    decided = [o for o in outcomes if o.score is not None]
    details: dict[str, Any] = {
        "rubric_scores": {o.rubric_id: o.score for o in outcomes},
        "agreement": mean([o.agreement for o in decided if o.agreement is not None]),
        "samples": len(replies),
        "unparseable": unparseable,
    }
    if not decided:
        return Score(None, no_parse_reason(replies, rubric_schema(rubrics)), details)
    details.update(sample_scores_detail(_sample_score(text, rubrics) for text in replies))
    lines = [
        f"{o.rubric_id}: {'yes' if o.score else 'no'}"
        + (f" ({o.rationale})" if o.rationale else "")
        for o in decided
    ]
    lines += [
        f"{o.rubric_id}: no verdict (no parseable sample)" for o in outcomes if o.score is None
    ]
    return Score(mean([o.score for o in decided if o.score is not None]), "\n".join(lines), details)


def pool_rubric_scores(per: Sequence[Score]) -> tuple[float | None, dict[str, Any]]:
    """The case score, the mean of every decided rubric score of every invocation, and
    the details `rubric_scores` (id → mean over the invocations that decided it)."""
    pooled: dict[str, list[float]] = {}
    for score in per:
        for rubric_id, value in score.details.get("rubric_scores", {}).items():
            values = pooled.setdefault(rubric_id, [])
            if value is not None:
                values.append(value)
    overall = mean([v for values in pooled.values() for v in values])
    return overall, {"rubric_scores": {rid: mean(values) for rid, values in pooled.items()}}
