"""Generated edge cases, scored by the installed google-adk's evaluators and by assay's
metrics from the same judge replies (issue #33, item 4).

Hypothesis writes the judge's replies: rubric blocks with decorated, curly-quoted or
unknown property texts, missing ID / Rationale / Verdict lines, markdown labels, odd
verdict words and rubrics judged twice; `is_valid` and `is_the_agent_response_valid`
labels in every spelling (quoted, bare, bracketed, any case, "almost", "partially
valid", ...); hallucinations segmenter and validator replies (tags in other cases,
blank sentences, blocks with a field left out, odd labels); samples whose judge call
failed; and eval sets with empty rubric texts.
ADK's evaluator runs in process with a scripted model registered in its `LLMRegistry`;
assay's metric runs with an in-process judge client that behaves as assay's model
client does (a failed sample is missing from the replies, all failed raises). Both must
give the same case score and status, the same score per invocation and per rubric.

`tests/conformance/test_adk_edges.py` checks the same rows over real HTTP; this suite
explores around them. Bounded by `ASSAY_ADK_FUZZ_EXAMPLES` (default 40 per test).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from google.adk.evaluation.conversation_scenarios import ConversationScenario
from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.evaluator import EvaluationResult
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from judge_parity import JUDGE_MODEL, Marker, Router, ScriptedLlm
from test_adk_judged_parity import SEGMENTER, VALIDATOR

from assay.core.cases import Scenario
from assay.core.results import MetricResult
from assay.formats import adk
from assay.metrics.judged import JudgedMetric
from assay.metrics.registry import build_metric
from assay.models.types import ModelCallError

pytestmark = pytest.mark.conformance

SETTINGS = settings(
    max_examples=int(os.environ.get("ASSAY_ADK_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FAIL = "<<judge call failed>>"


class FuzzRouter(Router):
    """A router whose `FAIL` replies are failed judge calls."""

    def reply(self, prompt: str) -> str:
        text = super().reply(prompt)
        if text == FAIL:
            raise PermissionError("403 Forbidden")
        return text


class InProcessJudge:
    """assay's judge client without HTTP: `n` samples, a failed one left out of the
    replies, all failed raising, as `assay.models.client.ModelClient.generate` does."""

    def __init__(self, router: Router) -> None:
        self.router = router

    async def generate(
        self,
        messages: Sequence[Mapping[str, Any]],
        n: int,
        settings: Mapping[str, Any],
        **_: Any,
    ) -> list[str]:
        prompt = "\n".join(str(m["content"]) for m in messages)
        replies: list[str] = []
        for _sample in range(n):
            try:
                replies.append(self.router.reply(prompt))
            except PermissionError as exc:
                last = exc
        if not replies:
            raise ModelCallError(f"all {n} judge samples failed, the last with: {last}")
        return replies


def invocation(inv_id: str, user: str, final: str, rubrics: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "invocation_id": inv_id,
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": final}]},
    }
    if rubrics is not None:
        out["rubrics"] = rubrics
    return out


def evalset(conversation: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "eval_set_id": "fuzz",
        "eval_cases": [
            {
                "eval_id": "c",
                "conversation": conversation,
                "session_input": {"app_name": "a", "user_id": "u"},
            }
        ],
    }


def run_both(
    doc: dict[str, Any],
    name: str,
    criterion: dict[str, Any],
    routes: Mapping[Marker, Sequence[str]],
    scenario: tuple[str, str] | None = None,
    our_routes: Mapping[Marker, Sequence[str]] | None = None,
) -> tuple[EvaluationResult, MetricResult]:
    """ADK's evaluator and assay's metric on the case of `doc`; `our_routes` are assay's
    when its prompts are told apart by other markers than ADK's."""
    adk_case = AdkEvalSet.model_validate(doc).eval_cases[0]
    conversation = list(adk_case.conversation or [])
    ScriptedLlm.router = FuzzRouter(routes)
    metric = EvalMetric(metric_name=name, criterion=BaseCriterion.model_validate(criterion))
    evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
    adk_scenario = None
    if scenario is not None:
        adk_scenario = ConversationScenario(
            starting_prompt=scenario[0], conversation_plan=scenario[1]
        )
    theirs = asyncio.run(evaluator.evaluate_invocations(conversation, conversation, adk_scenario))

    case = adk.load_data(doc, file="fuzz.json").cases[0]
    if scenario is not None:
        case = case.model_copy(
            update={
                "scenario": Scenario(starting_prompt=scenario[0], conversation_plan=scenario[1])
            }
        )
    ours_metric = build_metric(name, criterion)
    assert isinstance(ours_metric, JudgedMetric)
    ours_metric.attach_judge(InProcessJudge(FuzzRouter(our_routes or routes)))
    turns = list(case.reference or [])
    ours = asyncio.run(ours_metric.ascore_case(case, turns, turns))
    return theirs, ours


def _rubrics_of(entries: Any) -> dict[str, float]:
    return {r.rubric_id: r.score for r in entries or [] if r.score is not None}


def assert_same(theirs: EvaluationResult, ours: MetricResult, *, per_invocation: bool) -> None:
    status = ours.status.value if ours.status is not None else "NOT_EVALUATED"
    assert ours.score == pytest.approx(theirs.overall_score)
    assert status == theirs.overall_eval_status.name
    if per_invocation:
        want = [r.score for r in theirs.per_invocation_results]
        assert [s.value for s in ours.per_invocation] == pytest.approx(want)
    if theirs.overall_rubric_scores is not None or "rubric_scores" in ours.details:
        got = {k: v for k, v in ours.details.get("rubric_scores", {}).items() if v is not None}
        assert got == pytest.approx(_rubrics_of(theirs.overall_rubric_scores))


# -- rubric replies ------------------------------------------------------------------------

RUBRIC_TEXTS = (
    "The answer is concise.",
    "L'agent appelle l'outil météo.",
    "It names the user's city",
    "Uses  the   weather tool",
    "It quotes the “forecast” source.",
)
PREFIXES = ("", "• ", "- ", "### ", "> ", "— ", "– ", "* **", "**", "`", "  ", "\u2022\u00a0")
SUFFIXES = ("", "**", "`", "  ", ".", '"')


@st.composite
def echoed_property(draw: st.DrawFn, text: str) -> str:
    """The property text as a judge might echo it."""
    if draw(st.booleans()):
        text = text.replace("'", draw(st.sampled_from(["'", "’", "‘"])))
    if draw(st.integers(0, 4)) == 0:
        text = f"“{text}”"
    if draw(st.integers(0, 5)) == 0:
        text = text.upper()
    if draw(st.integers(0, 5)) == 0:
        text = text.replace(" ", "  ")
    return draw(st.sampled_from(PREFIXES)) + text + draw(st.sampled_from(SUFFIXES))


VERDICTS = ("yes", "no", "Yes", "NO.", "maybe", "none", "not met", "", "Yes, fully", "n/a")


@st.composite
def rubric_block(draw: st.DrawFn, ids: Sequence[str], texts: Sequence[str]) -> str:
    which = draw(st.integers(0, len(ids)))  # len(ids): a rubric nobody asked about
    rubric_id, text = (ids[which], texts[which]) if which < len(ids) else ("r9", "Off topic.")
    lines: list[str] = []
    id_form = draw(st.sampled_from(["exact", "exact", "empty", "none", "decorated", "other"]))
    if id_form != "none":
        shown = {"exact": rubric_id, "empty": "", "decorated": f"**{rubric_id}**"}.get(
            id_form, "r7"
        )
        lines.append(f"ID: {shown}")
    label = draw(st.sampled_from(["Property: ", "Property: ", "Property: ", "**Property:** "]))
    lines.append(label + draw(echoed_property(text)))
    if draw(st.integers(0, 6)):
        lines.append("Rationale: " + draw(st.sampled_from(["fine", "checked it", ""])))
    if draw(st.integers(0, 6)):
        verdict_label = draw(st.sampled_from(["Verdict: ", "Verdict: ", "**Verdict:** "]))
        lines.append(verdict_label + draw(st.sampled_from(VERDICTS)))
    return "\n".join(lines) + "\n\n"


@st.composite
def rubric_reply(draw: st.DrawFn, ids: Sequence[str], texts: Sequence[str]) -> str:
    if draw(st.integers(0, 8)) == 0:
        return FAIL
    if draw(st.integers(0, 10)) == 0:
        return draw(st.sampled_from(["", "I cannot judge this.", "Verdict: yes"]))
    blocks = draw(st.lists(rubric_block(ids, texts), min_size=1, max_size=4))
    preamble = draw(st.sampled_from(["", "Here is my assessment.\n\n", "STEP 1: read it\n"]))
    return preamble + "".join(blocks)


@st.composite
def rubric_case(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[str]]]:
    texts = draw(st.lists(st.sampled_from(RUBRIC_TEXTS), min_size=1, max_size=3, unique=True))
    ids = [f"r{i}" for i in range(len(texts))]
    samples = draw(st.integers(1, 3))
    criterion = {
        "threshold": draw(st.sampled_from([0.5, 1.0])),
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": samples},
        "rubrics": [
            {"rubric_id": rid, "rubric_content": {"text_property": text}}
            for rid, text in zip(ids, texts, strict=True)
        ],
    }
    users = ["What is the weather in Lyon?", "And tomorrow?"][: draw(st.integers(1, 2))]
    routes = {
        user: draw(st.lists(rubric_reply(ids, texts), min_size=samples, max_size=samples))
        for user in users
    }
    conversation = [invocation(f"i{i}", user, "Sunny.") for i, user in enumerate(users)]
    return evalset(conversation), criterion, routes


RUBRIC_METRICS = (
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
)


@pytest.mark.parametrize("name", RUBRIC_METRICS)
@SETTINGS
@given(drawn=rubric_case())
def test_rubric_replies_as_adk(
    name: str, drawn: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
) -> None:
    doc, criterion, routes = drawn
    theirs, ours = run_both(doc, name, criterion, routes)
    assert_same(theirs, ours, per_invocation=True)


# -- verdict labels and failed samples of final_response_match_v2 -------------------------

LABELS = (
    "valid", "invalid", "true", "false", "Valid", "INVALID", "True", "almost", "partially",
    "partially_valid", "partially valid", "yes", "no", "maybe", "", "valid.", "not valid",
)  # fmt: skip


@st.composite
def labelled_reply(draw: st.DrawFn, keys: Sequence[str]) -> str:
    if draw(st.integers(0, 7)) == 0:
        return FAIL
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["", "Looks right to me.", '{"reasoning": "ok"}']))
    key = draw(st.sampled_from(keys))
    label = draw(st.sampled_from(LABELS))
    form = draw(st.sampled_from(['"{}"', "{}", "[{}]", '["{}"]', "[ {} ]"]))
    end = draw(st.sampled_from(["\n}", ",\n", "}", " }", "\n"]))
    return f'{{\n  "reasoning": "compared",\n  "{key}": {form.format(label)}{end}'


@st.composite
def match_case(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[str]]]:
    samples = draw(st.integers(1, 3))
    criterion = {
        "threshold": draw(st.sampled_from([0.5, 1.0])),
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": samples},
    }
    users = ["How far is Lyon from Paris?", "By train?", "And by car?"][: draw(st.integers(1, 3))]
    keys = ["is_the_agent_response_valid", "is_the_agent_response_invalid"]
    routes = {
        user: draw(st.lists(labelled_reply(keys), min_size=samples, max_size=samples))
        for user in users
    }
    conversation = [invocation(f"i{i}", user, "About 470 km.") for i, user in enumerate(users)]
    return evalset(conversation), criterion, routes


@SETTINGS
@given(match_case())
def test_response_labels_and_failed_samples_as_adk(
    drawn: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
) -> None:
    doc, criterion, routes = drawn
    theirs, ours = run_both(doc, "final_response_match_v2", criterion, routes)
    assert_same(theirs, ours, per_invocation=True)


# -- the simulated user's validity labels --------------------------------------------------


@st.composite
def simulator_case(
    draw: st.DrawFn,
) -> tuple[dict[str, Any], dict[str, Any], dict[Marker, list[str]], tuple[str, str]]:
    samples = draw(st.integers(1, 3))
    criterion = {
        "threshold": draw(st.sampled_from([0.5, 1.0])),
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": samples},
    }
    users = ["I need a taxi.", "To the station.", "At 9 am."][: draw(st.integers(2, 3))]
    start = users[0] if draw(st.integers(0, 4)) else "Hello there."

    def replies() -> list[str]:
        # ADK's simulator metric lets a failed judge call end the whole evaluation:
        # failures are generated for the other metrics only.
        drawn = draw(st.lists(labelled_reply(["is_valid"]), min_size=samples, max_size=samples))
        return [r if r != FAIL else "I am not sure." for r in drawn]

    routes: dict[Marker, list[str]] = {user: replies() for user in users[1:]}
    routes[(users[0], "</finished>")] = replies()
    conversation = [invocation(f"i{i}", user, "OK.") for i, user in enumerate(users)]
    return evalset(conversation), criterion, routes, (start, "Get a taxi to the station.")


@SETTINGS
@given(simulator_case())
def test_simulator_labels_as_adk(
    drawn: tuple[dict[str, Any], dict[str, Any], dict[Marker, list[str]], tuple[str, str]],
) -> None:
    doc, criterion, routes, scenario = drawn
    theirs, ours = run_both(doc, "per_turn_user_simulator_quality_v1", criterion, routes, scenario)
    assert_same(theirs, ours, per_invocation=False)


# -- hallucinations_v1: the validator's labelled blocks ------------------------------------

SENTENCES = ("It is sunny in Lyon.", "Take sunglasses!")
HALLUCINATION_LABELS = (
    "supported", "Supported", " not_applicable", "unsupported", "CONTRADICTORY", "disputed",
    "not applicable", "**supported**", "supported.", "partially", "",
)  # fmt: skip


@st.composite
def validator_block(draw: st.DrawFn) -> str:
    sentence = draw(st.sampled_from([*SENTENCES, "Something else."]))
    fields = [
        f"sentence: {sentence}",
        "label: " + draw(st.sampled_from(HALLUCINATION_LABELS)),
        "rationale: checked",
        "supporting_excerpt: " + draw(st.sampled_from(["null", "the forecast"])),
        "contradicting_excerpt: null",
    ]
    if draw(st.integers(0, 6)) == 0:  # a field left out
        del fields[draw(st.integers(1, 4))]
    return "\n".join(fields)


@st.composite
def hallucination_case(
    draw: st.DrawFn,
) -> tuple[dict[str, Any], dict[Marker, list[str]], dict[Marker, list[str]]]:
    if draw(st.integers(0, 9)) == 0:
        validator = draw(st.sampled_from(["", "All fine.", FAIL]))
    else:
        blocks = draw(st.lists(validator_block(), min_size=1, max_size=4))
        validator = draw(st.sampled_from(["", "Here you go:\n"])) + "\n".join(blocks)
    segments = draw(
        st.sampled_from(
            [
                "\n".join(f"<sentence>{s}</sentence>" for s in SENTENCES),
                "\n".join(f"<SENTENCE>{s}</SENTENCE>" for s in SENTENCES),
                f"<sentence> </sentence><sentence>{SENTENCES[0]}</sentence>",
                "<sentence>  </sentence>",
                '{"sentences": []}',
                SENTENCES[0],
            ]
        )
    )
    final = " ".join(SENTENCES)

    def routes(tool: str) -> dict[Marker, list[str]]:
        return {
            # One response: each prompt kind is asked once.
            SEGMENTER[tool]: [segments],
            VALIDATOR[tool]: [validator],
        }

    doc = evalset([invocation("i0", "Weather in Lyon?", final)])
    return doc, routes("adk"), routes("assay")


@SETTINGS
@given(hallucination_case())
def test_hallucination_labels_as_adk(
    drawn: tuple[dict[str, Any], dict[Marker, list[str]], dict[Marker, list[str]]],
) -> None:
    doc, adk_routes, our_routes = drawn
    criterion = {
        "threshold": 0.5,
        "judge_model_options": {"judge_model": JUDGE_MODEL},
    }
    theirs, ours = run_both(doc, "hallucinations_v1", criterion, adk_routes, None, our_routes)
    assert_same(theirs, ours, per_invocation=True)


# -- eval sets with empty rubric texts -----------------------------------------------------


@st.composite
def rubric_entry(draw: st.DrawFn, index: int) -> dict[str, Any]:
    content: dict[str, Any] = draw(
        st.sampled_from(
            [{}, {"text_property": None}, {"text_property": ""}, {"text_property": "Be brief."}]
        )
    )
    entry: dict[str, Any] = {"rubric_id": f"r{index}", "rubric_content": content}
    kind = draw(st.sampled_from([None, "FINAL_RESPONSE_QUALITY", "TOOL_USAGE", "TONE"]))
    if kind is not None:
        entry["type"] = kind
    return entry


@SETTINGS
@given(st.integers(0, 4).flatmap(lambda n: st.tuples(*(rubric_entry(i) for i in range(n)))))
def test_rubric_contents_load_as_adk(entries: tuple[dict[str, Any], ...]) -> None:
    doc = evalset([invocation("i", "hi", "hello", rubrics=list(entries))])
    theirs = AdkEvalSet.model_validate(doc).eval_cases[0].conversation[0].rubrics or []
    want = [(r.rubric_id, r.rubric_content.text_property, r.type) for r in theirs]
    loaded = adk.load_data(doc, file="fuzz.json")
    (turn,) = loaded.cases[0].reference or []
    assert [(r.id, r.text, r.type) for r in turn.rubrics] == want
    back = AdkEvalSet.model_validate(adk.dump(loaded)).eval_cases[0].conversation[0]
    assert [(r.rubric_id, r.rubric_content.text_property, r.type) for r in back.rubrics or []] == (
        want
    )
