"""Judged parity harness: the same scripted judge replies to ADK's evaluators and to assay's.

ADK side: `ScriptedLlm`, a `BaseLlm` registered in ADK's own `LLMRegistry` under the
model name `assay-parity-judge`, so ADK's evaluators build it from
`judge_model_options.judge_model` exactly as they would build Gemini. assay side: the
stand-in judge server on loopback (`assay.testing.judge_server`), reached through
assay's real OpenAI-compatible judge client (`--judge openai:...`).

Both are answered by a `Router` of their own built from the same routes: a route is a
marker text that appears in the prompt of both tools (a user message of the case), or a
tuple of texts that must all appear (a prompt-kind marker, then a user message), and its
replies are handed out in order, one per judge call (= one sample). When several routes
match, the one whose (last) marker sits latest in the prompt wins: prompts show the
judged invocation after the conversation before it, so its user message comes last.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, ClassVar

import pytest
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.models.registry import LLMRegistry
from google.genai import types as genai_types

from assay.core.results import CaseResult, EvalResult
from assay.report.json_report import case_to_adk
from assay.testing.judge_server import StandinRequest

JUDGE_MODEL = "assay-parity-judge"
Marker = str | tuple[str, ...]
#: per case: assay's result, its ADK-shaped overall entry and per-invocation entries
Compared = dict[str, tuple[CaseResult, dict[str, Any], list[dict[str, Any]]]]


def assert_same_scores(name: str, adk: Mapping[str, Any], ours: EvalResult) -> Compared:
    """assay's score and status of metric `name` are ADK's (`adk`: case id -> ADK's
    `EvaluationResult`), case by case, overall and per invocation; what was compared."""
    cases: dict[str, CaseResult] = {c.case_id: c for c in ours.cases}
    assert set(cases) == set(adk)
    compared: Compared = {}
    for case_id, expected in adk.items():
        doc = case_to_adk(cases[case_id])
        (overall,) = [m for m in doc["overall_eval_metric_results"] if m["metric_name"] == name]
        assert overall["score"] == pytest.approx(expected.overall_score), case_id
        assert overall["eval_status"] == expected.overall_eval_status.value, case_id
        per = [
            next(r for r in inv["eval_metric_results"] if r["metric_name"] == name)
            for inv in doc["eval_metric_result_per_invocation"]
        ]
        want = expected.per_invocation_results
        assert [p["score"] for p in per] == pytest.approx([w.score for w in want]), case_id
        assert [p["eval_status"] for p in per] == [w.eval_status.value for w in want], case_id
        compared[case_id] = (cases[case_id], overall, per)
    return compared


def _parts(marker: Marker) -> tuple[str, ...]:
    return (marker,) if isinstance(marker, str) else marker


class Router:
    """Replies routed by the first marker found in the prompt, in order per marker."""

    def __init__(self, routes: Mapping[Marker, Sequence[str]]) -> None:
        self.routes = {marker: list(replies) for marker, replies in routes.items()}
        self.used = dict.fromkeys(routes, 0)
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def reply(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            found = [
                (prompt.rfind(_parts(marker)[-1]), marker)
                for marker in self.routes
                if all(part in prompt for part in _parts(marker))
            ]
            if not found:
                raise AssertionError(f"no route matches the prompt {prompt[:300]!r}")
            marker = max(found, key=lambda pair: pair[0])[1]
            replies, pos = self.routes[marker], self.used[marker]
            if pos >= len(replies):
                raise AssertionError(f"replies for {marker!r} ran out")
            self.used[marker] = pos + 1
            return replies[pos]

    def standin(self, request: StandinRequest) -> str:
        """The stand-in server's script."""
        return self.reply(request.prompt)


class ScriptedLlm(BaseLlm):
    """ADK's judge model, answering from the current `router`."""

    router: ClassVar[Router | None] = None

    @classmethod
    def supported_models(cls) -> list[str]:
        return [JUDGE_MODEL]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        assert ScriptedLlm.router is not None, "set ScriptedLlm.router first"
        prompt = "\n".join(
            part.text or "" for content in llm_request.contents for part in content.parts or []
        )
        text = ScriptedLlm.router.reply(prompt)
        yield LlmResponse(
            content=genai_types.Content(role="model", parts=[genai_types.Part(text=text)])
        )


LLMRegistry.register(ScriptedLlm)


def rubric_block(rubric_id: str, text: str, verdict: str) -> str:
    """One rubric's verdict in the labelled layout ADK's rubric judges are prompted for."""
    return (
        f"STEP 1: {text}\nSTEP 5: {verdict}\nID: {rubric_id}\nProperty: {text}\n"
        f"Rationale: checked {rubric_id}\nVerdict: {verdict}\n\n"
    )


def adk_status_name(status: Any) -> str:
    """ADK's EvalStatus as assay's Status value."""
    return str(status.name)
