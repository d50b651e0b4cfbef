"""Variants of the home-automation example agent, for comparisons with a known change."""

from __future__ import annotations

from typing import Any

from examples.home_automation.agent import root_agent

from assay.model.core import Turn


def forgetful_agent(prompt: str, state: dict[str, Any]) -> Turn:
    """The example agent, except it no longer switches anything off by device id."""
    if prompt.strip() == "Turn off device_2.":
        return Turn(final_response="OK, the Bedroom Lamp (device_2) is now off.")
    return root_agent(prompt, state)
