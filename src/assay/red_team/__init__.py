"""Red-team probes of an agent (`assay redteam`, `assay.redteam`; docs/redteam.md).

Attacks come from a shipped, versioned seed library (`probes.seed_library`), adapted to
the agent's tools and, with a model, mutated by it; each attack is an eval case run
through `assay.aevaluate` (FAKE tools by default) and scored by `attack_resisted`.
"""

from __future__ import annotations

from assay.judges.noise import wilson_interval as wilson
from assay.red_team.probes import CATEGORIES, Category, Probe, seed_library
from assay.red_team.report import RedTeamReport, render
from assay.red_team.run import aredteam, redteam

__all__ = [
    "CATEGORIES",
    "Category",
    "Probe",
    "RedTeamReport",
    "aredteam",
    "redteam",
    "render",
    "seed_library",
    "wilson",
]
