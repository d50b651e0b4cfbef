"""Fault-injection fixtures: the service and store test helpers, a broken agent/judge.

The suite reuses tests/service/serve_process.py (a real `assay serve` subprocess) and
tests/store/postgres_server.py (throwaway PostgreSQL servers), so both folders go on
sys.path here, as tests/service/conftest.py does for the store's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parents[1]
for _folder in ("service", "store"):
    if str(_TESTS / _folder) not in sys.path:
        sys.path.insert(0, str(_TESTS / _folder))

from fault_server import FaultServer  # noqa: E402
from serve_process import ServeProcess  # noqa: E402


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    """A broken agent and judge on a loopback port (see fault_server.py)."""
    server = FaultServer()
    yield server
    server.stop()


@pytest.fixture
def servers() -> Iterator[list[ServeProcess]]:
    """`assay serve` processes a test starts; stopped (or reaped) at its end."""
    started: list[ServeProcess] = []
    yield started
    for server in started:
        server.stop()
