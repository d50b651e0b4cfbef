"""SIGTERM stops `assay eval` as Ctrl-C does (`cli.common.sigterm_as_interrupt`).

While asyncio runs, SIGTERM goes to asyncio's SIGINT handler, which cancels the run at
its next await: the synchronous work in progress (a store write, say) is never cut in
half. Raised wherever the main thread happened to be, the interrupt could land inside
such work or be swallowed by code catching it, and a stopped run then finished with
exit 0 (seen about once in 40 runs of `test_cli_durable`'s SIGTERM test).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator

import pytest

from assay.cli.common import sigterm_as_interrupt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """Ctrl-C's handler as in a terminal (a background job may have SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _busy(seconds: float) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass


@pytest.mark.usefixtures("default_sigint")
def test_sigterm_inside_asyncio_cancels_at_the_next_await() -> None:
    state = {"write_finished": False, "cancelled": False}

    async def run() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        _busy(0.2)  # synchronous work the signal arrives in the middle of
        state["write_finished"] = True
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise

    with sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        asyncio.run(run())
    assert state == {"write_finished": True, "cancelled": True}


@pytest.mark.usefixtures("default_sigint")
def test_sigterm_outside_asyncio_is_a_keyboard_interrupt() -> None:
    with sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        _busy(5)


def test_the_previous_sigterm_handler_is_put_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with sigterm_as_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
