"""Produce the example MLflow trace export offline, with MLflow's own tracing SDK.

`python -m examples.traces.make_mlflow_traces [OUT_DIR]` traces a small travel agent
(a chat-model call, a document retrieval and a tool call per turn) with
`@mlflow.trace` into a throwaway SQLite tracking store, logs expectations on one
trace with `mlflow.log_expectation`, reads everything back with
`mlflow.search_traces()` and saves that DataFrame as pandas writes it:
`df.to_json("mlflow_travel.traces.jsonl", orient="records", lines=True)` — one row
per trace with its `trace` column (the trace as JSON), `trace_metadata` and
`assessments`. Two sessions: a one-turn question with an expected answer, and a
two-turn conversation (the agent asks which city, then answers).

Needs `pip install -e '.[mlflow]'`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

TURNS = (
    ("flights", "Find me a flight from Paris to Rome on May 3", "Paris", "Rome"),
    ("hotel", "I need a hotel", None, None),
    ("hotel", "In Rome, for two nights", None, "Rome"),
)


def record(out_dir: Path) -> Path:
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    import mlflow

    with tempfile.TemporaryDirectory() as scratch:
        mlflow.set_tracking_uri(f"sqlite:///{Path(scratch) / 'mlflow.db'}")
        experiment = mlflow.set_experiment("travel-agent")

        @mlflow.trace(span_type="TOOL")
        def search_flights(origin: str, destination: str, date: str) -> dict[str, Any]:
            return {"flights": [{"number": "AZ 333", "from": origin, "to": destination}]}

        @mlflow.trace(span_type="TOOL")
        def search_hotels(city: str, nights: int) -> dict[str, Any]:
            return {"hotels": [{"name": "Albergo Centrale", "city": city, "nights": nights}]}

        @mlflow.trace(span_type="RETRIEVER")
        def travel_policy(query: str) -> list[dict[str, Any]]:
            return [
                {
                    "page_content": "Economy class for flights under 6 hours.",
                    "metadata": {"doc_uri": "policy/flights.md"},
                }
            ]

        @mlflow.trace(span_type="CHAT_MODEL")
        def chat(messages: list[dict[str, str]]) -> dict[str, Any]:
            return {
                "choices": [{"message": {"role": "assistant", "content": "(tool call)"}}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 9},
            }

        @mlflow.trace(span_type="AGENT")
        def travel_agent(question: str, session: str, origin: str | None, city: str | None) -> str:
            mlflow.update_current_trace(metadata={"mlflow.trace.session": session})
            chat([{"role": "user", "content": question}])
            if city is None:
                return "Which city would you like to stay in?"
            if origin is not None:
                travel_policy(question)
                found = search_flights(origin=origin, destination=city, date="2026-05-03")
                return f"Flight {found['flights'][0]['number']} flies from {origin} to {city}."
            hotel = search_hotels(city=city, nights=2)["hotels"][0]
            return f"{hotel['name']} in {city} has a room for two nights."

        first = None
        for session, question, origin, city in TURNS:
            travel_agent(question, session, origin, city)
            first = first or mlflow.get_last_active_trace_id()
        assert first is not None
        expected = "Flight AZ 333 flies from Paris to Rome."
        mlflow.log_expectation(trace_id=first, name="expected_response", value=expected)
        mlflow.log_expectation(trace_id=first, name="expected_facts", value=["AZ 333"])
        frame = mlflow.search_traces(locations=[experiment.experiment_id])
    out = out_dir / "mlflow_travel.traces.jsonl"
    frame.to_json(out, orient="records", lines=True)
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    print(f"wrote {record(target)}")
