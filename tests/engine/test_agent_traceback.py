"""`agent_traceback`: the text an agent's exception is kept with."""

from __future__ import annotations

import asyncio

from assay.engine.infer import MAX_TRACEBACK_CHARS, agent_traceback, guarded
from assay.errors import AgentError


def _lookup(key: str) -> str:
    return {"a": "b"}[key]


def _agent_step() -> None:
    try:
        _lookup("missing")
    except KeyError as exc:
        raise RuntimeError("could not load the profile") from exc


def test_chained_exceptions_keep_both_tracebacks_and_none_of_assays_frames() -> None:
    async def work() -> None:
        _agent_step()

    inference = asyncio.run(guarded(work, [], None))
    text = inference.traceback or ""
    assert inference.error == "agent raised RuntimeError: could not load the profile"
    # the cause first, then the exception, each with the agent's frames
    assert text.index("in _lookup") < text.index("KeyError: 'missing'")
    assert "The above exception was the direct cause" in text
    assert "in _agent_step" in text and "in work" in text
    assert text.rstrip().endswith("RuntimeError: could not load the profile")
    assert "assay/engine/infer.py" not in text and "asyncio" not in text


def test_a_timeout_has_no_traceback() -> None:
    async def slow() -> None:
        await asyncio.sleep(5)

    inference = asyncio.run(guarded(slow, [], 0.01))
    assert inference.error == "agent timed out after 0.01s" and inference.traceback is None


def test_an_agent_error_carries_what_the_remote_side_said() -> None:
    exc = AgentError("HTTP agent http://x answered 500", remote="Traceback ...\nValueError: x\n")
    text = agent_traceback(exc)
    assert text.startswith("assay.errors.AgentError: HTTP agent http://x answered 500\n")
    assert text.endswith("the agent's reply:\nTraceback ...\nValueError: x\n")


def test_a_huge_traceback_keeps_its_end() -> None:
    exc = AgentError("x", remote="line\n" * 40_000 + "THE END")
    text = agent_traceback(exc)
    assert len(text) <= MAX_TRACEBACK_CHARS + 40
    assert text.startswith("[... the start cut]\n") and text.rstrip().endswith("THE END")
