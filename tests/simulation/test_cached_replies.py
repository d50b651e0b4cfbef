"""Simulated user replies and the model layer's reply cache.

By default a simulated user is never cached (a scenario run twice meets a fresh user);
a run that asks for it (`SimulatorOptions.cache_replies`) keeps the replies in the run's
reply cache, the store's judge cache table, so the same conversation replays without a
call, in a later run too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.core.cases import Scenario
from assay.models.cache import StoreReplyCache
from assay.models.registry import ModelRegistry
from assay.simulation import SimulatorOptions, UserSimulator
from assay.store import Store
from assay.testing.judge_server import JudgeServer

SCENARIO = Scenario(task="book a table for two", starting_prompt=None)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store.open(f"sqlite:///{tmp_path / 'assay.db'}")
    try:
        yield db
    finally:
        db.close()


def _user(server: JudgeServer, registry: ModelRegistry, **options: object) -> UserSimulator:
    return UserSimulator(
        SimulatorOptions(
            model="openai:user-sim",
            base_url=server.openai_base_url,
            max_retries=0,
            **options,  # type: ignore[arg-type]
        ),
        registry=registry,
    )


async def _ask(user: UserSimulator) -> str | None:
    try:
        return (await user.next_message(SCENARIO, None, [])).text
    finally:
        await user.aclose()


async def test_user_replies_are_not_cached_by_default(server: JudgeServer, store: Store) -> None:
    server.set_script(["Hello there", "Good evening"])
    registry = ModelRegistry(cache=StoreReplyCache(store.judge_cache))
    assert await _ask(_user(server, registry)) == "Hello there"
    assert await _ask(_user(server, registry)) == "Good evening"
    assert len(server.requests) == 2
    assert store.judge_cache.stats() == []  # nothing was written


async def test_a_run_asking_for_it_replays_cached_user_replies(
    server: JudgeServer, store: Store
) -> None:
    # An empty reply holds no move: it is asked again and not remembered.
    server.set_script(["", "Hello there"])
    first_run = ModelRegistry(cache=StoreReplyCache(store.judge_cache))
    assert await _ask(_user(server, first_run, cache_replies=True)) == "Hello there"
    assert len(server.requests) == 2
    # A later run over the same store: the same conversation so far, no call.
    server.set_script("something else")
    later_run = ModelRegistry(cache=StoreReplyCache(store.judge_cache))
    user = _user(server, later_run, cache_replies=True)
    assert await _ask(user) == "Hello there"
    assert len(server.requests) == 2
    assert user.stats.cache_hits == 1 and user.stats.calls == 0
    # Another conversation is a miss: the model is asked.
    other = _user(server, later_run, cache_replies=True)
    try:
        moved = await other.next_message(Scenario(task="cancel my booking"), None, [])
    finally:
        await other.aclose()
    assert moved.text == "something else" and len(server.requests) == 3
