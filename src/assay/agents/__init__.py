"""Agent adapters: turn an agent under test into Turns the metrics can score.

The names below are imported on first use (`assay._lazy`): a submodule such as
`assay.agents.tools`, which `RunOptions` needs, loads without the adapters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_exports

if TYPE_CHECKING:
    from assay.agents.base import Agent, AgentSession
    from assay.agents.callable import CallableAgent, to_turn
    from assay.agents.loader import as_agent, load_agent

_EXPORTS = {
    "Agent": "assay.agents.base",
    "AgentSession": "assay.agents.base",
    "CallableAgent": "assay.agents.callable",
    "to_turn": "assay.agents.callable",
    "as_agent": "assay.agents.loader",
    "load_agent": "assay.agents.loader",
}

__all__ = ["Agent", "AgentSession", "CallableAgent", "as_agent", "load_agent", "to_turn"]

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
