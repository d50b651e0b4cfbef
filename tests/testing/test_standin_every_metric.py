"""The stand-in judge, started as documented, gives every judged metric a reply it parses.

`python -m assay.testing.judge_server` (no script) answers each request from the JSON
schema the metric asked for. Every judged metric in the registry is scored through it
over real HTTP, on a case holding every input some metric needs: each gets a score and
no sample is unparseable. A metric added without a reply the stand-in can give fails
here, by name.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import formats
from assay.core.cases import (
    Chunk,
    EvalCase,
    Retrieval,
    Rubric,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    UserInput,
)
from assay.engine.judging import JudgeRunOptions, run_judges
from assay.metrics.judged.base import JudgedMetric
from assay.metrics.registry import build_metric, get_metric_class, metric_names
from assay.testing.judge_server import JudgeServer, StandinReply

REALWORLD = Path(__file__).resolve().parents[1] / "data" / "realworld"
LARGE_PARTY = (
    REALWORLD / "ces" / "bella_notte" / "evaluations" / "Scenario_-_Large_Party_Rejection.json"
)
JUDGED = [n for n in metric_names() if "judge" in get_metric_class(n).needs]


@pytest.fixture(scope="module")
def standin() -> Iterator[str]:
    """`python -m assay.testing.judge_server` as the docs start it; its OpenAI base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.testing.judge_server"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line
        yield line.rsplit(" ", 1)[1].strip() + "/v1"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def _turns() -> list[Turn]:
    call = ToolCall(id="c1", name="set_party_size", args={"size": 12})
    return [
        Turn(
            user_input=UserInput(text="Hi, I want to book dinner for 12."),
            steps=[
                Step(tool_call=call),
                Step(tool_response=ToolResponse(id="c1", name="set_party_size",
                                                response={"error": "max 8"})),
                Step(retrieval=Retrieval(chunks=[
                    Chunk(doc_uri="policy.md", content="Parties of 1 to 8 can book online."),
                ])),
            ],
            final_response="Sorry, we book parties of 1-8 only. Please email the events team.",
        ),
        Turn(user_input=UserInput(text="OK, thanks."), final_response="You're welcome!"),
    ]  # fmt: skip


def _case(turns: list[Turn]) -> EvalCase:
    """The real CES scenario, with every other input a judged metric reads."""
    scenario_case = formats.load(LARGE_PARTY).cases[0]
    reference = [t.model_copy(update={"steps": []}) for t in turns]
    return scenario_case.model_copy(
        update={
            "reference": reference,
            "rubrics": [
                Rubric(id="polite", text="The agent is polite.", type="FINAL_RESPONSE_QUALITY"),
                Rubric(id="tool", text="The agent checks the party size with a tool.",
                       type="TOOL_USE_QUALITY"),
                Rubric(id="path", text="The agent never books more than 8 guests.",
                       type="TRAJECTORY_QUALITY"),
            ],
            "expected_response": "Only parties of up to 8 can be booked.",
            "expected_facts": ["parties of up to 8"],
            "guidelines": ["Be polite."],
            "expected_retrieved_context": [Chunk(doc_uri="policy.md")],
        }
    )  # fmt: skip


def test_every_judged_metric_is_covered() -> None:
    assert len(JUDGED) >= 20 and "final_response_match_v2" in JUDGED


@pytest.mark.parametrize("name", JUDGED)
def test_the_default_standin_reply_parses_for(name: str, standin: str) -> None:
    turns = _turns()
    case = _case(turns)
    metric = build_metric(name)
    assert isinstance(metric, JudgedMetric)

    async def score() -> object:
        options = JudgeRunOptions(model="openai:stand-in", base_url=standin, use_cache=False)
        async with run_judges([metric], options):
            return await metric.ascore_case(case, turns, list(case.reference or []))

    os.environ.setdefault("OPENAI_API_KEY", "unused")
    result = asyncio.run(score())
    assert result.score is not None, f"{name}: {result.explanation}"
    text = repr(result)
    assert "unparseable" not in (result.explanation or ""), f"{name}: {result.explanation}"
    assert "could not be parsed" not in text, f"{name}: {text[:2000]}"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("final_response_match_v2", '"verdict": "valid"|"invalid"'),
        ("semantic_similarity", '"score": 4|3|2|1|0'),
        ("correctness", '"rating": "yes"|"no"'),
        ("rubric_based_final_response_quality_v1", '"verdict": "yes"|"no"'),
    ],
)
def test_an_unparseable_reply_is_shown_with_what_the_metric_expected(
    name: str, expected: str
) -> None:
    garbage = "Sure! " + "I think the answer looks fine to me. " * 20
    turns = _turns()
    case = _case(turns)
    metric = build_metric(name)
    with JudgeServer(StandinReply(text=garbage)) as server:

        async def score() -> object:
            options = JudgeRunOptions(
                model="openai:stand-in", base_url=server.openai_base_url, use_cache=False
            )
            async with run_judges([metric], options):
                return await metric.ascore_case(case, turns, list(case.reference or []))

        result = asyncio.run(score())
    why = result.explanation or ""  # type: ignore[attr-defined]
    assert result.score is None  # type: ignore[attr-defined]
    assert "samples unparseable" in why, why
    assert expected in why, why
    assert 'the judge replied "Sure! I think the answer' in why, why
    assert f"({len(garbage):,} characters)" in why and len(why) < len(garbage) + 600, why
