"""Test helpers that ship with assay: `assert_eval` for hand-written tests, the pytest
plugin (`pytest_plugin`, eval files as tests), and a scripted stand-in for judge model APIs.

`JudgeServer` answers the OpenAI, Gemini and Anthropic chat endpoints over real HTTP on
127.0.0.1 from a script, so the real SDK client paths (and assay's retries, limits and
cache around them) can be exercised without a network or a model. Run one by hand with
``python -m assay.testing.judge_server --delay 0.2``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.testing.assertions import EvalFailure, assert_eval
    from assay.testing.judge_server import (
        Dialect,
        JudgeServer,
        Script,
        StandinReply,
        StandinRequest,
        StandinToolCall,
    )

_ASSERTIONS = ("EvalFailure", "assert_eval")

__all__ = [
    "Dialect",
    "EvalFailure",
    "JudgeServer",
    "Script",
    "StandinReply",
    "StandinRequest",
    "StandinToolCall",
    "assert_eval",
]


def __getattr__(name: str) -> Any:
    # Imported on first use so that `python -m assay.testing.judge_server` does not find
    # the module already imported by its package (runpy warns about that).
    if name in _ASSERTIONS:
        return getattr(importlib.import_module("assay.testing.assertions"), name)
    if name in __all__:
        return getattr(importlib.import_module("assay.testing.judge_server"), name)
    raise AttributeError(f"module 'assay.testing' has no attribute {name!r}")
