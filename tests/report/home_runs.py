"""The bundled home-automation example, evaluated once per test session (no store)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from examples.home_automation.agent import root_agent

from assay.api import evaluate
from assay.core.results import EvalResult

REPO = Path(__file__).resolve().parents[2]
HOME_EVALSET = REPO / "examples" / "home_automation" / "home.evalset.json"


@cache
def home_result() -> EvalResult:
    """The example's result: four deliberate failures of different causes."""
    return evaluate(str(HOME_EVALSET), agent=root_agent, store=None)
