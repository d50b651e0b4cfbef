"""The ADK test agents and their scripted model live in tests/agents/adk_fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

_AGENTS = str(Path(__file__).resolve().parents[1] / "agents")
if _AGENTS not in sys.path:
    sys.path.insert(0, _AGENTS)
