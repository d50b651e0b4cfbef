"""Resolve `--agent SPEC` (or an object given to the Python API) into an `Agent`.

A spec is one of:

- an `http://` or `https://` URL: an agent served over HTTP (`HttpAgent`);
- a path to an existing folder: a Google ADK agent folder (a package whose `agent.py`
  defines `root_agent`, as `adk web` / `adk eval` expect);
- `package.module:attr`: an object imported from the working directory or an installed
  package, then wrapped by `as_agent`.

`as_agent` wraps an object: a Google ADK agent (`AdkAgent`), an object that already is
an assay `Agent` (has `start_session`), or a plain callable (`CallableAgent`). The
adapters for ADK and HTTP are imported only when used.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from assay.agents._import_errors import raised_at
from assay.agents.base import Agent
from assay.agents.callable import CallableAgent
from assay.errors import AgentError, missing_import_hint

SPEC_FORMS = (
    "MODULE:ATTRIBUTE (e.g. my_pkg.agent:root_agent), an ADK agent folder, or an http(s):// URL"
)


def as_agent(obj: object, name: str | None = None) -> Agent:
    """Wrap an ADK agent or a callable (an object that already is an Agent passes through)."""
    from assay.agents.adk import is_adk_agent

    if is_adk_agent(obj):
        from assay.agents.adk import AdkAgent

        return AdkAgent(obj, name=name)
    if hasattr(obj, "start_session") and hasattr(obj, "name"):
        return obj  # type: ignore[no-any-return]
    if callable(obj):
        return CallableAgent(obj, name=name)
    raise AgentError(
        f"{name or type(obj).__name__} is not an agent: expected a Google ADK agent, a "
        "callable or an object with start_session()"
    )


def load_agent(spec: str) -> Agent:
    """The agent `spec` names (see the module docstring for the accepted forms)."""
    if spec.startswith(("http://", "https://")):
        from assay.agents.http import HttpAgent

        return HttpAgent(spec)
    if Path(spec).is_dir():
        from assay.agents.adk import load_adk_agent

        return load_adk_agent(spec)
    return as_agent(_import_object(spec), name=spec)


def _is_part_of(module_name: str, missing: str) -> bool:
    """Whether `missing` is `module_name` or one of its parent packages (a wrong path)."""
    return module_name == missing or module_name.startswith(missing + ".")


def _import_object(spec: str) -> object:
    """Import `package.module:attr` (the working directory is importable, as with python -m)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        hint = " (no such folder)" if "/" in spec or os.sep in spec else ""
        raise AgentError(f"--agent {spec!r}{hint}: expected {SPEC_FORMS}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and not _is_part_of(module_name, missing):
            # The module was found; something it imports is not installed.
            raise AgentError(
                f"--agent {spec!r}: module {module_name!r} needs {missing!r}, which is not"
                f" installed: {missing_import_hint(missing)}"
            ) from None
        raise AgentError(
            f"--agent {spec!r}: cannot import module {module_name!r} ({exc}); run from the "
            "folder that contains it or install it"
        ) from None
    except Exception as exc:  # the user's module may raise anything while it is imported
        raise AgentError(
            f"--agent {spec!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
            f"{raised_at(exc)}"
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
    return obj
