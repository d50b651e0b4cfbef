"""Fixtures of the simulation tests: a stand-in model server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay.testing.judge_server import JudgeServer


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer("unused") as srv:
        yield srv
