"""The ADK test agents and their scripted model live in tests/agents/adk_fixtures.

ADK's evaluator imports the client of its Vertex-hosted metrics (google-cloud-aiplatform,
a large install) even when no such metric runs. The tests compare assay with ADK's local
metrics only, so modules that refuse every use stand in for that client's imports.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

_AGENTS = str(Path(__file__).resolve().parents[1] / "agents")
if _AGENTS not in sys.path:
    sys.path.insert(0, _AGENTS)


class _NoVertex(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"{self.__name__}.{name}: Vertex-hosted metrics are not in these tests")


for _client, _holder in (("agentplatform", "_agentplatform"), ("vertexai", "vertexai")):
    if importlib.util.find_spec(_client) is None:
        _shim = types.ModuleType(f"google.adk.dependencies.{_holder}")
        setattr(_shim, _client, _NoVertex(_client))
        sys.modules.setdefault(_shim.__name__, _shim)
