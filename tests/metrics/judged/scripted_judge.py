"""A scripted, in-process judge client for metric tests (no HTTP, no model).

Import it from a test module in this folder (`from scripted_judge import ScriptedJudge`):
pytest puts the test folder on `sys.path`.

Replies come from:
- a list of strings, handed out in order across calls (one per sample; a list running
  out raises AssertionError so a test asking for more samples than scripted fails loudly);
- or a function `(messages, sample_index) -> str` of the rendered messages, for judges
  that see several different prompts (segmenter then validator, one call per rubric...).
A reply that is an Exception instance (or a function raising) makes `generate` raise it,
like a judge call that failed after retries.

Every call is recorded as `JudgeCall(messages, n, settings)` for assertions on what the
judge saw. `judged` builds a judged metric, `ascore` / `score` score a case with it and
a scripted judge.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult
from assay.metrics.judged.base import JudgedMetric
from assay.metrics.registry import build_metric

Reply = str | BaseException
ReplyFn = Callable[[list[dict[str, str]], int], Reply]


@dataclass
class JudgeCall:
    """One `generate` call as the metric made it."""

    messages: list[dict[str, str]]
    n: int
    settings: dict[str, Any]

    @property
    def system(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m.get("role") == "system")

    @property
    def user(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m.get("role") == "user")

    @property
    def text(self) -> str:
        """Everything the judge saw, system and user parts joined."""
        return "\n".join(m["content"] for m in self.messages)


@dataclass
class ScriptedJudge:
    """A `JudgeClient` whose replies are scripted; records every call."""

    script: Sequence[Reply] | ReplyFn = ()
    calls: list[JudgeCall] = field(default_factory=list)
    _next: int = 0

    async def generate(
        self,
        messages: Sequence[Mapping[str, Any]],
        n: int,
        settings: Mapping[str, Any],
        **_: Any,
    ) -> list[str]:
        rendered = [{str(k): str(v) for k, v in m.items()} for m in messages]
        self.calls.append(JudgeCall(rendered, n, dict(settings)))
        replies: list[str] = []
        for i in range(n):
            reply = self._reply(rendered, i)
            if isinstance(reply, BaseException):
                raise reply
            replies.append(reply)
        return replies

    def _reply(self, messages: list[dict[str, str]], index: int) -> Reply:
        if callable(self.script):
            return self.script(messages, index)
        if self._next >= len(self.script):
            raise AssertionError(
                f"ScriptedJudge ran out of replies after {self._next} (script too short)"
            )
        reply = self.script[self._next]
        self._next += 1
        return reply

    @property
    def samples_requested(self) -> int:
        return sum(c.n for c in self.calls)


def as_json(**fields: Any) -> str:
    """A reply holding one JSON object, e.g. `as_json(verdict="valid", reasoning="...")`."""
    return json.dumps(fields)


def by_prompt(routes: Mapping[str, Sequence[Reply] | Callable[[int], Reply]]) -> ReplyFn:
    """A reply function routing on text the prompt contains.

    `routes` maps a marker string to replies: the first marker found in the rendered
    messages chooses them; a sequence is consumed in order per marker, a function gets
    the sample index. No marker found → AssertionError naming the prompt start.
    """
    positions = dict.fromkeys(routes, 0)

    def reply(messages: list[dict[str, str]], index: int) -> Reply:
        text = "\n".join(m["content"] for m in messages)
        for marker, replies in routes.items():
            if marker not in text:
                continue
            if callable(replies):
                return replies(index)
            pos = positions[marker]
            if pos >= len(replies):
                raise AssertionError(f"ScriptedJudge: replies for {marker!r} ran out")
            positions[marker] = pos + 1
            return replies[pos]
        raise AssertionError(f"ScriptedJudge: no route matches prompt {text[:200]!r}")

    return reply


def judged(name: str, criterion: Any = None) -> JudgedMetric:
    """The judged metric `name` built from `criterion` (a threshold or its options)."""
    metric = build_metric(name, criterion)
    assert isinstance(metric, JudgedMetric)
    return metric


async def ascore(
    metric: JudgedMetric,
    judge: ScriptedJudge,
    case: EvalCase,
    actual: Sequence[Turn],
    expected: Sequence[Turn | None] | None = None,
) -> MetricResult:
    """`metric` scored by `judge` on `actual`; `expected` is by default the case's
    reference, turn by turn (None past its end)."""
    metric.attach_judge(judge)
    if expected is None:
        ref = case.reference or []
        expected = [ref[i] if i < len(ref) else None for i in range(len(actual))]
    return await metric.ascore_case(case, actual, expected)


def score(*args: Any, **kwargs: Any) -> MetricResult:
    """`ascore`, blocking (its parameters)."""
    return asyncio.run(ascore(*args, **kwargs))
