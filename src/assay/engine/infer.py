"""Driving an agent: timed turns, tool-call latencies, and CES error types for failures.

Golden replay (`assay.engine.replay`) and scenario runs (`assay.engine.scenario_run`)
both build on these pieces:

- `fill_tool_latencies`: tool responses an adapter reports without `latency_s` get
  the time the session's `ToolHook` measured for that call;
- `send_turn`: one user turn, with the turn latency and the reference turn's id filled
  in when the adapter left them out;
- `guarded`: runs an agent conversation under the per-case timeout and turns whatever
  went wrong into an `Inference` with a CES error type, keeping the turns completed so
  far (a timeout or a crash never loses them);
- `with_app_details`: the case as the judges should see it, with the agent's
  instructions and tool declarations in `metadata["app_details"]`;
- `agent_traceback`: the traceback an agent's exception is kept with (its own frames:
  assay's and asyncio's plumbing left out; an HTTP agent's error body).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agents.base import AgentSession
from assay.agents.tools import ToolHook
from assay.core.cases import EvalCase, Step, Turn
from assay.core.error_types import ErrorType
from assay.errors import AgentError, QuotaExhaustedError
from assay.redact import redact


@dataclass(slots=True)
class Inference:
    """What running the agent on one case produced: turns, time taken, what failed."""

    turns: list[Turn] | None
    latency_s: float | None = None
    error: str | None = None
    error_type: ErrorType | None = None
    #: a scenario run's conversation: why it ended (`stopped_by`), user turns, persona...
    conversation: dict[str, Any] | None = None
    #: the agent's exception as text (`agent_traceback`), when it raised one
    traceback: str | None = None


def fill_tool_latencies(steps: Sequence[Step], timings: list[tuple[str, float]]) -> list[Step]:
    """`steps` with each tool response lacking `latency_s` given the next timing of its tool.

    Consumes the used entries of `timings` (so consecutive turns share one list).
    """
    filled: list[Step] = []
    for step in steps:
        response = step.tool_response
        if response is not None and response.latency_s is None:
            index = next((i for i, (name, _) in enumerate(timings) if name == response.name), None)
            if index is not None:
                _, seconds = timings.pop(index)
                step = step.model_copy(
                    update={"tool_response": response.model_copy(update={"latency_s": seconds})}
                )
        filled.append(step)
    return filled


async def send_turn(session: AgentSession, ref: Turn, hook: ToolHook) -> Turn:
    """Send `ref`'s user input; the reply with latency, id and tool latencies filled in."""
    mark = len(hook.timings)
    started = time.perf_counter()
    turn = await session.send(ref.user_input)
    elapsed = time.perf_counter() - started
    updates: dict[str, Any] = {}
    if turn.latency_s is None:
        updates["latency_s"] = elapsed
    if turn.id is None and ref.id is not None:
        updates["id"] = ref.id
    if len(hook.timings) > mark and any(
        s.tool_response is not None and s.tool_response.latency_s is None for s in turn.steps
    ):
        updates["steps"] = fill_tool_latencies(turn.steps, hook.timings[mark:])
    return turn.model_copy(update=updates) if updates else turn


MAX_TRACEBACK_CHARS = 64_000
"""The most of a traceback kept with a case (its end: the frames nearest the error)."""

_PLUMBING = (
    # assay's package (this file is assay/engine/infer.py), asyncio, thread pools
    str(Path(__file__).resolve().parents[1]) + os.sep,
    str(Path(asyncio.__file__).resolve().parent) + os.sep,
    str(Path(concurrent.futures.__file__).resolve().parent) + os.sep,
)


def _is_plumbing(filename: str) -> bool:
    """Whether a frame's file is assay's own or asyncio's / a thread pool's machinery."""
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return path.startswith(_PLUMBING)


def _trim(te: traceback.TracebackException, seen: set[int]) -> None:
    """Drop the plumbing frames of `te` and of the exceptions it was raised from."""
    if id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(
        [frame for frame in te.stack if not _is_plumbing(frame.filename)]
    )
    for chained in (te.__cause__, te.__context__):
        if chained is not None:
            _trim(chained, seen)
    if te.__context__ is not None and _all_plumbing(te.__context__):
        # An exception assay or asyncio caught on its own while the agent's was raised
        # ("no running event loop" when the agent is called from a thread): not the
        # agent's story, and it would make the same failure read differently by path.
        te.__context__ = None
    for member in te.exceptions or ():
        _trim(member, seen)


def _all_plumbing(te: traceback.TracebackException) -> bool:
    """Whether a (trimmed) exception has no frame of the agent's, nor has any it was
    raised from."""
    return (
        not te.stack
        and te.__cause__ is None
        and (te.__context__ is None or _all_plumbing(te.__context__))
        and not te.exceptions
    )


def agent_traceback(exc: BaseException) -> str:
    """`exc` as a traceback of the agent's own frames (and the libraries it called),
    chained exceptions included; an `AgentError` with what the agent's side sent
    (`remote`: an HTTP agent's error body) has it appended. At most
    `MAX_TRACEBACK_CHARS`, its end kept, and redacted (`assay.redact`) like every error
    text from the agent's side."""
    te = traceback.TracebackException.from_exception(exc, capture_locals=False)
    _trim(te, set())
    text = "".join(te.format())
    remote = exc.remote if isinstance(exc, AgentError) else None
    if remote:
        text += f"\nthe agent's reply:\n{remote.rstrip()}\n"
    text = redact(text)  # what the agent's side echoed of the credentials assay sent
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "[... the start cut]\n" + text[-MAX_TRACEBACK_CHARS:]
    return text


def failure_of(exc: BaseException) -> tuple[str, ErrorType]:
    """(message, CES error type) for an exception the agent under test raised."""
    # An agent's error may quote the credentials it was called with (issue #31).
    if isinstance(exc, QuotaExhaustedError):
        return redact(f"quota exhausted: {exc}"), ErrorType.QUOTA_EXHAUSTED
    return redact(f"agent raised {type(exc).__name__}: {exc}"), ErrorType.RUNTIME_FAILURE


async def guarded(
    work: Callable[[], Awaitable[None]],
    turns: list[Turn],
    timeout_s: float | None,
    *,
    label: str = "agent",
) -> Inference:
    """Run `work` (which appends to `turns`) within `timeout_s`; never raises for it.

    A timeout or an exception is reported as RUNTIME_FAILURE (QUOTA_EXHAUSTED for
    `QuotaExhaustedError`) with the turns completed before it.
    """
    started = time.perf_counter()
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            await work()
    except TimeoutError as exc:
        elapsed = time.perf_counter() - started
        if scope.expired():
            message = f"{label} timed out after {timeout_s:g}s"
            if turns:
                message += f" (completed {len(turns)} turn(s))"
            return Inference(turns, elapsed, message, ErrorType.RUNTIME_FAILURE)
        return Inference(turns, elapsed, *failure_of(exc), traceback=agent_traceback(exc))
    except Exception as exc:  # the agent under test may raise anything; keep the others going
        elapsed = time.perf_counter() - started
        return Inference(turns, elapsed, *failure_of(exc), traceback=agent_traceback(exc))
    return Inference(turns, time.perf_counter() - started)


def with_tools_not_run(inference: Inference, hooks: Sequence[ToolHook]) -> Inference:
    """`inference` marked TOOL_NOT_RUN when a FAKE call had no mock (and nothing worse
    happened): the agent was answered with an error, so the case can never pass."""
    missed = [call for hook in hooks for call in hook.unmatched]
    if inference.error is not None or not missed:
        return inference
    names = ", ".join(dict.fromkeys(call.name for call in missed))
    inference.error = (
        f"{len(missed)} tool call(s) not run ({names}): tool call behaviour is FAKE and no "
        "mock_tool_response matches; add the mock to the case or run with REAL or MIXED tools"
    )
    inference.error_type = ErrorType.TOOL_NOT_RUN
    return inference


def with_app_details(case: EvalCase, details: dict[str, object] | None) -> EvalCase:
    """`case` with the agent's `app_details` in its metadata (for the judges), if known."""
    if not details:
        return case
    return case.model_copy(update={"metadata": {**case.metadata, "app_details": details}})
