"""A large CSV import is a long-running operation written in batches (issue #31).

Before, 60,000 evaluations (2 MB of CSV) were created one store transaction each while
the request waited (97 s in one request). Now an import of more than one batch
(`ServiceLimits.import_batch`) answers a pending operation at once, a thread writes one
transaction per batch and reports progress in the operation's metadata, and the
finished operation lists what was imported and what failed, in the CSV's order.
Through Google's CES client over REST and gRPC against a real server on loopback (a
batch of 100 here, so a few thousand evaluations make many batches;
bench/import_csv.py measures the 60,000).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from google.cloud import ces_v1beta as ces
from service_server import RunningServer, create_key
from test_ces_rest import PARENT, rest_client
from test_ces_walk import client, wire

from assay.service.context import ServiceContext
from assay.service.settings import ServiceLimits
from assay.service.wire import ces_lro
from assay.service.wire.ces_names import app_of
from assay.store import Store
from assay.store.namespace import namespace_scope

__all__ = ["client", "wire"]
COUNT = 1_234
LONG = "x" * 600  # a display name longer than the service takes (512)


def _csv(count: int, bad: int | None = None) -> bytes:
    rows = ["display_name,turn_index,action_type,text"]
    for i in range(count):
        rows.append(f"{LONG if i == bad else f'eval{i:05d}'},1,user_input,Hi there!")
    return ("\n".join(rows) + "\n").encode()


def test_a_large_csv_import_is_a_long_running_batched_operation(
    wire: tuple[ces.EvaluationServiceClient, ServiceContext],
) -> None:
    client, ctx = wire
    ctx.limits = ServiceLimits(import_batch=100)
    # Taken before the import: one display name the CSV also uses.
    client.create_evaluation(
        parent=PARENT,
        evaluation=ces.Evaluation(
            display_name="eval00007",
            golden=ces.Evaluation.Golden(
                turns=[
                    ces.Evaluation.GoldenTurn(
                        steps=[ces.Evaluation.Step(user_input=ces.SessionInput(text="hi"))]
                    )
                ]
            ),
        ),
        evaluation_id="taken",
    )
    rows = _csv(COUNT, bad=1_001)
    operation = client.import_evaluations(
        request=ces.ImportEvaluationsRequest(parent=PARENT, csv_content=rows)
    )
    assert not operation.done()  # answered before the evaluations were written
    seen: set[str] = set()
    deadline = time.monotonic() + 300
    while not operation.done():
        seen.add(operation.metadata.status_message)
        assert time.monotonic() < deadline, seen
        time.sleep(0.05)
    answer = operation.result()
    assert isinstance(answer, ces.ImportEvaluationsResponse)
    assert any("evaluations written" in s for s in seen), seen  # progress was reported
    # eval01001's name is too long, eval00007's is taken: both reported, by line.
    assert answer.import_failure_count == 2, answer.error_messages
    assert answer.error_messages[0].startswith("csv line 9 (eval00007)")
    assert "already used" in answer.error_messages[0]
    assert answer.error_messages[1].startswith(f"csv line 1003 ({LONG})")
    assert "displayName" in answer.error_messages[1]
    expected = [f"eval{i:05d}" for i in range(COUNT) if i not in (7, 1_001)]
    assert [e.display_name for e in answer.evaluations] == expected
    listed = [
        e.display_name
        for e in client.list_evaluations(request={"parent": PARENT, "page_size": 1000})
    ]
    assert listed == ["eval00007", *expected]  # stored once each, in the CSV's order


@pytest.mark.parametrize("count", [1, 100])
def test_an_import_of_one_batch_is_done_when_answered(
    wire: tuple[ces.EvaluationServiceClient, ServiceContext], count: int
) -> None:
    client, ctx = wire
    ctx.limits = ServiceLimits(import_batch=100)
    operation = client.import_evaluations(
        request=ces.ImportEvaluationsRequest(parent=PARENT, csv_content=_csv(count))
    )
    assert operation.done()
    answer = operation.result()
    assert answer.import_failure_count == 0 and len(answer.evaluations) == count


def test_an_import_whose_writer_stopped_is_answered_failed_not_pending_forever(
    wire: tuple[ces.EvaluationServiceClient, ServiceContext],
) -> None:
    client, ctx = wire
    where, _app = app_of(PARENT)
    metadata = ces.ImportEvaluationsOperationMetadata.pb()(status_message="3 of 9 written")
    # As a server leaves it when it is killed between two batches.
    op = ces_lro.pending(ctx, where, "import", metadata)
    name = op.name  # type: ignore[attr-defined]
    assert not client.get_operation(request={"name": name}).done  # within the lease
    ctx.run_lease_s = 0.0  # no progress for longer than the lease
    stopped = client.get_operation(request={"name": name})
    assert stopped.done and stopped.error.code == 10  # ABORTED
    assert "stopped" in stopped.error.message and "kept" in stopped.error.message


def test_a_server_shutting_down_finishes_the_import_it_acknowledged(
    store: Store, start_server: Callable[..., RunningServer]
) -> None:
    served = start_server(store)
    ctx: ServiceContext = served._server.config.app.state.ctx
    ctx.limits = ServiceLimits(import_batch=50)
    client = rest_client(served, create_key(store))
    operation = client.import_evaluations(
        request=ces.ImportEvaluationsRequest(parent=PARENT, csv_content=_csv(2_000))
    )
    assert not operation.done()
    served.stop()  # as on SIGTERM: the app shuts down while the import is written
    where, app = app_of(PARENT)
    stored = ces_lro.get(ctx, where, operation.operation.name.rsplit("/", 1)[-1])
    assert stored.done and not stored.HasField("error"), stored.error
    with namespace_scope(where.namespace):
        assert len(store.resources.list_resources(app, "evaluations")) == 2_000
