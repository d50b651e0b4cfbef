"""Variants of the home-automation example agent, for comparisons with a known change."""

from __future__ import annotations

import time
from typing import Any

from examples.home_automation.agent import root_agent

from assay.core.cases import Turn


def forgetful_agent(prompt: str, state: dict[str, Any]) -> Turn:
    """The example agent, except it no longer switches anything off by device id."""
    if prompt.strip() == "Turn off device_2.":
        return Turn(final_response="OK, the Bedroom Lamp (device_2) is now off.")
    return root_agent(prompt, state)


#: the prompts of three single-call cases that pass with the example agent
LOST_CALL_PROMPTS = frozenset(
    {
        "Turn off device_2.",
        "Which devices are in the bedroom?",
        "Is the kitchen light on?",
    }
)


def lost_call_agent(prompt: str, state: dict[str, Any]) -> Turn:
    """The example agent, except that in three cases its last tool call (and the tool's
    reply) is lost: the same answer, one call fewer, so those three cases fail."""
    turn = root_agent(prompt, state)
    if prompt.strip() not in LOST_CALL_PROMPTS:
        return turn
    calls = [i for i, step in enumerate(turn.steps) if step.tool_call is not None]
    kept = [s for i, s in enumerate(turn.steps) if i < calls[-1]]
    return turn.model_copy(update={"steps": kept})


def slow_agent(prompt: str, state: dict[str, Any]) -> Turn:
    """The example agent, 50 ms slower per turn: the same calls and answers."""
    time.sleep(0.05)
    return root_agent(prompt, state)
