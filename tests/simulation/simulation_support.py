"""Helpers of the simulation tests: a recording agent and a simulator on the stand-in.

Imported by name (`from simulation_support import ...`); a module called `conftest`
would clash with the other test folders' conftest modules.
"""

from __future__ import annotations

from typing import Any

from assay.agents.callable import CallableAgent
from assay.core.cases import UserInput
from assay.simulation import SimulatorOptions, UserSimulator
from assay.testing.judge_server import JudgeServer, Script


class Recorder:
    """An agent callable that answers `agent saw: TEXT` and records every input."""

    def __init__(self) -> None:
        self.inputs: list[UserInput] = []

    def __call__(self, text: str, user_input: UserInput) -> str:
        self.inputs.append(user_input)
        if user_input.event:
            return "Welcome to Bella Notte, how can I help?"
        return f"agent saw: {text}"

    def agent(self) -> CallableAgent:
        return CallableAgent(self, name="recorder")


def simulator(server: JudgeServer, script: Script, **options: Any) -> UserSimulator:
    """A simulator on the stand-in, which answers with `script` from now on."""
    server.set_script(script)
    options.setdefault("max_retries", 0)
    return UserSimulator(
        SimulatorOptions(model="openai:user-sim", base_url=server.openai_base_url, **options)
    )
