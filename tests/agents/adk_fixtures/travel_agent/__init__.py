"""A test ADK agent folder, laid out as `adk web` expects (loaded by folder path)."""

from . import agent

__all__ = ["agent"]
