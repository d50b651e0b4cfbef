from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay.agents import CallableAgent, as_agent, load_agent, to_turn
from assay.core import EvalCase, Step, ToolCall, ToolResponse, Turn, UserInput
from assay.errors import AgentError


async def _send(agent: Any, text: str, case: EvalCase | None = None) -> Turn:
    session = await agent.start_session(case or EvalCase(id="c"))
    turn: Turn = await session.send(UserInput(text=text))
    return turn


async def test_return_shapes_become_turns() -> None:
    turn = await _send(as_agent(lambda p: f"echo {p}"), "hi")
    assert turn.final_response == "echo hi" and turn.user_input.text == "hi"

    def vertex_style(prompt: str) -> dict[str, Any]:
        return {
            "response": "done",
            "predicted_trajectory": '[{"tool_name": "a", "tool_input": {"x": 1}}]',
        }

    turn = await _send(as_agent(vertex_style), "go")
    assert turn.tool_calls() == [ToolCall(name="a", args={"x": 1})]

    given = Turn(steps=[Step(tool_response=ToolResponse(name="a", response={"output": 1}))])
    turn = await _send(as_agent(lambda p: given), "go")
    assert turn.user_input.text == "go" and turn.tool_responses()[0].response == {"output": 1}


async def test_async_callable_object_and_case_param() -> None:
    class Bot:
        async def __call__(self, prompt: str, case: EvalCase) -> str:
            return f"{case.id}:{prompt}"

    agent = as_agent(Bot())
    assert isinstance(agent, CallableAgent) and agent.is_async
    turn = await _send(agent, "q", EvalCase(id="case-7"))
    assert turn.final_response == "case-7:q"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "must return a string, a dict"),
        ({"answer": "x"}, "unknown keys ['answer']"),
        ({"response": "x", "predicted_trajectory": {"tool_name": "a"}}, "must be a list"),
        ({"response": "x", "predicted_trajectory": [{"tool_name": 3}]}, "needs tool_name"),
    ],
)
def test_bad_returns_are_clear_errors(value: Any, message: str) -> None:
    with pytest.raises(AgentError, match=message.replace("[", r"\[").replace("]", r"\]")):
        to_turn(value, UserInput(text="q"), "agent x")


def test_load_agent_from_module_in_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "mybots"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bot.py").write_text(
        textwrap.dedent("""
        def answer(prompt):
            return prompt[::-1]
        broken = 3
    """)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    agent = load_agent("mybots.bot:answer")
    assert agent.name == "mybots.bot:answer"
    with pytest.raises(AgentError, match="has no attribute 'nope'"):
        load_agent("mybots.bot:nope")
    with pytest.raises(AgentError, match="not an agent"):
        load_agent("mybots.bot:broken")
    with pytest.raises(AgentError, match="cannot import module 'missing_mod'"):
        load_agent("missing_mod:x")
    with pytest.raises(AgentError, match="expected MODULE:ATTRIBUTE"):
        load_agent("no_colon")
