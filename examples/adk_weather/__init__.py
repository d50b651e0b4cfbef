"""An ADK weather agent (the layout `adk web` and `assay eval --agent FOLDER` expect)."""

from . import agent

__all__ = ["agent"]
