"""Aligned judges' parts: references, prompt augmentation, the cache key, the pool's
routing, and the alignment's own helpers (folds, examples, guidelines, bootstrap)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core.cases import EvalCase, Turn
from assay.engine.calibrate import ItemVerdict
from assay.errors import ConfigError
from assay.judges.align import (
    AlignedExample,
    AlignedJudges,
    AlignedJudgeSpec,
    alignment_text,
    augment_messages,
    parse_ref,
)
from assay.judges.client import AlignedJudge, Judge, JudgePool
from assay.judges.types import BackendReply, GenerationSettings
from assay.models.cache import MemoryReplyCache, reply_cache_key
from assay.session.align import (
    AlignOptions,
    KappaIntervals,
    bootstrap_gain,
    bootstrap_kappas,
    choose_examples,
    labelled_set_from_items,
    parse_guidelines,
    stratified_folds,
)

SPEC = AlignedJudgeSpec(
    name="frm",
    version=3,
    metric="final_response_match_v2",
    judge_model="openai:base",
    guidelines=("A response that says 'definitely' is not right for that reason.",),
    examples=(AlignedExample({"prompt": "Q", "response": "A definitely"}, "invalid", "wrong"),),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("aligned:frm", ("frm", None)),
        ("frm@2", ("frm", 2)),
        (" Aligned:a.b-c_d@10 ", ("a.b-c_d", 10)),
    ],
)
def test_parse_ref(text: str, expected: tuple[str, int | None]) -> None:
    assert parse_ref(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("aligned:", "name ''"),
        ("x@0", "from 1"),
        ("x@v2", "whole number"),
        ("x@99999999999999999999", "to 2147483647"),
        ("x@\u0661", "whole number"),
        ("a b", "'a b'"),
        ("-x", "'-x'"),
    ],
)
def test_parse_ref_errors_name_the_part(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_ref(text)


def test_augment_appends_to_the_system_message_or_adds_one() -> None:
    text = alignment_text(SPEC.guidelines, SPEC.examples)
    assert (
        "Guidelines from human reviewers" in text
        and "<human_verdict>invalid</human_verdict>" in text
    )
    assert alignment_text((), ()) == ""
    messages = [{"role": "system", "content": "Grade."}, {"role": "user", "content": "Q?"}]
    out = augment_messages(messages, text)
    assert out[0]["content"] == f"Grade.\n\n{text}" and out[1] == messages[1]
    assert messages[0]["content"] == "Grade."  # the caller's messages are left alone
    assert augment_messages(messages[1:], text) == [
        {"role": "system", "content": text},
        messages[1],
    ]
    assert augment_messages(messages, "") == messages


def test_the_cache_key_carries_the_judge_version_and_leaves_other_keys_alone() -> None:
    base = {"backend": "openai", "model": "m", "prompt": "p", "sample": 0, "settings": {}}
    plain = reply_cache_key(**base)  # type: ignore[arg-type]
    assert reply_cache_key(**base, judge_version=None) == plain  # type: ignore[arg-type]
    one = reply_cache_key(**base, judge_version="frm@1")  # type: ignore[arg-type]
    two = reply_cache_key(**base, judge_version="frm@2")  # type: ignore[arg-type]
    assert len({plain, one, two}) == 3
    # A key computed before aligned judges existed (KEY_VERSION 2, this payload).
    assert plain == reply_cache_key(
        backend="openai", model="m", prompt="p", sample=0, settings={}, endpoint=""
    )


class Recorder:
    """A backend noting each prompt it is sent."""

    backend = "openai"
    endpoint = "http://127.0.0.1:1/v1"

    def __init__(self, model: str) -> None:
        self.model = model
        self.prompts: list[Sequence[Mapping[str, object]]] = []

    async def complete(
        self, messages: Sequence[Mapping[str, object]], settings: GenerationSettings
    ) -> BackendReply:
        self.prompts.append(messages)
        return BackendReply(text="ok")

    async def aclose(self) -> None:
        return None


class Asker:
    """A judge request (a metric's name and options)."""

    def __init__(self, name: str, model: str | None = None) -> None:
        from assay.judges.types import JudgeModelOptions

        self.name = name
        self.judge_options = JudgeModelOptions(judge_model=model)


async def test_the_pool_gives_the_aligned_metric_an_aligned_judge_and_others_the_base() -> None:
    backends: list[Recorder] = []

    def factory(model: str, options: object = None, *, timeout_s: float) -> Recorder:
        backends.append(Recorder(model.split(":", 1)[1]))
        return backends[-1]

    cache = MemoryReplyCache()
    pool = JudgePool(
        default_model="aligned:frm",
        cache=cache,
        backend_factory=factory,
        aligned=AlignedJudges([SPEC]),
    )
    aligned = pool.judge_for(Asker("final_response_match_v2"))
    other = pool.judge_for(Asker("safety_v1"))
    assert isinstance(aligned, AlignedJudge) and aligned.judge_version == "frm@3"
    assert not isinstance(other, AlignedJudge) and other is not None and not isinstance(other, str)
    assert [b.model for b in backends] == ["base"]  # one backend, shared
    prompt = [{"role": "system", "content": "Grade."}, {"role": "user", "content": "Q"}]
    await aligned.generate(prompt, 1)
    await other.generate(prompt, 1)
    sent = backends[0].prompts
    assert "definitely" in str(sent[0][0]["content"]) and sent[1][0]["content"] == "Grade."
    # The same prompt under another version is another cache entry.
    await aligned.generate(prompt, 1)
    assert len(sent) == 2
    again = JudgePool(
        default_model="aligned:frm",
        cache=cache,
        backend_factory=factory,
        aligned=AlignedJudges([SPEC, AlignedJudgeSpec(**{**SPEC.__dict__, "version": 4})]),
    )
    newer = again.judge("aligned:frm")
    await newer.generate(prompt, 1)
    assert len(backends[1].prompts) == 1
    await pool.aclose()
    await again.aclose()
    unknown = JudgePool(backend_factory=factory, aligned=AlignedJudges([SPEC]))
    found = unknown.judge_for(Asker("final_response_match_v2", "aligned:nope"))
    assert isinstance(found, str) and "no aligned judge named 'nope'" in found
    with pytest.raises(ConfigError, match="needs a store"):
        JudgePool(default_model="aligned:frm")


def _item(cid: str, human: str, judge: str, agreement: float = 1.0) -> ItemVerdict:
    return ItemVerdict(cid, None, human, judge, agreement=agreement)


def _case(cid: str, response: str) -> EvalCase:
    return EvalCase(
        id=cid,
        actual=[Turn(user_input={"text": f"prompt {cid}"}, final_response=response)],
        reference=[Turn(final_response=f"reference {cid}")],
    )


def test_examples_put_disagreements_first_take_both_labels_and_keep_the_budget() -> None:
    items = [
        _item("a", "valid", "valid"),
        _item("b", "invalid", "valid"),
        _item("c", "valid", "invalid"),
        _item("d", "invalid", "valid"),
        _item("e", "valid", "valid", agreement=0.6),
        _item("f", "invalid", "valid"),
    ]
    cases = {i.case_id: _case(i.case_id, f"response {i.case_id}") for i in items}
    cases["f"] = _case("f", "response b")  # the same response as b: shown once
    names = ("valid", "invalid")
    chosen = choose_examples(items, cases, names, AlignOptions(max_examples=4))
    # valid and invalid in turn among the disagreements (two thirds of the places at
    # first), then the borderline item, then the rest
    assert [e.inputs["response"] for e in chosen] == [
        "response c",
        "response b",
        "response e",
        "response a",
    ]
    rest = choose_examples(items, cases, names, AlignOptions(max_examples=6))
    assert [e.inputs["response"] for e in rest] == [
        "response c",
        "response b",
        "response d",
        "response e",
        "response a",
    ]
    assert chosen[1].inputs == {
        "prompt": "prompt b",
        "reference": "reference b",
        "response": "response b",
    }
    small = choose_examples(items, cases, names, AlignOptions(example_chars=200))
    assert len(small) == 1
    assert choose_examples(items, cases, names, AlignOptions(max_examples=0)) == ()


def test_folds_are_stratified_and_cover_every_item_once() -> None:
    labels = {f"v{i}": True for i in range(13)} | {f"i{i}": False for i in range(7)}
    parts = stratified_folds(labels, 5, seed=3)
    assert sorted(cid for p in parts for cid in p) == sorted(labels)
    assert all(3 <= len(p) <= 5 for p in parts)
    assert all(any(labels[c] for c in p) for p in parts)
    assert stratified_folds(labels, 5, seed=3) == parts


def test_guidelines_are_read_from_bullets_or_lines() -> None:
    reply = "Here you go:\n- Check dates.\n* Check  names.\n2. Check units.\n- Check dates.\n"
    assert parse_guidelines(reply, 8) == ("Check dates.", "Check names.", "Check units.")
    assert parse_guidelines("one rule\nanother rule", 1) == ("one rule",)
    assert parse_guidelines("- " + "x" * 1000, 8)[0] == "x" * 400


def test_the_bootstrap_interval_is_zero_wide_without_change_and_positive_with_a_fix() -> None:
    names = ("valid", "invalid")
    same = [("valid", "valid", "valid")] * 10 + [("invalid", "valid", "valid")] * 5
    same += [("invalid", "invalid", "invalid")] * 10
    assert bootstrap_gain(same, names, resamples=500, seed=0) == (0.0, 0.0)
    fixed = [(h, b, h) for h, b, _ in same]
    low, high = bootstrap_gain(fixed, names, resamples=500, seed=0) or (0.0, 0.0)
    assert 0 < low <= high
    assert bootstrap_gain(same[:1], names, resamples=500, seed=0) is None
    intervals = bootstrap_kappas(fixed, names, resamples=500, seed=0)
    assert intervals.after == (1.0, 1.0) and intervals.gain == (low, high)
    assert intervals.before is not None and intervals.before[0] < intervals.before[1] < 1.0
    # Every resample one label only: kappa is undefined, so is its interval.
    assert bootstrap_kappas([("valid", "valid", "valid")] * 5, names, resamples=200, seed=0) == (
        KappaIntervals(None, None, None)
    )


class Labelled:
    """A label from the store, shaped as `assay.store.labels.LabelledItem`."""

    def __init__(
        self, run: str, case: str, author: str, label: str, note: str | None = None
    ) -> None:
        self.run_id, self.case_id, self.author, self.label, self.note = (
            run,
            case,
            author,
            label,
            note,
        )
        self.metric = "final_response_match_v2"
        self.score = None
        self.inputs = {"prompt": f"q {case}", "response": f"a {case}", "reference": f"r {case}"}


def test_store_labels_take_the_majority_and_leave_out_ties_and_scores() -> None:
    items = [
        Labelled("r1", "c1", "ann", "pass", "right"),
        Labelled("r1", "c1", "bob", "pass"),
        Labelled("r1", "c1", "cy", "fail"),
        Labelled("r1", "c2", "ann", "fail"),
        Labelled("r1", "c3", "ann", "pass"),
        Labelled("r1", "c3", "bob", "fail"),
        Labelled("r2", "c1", "ann", "0.75"),
        Labelled("r2", "c2", "ann", "1"),
    ]
    labelled, left_out = labelled_set_from_items(items)
    assert labelled.labels == {"r1/c1": True, "r1/c2": False}
    assert [c.actual[0].final_response for c in labelled.evalset.cases] == ["a c1", "a c2"]  # type: ignore[index]
    assert any("r1/c3" in x and "split" in x for x in left_out)
    assert any("r2/c1" in x and "score" in x for x in left_out)
    assert any("r2/c2" in x and "score" in x for x in left_out)
    with pytest.raises(ConfigError, match="no labelled item"):
        labelled_set_from_items(items[-1:])


def test_align_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="--folds"):
        AlignOptions(folds=1)
    with pytest.raises(ConfigError, match="--max-examples"):
        AlignOptions(max_examples=-1)


def test_one_options_object_asked_by_two_metrics_is_routed_per_metric() -> None:
    def factory(model: str, options: object = None, *, timeout_s: float) -> Recorder:
        return Recorder(model)

    pool = JudgePool(
        default_model="aligned:frm", backend_factory=factory, aligned=AlignedJudges([SPEC])
    )
    aligned_metric, other_metric = Asker("final_response_match_v2"), Asker("safety_v1")
    other_metric.judge_options = aligned_metric.judge_options  # one object, two metrics
    assert isinstance(pool.judge_for(other_metric), Judge)
    assert not isinstance(pool.judge_for(other_metric), AlignedJudge)
    assert isinstance(pool.judge_for(aligned_metric), AlignedJudge)
    assert not isinstance(pool.judge_for(other_metric), AlignedJudge)


def test_the_docs_example_holds_the_tests_items() -> None:
    import json

    from align_helpers import REPO, labelled_rows

    shipped = REPO / "examples" / "judge_calibration" / "overconfident.jsonl"
    lines = shipped.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == labelled_rows()


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60))
def test_any_reference_text_parses_or_is_a_config_error(text: str) -> None:
    try:
        name, version = parse_ref(text)
    except ConfigError as exc:
        assert "aligned judge" in str(exc)
    else:
        assert 1 <= len(name) <= 128 and (version is None or 1 <= version <= 2**31 - 1)


@settings(max_examples=200, deadline=None)
@given(reply=st.text(max_size=400), limit=st.integers(0, 10))
def test_any_model_reply_gives_at_most_limit_short_guidelines(reply: str, limit: int) -> None:
    found = parse_guidelines(reply, limit)
    assert len(found) <= limit and len(set(found)) == len(found)
    assert all(0 < len(g) <= 400 and "\n" not in g for g in found)


@settings(max_examples=100, deadline=None)
@given(
    guidelines=st.lists(st.text(max_size=40), max_size=4),
    inputs=st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=40), max_size=4),
)
def test_any_alignment_is_added_after_the_metric_prompt(
    guidelines: list[str], inputs: dict[str, str]
) -> None:
    text = alignment_text(guidelines, [AlignedExample(inputs, "invalid")])
    messages = [{"role": "system", "content": "Grade."}, {"role": "user", "content": "Q"}]
    out = augment_messages(messages, text)
    assert out[0]["content"] == f"Grade.\n\n{text}" and out[1:] == messages[1:]


class Slow(Recorder):
    """A backend that notes how many calls it has in flight at once."""

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.now = 0
        self.peak = 0

    async def complete(
        self, messages: Sequence[Mapping[str, object]], settings: GenerationSettings
    ) -> BackendReply:
        self.prompts.append(messages)
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.01)
        self.now -= 1
        return BackendReply(text="ok")


async def test_an_aligned_judge_keeps_its_base_judges_parallelism_limit() -> None:
    from assay.judges.types import JudgeModelOptions

    backends: list[Slow] = []

    def factory(model: str, options: object = None, *, timeout_s: float) -> Slow:
        backends.append(Slow(model))
        return backends[-1]

    pool = JudgePool(backend_factory=factory, aligned=AlignedJudges([SPEC]))
    options = JudgeModelOptions(parallelism_limit=1)
    aligned = pool.judge("aligned:frm", options)
    base = pool.judge("openai:base", options)
    prompts = [[{"role": "user", "content": f"Q{i}"}] for i in range(4)]
    await asyncio.gather(
        *(aligned.generate(p, 1) for p in prompts), *(base.generate(p, 1) for p in prompts)
    )
    assert len(backends) == 1 and len(backends[0].prompts) == 8
    assert backends[0].peak == 1
    await pool.aclose()
