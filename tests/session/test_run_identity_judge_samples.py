"""`--judge-samples` changes the scores, so it is part of what makes two runs the same
evaluation: an interrupted run is never resumed with another sample count."""

from __future__ import annotations

from assay.core.cases import EvalCase, EvalSet, Turn
from assay.engine.judge_options import JudgeRunOptions
from assay.metrics.registry import build_metric
from assay.session.run_session import RunSession


def _session(samples: int | None) -> RunSession:
    evalset = EvalSet(
        id="s", cases=[EvalCase(id="c", actual=[Turn(user_input="q", final_response="a")])]
    )
    metric = build_metric("final_response_match_v2", {})
    return RunSession([evalset], [metric], judges=JudgeRunOptions(num_samples=samples))


def test_the_sample_count_is_in_the_run_identity_only_when_given() -> None:
    three, five, unset = _session(3), _session(5), _session(None)
    assert three.identity is not None and five.identity is not None and unset.identity is not None
    assert three.identity.config["run_options"]["judge_samples"] == 3
    assert three.identity != five.identity
    # Runs without the flag keep the identity they had, so they still resume each other.
    assert "judge_samples" not in unset.identity.config["run_options"]
