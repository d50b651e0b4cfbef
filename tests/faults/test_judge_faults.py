"""Judges that fail (HTTP 500), hang, answer garbage or drop the connection mid-reply.

Recorded rows scored by `semantic_similarity` through an OpenAI-compatible judge on a
loopback fault server (fault_server.py; each row's response names its fault). The run
ends COMPLETED with every case stored once: the healthy row is scored, each broken
judge call leaves its metric NOT_EVALUATED with a reason naming what went wrong (the
timeout, the status, the unparseable reply quoted), failures are retried exactly as
configured and garbage is not retried (the same prompt would get the same answer).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_server import FaultServer

from assay.core.results import Status
from assay.engine.build import build_metrics
from assay.engine.judging import JudgeRunOptions
from assay.formats import load_rows
from assay.session.run_session import RunSession
from assay.store import Store
from assay.store.schema import RunStatus

FAULT_REASONS: dict[str, str | tuple[str, ...]] = {
    "http500": "HTTP 500",
    "hang": "no reply within the 1s judge timeout",
    "garbage": 'the judge replied "I would rather not rate this, sorry."',
    "wrongtype": "no judge reply could be parsed",
    # httpx's own transport, or aiohttp's (the SDK's DefaultAioHttpClient): a reply cut
    # short after its headers, in each one's words
    "drop": ("peer closed connection", "payload is not completed"),
}
RETRIED = ("http500", "hang", "drop")


def test_broken_judges_leave_metrics_not_evaluated_and_the_run_completes(
    fault_server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "not-used-by-the-fault-server")
    words = ["ok", *FAULT_REASONS]
    rows = [{"prompt": f"q {w}", "response": f"Sunny ({w}).", "reference": "Sunny."} for w in words]
    judges = JudgeRunOptions(
        model="openai:fault",
        base_url=f"{fault_server.url}/v1",
        timeout_s=1,
        max_retries=1,
        use_cache=False,
    )
    with Store.open(f"sqlite:///{tmp_path / 'assay.db'}") as store:
        session = RunSession(
            [load_rows(rows, "vertex")],
            build_metrics(names=["semantic_similarity"]),
            judges=judges,
            store=store,
            fresh=True,
        )
        result = session.run()
        assert result.run_id is not None
        assert store.get_run(result.run_id).status == RunStatus.COMPLETED.value
        stored = [d["case_id"] for d in store.case_results(result.run_id)]
        assert sorted(stored) == sorted(c.case_id for c in result.cases)
        assert len(stored) == len(set(stored)) == len(words)
    by_word = dict(zip(words, result.cases, strict=True))
    healthy = by_word["ok"].metrics["semantic_similarity"]
    assert healthy.status == Status.PASSED and healthy.score == 4.0
    for fault, reason in FAULT_REASONS.items():
        metric = by_word[fault].metrics["semantic_similarity"]
        assert metric.status == Status.NOT_EVALUATED and metric.score is None, (fault, metric)
        said = metric.explanation or ""
        assert any(r in said for r in ((reason,) if isinstance(reason, str) else reason)), (
            fault,
            said,
        )
    for fault in RETRIED:
        assert fault_server.calls[("judge", fault)] == 2, fault_server.calls  # 1 + 1 retry
    assert fault_server.calls[("judge", "garbage")] == 1
