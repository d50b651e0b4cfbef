"""Fixtures of the `assay cases` tests: a store on each backend (SQLite, PostgreSQL),
from tests/store/postgres_server.py (ASSAY_SKIP_POSTGRES=1 skips the PostgreSQL half);
`standin`, the stand-in case generator (`assay.testing.standin_generator`) over real
HTTP, which OpenAI judges and generators of the test reach through the environment."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.testing.judge_server import JudgeServer
from assay.testing.standin_generator import script
from standin_judge import standin_judge

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))

from postgres_server import _shared_postgres_database, postgres_server, store_url

__all__ = ["_shared_postgres_database", "postgres_server", "standin", "store_url"]


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with standin_judge(monkeypatch, script) as server:
        yield server
