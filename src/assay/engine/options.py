"""`RunOptions`: how a run runs its case runs (counts, concurrency, timeouts, tools)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from assay.agents.tools import ToolBehavior
from assay.engine.replay import RunMethod
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.simulation import SimulatorOptions


@dataclass
class RunOptions:
    """How to run the cases.

    - `runs`: runs of every case; None: CES defaults (1 per golden or recorded case,
      `SCENARIO_RUNS` per simulated scenario);
    - `concurrency`: case runs at once; `timeout_s`: per case run with an agent;
    - `tool_behavior`: REAL / FAKE / MIXED tool calls (`assay.agents.tools`);
    - `run_method`: golden replay STABLE (fresh session per turn) or NAIVE; None: each
      case's default (`replay.default_method`: STABLE for CES goldens, else NAIVE);
    - `simulator`: the simulated user of scenario cases (None: they are NOT_SUPPORTED).
    """

    runs: int | None = None
    concurrency: int = 4
    timeout_s: float | None = 300.0
    tool_behavior: ToolBehavior = ToolBehavior.REAL
    run_method: RunMethod | None = None
    simulator: SimulatorOptions | None = None

    def __post_init__(self) -> None:
        if self.runs is not None and self.runs < 1:
            raise ConfigError(f"runs must be at least 1, got {self.runs}")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ConfigError(f"timeout must be positive, got {self.timeout_s}")
        self.tool_behavior = ToolBehavior.parse(self.tool_behavior)
        if self.run_method is not None:
            self.run_method = RunMethod.parse(self.run_method)
