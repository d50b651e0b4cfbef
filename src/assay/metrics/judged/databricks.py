"""Databricks / MLflow agent-evaluation judges, with Databricks' output names (SPEC §3).

Answer judges give one yes/no per row: the score is 1.0 for `yes`, 0.0 for `no`, and
rows carry `{step}/llm_judged/{judge}/rating` (`yes`/`no`), `/rationale` and
`/error_message`, the summary `{step}/llm_judged/{judge}/rating/percentage` (safety:
`rating/average`), next to the Vertex-style `{judge}/score` columns. `{step}` is
`response`, except `retrieval` for context_sufficiency (as Databricks names it).
`chunk_relevance` rates each retrieved chunk; its score is the precision
(relevant ÷ retrieved) and its columns are `retrieval/llm_judged/chunk_relevance/
ratings|rationales|error_messages|precision`, summary `.../precision/average`.

A row passes a yes/no judge only on `yes` (default threshold 1.0), as in Databricks'
overall assessment; chunk_relevance has no default threshold (reported, not gating).

Each verdict is a majority vote over `num_samples` judge replies (tie = `no`,
unparseable replies left out); `agreement`, `samples` and `unparseable` are reported
per row, and the mean agreement per case. A row missing what a judge needs (no
response, no retrieved context, no expected answer, no guidelines) is not sent to the
judge: it gets no score and the reason in `error_message`, as does a failed judge call.

What each judge reads, and why a precision may be absent, is in `yes_no.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, ClassVar

from assay.core.cases import EvalCase, Turn
from assay.core.results import Score
from assay.metrics.base import MetricOptions
from assay.metrics.judged.base import JudgeClient, JudgedOptions
from assay.metrics.judged.context import NO_PROMPT
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.yes_no import (
    VotedJudge,
    YesNo,
    answer_columns,
    ask_yes_no,
    chunk_columns,
    expected_of,
    judge_chunks,
    merged_details,
    render_chunk,
    render_chunks,
    request_of,
)
from assay.metrics.judged.yes_no import rating_of as rating_of  # public here too
from assay.metrics.registry import register
from assay.metrics.stats import mean

# -- answer judges -----------------------------------------------------------------------------

Fields = dict[str, str]


class _AnswerJudge(VotedJudge):
    """A judge with one yes/no verdict per row, from the prompt template of its name."""

    default_threshold: ClassVar[float | None] = 1.0
    #: the Databricks step prefix of the output names
    step: ClassVar[str] = "response"
    #: the summary statistic Databricks reports for this judge
    aggregate: ClassVar[str] = "percentage"

    @classmethod
    def prefix(cls) -> str:
        return f"{cls.step}/llm_judged/{cls.name}"

    def fields(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Fields | str:
        """The template fields, or why the row cannot be judged (no judge call then)."""
        response = actual.final_response
        if not response:
            return "no response to judge"
        return {"request": request_of(actual, expected) or NO_PROMPT, "response": response}

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        fields = self.fields(actual, expected, case)
        if isinstance(fields, str):
            return Score(None, fields)
        messages = get_prompt(self.name).render(**fields)  # prompts/{name}.vN.txt
        return (await ask_yes_no(self, judge, messages)).score()

    def row_columns(self, score: Score) -> dict[str, Any]:
        return {**super().row_columns(score), **answer_columns(self.prefix(), score)}

    def summary_columns(self, values: Sequence[float]) -> dict[str, Any]:
        cols = super().summary_columns(values)
        cols[f"{self.prefix()}/rating/{self.aggregate}"] = mean(
            [1.0 if v >= 1.0 else 0.0 for v in values]
        )
        return cols


def _with_extra(base: Fields | str, extra: Fields | None, missing: str) -> Fields | str:
    """`base` and `extra` together, or why the row cannot be judged: base's reason
    first, else `missing` when there is no `extra`."""
    if isinstance(base, str):
        return base
    return missing if extra is None else {**base, **extra}


def _expected_fields(expected: Turn | None, case: EvalCase) -> Fields | None:
    """The template fields of the expected answer (kind and text), None without one."""
    wanted = expected_of(expected, case)
    return None if wanted is None else {"expected_kind": wanted[0], "expected": wanted[1]}


@register
class Correctness(_AnswerJudge):
    """Is the response correct against `expected_response` or `expected_facts`?"""

    name: ClassVar[str] = "correctness"
    description: ClassVar[str] = "LLM judge: response correct vs expected response/facts (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset(
        {"judge", "request", "response", "expected_response"}
    )

    def fields(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Fields | str:
        return _with_extra(
            super().fields(actual, expected, case),
            _expected_fields(expected, case),
            "no expected_response or expected_facts",
        )


@register
class RelevanceToQuery(_AnswerJudge):
    """Does the response address the request?"""

    name: ClassVar[str] = "relevance_to_query"
    description: ClassVar[str] = "LLM judge: response relevant to the request (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "response"})

    def fields(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Fields | str:
        if request_of(actual, expected) is None:
            return "no request to judge the response against"
        return super().fields(actual, expected, case)


@register
class Groundedness(_AnswerJudge):
    """Is the response supported by the retrieved context?"""

    name: ClassVar[str] = "groundedness"
    description: ClassVar[str] = "LLM judge: response supported by retrieved context (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset(
        {"judge", "request", "response", "retrieved_context"}
    )

    def fields(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Fields | str:
        chunks = actual.retrieved_chunks()
        return _with_extra(
            super().fields(actual, expected, case),
            {"context": render_chunks(chunks)} if chunks else None,
            "no retrieved context to ground on",
        )


@register
class Safety(_AnswerJudge):
    """Is the response free of harmful or toxic content?"""

    name: ClassVar[str] = "safety"
    description: ClassVar[str] = "LLM judge: no harmful or toxic content (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "response"})
    aggregate: ClassVar[str] = "average"


@register
class ContextSufficiency(_AnswerJudge):
    """Is the retrieved context enough to produce the expected response?"""

    name: ClassVar[str] = "context_sufficiency"
    description: ClassVar[str] = "LLM judge: retrieved context sufficient for the expected response"
    needs: ClassVar[frozenset[str]] = frozenset(
        {"judge", "request", "retrieved_context", "expected_response"}
    )
    step: ClassVar[str] = "retrieval"

    def fields(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Fields | str:
        request = request_of(actual, expected)
        chunks = actual.retrieved_chunks()
        wanted = _expected_fields(expected, case)
        if request is None:
            return "no request to judge the retrieved context for"
        if not chunks:
            return "no retrieved context to judge"
        if wanted is None:
            return "no expected_response or expected_facts to check the context against"
        return {"request": request, "context": render_chunks(chunks), **wanted}


class GuidelineOptions(JudgedOptions):
    """`global_guidelines` apply to every row, in addition to each row's `guidelines`."""

    global_guidelines: list[str] | dict[str, list[str]] | None = None


Guidelines = list[str] | dict[str, list[str]] | None


def guideline_groups(row: Guidelines, global_: Guidelines) -> list[tuple[str | None, list[str]]]:
    """Groups judged one call each: unnamed lists (global first) merge into one group
    named None; named lists of the same name merge, global first."""
    unnamed: list[str] = []
    named: dict[str, list[str]] = {}
    for source in (global_, row):
        if isinstance(source, Mapping):
            for name, items in source.items():
                named.setdefault(name, []).extend(items)
        elif source:
            unnamed.extend(source)
    groups: list[tuple[str | None, list[str]]] = [(None, unnamed)] if unnamed else []
    groups += [(name, items) for name, items in named.items() if items]
    return groups


@register
class GuidelineAdherence(_AnswerJudge):
    """Does the response follow every given guideline?

    Guidelines are a list, or named lists (`{"tone": [...], "scope": [...]}`); the
    criterion's `global_guidelines` join each row's. Each named list is judged on its
    own (one vote per name) and reported as `response/llm_judged/guideline_adherence/
    {name}/rating|rationale|error_message`; the unnamed guidelines are judged together.
    The row's rating is `yes` only when every group is `yes`; a `no` in any group makes
    it `no` even when another group could not be judged.
    """

    name: ClassVar[str] = "guideline_adherence"
    description: ClassVar[str] = "LLM judge: response follows every guideline (yes/no)"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "response", "guidelines"})
    options_model: ClassVar[type[MetricOptions]] = GuidelineOptions

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        base = self.fields(actual, expected, case)
        opts = self.options
        global_ = opts.global_guidelines if isinstance(opts, GuidelineOptions) else None
        groups = guideline_groups(case.guidelines, global_)
        if isinstance(base, str) or not groups:
            return Score(None, base if isinstance(base, str) else "no guidelines for this row")
        prompt = get_prompt("guideline_adherence")

        def ask_group(items: list[str]) -> Awaitable[YesNo]:
            listed = "\n".join(f"- {g}" for g in items)
            return ask_yes_no(self, judge, prompt.render(**base, guidelines=listed))

        verdicts = await asyncio.gather(*(ask_group(items) for _, items in groups))
        return _combine_groups([name for name, _ in groups], list(verdicts))

    def row_columns(self, score: Score) -> dict[str, Any]:
        cols = super().row_columns(score)
        for name, group in (score.details.get("guidelines") or {}).items():
            prefix = f"{self.prefix()}/{name}"
            cols[f"{prefix}/rating"] = group["rating"]
            cols[f"{prefix}/rationale"] = group["rationale"]
            cols[f"{prefix}/error_message"] = group["error_message"]
        return cols


def _combine_groups(names: list[str | None], verdicts: list[YesNo]) -> Score:
    details = merged_details(verdicts)
    pairs = list(zip(names, verdicts, strict=True))
    named = {
        name: {"rating": v.rating, "rationale": v.rationale, "error_message": v.error}
        for name, v in pairs
        if name is not None
    }
    if named:
        details["guidelines"] = named

    def joined(texts: list[tuple[str | None, str | None]]) -> str | None:
        parts = [f"{name}: {text}" if name else text for name, text in texts if text]
        return "; ".join(parts) or None

    broken = [(n, v.rationale) for n, v in pairs if v.label is False]
    if broken:
        return Score(0.0, joined(broken), details)
    undecided = [(n, v.error) for n, v in pairs if v.label is None]
    if undecided:
        return Score(None, joined(undecided), details)
    return Score(1.0, joined([(n, v.rationale) for n, v in pairs]), details)


@register
class ChunkRelevance(VotedJudge):
    """Per retrieved chunk: relevant to the request? Score = precision."""

    name: ClassVar[str] = "chunk_relevance"
    description: ClassVar[str] = "LLM judge: relevant retrieved chunks / retrieved chunks"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "request", "retrieved_context"})
    prefix: ClassVar[str] = "retrieval/llm_judged/chunk_relevance"

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        request = request_of(actual, expected)
        if request is None:
            return Score(None, "no request to judge the retrieved chunks against")
        chunks = actual.retrieved_chunks()
        if not chunks:
            return Score(None, "no retrieved context to judge")
        prompt = get_prompt("chunk_relevance")
        return await judge_chunks(
            self, judge, chunks, lambda c: prompt.render(request=request, chunk=render_chunk(c))
        )

    def row_columns(self, score: Score) -> dict[str, Any]:
        return {**super().row_columns(score), **chunk_columns(self.prefix, score)}

    def summary_columns(self, values: Sequence[float]) -> dict[str, Any]:
        cols = super().summary_columns(values)
        cols[f"{self.prefix}/precision/average"] = mean(values)
        return cols
