"""Adapter for Google ADK agents: run them with ADK's own Runner, record Turns.

`AdkAgent(root_agent)` (or `--agent path/to/agent_dir`, or `module:root_agent`) runs an
ADK agent tree (or an ADK `App`) the way `adk eval` does: one ADK `Runner` per assay
session with in-memory session, artifact and memory services; the session starts from
the case's state; earlier turns (`SessionOptions.history`, run method STABLE) are
appended to the session as ADK events before the first message. Each `send()` returns
one Turn built from the invocation's events (see `assay.agents._adk_events`), with
tool latencies measured around each tool call.

Tool mocking (FAKE / MIXED) goes through the session's `ToolHook` from a
`before_tool_callback` added to a private copy of the tree (see
`assay.agents._adk_tree`); the user's agent objects are never modified.

google-adk is optional: this module imports it only when an ADK agent is wrapped, so
`is_adk_agent` works (and answers False) without it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.agents._import_errors import raised_at
from assay.agents.base import SessionOptions
from assay.core.cases import EvalCase, Turn, UserInput
from assay.errors import AgentError, QuotaExhaustedError

if TYPE_CHECKING:
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps.app import App
    from google.adk.runners import Runner
    from google.adk.sessions.base_session_service import BaseSessionService
    from google.adk.sessions.session import Session
    from google.genai import types

    from assay.agents._adk_tree import AssayPlugin

INSTALL_HINT = "install the ADK extra: pip install -e '.[adk]'"
_ADK_CLASSES = frozenset({"BaseAgent", "App"})
DEFAULT_USER_ID = "assay_user"


def is_adk_agent(obj: object) -> bool:
    """True for an ADK agent or App (checked by class, without importing google.adk)."""
    return any(
        cls.__module__.startswith("google.adk") and cls.__name__ in _ADK_CLASSES
        for cls in type(obj).__mro__
    )


def is_quota_error(exc: BaseException) -> bool:
    """True when `exc` (or an exception it wraps) is a model's HTTP 429 / RESOURCE_EXHAUSTED."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        code = getattr(current, "code", None)
        status = getattr(current, "status", None)
        if (
            code == 429
            or status in (429, "RESOURCE_EXHAUSTED")
            or "ResourceExhausted" in type(current).__name__
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


def _require_adk(what: str) -> None:
    try:
        installed = importlib.util.find_spec("google.adk") is not None
    except ModuleNotFoundError:  # the parent package ("google") is missing
        installed = False
    if not installed:
        raise AgentError(f"{what} needs google-adk, which is not installed; {INSTALL_HINT}")


class AdkAgent:
    """An ADK agent (or App) as an assay `Agent`.

    `app_name` names the ADK app (default: the App's name, else the root agent's name);
    `name` is how assay reports the agent (default: the root agent's name).
    """

    def __init__(self, root_agent: object, *, app_name: str | None = None, name: str | None = None):
        if not is_adk_agent(root_agent):
            raise AgentError(
                f"{type(root_agent).__name__} is not an ADK agent: expected a "
                "google.adk BaseAgent (e.g. LlmAgent) or App"
            )
        from google.adk.agents.base_agent import BaseAgent
        from google.adk.apps.app import App

        from assay.agents._adk_tree import instrumented_copy, walk

        app: App | None = root_agent if isinstance(root_agent, App) else None
        root = app.root_agent if app is not None else root_agent
        if not isinstance(root, BaseAgent):
            raise AgentError(
                f"ADK app {app.name if app else '?'!r}: its root is a "
                f"{type(root).__name__}; assay runs apps whose root is an agent"
            )
        self._app = app
        self._source_root: BaseAgent = root
        self._root = instrumented_copy(root)
        self.root_name = self._root.name
        self.agent_names = [a.name for a in walk(self._root)]
        self.app_name = app_name or (app.name if app is not None else root.name)
        self.name = name or root.name
        # An ADK artifact service shared by every session (ADK's AgentEvaluator takes one);
        # None: a fresh in-memory one per session.
        self.artifact_service: Any = None

    @property
    def source(self) -> object:
        """The agent (or App) this adapter was made from, as its module defines it."""
        return self._app if self._app is not None else self._source_root

    def app_details(self) -> dict[str, object]:
        """Each LlmAgent's name, instructions and tool declarations (ADK's app_details)."""
        from assay.agents._adk_tree import agent_details

        return agent_details(self._source_root)

    def _runner(self, plugin: AssayPlugin, session_service: BaseSessionService) -> Runner:
        from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
        from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
        from google.adk.runners import Runner

        services: dict[str, Any] = {
            "session_service": session_service,
            "artifact_service": self.artifact_service or InMemoryArtifactService(),
            "memory_service": InMemoryMemoryService(),
        }
        if self._app is not None:
            app = self._app.model_copy(
                update={"plugins": [*self._app.plugins, plugin], "root_agent": self._root}
            )
            return Runner(app=app, app_name=self.app_name, **services)
        return Runner(app_name=self.app_name, agent=self._root, plugins=[plugin], **services)

    async def start_session(
        self, case: EvalCase, options: SessionOptions | None = None
    ) -> AdkSession:
        """A fresh ADK session holding `options.state`; `options.history` is seeded
        before the first message is sent."""
        from google.adk.sessions.in_memory_session_service import InMemorySessionService

        from assay.agents._adk_tree import AssayPlugin

        options = options or SessionOptions.for_case(case)
        session_service = InMemorySessionService()
        plugin = AssayPlugin()
        runner = self._runner(plugin, session_service)
        user_id = (case.session_input.user_id if case.session_input else None) or DEFAULT_USER_ID
        try:
            session = await session_service.create_session(
                app_name=self.app_name,
                user_id=user_id,
                state=dict(options.state or {}),
                session_id=f"assay-{uuid.uuid4().hex}",
            )
        except BaseException:
            await runner.close()
            raise
        return AdkSession(self, runner, plugin, options, session)


class AdkSession:
    """One ADK session: each `send()` is one invocation of the runner."""

    def __init__(
        self,
        agent: AdkAgent,
        runner: Runner,
        plugin: AssayPlugin,
        options: SessionOptions,
        session: Session,
    ) -> None:
        self._agent = agent
        self._runner = runner
        self._plugin = plugin
        self._options = options
        self._session = session
        self._history: Sequence[Turn] | None = options.history
        self.session_id = session.id

    async def _seed(self, message: types.Content) -> None:
        # Seeded at the first message: a client tool response in it may answer a call
        # of the last seeded turn, which must then stay in the history.
        from assay.agents._adk_events import seed_events

        history, self._history = self._history, None
        if not history:
            return
        events = seed_events(
            history,
            root_name=self._agent.root_name,
            agent_names=self._agent.agent_names,
            next_message=message,
        )
        for event in events:
            await self._runner.session_service.append_event(self._session, event)

    async def send(self, user_input: UserInput) -> Turn:
        from assay.agents._adk_events import events_to_turn, user_content
        from assay.agents._adk_tree import CURRENT_HOOK

        where = f"ADK agent {self._agent.name!r}"
        message = user_content(user_input, where)
        await self._seed(message)
        events = []
        token = CURRENT_HOOK.set(self._options.tools)
        self._plugin.take_timings()  # seeding and earlier turns are not this turn's
        started = time.perf_counter()
        try:
            async for event in self._runner.run_async(
                user_id=self._session.user_id,
                session_id=self.session_id,
                new_message=message,
                state_delta=dict(user_input.variables) if user_input.variables else None,
            ):
                events.append(event)
        except Exception as exc:  # the agent under test (and ADK under it) may raise anything
            if is_quota_error(exc):
                raise QuotaExhaustedError(
                    f"{where}: the model kept answering 429 (quota exhausted): {exc}"
                ) from exc
            raise AgentError(f"{where} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            CURRENT_HOOK.reset(token)
        elapsed = time.perf_counter() - started
        model_s, tool_s = self._plugin.take_timings()
        turn = events_to_turn(
            events, user_input, latencies=self._plugin.latencies, latency_s=elapsed
        )
        turn.model_latency_s, turn.tool_latency_s = model_s, tool_s
        if any(e.error_code in ("429", "RESOURCE_EXHAUSTED") for e in events):
            raise QuotaExhaustedError(f"{where}: the model answered 429: {turn.error}")
        return turn

    async def close(self) -> None:
        await self._runner.close()


def _find_root(module: Any, where: str) -> object:
    app = getattr(module, "app", None)
    if app is not None and is_adk_agent(app):
        return app
    root = getattr(module, "root_agent", None)
    if root is not None and not is_adk_agent(root):
        raise AgentError(
            f"{where}: {module.__name__}.root_agent is a {type(root).__name__}, not an ADK "
            "agent (expected e.g. google.adk.agents.Agent(...))"
        )
    return root


def load_adk_agent(path: str | Path) -> AdkAgent:
    """Load an ADK agent folder as `adk web` / `adk eval` do.

    The folder is a package whose `agent.py` (or `__init__.py`) defines `root_agent`
    (or `app`, an ADK App); it is imported as a top-level package with the folder's
    parent on `sys.path`, so its relative imports work. The app is named after the
    folder.
    """
    folder = Path(path).resolve()
    where = f"ADK agent folder {str(path)!r}"
    if not folder.is_dir():
        raise AgentError(f"{where}: not a directory")
    _require_adk(where)
    if not (folder / "agent.py").is_file() and not (folder / "__init__.py").is_file():
        raise AgentError(
            f"{where}: expected agent.py defining root_agent (and __init__.py with "
            "'from . import agent'), as adk web / adk eval expect"
        )
    package = folder.name
    if not package.isidentifier():
        raise AgentError(f"{where}: the folder name must be a Python identifier to import it")
    parent = str(folder.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    loaded = sys.modules.get(package)
    if loaded is not None and not _is_inside(loaded, folder):
        raise AgentError(
            f"{where}: a different module named {package!r} is already imported "
            f"(from {getattr(loaded, '__file__', None) or 'a namespace'}); rename the folder"
        )
    root = None
    for module_name in (package, f"{package}.agent"):
        if module_name.endswith(".agent") and not (folder / "agent.py").is_file():
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # the user's module may raise anything while it is imported
            raise AgentError(
                f"{where}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
                f"{raised_at(exc)}"
            ) from exc
        root = _find_root(module, where)
        if root is not None:
            break
    if root is None:
        raise AgentError(
            f"{where}: no root_agent found; define root_agent = Agent(...) in "
            f"{folder / 'agent.py'} (an ADK agent or App)"
        )
    return AdkAgent(root, app_name=package)


def _is_inside(module: object, folder: Path) -> bool:
    locations = [getattr(module, "__file__", None), *list(getattr(module, "__path__", []))]
    return any(loc and Path(loc).resolve().is_relative_to(folder) for loc in locations)
