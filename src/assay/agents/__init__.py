"""Agent adapters: turn an agent under test into Turns the metrics can score."""

from assay.agents.base import Agent, AgentSession
from assay.agents.callable import CallableAgent, to_turn
from assay.agents.loader import as_agent, load_agent

__all__ = ["Agent", "AgentSession", "CallableAgent", "as_agent", "load_agent", "to_turn"]
