"""`assay serve --judge-model aligned:NAME` (issue #35): a service run's judged metric
is judged by the aligned judge the store holds, its other judged metric by the plain
base model. Against a real `assay serve` in a subprocess and the stand-in judge."""

from __future__ import annotations

from pathlib import Path

from serve_process import ServeProcess, wait_for
from service_samples import golden

from assay.judges.align import AlignedJudgeSpec
from assay.store import Store
from assay.testing import JudgeServer
from assay.testing.standin_schema import schema_script

AGENT = """
def agent(text):
    return "Sunny."
"""
APP = "/v1/apps/shop"
MARK = "Say SIMILAR-7F3 only when the meaning is the same."


def test_a_service_run_uses_the_aligned_judge_for_its_metric(tmp_path: Path) -> None:
    (tmp_path / "plain_agent.py").write_text(AGENT)
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    with Store.open(url) as db:
        db.aligned_judges.add(
            AlignedJudgeSpec(
                name="svc",
                version=0,
                metric="semantic_similarity",
                judge_model="openai:stand-in",
                guidelines=(MARK,),
            )
        )
    with JudgeServer(schema_script('{"score": 4}')) as judge:
        server = ServeProcess(
            url,
            tmp_path,
            "plain_agent:agent",
            env={"OPENAI_BASE_URL": judge.openai_base_url, "OPENAI_API_KEY": "unused"},
            extra=("--judge-model", "aligned:svc"),
        )
        try:
            created = server.http.post(f"{APP}/evaluations", json=golden("weather"))
            assert created.status_code == 200, created.text
            evaluation = created.json()["name"].rsplit("/", 1)[-1]
            reply = server.http.post(
                f"{APP}/evaluations:run",
                json={"evaluations": [evaluation], "judgeModel": "aligned:svc"},
            )
            assert reply.status_code == 200, reply.text
            run_name = reply.json()["metadata"]["evaluationRun"]
            found: dict[str, object] = {}

            def done() -> bool:
                found.update(server.http.get(f"/v1/{run_name}").json())
                return found["state"] != "RUNNING"

            wait_for(done, f"{run_name} to finish")
            assert found["state"] == "COMPLETED", found
        finally:
            server.stop()
        requests = judge.requests
    assert not judge.errors
    aligned = [r for r in requests if MARK in r.system]
    plain = [r for r in requests if MARK not in r.system]
    assert aligned and plain, [r.system[:80] for r in requests]
    assert all(r.model == "stand-in" for r in requests)
