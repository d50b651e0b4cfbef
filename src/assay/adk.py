"""ADK compatibility: `from assay.adk import AgentEvaluator` in an ADK pytest suite."""

from __future__ import annotations

from assay.interop.adk_evaluator import NUM_RUNS, AgentEvaluator

__all__ = ["NUM_RUNS", "AgentEvaluator"]
