"""hallucinations_v1's two judge steps: split a response into sentences, then label each.

1. The segmenter copies the response out sentence by sentence (one call, temperature
   0: it copies text, it does not judge, so sampling it would only add noise and make
   the sentence lists of different samples disagree).
2. The validator labels every sentence against the context: `supported`,
   `unsupported`, `contradictory`, `disputed` or `not_applicable`, `num_samples`
   times. Per sentence, the samples vote on "grounded" (supported / not_applicable)
   against "not grounded"; a tie is not grounded; samples without a label for the
   sentence are left out. The reported label is the most frequent label on the winning
   side (ties to the more negative label).

A response's score is the share of its decided sentences that are grounded.

Replies are asked for as JSON; replies in the layouts ADK's own hallucinations_v1
prompts ask for (`<sentence>...</sentence>` from the segmenter, `sentence: / label: /
rationale: ...` blocks from the validator) are read too, so replies recorded from, or
tuned to, ADK's judge give the same labels here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.results import Score
from assay.judges.types import JudgeModelOptions
from assay.metrics.judged.asking import ask, no_parse_reason, settings_for
from assay.metrics.judged.base import JudgeClient
from assay.metrics.judged.context import InvocationView, grounding_context
from assay.metrics.judged.parsing import field as get_field
from assay.metrics.judged.parsing import parse_choice, parse_json_object
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.voting import binary_vote, label_vote
from assay.metrics.stats import mean

#: labels from the most negative to the most positive (label_vote's tie order)
LABELS: tuple[str, ...] = (
    "contradictory",
    "disputed",
    "unsupported",
    "not_applicable",
    "supported",
)
GROUNDED: frozenset[str] = frozenset({"supported", "not_applicable"})

SEGMENTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sentences": {"type": "array", "items": {"type": "string"}}},
    "required": ["sentences"],
    "additionalProperties": False,
}


def validator_schema(count: int) -> dict[str, Any]:
    """The validator's reply: one labelled entry per sentence."""
    item = {
        "type": "object",
        "properties": {
            "index": {"type": "integer", "minimum": 1, "maximum": count},
            "rationale": {"type": "string"},
            # Most positive first, as every judge schema of assay lists its labels.
            "label": {"type": "string", "enum": list(reversed(LABELS))},
        },
        "required": ["index", "rationale", "label"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "sentences": {"type": "array", "items": item, "minItems": count, "maxItems": count}
        },
        "required": ["sentences"],
        "additionalProperties": False,
    }


@dataclass(frozen=True, slots=True)
class SentenceVerdict:
    """The outcome for one sentence; `label` None when no sample labelled it."""

    sentence: str
    label: str | None
    agreement: float | None
    rationale: str | None = None

    @property
    def grounded(self) -> bool | None:
        return None if self.label is None else self.label in GROUNDED

    def as_dict(self) -> dict[str, Any]:
        return {
            "sentence": self.sentence,
            "label": self.label,
            "agreement": self.agreement,
            "rationale": self.rationale,
        }


@dataclass(frozen=True, slots=True)
class AdkBlocks:
    """A validator reply read as ADK 2.13 reads it: every complete labelled block
    counts, whatever sentence it names; its score is the share of grounded labels among
    the known ones (None when no block has one)."""

    blocks: int
    score: float | None


# ADK's validator layout: the five fields in this order, each label followed by a
# colon (any case); a block runs until the next line starting "sentence:" or the end.
_ADK_BLOCK = re.compile(
    r"sentence:(.*?)\nlabel:(.*?)\nrationale:(.*?)\nsupporting_excerpt:(.*?)"
    r"\ncontradicting_excerpt:(.*?)(?=\nsentence:|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_ADK_NEGATIVE = frozenset({"unsupported", "contradictory", "disputed"})


def adk_block_score(reply: str) -> AdkBlocks | None:
    """The reply as ADK 2.13's hallucinations_v1 scores it, when it holds ADK's
    labelled blocks: labels compared in lower case after trimming blanks (`supported`,
    `not_applicable` grounded; `unsupported`, `contradictory`, `disputed` not; others
    ignored). None when the reply has no such block."""
    labels = [m.group(2).strip().lower() for m in _ADK_BLOCK.finditer(reply.strip())]
    if not labels:
        return None
    known = [label in GROUNDED for label in labels if label in GROUNDED | _ADK_NEGATIVE]
    return AdkBlocks(len(labels), sum(known) / len(known) if known else None)


@dataclass(frozen=True)
class ResponseCheck:
    """One response checked sentence by sentence (or why it could not be)."""

    response: str
    sentences: list[SentenceVerdict] = field(default_factory=list)
    error: str | None = None
    samples: int = 0
    unparseable: int = 0
    #: the score as ADK reads its validator's reply, when the one sample used ADK's
    #: `sentence: / label: / rationale: / supporting_excerpt: / contradicting_excerpt:`
    #: layout (`adk_block_score`); it stands instead of the per-sentence share
    adk: AdkBlocks | None = None

    @property
    def decided(self) -> list[SentenceVerdict]:
        return [s for s in self.sentences if s.label is not None]

    @property
    def score(self) -> float | None:
        if self.adk is not None:
            return self.adk.score
        decided = self.decided
        if self.error is not None or not decided:
            return None
        return sum(1 for s in decided if s.grounded) / len(decided)

    @property
    def agreement(self) -> float | None:
        values = [s.agreement for s in self.decided if s.agreement is not None]
        return sum(values) / len(values) if values else None


_TAGGED = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)
_BLOCK = re.compile(
    r"^[ \t*_-]*sentence[*_]*[ \t]*:(?P<sentence>.*?)\n[ \t*_-]*label[*_]*[ \t]*:(?P<label>[^\n]*)"
    r"(?:\n[ \t*_-]*rationale[*_]*[ \t]*:(?P<rationale>[^\n]*))?",
    re.DOTALL | re.IGNORECASE | re.MULTILINE,
)


def parse_sentences(reply: str) -> list[str] | None:
    """The segmenter's sentences, or None when unparseable.

    From assay's JSON layout, the non-blank strings of its list; else, as ADK 2.13
    reads its segmenter, every `<sentence>...</sentence>` (tags in lower case), a
    blank one included.
    """
    sentences = get_field(parse_json_object(reply), "sentences")
    if isinstance(sentences, list):
        kept = [s.strip() for s in sentences if isinstance(s, str) and s.strip()]
    else:
        kept = [s.strip() for s in _TAGGED.findall(reply or "")]
    return kept or None


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _json_entries(reply: str) -> bool:
    """Whether the reply holds assay's JSON layout (a list of labelled entries)."""
    entries = get_field(parse_json_object(reply), "sentences", "labels", "results")
    return isinstance(entries, list)


def parse_labels(
    reply: str, sentences: Sequence[str]
) -> tuple[list[str | None], list[str | None]] | None:
    """Per-sentence labels and rationales of one validator sample, or None.

    Entries are matched by their 1-based `index`, or by the sentence text when the
    index is missing; a sentence without a valid label stays None. A reply with no
    usable entry at all is unparseable.
    """
    entries = get_field(parse_json_object(reply), "sentences", "labels", "results")
    if not isinstance(entries, list):
        entries = _labelled_blocks(reply or "")
    if not entries:
        return None
    labels: list[str | None] = [None] * len(sentences)
    rationales: list[str | None] = [None] * len(sentences)
    by_text = {_norm(s): i for i, s in enumerate(sentences)}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        position = _position(entry, by_text, len(sentences))
        label = parse_choice(get_field(entry, "label", "verdict"), LABELS)
        if position is None or label is None or labels[position] is not None:
            continue
        labels[position] = label
        rationale = get_field(entry, "rationale", "reason")
        rationales[position] = rationale if isinstance(rationale, str) else None
    if all(label is None for label in labels):
        return None
    return labels, rationales


def _labelled_blocks(reply: str) -> list[dict[str, Any]]:
    """`sentence: / label: / rationale:` blocks as entries; one whose text is not a
    segmented sentence keeps its place in the order (`index`), as ADK counts it."""
    entries: list[dict[str, Any]] = []
    for number, match in enumerate(_BLOCK.finditer(reply), 1):
        entry: dict[str, Any] = {
            "sentence": match["sentence"].strip(),
            "label": match["label"].strip().strip("`*_"),
            "order": number,
        }
        if match["rationale"]:
            entry["rationale"] = match["rationale"].strip()
        entries.append(entry)
    return entries


def _position(entry: dict[str, Any], by_text: dict[str, int], count: int) -> int | None:
    index = get_field(entry, "index", "id", "number")
    if isinstance(index, str) and index.strip().isdigit():
        index = int(index.strip())
    if isinstance(index, int) and not isinstance(index, bool) and 1 <= index <= count:
        return index - 1
    text = get_field(entry, "sentence", "text")
    found = by_text.get(_norm(text)) if isinstance(text, str) else None
    order = entry.get("order")
    if found is None and isinstance(order, int) and 1 <= order <= count:
        return order - 1
    return found


def _verdict(
    sentence: str, labels: Sequence[str | None], rationales: Sequence[str | None]
) -> SentenceVerdict:
    grounded = binary_vote([None if label is None else label in GROUNDED for label in labels])
    if grounded.label is None:
        return SentenceVerdict(sentence, None, None)
    side = [
        label if label is not None and (label in GROUNDED) == grounded.label else None
        for label in labels
    ]
    label = label_vote(side, LABELS).label
    rationale = next(
        (r for lab, r in zip(side, rationales, strict=True) if lab == label and r), None
    )
    return SentenceVerdict(sentence, label, grounded.agreement, rationale)


async def check_response(
    judge: JudgeClient,
    response: str,
    context: str,
    *,
    options: JudgeModelOptions,
    num_samples: int,
) -> ResponseCheck:
    """Segment `response`, then label each sentence against `context`."""
    segmenter = get_prompt("hallucinations_segmenter").render(response=response)
    seg = await ask(
        judge,
        segmenter,
        1,
        settings_for(options, SEGMENTER_SCHEMA, temperature=0.0),
        parse=parse_sentences,
    )
    if seg.error is not None:
        return ResponseCheck(response, error=f"sentence segmentation: {seg.error}")
    sentences = parse_sentences(seg.texts[0])
    if sentences is None:
        return ResponseCheck(
            response,
            error="sentence segmentation: the judge's reply held no sentence list: "
            + no_parse_reason(seg.texts, SEGMENTER_SCHEMA),
        )
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
    validator = get_prompt("hallucinations_validator").render(
        context=context, sentences=numbered, count=len(sentences)
    )
    settings = settings_for(options, validator_schema(len(sentences)))
    val = await ask(
        judge, validator, num_samples, settings, parse=lambda text: parse_labels(text, sentences)
    )
    if val.error is not None:
        return ResponseCheck(response, error=f"sentence validation: {val.error}")
    parsed = [parse_labels(text, sentences) for text in val.texts]
    usable = [p for p in parsed if p is not None]
    unparseable = len(parsed) - len(usable)
    # One sample not in assay's JSON layout (ADK asks its validator once, for its own
    # labelled blocks) is read as ADK reads it: without complete blocks, nothing.
    if len(val.texts) == 1 and not _json_entries(val.texts[0]):
        adk = adk_block_score(val.texts[0])
        if adk is None:
            return ResponseCheck(
                response,
                error="sentence validation: "
                + no_parse_reason(val.texts, validator_schema(len(sentences))),
                samples=1,
                unparseable=1,
            )
        verdicts = [
            _verdict(sentence, [p[0][i] for p in usable], [p[1][i] for p in usable])
            for i, sentence in enumerate(sentences)
        ]
        return ResponseCheck(response, verdicts, None, 1, unparseable, adk)
    if not usable:
        return ResponseCheck(
            response,
            error="sentence validation: "
            + no_parse_reason(val.texts, validator_schema(len(sentences))),
            samples=len(parsed),
            unparseable=unparseable,
        )
    verdicts = [
        _verdict(sentence, [p[0][i] for p in usable], [p[1][i] for p in usable])
        for i, sentence in enumerate(sentences)
    ]
    return ResponseCheck(response, verdicts, None, len(parsed), unparseable)


def responses_to_check(view: InvocationView, *, intermediate: bool) -> list[tuple[str, str]]:
    """(response, context) pairs to check: with `intermediate`, every intermediate agent
    message against the steps before it; then the final response against all steps."""
    steps = view.turn.steps
    pairs: list[tuple[str, str]] = []
    if intermediate:
        for i, step in enumerate(steps):
            if step.agent_message is not None and step.agent_message.text.strip():
                pairs.append((step.agent_message.text, grounding_context(view, steps[:i])))
    final = view.turn.final_response
    if final and final.strip():
        pairs.append((final, grounding_context(view, steps)))
    return pairs


def invocation_score(checks: Sequence[ResponseCheck]) -> Score:
    """An invocation's score: the mean over its checked responses (as ADK computes it).

    Details: `agreement` (mean over decided sentences), `samples`, `unparseable`,
    `sentences` (each with its label, agreement and rationale) and `responses_checked`.
    A response that could not be checked is named in the explanation.
    """
    scores = [c.score for c in checks if c.score is not None]
    sentences = [s for c in checks for s in c.sentences]
    decided = [s for s in sentences if s.label is not None]
    details: dict[str, Any] = {
        "agreement": mean([s.agreement for s in decided if s.agreement is not None]),
        "samples": sum(c.samples for c in checks),
        "unparseable": sum(c.unparseable for c in checks),
        "sentences": [s.as_dict() for s in sentences],
        "responses_checked": len(scores),
    }
    if len(checks) == 1:
        problems = [checks[0].error] if checks[0].error else []
    else:
        problems = [f"response {i}: {c.error}" for i, c in enumerate(checks, 1) if c.error]
    if not scores:
        return Score(None, "; ".join(problems) or "no sentence could be labelled", details)
    grounded = sum(1 for s in decided if s.grounded)
    summary = f"{grounded} of {len(decided)} sentences supported or not applicable"
    flagged = [f"{s.label}: {s.sentence}" for s in decided if not s.grounded]
    return Score(mean(scores), "\n".join([summary, *flagged, *problems]), details)
