"""Resolve `--agent package.module:attr` into an Agent."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from assay.agents.base import Agent
from assay.agents.callable import CallableAgent
from assay.errors import AgentError


def as_agent(obj: Any, name: str | None = None) -> Agent:
    """Wrap a callable (or pass through an object that already is an Agent)."""
    if hasattr(obj, "start_session") and hasattr(obj, "name"):
        return obj  # type: ignore[no-any-return]
    if callable(obj):
        return CallableAgent(obj, name=name)
    raise AgentError(
        f"{name or type(obj).__name__} is not an agent: expected a callable or an object "
        "with start_session()"
    )


def load_agent(spec: str) -> Agent:
    """Import `package.module:attr` (the working directory is importable, as with python -m)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentError(
            f"--agent {spec!r}: expected MODULE:ATTRIBUTE, e.g. my_pkg.agent:root_agent"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise AgentError(
            f"--agent {spec!r}: cannot import module {module_name!r} ({exc}); run from the "
            "folder that contains it or install it"
        ) from None
    except Exception as exc:
        raise AgentError(
            f"--agent {spec!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            public = sorted(n for n in dir(module) if not n.startswith("_"))
            raise AgentError(
                f"--agent {spec!r}: module {module_name!r} has no attribute {attr!r}; "
                f"it has: {', '.join(public[:20])}"
            ) from None
    return as_agent(obj, name=spec)
