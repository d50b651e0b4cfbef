"""What the model-calling adapters (OpenAI tools, HTTP) share about sessions and clients.

`initial_state`: the state a session starts from, with the variable updates of seeded
history turns applied (had those turns happened, the state would hold them);
`apply_input_variables`: what a user input's variables do to that state as a turn starts.

`PerLoop`: one HTTP client per event loop. An agent defined at module level
(``agent = OpenAIToolsAgent(...)``) may be run by several ``asyncio.run`` calls in turn
(the CLI, tests, notebooks). An async HTTP client's connection pool belongs to the loop
that first used it, so reusing one across loops fails with "Event loop is closed";
building one per session would redo the connection and TLS set-up for every case.
`PerLoop` keeps one client per running loop and forgets it with the loop.
"""

from __future__ import annotations

import asyncio
import copy
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from assay.core.cases import EvalCase, Turn, UserInput

if TYPE_CHECKING:
    from assay.agents.base import SessionOptions

_T = TypeVar("_T")


def initial_state(case: EvalCase, options: SessionOptions) -> dict[str, object]:
    """`options.state` (else a copy of the case's), plus the seeded turns' updates."""
    state = (
        options.state
        if options.state is not None
        else copy.deepcopy(case.session_input.state if case.session_input else {})
    )
    apply_updates(state, options.history)
    return state


def apply_input_variables(state: dict[str, object], user_input: UserInput) -> None:
    """Set the variables `user_input` carries (copies) in `state`."""
    if user_input.variables:
        state.update(copy.deepcopy(user_input.variables))


def apply_updates(state: dict[str, object], turns: Sequence[Turn]) -> None:
    """Apply the `variables_update` steps of `turns` to `state`, in order."""
    for turn in turns:
        for step in turn.steps:
            if step.variables_update:
                state.update(copy.deepcopy(step.variables_update))


class PerLoop(Generic[_T]):
    """`get()` returns this loop's instance, made by `factory` on first use."""

    def __init__(self, factory: Callable[[], _T], close: Callable[[_T], Awaitable[None]]) -> None:
        self._factory = factory
        self._close = close
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _T] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> _T:
        loop = asyncio.get_running_loop()
        value = self._by_loop.get(loop)
        if value is None:
            value = self._by_loop[loop] = self._factory()
        return value

    async def aclose(self) -> None:
        """Close the running loop's instance (the others went with their loops)."""
        value = self._by_loop.pop(asyncio.get_running_loop(), None)
        if value is not None:
            await self._close(value)
