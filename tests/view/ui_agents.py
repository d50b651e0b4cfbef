"""An agent for the viewer's tests: the home-automation example, except that it answers
one request in other words without calling the tool (a regression with a response diff)."""

from __future__ import annotations

from typing import Any

from examples.home_automation.agent import root_agent

from assay.core.cases import Turn


def terse_agent(prompt: str, state: dict[str, Any]) -> Turn:
    if prompt.strip() == "Turn off device_2.":
        return Turn(final_response="Done: the lamp is off now.")
    return root_agent(prompt, state)
