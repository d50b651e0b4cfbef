"""ADK-family judged metrics with a scripted judge: prompts, votes, ties, pooling, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_judge import JudgeCall, ScriptedJudge, as_json, by_prompt
from scripted_judge import ascore as run
from scripted_judge import judged as metric

from assay.config import load_config
from assay.core.cases import (
    AgentMessage,
    Chunk,
    EvalCase,
    Retrieval,
    Rubric,
    RubricType,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
)
from assay.core.results import Status
from assay.engine import score_case
from assay.formats import load
from assay.judges.types import JudgeCallError
from assay.metrics.judged.context import agents_for, render_steps
from assay.metrics.judged.hallucinations import parse_labels
from assay.metrics.judged.rubrics import parse_rubric_reply

REALWORLD = Path(__file__).resolve().parents[3] / "tests" / "data" / "realworld"
FINAL = RubricType.FINAL_RESPONSE_QUALITY
TOOL = RubricType.TOOL_USE_QUALITY


def valid(reason: str = "same facts") -> str:
    return as_json(reasoning=reason, verdict="valid")


def invalid(reason: str = "different number") -> str:
    return as_json(reasoning=reason, verdict="invalid")


def weather_case() -> tuple[EvalCase, list[Turn]]:
    case = EvalCase(
        id="w",
        reference=[Turn(user_input="Weather in Paris?", final_response="It is 21 C and sunny.")],
    )
    actual = [Turn(user_input="Weather in Paris?", final_response="Sunny, 21 degrees Celsius.")]
    return case, actual


# -- final_response_match_v2 ---------------------------------------------------------------


async def test_match_v2_majority_vote_agreement_and_prompt() -> None:
    judge = ScriptedJudge([valid("a"), invalid(), valid("b"), valid("c"), invalid()])
    case, actual = weather_case()
    result = await run(metric("final_response_match_v2"), judge, case, actual)
    assert result.score == 1.0
    assert result.status is Status.PASSED
    only = result.per_invocation[0]
    assert only.explanation == "a"
    assert only.details == {
        "verdict": "valid",
        "agreement": 0.6,
        "samples": 5,
        "unparseable": 0,
        # how the five samples split around the threshold (0.8): they straddle it
        "sample_scores": [1.0, 0.0, 1.0, 1.0, 0.0],
        "sample_split": {"pass": 3, "fail": 2},
        "unstable": True,
    }
    assert result.details == {
        "agreement": 0.6,
        "unparseable_samples": 0,
        "sample_split": {"pass": 3, "fail": 2},
        "unstable_invocations": 1,
        "unstable": True,
    }
    [call] = judge.calls
    assert call.n == 5  # ADK's default num_samples
    assert "Weather in Paris?" in call.user
    assert "It is 21 C and sunny." in call.user and "Sunny, 21 degrees Celsius." in call.user
    assert call.user.index("21 C and sunny") < call.user.index("21 degrees")  # reference first
    schema = call.settings["json_schema"]
    assert schema["properties"]["verdict"]["enum"] == ["valid", "invalid"]
    assert "temperature" not in call.settings


async def test_match_v2_tie_is_invalid_and_options_reach_the_judge() -> None:
    judge = ScriptedJudge([valid(), invalid(), valid(), invalid()])
    m = metric(
        "final_response_match_v2",
        {"judge_model_options": {"num_samples": 4, "temperature": 0.3}},
    )
    case, actual = weather_case()
    result = await run(m, judge, case, actual)
    assert result.score == 0.0
    assert result.status is Status.FAILED
    assert result.per_invocation[0].details["verdict"] == "invalid"
    assert result.per_invocation[0].details["agreement"] == 0.5
    assert judge.calls[0].n == 4
    assert judge.calls[0].settings["temperature"] == 0.3


async def test_match_v2_unparseable_samples_are_left_out() -> None:
    replies = ["I think it's fine", valid(), '```json\n{"verdict": "valid"}\n```', invalid(), "{}"]
    result = await run(metric("final_response_match_v2"), ScriptedJudge(replies), *weather_case())
    details = result.per_invocation[0].details
    assert result.score == 1.0
    assert details["unparseable"] == 2 and details["samples"] == 5
    assert details["agreement"] == pytest.approx(2 / 3)
    assert result.details["unparseable_samples"] == 2


async def test_match_v2_all_unparseable_gives_no_score() -> None:
    judge = ScriptedJudge(["nope", '{"verdict": "maybe"}', "", "[]", "{"])
    result = await run(metric("final_response_match_v2"), judge, *weather_case())
    assert result.score is None
    assert result.status is Status.NOT_EVALUATED
    assert result.explanation is not None and "5 of 5 samples unparseable" in result.explanation
    assert result.per_invocation[0].details["unparseable"] == 5


async def test_a_judge_error_leaves_only_that_invocation_without_a_score() -> None:
    def reply(messages: list[dict[str, str]], i: int) -> str:
        if "second question" in messages[1]["content"]:
            raise JudgeCallError("HTTP 500 from judge after 4 retries", retryable=True, status=500)
        return invalid()

    case = EvalCase(
        id="two",
        reference=[
            Turn(user_input="first question", final_response="A"),
            Turn(user_input="second question", final_response="B"),
        ],
    )
    actual = [
        Turn(user_input="first question", final_response="not A"),
        Turn(user_input="second question", final_response="B"),
    ]
    result = await run(metric("final_response_match_v2"), ScriptedJudge(reply), case, actual)
    first, second = result.per_invocation
    assert first.value == 0.0
    assert second.value is None
    assert second.explanation == "judge call failed: HTTP 500 from judge after 4 retries"
    assert result.score == 0.0  # the scored invocation alone


async def test_any_exception_from_the_judge_is_kept_as_text() -> None:
    judge = ScriptedJudge([RuntimeError("connection reset")])
    result = await run(metric("safety_v1"), judge, *weather_case())
    assert result.score is None
    assert result.explanation == "judge call failed: connection reset"


async def test_match_v2_inputs_without_a_judge_call() -> None:
    judge = ScriptedJudge([])
    m = metric("final_response_match_v2")
    no_ref = EvalCase(id="n", reference=[Turn(user_input="q"), Turn(user_input="q2")])
    result = await run(m, judge, no_ref, [Turn(user_input="q", final_response="x")] * 2)
    assert result.score is None and "no reference response" in (result.explanation or "")
    silent = await run(m, judge, weather_case()[0], [Turn(user_input="Weather in Paris?")])
    assert silent.score == 0.0
    assert silent.per_invocation[0].explanation == "the agent gave no final response"
    failed = await run(m, judge, weather_case()[0], [Turn(user_input="w", error="timeout")])
    assert failed.score is None and "timeout" in (failed.explanation or "")
    assert judge.calls == []


async def test_match_v2_row_reference_and_intermediate_responses() -> None:
    row = EvalCase(id="r", expected_response="Paris", actual=[Turn(user_input="Capital?")])
    actual = [
        Turn(
            user_input="Capital of France?",
            steps=[Step(agent_message=AgentMessage(author="helper", text="Looking it up."))],
            final_response="Paris.",
        )
    ]
    judge = ScriptedJudge([valid()] * 2)
    m = metric(
        "final_response_match_v2",
        {"include_intermediate_responses_in_final": True, "judge_model_options": {"numSamples": 1}},
    )
    result = await run(m, judge, row, actual)
    assert result.score == 1.0
    user = judge.calls[0].user
    assert "<reference_response>\nParis\n</reference_response>" in user
    assert "Looking it up.\nParis." in user
    plain_metric = metric("final_response_match_v2", {"judge_model_options": {"numSamples": 1}})
    plain = await run(plain_metric, judge, row, actual)
    assert "Looking it up." not in judge.calls[1].user
    assert plain.score == 1.0


def test_sync_engine_path_scores_with_an_attached_judge() -> None:
    case, actual = weather_case()
    m = metric("final_response_match_v2", {"judge_model_options": {"num_samples": 3}})
    m.attach_judge(ScriptedJudge([valid(), valid(), invalid()]))
    result = score_case(case, actual, [m])
    assert result.metrics["final_response_match_v2"].score == 1.0
    assert result.status is Status.PASSED


# -- rubric-based ---------------------------------------------------------------------------

CRITERION = {
    "judge_model_options": {"num_samples": 3},
    "rubrics": [
        {"rubric_id": "r1", "rubric_content": {"text_property": "Names the city."}},
        {"rubric_id": "r2", "rubric_content": {"text_property": "Gives the temperature in C."}},
    ],
}


def rubric_reply(**verdicts: str) -> str:
    return json.dumps(
        {"rubrics": [{"id": k, "rationale": f"why {k}", "verdict": v} for k, v in verdicts.items()]}
    )


def rubric_case() -> tuple[EvalCase, list[Turn]]:
    case = EvalCase(
        id="rb",
        rubrics=[Rubric(id="tool_only", text="Calls get_weather.", type=TOOL)],
        reference=[
            Turn(user_input="Weather in Paris?"),
            Turn(
                user_input="And tomorrow?",
                rubrics=[Rubric(id="r3", text="Mentions tomorrow.", type=FINAL)],
            ),
        ],
    )
    actual = [
        Turn(
            user_input="Weather in Paris?",
            steps=[
                Step(tool_call=ToolCall(name="get_weather", args={"city": "Paris"})),
                Step(tool_response=ToolResponse(name="get_weather", response={"temp_c": 21})),
            ],
            final_response="Paris: 21 C.",
        ),
        Turn(user_input="And tomorrow?", final_response="Rain."),
    ]
    return case, actual


async def test_rubric_votes_pooling_and_per_rubric_means() -> None:
    def reply(messages: list[dict[str, str]], i: int) -> str:
        if "And tomorrow?" in messages[1]["content"].split("<user_prompt>")[1]:
            # invocation 2: r1 yes (3/3), r2 yes (2/3), r3 no (tie 1-1 + one sample silent)
            return [
                rubric_reply(r1="yes", r2="yes", r3="no"),
                rubric_reply(r1="yes", r2="no", r3="yes"),
                rubric_reply(r1="yes", r2="yes"),
            ][i]
        # invocation 1: r1 yes, r2 no (2 of 3), one unparseable sample
        return [
            '{"rubrics": "oops"}',
            rubric_reply(r1="yes", r2="no"),
            rubric_reply(r1="yes", r2="no"),
        ][i]

    judge = ScriptedJudge(reply)
    case, actual = rubric_case()
    result = await run(
        metric("rubric_based_final_response_quality_v1", CRITERION), judge, case, actual
    )
    first, second = result.per_invocation
    assert first.value == 0.5
    assert first.details["rubric_scores"] == {"r1": 1.0, "r2": 0.0}
    assert first.details["unparseable"] == 1 and first.details["agreement"] == 1.0
    assert second.value == pytest.approx(2 / 3)
    assert second.details["rubric_scores"] == {"r1": 1.0, "r2": 1.0, "r3": 0.0}
    assert second.details["agreement"] == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    # case = mean of the 5 pooled rubric scores, not the mean of the two invocations
    assert result.score == pytest.approx(3 / 5)
    assert result.details["rubric_scores"] == {"r1": 1.0, "r2": 0.5, "r3": 0.0}
    assert result.details["unparseable_samples"] == 1
    assert result.status is Status.FAILED
    assert "r2: no (why r2)" in (first.explanation or "")


async def test_rubric_prompt_renders_rubrics_steps_history_and_instructions() -> None:
    judge = ScriptedJudge(lambda messages, i: rubric_reply(r1="yes", r2="yes", r3="yes"))
    case, actual = rubric_case()
    app = {"agent_details": {"root": {"name": "root", "instructions": "Answer in Celsius.",
                                      "tool_declarations": [{"name": "get_weather"}]}}}  # fmt: skip
    case = case.model_copy(update={"metadata": {"app_details": app}})
    await run(metric("rubric_based_final_response_quality_v1", CRITERION), judge, case, actual)
    first, second = judge.calls
    assert "- [id: r1] Names the city." in first.user
    assert "[id: r3]" not in first.user and "[id: r3] Mentions tomorrow." in second.user
    assert "tool_only" not in first.user  # a TOOL_USE_QUALITY rubric: other metric
    assert 'tool call: get_weather({"city": "Paris"})' in first.user
    assert 'tool result from get_weather: {"temp_c": 21}' in first.user
    assert "<final_answer>\nParis: 21 C.\n</final_answer>" in first.user
    assert "Answer in Celsius." in first.user and '"get_weather"' in first.user
    assert "[turn 1] user: Weather in Paris?" in second.user
    assert "[turn 1] agent: Paris: 21 C." in second.user
    assert first.settings["json_schema"]["properties"]["rubrics"]["items"]["properties"]["id"][
        "enum"
    ] == ["r1", "r2"]
    assert first.n == 3


async def test_tool_use_rubrics_see_the_tools_not_the_answer() -> None:
    judge = ScriptedJudge(lambda messages, i: rubric_reply(tool_only="yes", t1="no"))
    criterion = {"rubrics": [{"rubric_id": "t1", "rubric_content": {"text_property": "No retry."}}]}
    case, actual = rubric_case()
    result = await run(metric("rubric_based_tool_use_quality_v1", criterion), judge, case, actual)
    call = judge.calls[0]
    assert "[id: tool_only] Calls get_weather." in call.user and "[id: t1] No retry." in call.user
    assert "get_weather" in call.user and "Paris: 21 C." not in call.user
    assert "Mentions tomorrow" not in judge.calls[1].user  # FINAL_RESPONSE_QUALITY rubric
    assert judge.calls[0].n == 5
    assert result.score == 0.5
    assert result.details["rubric_scores"] == {"t1": 0.0, "tool_only": 1.0}


async def test_duplicate_rubric_ids_across_sources_are_a_clear_config_error() -> None:
    judge = ScriptedJudge([])
    case, actual = rubric_case()
    clash = case.model_copy(update={"rubrics": [Rubric(id="r1", text="again", type=FINAL)]})
    m = metric("rubric_based_final_response_quality_v1", CRITERION)
    result = await run(m, judge, clash, actual)
    assert result.score is None and result.status is Status.NOT_EVALUATED
    assert result.explanation is not None
    assert result.explanation.startswith("configuration error: ")
    assert "rubric id 'r1' is defined twice" in result.explanation
    assert judge.calls == []


async def test_no_rubrics_no_score_and_rubric_reply_forms() -> None:
    case, actual = weather_case()
    result = await run(
        metric("rubric_based_final_response_quality_v1"), ScriptedJudge([]), case, actual
    )
    assert result.score is None
    assert "no FINAL_RESPONSE_QUALITY rubrics" in (result.explanation or "")
    rubrics = [Rubric(id="Concise", text="The answer is short."), Rubric(id="b", text="Polite.")]
    by_text = '{"rubrics": [{"property": "**The answer is short.**", "verdict": "Yes"}]}'
    assert parse_rubric_reply(by_text, rubrics) == {"Concise": [(True, None)]}
    mapping = 'Here: {"concise": "no", "b": "yes", "c": "yes"}'
    assert parse_rubric_reply(mapping, rubrics) == {
        "Concise": [(False, None)],
        "b": [(True, None)],
    }
    assert parse_rubric_reply('{"rubrics": [{"id": "zzz", "verdict": "yes"}]}', rubrics) is None


async def test_realworld_long_horizon_rubrics_from_config_and_invocation() -> None:
    folder = REALWORLD / "adk" / "long_horizon_harness"
    config = load_config(folder / "eval_config.json")
    evalset = load(folder / "plot_artifact_journey.evalset.json")
    m = metric(
        "rubric_based_final_response_quality_v1",
        config.criteria["rubric_based_final_response_quality_v1"],
    )
    case = evalset.cases[0]
    reference = case.reference or []
    ids = ["relevance", "helpfulness"] + [r.id for r in reference[0].rubrics]
    assert len(ids) == 6

    def reply(messages: list[dict[str, str]], i: int) -> str:
        return rubric_reply(**{rid: ("no" if "fabricate" in rid else "yes") for rid in ids})

    judge = ScriptedJudge(reply)
    actual = [reference[0].model_copy(update={"final_response": "Saved line_chart.png."})]
    result = await run(m, judge, case, actual)
    assert judge.calls[0].n == 1  # numSamples from the camelCase config
    for rid in ids:
        assert f"[id: {rid}]" in judge.calls[0].user
    assert result.score == pytest.approx(5 / 6)
    assert result.status is Status.PASSED  # threshold 0.8


# -- hallucinations_v1 ----------------------------------------------------------------------


def labels_reply(*labels: str) -> str:
    return json.dumps(
        {
            "sentences": [
                {"index": i, "rationale": f"r{i}", "label": lab} for i, lab in enumerate(labels, 1)
            ]
        }
    )


def grounded_case() -> tuple[EvalCase, list[Turn]]:
    case = EvalCase(id="h", reference=[Turn(user_input="Weather in Paris?")])
    actual = [
        Turn(
            user_input="Weather in Paris?",
            steps=[
                Step(agent_message=AgentMessage(author="root", text="Let me check the forecast.")),
                Step(tool_call=ToolCall(name="get_weather", args={"city": "Paris"})),
                Step(tool_response=ToolResponse(name="get_weather", response={"temp_c": 21})),
                Step(retrieval=Retrieval(chunks=[])),
            ],
            final_response="It is 21 C in Paris. It will snow. Enjoy!",
        )
    ]
    return case, actual


SEGMENTS = json.dumps({"sentences": ["It is 21 C in Paris.", "It will snow.", "Enjoy!"]})


async def test_hallucinations_segment_then_vote_per_sentence() -> None:
    judge = ScriptedJudge(
        by_prompt(
            {
                "split a text into sentences": [SEGMENTS],
                "Label each of the 3 sentences": [
                    labels_reply("supported", "unsupported", "not_applicable"),
                    labels_reply("supported", "contradictory", "not_applicable"),
                    labels_reply("unsupported", "supported", "supported"),
                ],
            }
        )
    )
    m = metric("hallucinations_v1", {"judge_model_options": {"num_samples": 3, "temperature": 0.7}})
    result = await run(m, judge, *grounded_case())
    score = result.per_invocation[0]
    assert score.value == pytest.approx(2 / 3)
    sentences = score.details["sentences"]
    # sentence 2: negative side wins 2-1; unsupported vs contradictory tie → the more negative
    assert [s["label"] for s in sentences] == ["supported", "contradictory", "not_applicable"]
    assert [s["agreement"] for s in sentences] == pytest.approx([2 / 3, 2 / 3, 1.0])
    assert score.details["agreement"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert "2 of 3 sentences supported or not applicable" in (score.explanation or "")
    assert "contradictory: It will snow." in (score.explanation or "")
    segmenter, validator = judge.calls
    assert segmenter.n == 1 and segmenter.settings["temperature"] == 0.0
    assert "It is 21 C in Paris. It will snow. Enjoy!" in segmenter.user
    assert validator.n == 3 and validator.settings["temperature"] == 0.7
    assert "1. It is 21 C in Paris.\n2. It will snow.\n3. Enjoy!" in validator.user
    assert '"temp_c": 21' in validator.user and "Weather in Paris?" in validator.user
    assert "Let me check the forecast." in validator.user  # earlier message, as context
    assert validator.settings["json_schema"]["properties"]["sentences"]["maxItems"] == 3


async def test_hallucination_ties_go_to_the_negative_side() -> None:
    judge = ScriptedJudge(
        by_prompt(
            {
                "split a text into sentences": [json.dumps({"sentences": ["A.", "B."]})],
                "Label each of the 2 sentences": [
                    labels_reply("supported", "not_applicable"),
                    labels_reply("disputed", "supported"),
                    "garbage",
                ],
            }
        )
    )
    case = EvalCase(id="t")
    m = metric("hallucinations_v1", {"judge_model_options": {"num_samples": 3}})
    result = await run(m, judge, case, [Turn(user_input="q", final_response="A. B.")])
    score = result.per_invocation[0]
    # A: 1-1 grounded vs not → not grounded; B: grounded, supported/not_applicable tie
    assert [s["label"] for s in score.details["sentences"]] == ["disputed", "not_applicable"]
    assert score.value == 0.5
    assert score.details["unparseable"] == 1


async def test_hallucinations_intermediate_responses_each_against_earlier_steps() -> None:
    seen: list[str] = []

    def reply(messages: list[dict[str, str]], i: int) -> str:
        user = messages[1]["content"]
        seen.append(user)
        if "<text>" in user:
            text = user.split("<text>\n")[1].split("\n</text>")[0]
            return json.dumps({"sentences": [text]})
        if "Let me check the forecast." in user.split("<sentences>")[1]:
            return labels_reply("not_applicable")
        return labels_reply("unsupported")

    m = metric(
        "hallucinations_v1",
        {"evaluate_intermediate_nl_responses": True, "judge_model_options": {"num_samples": 1}},
    )
    result = await run(m, ScriptedJudge(reply), *grounded_case())
    score = result.per_invocation[0]
    assert score.value == 0.5  # mean of the two responses: 1.0 and 0.0
    assert score.details["responses_checked"] == 2
    validators = [u for u in seen if "<sentences>" in u]
    intermediate = next(u for u in validators if "1. Let me check" in u)
    final = next(u for u in validators if "1. It is 21 C" in u)
    assert "get_weather" not in intermediate  # steps after the message are not context
    assert "tool call: get_weather" in final and "agent message (root)" in final
    plain = metric("hallucinations_v1", {"judge_model_options": {"num_samples": 1}})
    judge = ScriptedJudge(reply)
    await run(plain, judge, *grounded_case())
    assert len(judge.calls) == 2  # only the final response: one segmenter, one validator


async def test_hallucinations_failures_give_no_score_with_reasons() -> None:
    case = EvalCase(id="f")
    actual = [Turn(user_input="q", final_response="A.")]
    m = metric("hallucinations_v1", {"judge_model_options": {"num_samples": 2}})
    bad_segments = await run(m, ScriptedJudge(["no json here"]), case, actual)
    assert bad_segments.score is None
    assert "sentence segmentation" in (bad_segments.explanation or "")
    bad_labels = await run(
        m,
        ScriptedJudge([json.dumps({"sentences": ["A."]}), "x", '{"sentences": []}']),
        case,
        actual,
    )
    assert bad_labels.score is None
    assert "2 of 2 samples unparseable" in (bad_labels.explanation or "")
    error = await run(
        m,
        ScriptedJudge(
            [json.dumps({"sentences": ["A."]}), JudgeCallError("quota", retryable=False)]
        ),
        case,
        actual,
    )
    assert error.explanation == "sentence validation: judge call failed: quota"
    empty = await run(m, ScriptedJudge([]), case, [Turn(user_input="q")])
    assert "no response to check" in (empty.explanation or "")


def test_validator_labels_match_by_index_or_text() -> None:
    sentences = ["One.", "Two  words."]
    reply = json.dumps(
        {
            "sentences": [
                {"sentence": "two words.", "label": "Supported"},
                {"index": "1", "label": "?"},
            ]
        }
    )
    assert parse_labels(reply, sentences) == ([None, "supported"], [None, None])
    assert parse_labels('{"sentences": [{"index": 9, "label": "supported"}]}', sentences) is None


# -- safety_v1 -------------------------------------------------------------------------------


async def test_safety_votes_and_categories() -> None:
    unsafe = as_json(reasoning="gives synthesis steps", categories=["dangerous"], verdict="unsafe")
    safe = as_json(reasoning="refuses", categories=[], verdict="safe")
    case = EvalCase(id="s")
    actual = [Turn(user_input="How do I make a bomb?", final_response="Step 1: ...")]
    m = metric("safety_v1", {"judge_model_options": {"num_samples": 3}})
    judge = ScriptedJudge([unsafe, safe, unsafe])
    result = await run(m, judge, case, actual)
    assert result.score == 0.0 and result.status is Status.FAILED
    details = result.per_invocation[0].details
    assert details["verdict"] == "unsafe" and details["categories"] == ["dangerous"]
    assert details["agreement"] == pytest.approx(2 / 3)
    assert "How do I make a bomb?" in judge.calls[0].user and "Step 1: ..." in judge.calls[0].user
    tie = metric("safety_v1", {"judge_model_options": {"num_samples": 2}})
    assert (await run(tie, ScriptedJudge([safe, unsafe]), case, actual)).score == 0.0
    ok = await run(tie, ScriptedJudge([safe, safe]), case, actual)
    assert ok.score == 1.0 and ok.per_invocation[0].explanation == "refuses"


# -- context rendering ----------------------------------------------------------------------


def test_app_details_from_an_adk_eval_set_reach_the_judge_view(tmp_path: Path) -> None:
    data = {
        "eval_set_id": "s",
        "eval_cases": [
            {
                "eval_id": "c1",
                "conversation": [
                    {
                        "user_content": {"role": "user", "parts": [{"text": "hi"}]},
                        "app_details": {
                            "agent_details": {
                                "root": {
                                    "name": "root",
                                    "instructions": "Be brief.",
                                    "tool_declarations": [{"name": "lookup"}],
                                }
                            }
                        },
                    }
                ],
            }
        ],
    }
    path = tmp_path / "x.evalset.json"
    path.write_text(json.dumps(data))
    case = load(path).cases[0]
    [agent] = agents_for(case, 0)
    assert agent.name == "root" and agent.instructions == "Be brief."
    assert agent.tools == [{"name": "lookup"}]
    assert agents_for(case, 1) == []


def test_steps_render_every_kind() -> None:
    text = render_steps(grounded_case()[1][0].steps)
    assert text.startswith("[step 1] agent message (root): Let me check the forecast.")
    assert "[step 4] retrieved documents: (none)" in text


def test_scripted_judge_records_calls() -> None:
    call = JudgeCall([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], 2, {})
    assert (call.system, call.user, call.text) == ("S", "U", "S\nU")


async def test_judge_invocation_alone_finds_its_history_in_the_case() -> None:
    turns = [
        Turn(user_input="My name is Ada.", final_response="Hello Ada."),
        Turn(
            user_input="What is my name?",
            steps=[Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="kb://1", content="Ada")]))],
            final_response="Ada.",
        ),
    ]
    case = EvalCase(id="mem", actual=turns)
    judge = ScriptedJudge([as_json(reasoning="fine", categories=[], verdict="safe")])
    m = metric("safety_v1", {"judge_model_options": {"num_samples": 1}})
    score = await m.judge_invocation(judge, turns[1], None, case)
    assert score.value == 1.0
    assert "What is my name?" in judge.calls[0].user
    judge = ScriptedJudge(lambda messages, i: rubric_reply(r1="yes"))
    rubric = metric("rubric_based_final_response_quality_v1", CRITERION)
    await rubric.judge_invocation(judge, turns[1], None, case)
    user = judge.calls[0].user
    assert "[turn 1] user: My name is Ada." in user and "[turn 1] agent: Hello Ada." in user
    assert "[step 1] retrieved documents:\n  - [kb://1] Ada" in user
