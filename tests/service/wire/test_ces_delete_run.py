"""DeleteEvaluationRun through Google's CES client, over REST and gRPC: the client
expects a long-running operation (`DeleteEvaluationRunOperationMetadata`, `Empty`)."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.cloud import ces_v1beta as ces
from google.protobuf import empty_pb2
from test_ces_generate import _run_once
from test_ces_rest import PARENT, golden_evaluation
from test_ces_walk import client, wire

__all__ = ["client", "wire"]


def test_delete_evaluation_run_is_an_operation(client: ces.EvaluationServiceClient) -> None:
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    run = _run_once(client, golden.name).evaluation_run
    operation = client.delete_evaluation_run(name=run)
    assert isinstance(operation.result(timeout=30), empty_pb2.Empty)
    assert operation.operation.name.startswith("projects/acme/locations/us/operations/")
    with pytest.raises(exceptions.NotFound):
        client.get_evaluation_run(name=run)
    assert client.get_operation({"name": operation.operation.name}).done
