"""ImportEvaluations and the Export* methods through Google's CES client, over REST and
gRPC, against a real `assay serve` (the `client` fixture of test_ces_walk)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from google.api_core import exceptions
from google.cloud import ces_v1beta as ces
from service_server import RunningServer, create_key
from test_ces_generate import INVALID, _conversation, _run_once
from test_ces_rest import PARENT, golden_evaluation, rest_client, scenario_evaluation
from test_ces_walk import client, wire

from assay.store import Store

__all__ = ["client", "wire"]
OTHER = "projects/acme/locations/us/apps/shop2"
Strategy = ces.ImportEvaluationsRequest.ImportOptions.ConflictResolutionStrategy
WRITTEN = ("display_name", "description", "tags", "golden", "scenario")


def _same(a: ces.Evaluation, b: ces.Evaluation) -> None:
    for field in WRITTEN:
        assert getattr(a, field) == getattr(b, field), field


def _import(
    client: ces.EvaluationServiceClient, uri: str, strategy: int = 0
) -> ces.ImportEvaluationsResponse:
    request = ces.ImportEvaluationsRequest(
        parent=OTHER,
        gcs_uri=uri,
        import_options=ces.ImportEvaluationsRequest.ImportOptions(
            conflict_resolution_strategy=strategy
        ),
    )
    answer = client.import_evaluations(request=request).result(timeout=30)
    assert isinstance(answer, ces.ImportEvaluationsResponse)
    return answer


@pytest.mark.parametrize("export_format", ["JSON", "YAML"])
def test_export_then_import_into_another_app_gives_equal_evaluations(
    client: ces.EvaluationServiceClient, tmp_path: Path, export_format: str
) -> None:
    golden = golden_evaluation("weather", ["smoke"])
    golden.description = "Paris, with a tool call"
    made = [
        client.create_evaluation(parent=PARENT, evaluation=golden, evaluation_id="weather"),
        client.create_evaluation(
            parent=PARENT, evaluation=scenario_evaluation("booking"), evaluation_id="booking"
        ),
    ]
    folder = tmp_path / "out"
    exported = client.export_evaluations(
        request=ces.ExportEvaluationsRequest(
            parent=PARENT,
            names=[e.name for e in made],
            include_evaluations=True,
            export_options=ces.ExportOptions(
                export_format=ces.ExportOptions.ExportFormat[export_format],
                gcs_uri=f"file://{folder}",
            ),
        )
    ).result(timeout=30)
    assert exported.evaluations_uri == f"file://{folder}"
    written = folder / f"evaluations.{export_format.lower()}"
    document = yaml.safe_load(written.read_text())
    assert [e["name"] for e in document["evaluations"]] == [e.name for e in made]

    imported = _import(client, f"file://{folder}")
    assert imported.import_failure_count == 0, imported.error_messages
    assert [e.name for e in imported.evaluations] == [
        f"{OTHER}/evaluations/weather",
        f"{OTHER}/evaluations/booking",
    ]
    for original in made:
        copy = client.get_evaluation(name=original.name.replace(PARENT, OTHER))
        _same(copy, original)

    # Again: the ids are taken now, and the strategy decides.
    again = _import(client, str(written))
    assert again.import_failure_count == 2 and not again.evaluations
    assert all("conflict_resolution_strategy" in m for m in again.error_messages)
    assert not _import(client, str(written), Strategy.SKIP).evaluations
    client.update_evaluation(
        evaluation=ces.Evaluation(name=f"{OTHER}/evaluations/weather", description="edited"),
        update_mask={"paths": ["description"]},
    )
    overwritten = _import(client, str(written), Strategy.OVERWRITE)
    assert len(overwritten.evaluations) == 2
    assert (
        client.get_evaluation(name=f"{OTHER}/evaluations/weather").description == golden.description
    )
    duplicated = _import(client, str(written), Strategy.DUPLICATE)
    assert len(duplicated.evaluations) == 2
    assert {e.name for e in duplicated.evaluations}.isdisjoint(
        {f"{OTHER}/evaluations/weather", f"{OTHER}/evaluations/booking"}
    )
    assert duplicated.evaluations[0].golden == made[0].golden
    assert len(list(client.list_evaluations(parent=OTHER))) == 4


def test_export_inline_with_results_runs_and_results(client: ces.EvaluationServiceClient) -> None:
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    result = _run_once(client, golden.name)
    exported = client.export_evaluations(
        request=ces.ExportEvaluationsRequest(
            parent=PARENT,
            names=[golden.name, f"{PARENT}/evaluations/gone"],
            include_evaluations=True,
            include_evaluation_results=True,
        )
    ).result(timeout=30)
    document = json.loads(exported.evaluations_content)
    assert [e["name"] for e in document["evaluations"]] == [golden.name]
    assert [r["name"] for r in document["evaluationResults"]] == [result.name]
    assert document["evaluationResults"][0]["evaluationStatus"] == "PASS"
    assert list(exported.failed_evaluations) == [f"{PARENT}/evaluations/gone"]

    runs = client.export_evaluation_runs(
        request=ces.ExportEvaluationRunsRequest(parent=PARENT, names=[result.evaluation_run])
    ).result(timeout=30)
    run = json.loads(runs.evaluation_runs_content)["evaluationRuns"][0]
    assert run["name"] == result.evaluation_run and run["state"] == "COMPLETED"

    results = client.export_evaluation_results(
        request=ces.ExportEvaluationResultsRequest(
            parent=golden.name,
            names=[result.name],
            export_options=ces.ExportOptions(export_format=ces.ExportOptions.ExportFormat.YAML),
        )
    ).result(timeout=30)
    exported_result = yaml.safe_load(results.evaluation_results_content)["evaluationResults"][0]
    assert exported_result["name"] == result.name
    assert ces.EvaluationResult.from_json(
        json.dumps(exported_result)
    ) == client.get_evaluation_result(name=result.name)

    with pytest.raises(exceptions.NotFound):
        client.export_evaluation_runs(
            request=ces.ExportEvaluationRunsRequest(
                parent=PARENT, names=[f"{PARENT}/evaluationRuns/0000000000000000"]
            )
        )


def test_import_conversations_and_csv(client: ces.EvaluationServiceClient) -> None:
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    conversation = _conversation(_run_once(client, golden.name))
    from_conversations = client.import_evaluations(
        request=ces.ImportEvaluationsRequest(
            parent=PARENT,
            conversation_list=ces.ImportEvaluationsRequest.ConversationList(
                conversations=[conversation]
            ),
        )
    ).result(timeout=30)
    assert len(from_conversations.evaluations) == 1
    assert from_conversations.evaluations[0].golden.turns[0].steps[0].user_input.text == (
        "Weather in Paris?"
    )

    csv_text = (
        "display_name,turn_index,action_type,text,tool,args,tags\n"
        'paris from csv,,,,,,"csv, smoke"\n'
        ",0,User Input,Weather in Paris?,,,\n"
        ',0,tool_call,,get_weather,"{""city"": ""Paris""}",\n'
        ",0,agent_response,Sunny.,,,\n"
    )
    from_csv = client.import_evaluations(
        request=ces.ImportEvaluationsRequest(parent=PARENT, csv_content=csv_text.encode())
    ).result(timeout=30)
    assert from_csv.import_failure_count == 0, from_csv.error_messages
    made = from_csv.evaluations[0]
    assert made.display_name == "paris from csv" and list(made.tags) == ["csv", "smoke"]
    assert made.golden.turns[0].steps[1].expectation.tool_call.args["city"] == "Paris"
    assert _run_once(client, made.name).evaluation_status == ces.EvaluationResult.Outcome.PASS

    bad = csv_text.replace("tool_call", "telepathy")
    with pytest.raises(INVALID, match=r"line 4.*telepathy"):
        client.import_evaluations(
            request=ces.ImportEvaluationsRequest(parent=PARENT, csv_content=bad.encode())
        )


def test_cloud_storage_and_bad_requests_are_refused_naming_the_field(
    client: ces.EvaluationServiceClient, tmp_path: Path
) -> None:
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    with pytest.raises(INVALID, match=r"export_options\.gcs_uri.*Cloud Storage"):
        client.export_evaluations(
            request=ces.ExportEvaluationsRequest(
                parent=PARENT,
                names=[golden.name],
                include_evaluations=True,
                export_options=ces.ExportOptions(gcs_uri="gs://bucket/folder"),
            )
        )
    with pytest.raises(INVALID, match=r"gcs_uri.*Cloud Storage"):
        client.import_evaluations(
            request=ces.ImportEvaluationsRequest(parent=PARENT, gcs_uri="gs://bucket/x.json")
        )
    odd_format = ces.ExportEvaluationsRequest(
        parent=PARENT, names=[golden.name], include_evaluations=True
    )
    ces.ExportEvaluationsRequest.pb(odd_format).export_options.export_format = 7
    with pytest.raises(INVALID, match="export_format"):
        client.export_evaluations(request=odd_format)
    with pytest.raises(INVALID, match="include_evaluations"):
        client.export_evaluations(
            request=ces.ExportEvaluationsRequest(parent=PARENT, names=[golden.name])
        )
    with pytest.raises(INVALID, match="names"):
        client.export_evaluation_runs(request=ces.ExportEvaluationRunsRequest(parent=PARENT))
    with pytest.raises(INVALID, match=r"gcs_uri.*no such file"):
        client.import_evaluations(
            request=ces.ImportEvaluationsRequest(parent=PARENT, gcs_uri=str(tmp_path / "none.json"))
        )
    odd = tmp_path / "odd.yaml"
    odd.write_text("evaluationResults: 7\nevaluations: 3\n")
    with pytest.raises(INVALID, match="gcs_uri"):
        client.import_evaluations(
            request=ces.ImportEvaluationsRequest(parent=PARENT, gcs_uri=str(odd))
        )
    other = tmp_path / "notes.txt"
    other.write_text("not an export")
    with pytest.raises(INVALID, match=r"\.json or \.yaml"):
        client.import_evaluations(
            request=ces.ImportEvaluationsRequest(parent=PARENT, gcs_uri=str(other))
        )
    broken = tmp_path / "broken.json"
    broken.write_text('{"evaluations": [{"displayName": "x", "golden": {"turns": 3}}]}')
    answer = _import(client, f"file://{broken}")
    assert answer.import_failure_count == 1
    assert "evaluations[0]" in answer.error_messages[0] and "turns" in answer.error_messages[0]


def test_files_stay_inside_the_servers_files_root(
    client: ces.EvaluationServiceClient, tmp_path: Path
) -> None:
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    # The root is the session's temporary folder: /etc is outside it, and so is a link
    # inside it that leads out, or a `..` path climbing out of it.
    (tmp_path / "escape").symlink_to("/etc", target_is_directory=True)
    climbing = f"{tmp_path}/{'../' * len(tmp_path.parts)}etc/hostname"
    for uri in ("file:///etc/hostname", str(tmp_path / "escape" / "hostname"), climbing):
        with pytest.raises(INVALID, match=r"gcs_uri.*outside the server's files root"):
            client.import_evaluations(
                request=ces.ImportEvaluationsRequest(parent=PARENT, gcs_uri=uri)
            )
    with pytest.raises(INVALID, match=r"export_options\.gcs_uri.*outside"):
        client.export_evaluations(
            request=ces.ExportEvaluationsRequest(
                parent=PARENT,
                names=[golden.name],
                include_evaluations=True,
                export_options=ces.ExportOptions(gcs_uri=str(tmp_path / "escape" / "x")),
            )
        )
    assert not Path("/etc/x").exists()


def test_a_server_without_a_files_root_touches_no_files(
    store: Store, start_server: Callable[..., RunningServer], tmp_path: Path
) -> None:
    served = start_server(store)  # as `assay serve` without --files-root
    client = rest_client(served, create_key(served.store))
    golden = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    folder = tmp_path / "export"
    with pytest.raises(exceptions.BadRequest, match="--files-root"):  # 400 FAILED_PRECONDITION
        client.export_evaluations(
            request=ces.ExportEvaluationsRequest(
                parent=PARENT,
                names=[golden.name],
                include_evaluations=True,
                export_options=ces.ExportOptions(gcs_uri=f"file://{folder}"),
            )
        )
    assert not folder.exists()
    inline = client.export_evaluations(
        request=ces.ExportEvaluationsRequest(
            parent=PARENT, names=[golden.name], include_evaluations=True
        )
    ).result(timeout=30)
    assert inline.evaluations_content  # inline exports need no files root
