"""What Vertex and MLflow rows can hold of an eval set: `fit` for writing them.

A row is one case (Vertex: its last reference and actual turns, the earlier ones as the
row's `history`; MLflow: a text conversation). Translations (nothing is lost): golden
expectations without notes become steps and the final response
(`assay.formats._golden`); a golden's answer goes to the column the format's tools read
(`assay.formats._golden.answer_to_final_response`).

Losses: turn ids, timestamps, token usage (Vertex) and tool-response latencies, which no
column holds; the set's creation time; and whole cases the row writer refuses, named
with its reason (a scenario, steps the format has no form for, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from assay.core.cases import EvalCase, EvalSet, Expectation, SessionInput, Step, Turn
from assay.errors import InputError
from assay.formats._golden import (
    answer_to_expected_response,
    answer_to_final_response,
    as_steps,
    is_plain,
)
from assay.formats._loss import Loss, Losses

Drop = Callable[[str], None]
RowWriter = Callable[[EvalCase, int], Any]


def fit_rows(
    evalset: EvalSet,
    row: RowWriter,
    *,
    answer_in: Literal["expected_response", "reference"],
    usage: bool,
    set_fields: bool,
) -> tuple[EvalSet, list[Loss]]:
    """The set as rows hold it (see the module doc); `row` is the format's row writer.

    `answer_in`: the column a golden's answer is written to (MLflow's `expected_response`,
    Vertex's `reference`; see `assay.formats._golden`). `set_fields`: whether the format has a
    place for the set's name, description and metadata (Vertex's `eval_cases` envelope;
    MLflow files are rows only).
    """
    es = evalset.model_copy(deep=True)
    losses = Losses()
    for name in ("created_at",) if set_fields else ("name", "description", "created_at"):
        if getattr(es, name) is not None:
            losses.add(None, name)
            setattr(es, name, None)
    if not set_fields:
        for key in list(es.metadata):
            losses.add(None, f"metadata.{key}")
            del es.metadata[key]
    cases: list[EvalCase] = []
    for case in es.cases:

        def drop(name: str, case_id: str = case.id) -> None:
            losses.add(case_id, name)

        if case.created_at is not None:
            drop("created_at")
            case.created_at = None
        if case.session_input == SessionInput():
            case.session_input = None  # says nothing (ADK and CES read it back as none)
        for where in ("reference", "actual"):
            for t in getattr(case, where) or []:
                _fit_turn(t, where, drop, usage)
        if answer_in == "expected_response":
            answer_to_expected_response(case)
        else:
            answer_to_final_response(case)
        try:
            row(case, len(cases))
        except InputError as exc:
            drop(f"the case ({exc.detail.partition(': ')[2] or exc.detail})")
            continue
        cases.append(case)
    es.cases = cases
    return es, losses.items


ROW_FILES = (".jsonl", ".ndjson", ".csv")


def fit_to_file(
    fitted: EvalSet, path: Path, *, set_fields: bool, internal: tuple[str, ...]
) -> list[Loss]:
    """What a rows file of `path`'s kind holds of a set already `fit_rows`-fitted, and
    what it does not (`fitted` is changed in place).

    JSONL and CSV files are rows only: no place for the set's name, description or
    metadata (`set_fields`: whether `fit_rows` kept them, for Vertex's JSON envelope).
    A CSV cell holds text: a metadata value that is not a string is written as its
    JSON text (and read back as that text), an empty one reads back as no value;
    `internal` metadata keys are the format's own (written into other columns).
    """
    losses = Losses()
    suffix = path.suffix.lower()
    if set_fields and suffix in ROW_FILES:
        for name in ("name", "description"):
            if getattr(fitted, name) is not None:
                losses.add(None, name)
                setattr(fitted, name, None)
        for key in list(fitted.metadata):
            losses.add(None, f"metadata.{key}")
        fitted.metadata = {}
    if suffix == ".csv":
        for case in fitted.cases:
            for key, value in list(case.metadata.items()):
                if key in internal or (isinstance(value, str) and value):
                    continue
                if value in ("", None):
                    losses.add(case.id, f"metadata.{key} (empty: a CSV cell reads back as none)")
                    del case.metadata[key]
                else:
                    losses.add(case.id, f"metadata.{key} (written as JSON text in a CSV cell)")
                    case.metadata[key] = json.dumps(value, ensure_ascii=False)
    return losses.items


def _fit_turn(t: Turn, where: str, drop: Drop, usage: bool) -> None:
    for name in ("id", "created_at", *(() if usage else ("usage",))):
        if getattr(t, name) is not None:
            drop(f"{where}[].{name}")
            setattr(t, name, None)
    if t.rubrics:
        drop(f"{where}[].rubrics")
        t.rubrics = []
    t.steps = [s for s in t.steps if _fit_part(s, f"{where}[].steps[]", drop)]
    plain = all(is_plain(e) for e in t.expectations)
    if t.expectations and plain and not t.steps and t.final_response is None:
        said = [e for e in t.expectations if _fit_part(e, f"{where}[].expectations[]", drop)]
        t.steps, t.final_response = as_steps(said)
    elif t.expectations:
        # Rows have no place for a note, a transfer or a mock, nor for expectations
        # beside steps: none of them is written.
        drop(f"{where}[].expectations")
    t.expectations = []


def _fit_part(s: Step | Expectation, path: str, drop: Drop) -> bool:
    """Fit a step (or an expectation about to become one); False to leave it out."""
    if s.tool_response is not None and s.tool_response.response is None:
        # A trajectory step's null `tool_output` reads back as no response at all.
        drop(f"{path}.tool_response (without a response)")
        return False
    if s.tool_response is not None and s.tool_response.latency_s is not None:
        drop(f"{path}.tool_response.latency_s")
        s.tool_response.latency_s = None
    # Trajectory steps and chat messages carry no call ids and no agent names.
    for name, part in (("tool_call", s.tool_call), ("tool_response", s.tool_response)):
        if part is not None and part.id is not None:
            drop(f"{path}.{name}.id")
            part.id = None
    if isinstance(s, Step) and s.agent_message is not None and s.agent_message.author:
        drop(f"{path}.agent_message.author")
        s.agent_message.author = None
    return True
