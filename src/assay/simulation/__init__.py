"""User simulation for scenario cases (CES scenarios, ADK `conversation_scenario`).

`simulate(agent, case, session, simulator)` runs one conversation between the agent
under test and an LLM-backed simulated user (`UserSimulator`, configured by
`SimulatorOptions`) built from the scenario's task, user facts, conversation plan and
persona; `load_personas` reads persona files. Static conversations (golden turns) are
replayed by the engine, not simulated. See docs/scenarios.md.
"""

from assay.simulation.conversation import OPENING_EVENT, SimulationResult, simulate
from assay.simulation.options import DEFAULT_STOP_SIGNAL, NO_USER_MODEL_MESSAGE, SimulatorOptions
from assay.simulation.personas import PRESET_PERSONAS, find_persona, load_personas, resolve_persona
from assay.simulation.simulator import NextMessage, UserSimulationError, UserSimulator, read_reply

__all__ = [
    "DEFAULT_STOP_SIGNAL",
    "NO_USER_MODEL_MESSAGE",
    "OPENING_EVENT",
    "PRESET_PERSONAS",
    "NextMessage",
    "SimulationResult",
    "SimulatorOptions",
    "UserSimulationError",
    "UserSimulator",
    "find_persona",
    "load_personas",
    "read_reply",
    "resolve_persona",
    "simulate",
]
