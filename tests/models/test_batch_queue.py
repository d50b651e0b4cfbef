"""`BatchQueue` (issue #38) with an in-process batch backend: calls within the window go
in one batch, a failed submission or a missing result comes back as an error (which the
client then makes live), and a batch recorded in the ledger is collected, not resubmitted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from assay.models.batch import BatchOutcome, BatchQueue
from assay.models.types import BackendReply, GenerationSettings, ModelCallError

SETTINGS = GenerationSettings()


def _messages(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


class FakeBatches:
    backend = "fake"
    model = "m"
    endpoint = "http://fake/"

    def __init__(self, *, fail_submit: bool = False, running_polls: int = 0) -> None:
        self.fail_submit = fail_submit
        self.running_polls = running_polls
        self.submitted: list[dict[str, dict[str, Any]]] = []
        self.polls = 0
        self.drop: set[str] = set()

    def batch_request(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> dict[str, Any]:
        return {"text": messages[-1]["content"]}

    async def submit_batch(self, requests: Mapping[str, dict[str, Any]]) -> str:
        if self.fail_submit:
            raise ModelCallError("fake judge m: HTTP 400 Bad Request: no batches", retryable=False)
        self.submitted.append(dict(requests))
        return f"b{len(self.submitted)}"

    async def collect_batch(self, batch_id: str) -> dict[str, BatchOutcome] | None:
        self.polls += 1
        if self.polls <= self.running_polls:
            return None
        requests = self.submitted[int(batch_id[1:]) - 1] if batch_id[1:].isdigit() else {}
        return {
            key: BackendReply(f"reply to {body['text']}", 3, 1)
            for key, body in requests.items()
            if key not in self.drop
        } | ({"k-old": BackendReply("old reply", 3, 1)} if batch_id == "old" else {})


class Ledger:
    def __init__(self, open_batches: dict[str, list[str]]) -> None:
        self.batches = dict(open_batches)
        self.recorded: list[tuple[str, list[str]]] = []
        self.collected: list[str] = []

    def open_batches(self, *, backend: str, endpoint: str, model: str) -> dict[str, list[str]]:
        return dict(self.batches)

    def record(
        self, batch_id: str, *, backend: str, endpoint: str, model: str, keys: Sequence[str]
    ) -> None:
        self.recorded.append((batch_id, list(keys)))

    def mark_collected(self, batch_ids: Sequence[str]) -> None:
        self.collected.extend(batch_ids)


def _queue(backend: FakeBatches, ledger: Ledger | None = None) -> BatchQueue:
    return BatchQueue(backend, ledger, window_s=0.01, max_wait_s=0.1, first_poll_s=0.01)


async def test_calls_within_the_window_go_in_one_batch_and_get_their_own_reply() -> None:
    backend = FakeBatches(running_polls=2)
    ledger = Ledger({})
    queue = _queue(backend, ledger)
    got = await asyncio.gather(
        *(queue.call(f"k{i}", _messages(f"q{i}"), SETTINGS) for i in range(5))
    )
    assert [r.text for r in got if isinstance(r, BackendReply)] == [
        f"reply to q{i}" for i in range(5)
    ]
    assert len(backend.submitted) == 1 and backend.polls == 3  # polled until it ended
    assert [(b, sorted(keys)) for b, keys in ledger.recorded] == [
        ("b1", [f"k{i}" for i in range(5)])
    ]
    assert ledger.collected == []  # only once the replies are cached
    await queue.settle()
    assert ledger.collected == ["b1"]


async def test_a_refused_submission_and_a_missing_result_come_back_as_errors() -> None:
    queue = _queue(FakeBatches(fail_submit=True))
    (refused,) = await asyncio.gather(queue.call("k1", _messages("q1"), SETTINGS))
    assert isinstance(refused, ModelCallError) and "no batches" in refused.message
    backend = FakeBatches()
    backend.drop = {"k2"}
    queue = _queue(backend)
    one, two = await asyncio.gather(
        queue.call("k1", _messages("q1"), SETTINGS), queue.call("k2", _messages("q2"), SETTINGS)
    )
    assert isinstance(one, BackendReply)
    assert isinstance(two, ModelCallError) and "returned nothing for this request" in two.message


async def test_a_batch_in_the_ledger_is_collected_not_submitted_again() -> None:
    backend = FakeBatches()
    ledger = Ledger({"old": ["k-old"]})
    queue = _queue(backend, ledger)
    reply = await queue.call("k-old", _messages("q-old"), SETTINGS)
    assert isinstance(reply, BackendReply) and reply.text == "old reply"
    assert backend.submitted == [] and ledger.recorded == []
    await queue.settle()
    assert ledger.collected == ["old"]


async def test_closing_the_queue_abandons_waiting_calls_and_keeps_the_batch_open() -> None:
    backend = FakeBatches(running_polls=10**9)
    ledger = Ledger({})
    queue = _queue(backend, ledger)
    waiting = asyncio.ensure_future(queue.call("k1", _messages("q1"), SETTINGS))
    while not ledger.recorded:
        await asyncio.sleep(0.01)
    await queue.aclose()
    outcome = await waiting
    assert isinstance(outcome, ModelCallError) and "abandoned" in outcome.message
    await queue.settle()
    assert ledger.collected == []  # a resumed run collects it


async def test_a_call_queued_while_a_batch_runs_goes_in_the_next_batch_at_once() -> None:
    # The first batch stays running (polled) until the second call has its own reply:
    # a call queued meanwhile must not wait for the first batch, nor for another call.
    class HoldFirst(FakeBatches):
        async def collect_batch(self, batch_id: str) -> dict[str, BatchOutcome] | None:
            return None if batch_id == "b1" else await super().collect_batch(batch_id)

    backend = HoldFirst()
    queue = _queue(backend)
    first = asyncio.ensure_future(queue.call("k1", _messages("q1"), SETTINGS))
    while not backend.submitted:
        await asyncio.sleep(0.01)
    second = await asyncio.wait_for(queue.call("k2", _messages("q2"), SETTINGS), timeout=60)
    assert isinstance(second, BackendReply) and second.text == "reply to q2"
    assert [sorted(batch) for batch in backend.submitted] == [["k1"], ["k2"]]
    assert not first.done()  # still running: the second did not wait for it
    await queue.aclose()
    assert isinstance(await first, ModelCallError)


async def test_calls_that_come_while_the_ledger_is_read_find_its_batches_too() -> None:
    class SlowLedger(Ledger):
        def open_batches(self, *, backend: str, endpoint: str, model: str) -> dict[str, list[str]]:
            import time

            time.sleep(0.2)  # in its worker thread: the other calls arrive meanwhile
            return super().open_batches(backend=backend, endpoint=endpoint, model=model)

    class Recovered(FakeBatches):
        async def collect_batch(self, batch_id: str) -> dict[str, BatchOutcome] | None:
            if batch_id == "old":
                return {k: BackendReply(f"old reply {k}", 3, 1) for k in ("k1", "k2", "k3")}
            return await super().collect_batch(batch_id)

    backend = Recovered()
    queue = _queue(backend, SlowLedger({"old": ["k1", "k2", "k3"]}))
    held = await asyncio.gather(*(queue.holds(f"k{i}") for i in (1, 2, 3)))
    assert held == [True, True, True]
    got = await asyncio.gather(
        *(queue.call(f"k{i}", _messages(f"q{i}"), SETTINGS) for i in (1, 2, 3))
    )
    assert [r.text for r in got if isinstance(r, BackendReply)] == [
        f"old reply k{i}" for i in (1, 2, 3)
    ]
    assert backend.submitted == []  # collected, never sent again
