"""Google ADK's legacy test files (`*.test.json`, SPEC §2.2).

A legacy file is a JSON list of turns `{query, expected_tool_use[{tool_name,
tool_input}], expected_intermediate_agent_responses[{author, text}], reference}` making
ONE eval case, optionally with an initial-session file beside it
(`initial.session.json`: `{app_name, user_id, state, ...}`). The conversion follows
google-adk's own migration (`convert_eval_set_to_pydantic_schema`): the case id is the
file path as given, `query` becomes the user text, `reference` the final response,
tool uses and intermediate responses the turn's steps (calls first, as ADK's
`IntermediateData` keeps them), and the session's app name, user id and state the
case's session input. ADK draws the set and invocation ids at random; here they are
UUIDs derived from the file path, so loading the same file twice gives the same ids.

ADK's loader also reads the named form `[{name, data: [turns], initial_session}]`
holding several cases; `dump` writes it when one list of turns cannot carry the set
(several cases, or a session input).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import (
    AgentMessage,
    EvalCase,
    EvalSet,
    SessionInput,
    Step,
    ToolCall,
    Turn,
    UserInput,
)
from assay.errors import InputError
from assay.formats._common import Loc, check_unique_ids, read_structured

NAME = "adk-legacy"
SESSION_FILE = "initial.session.json"
_TURN_KEYS = frozenset(
    {"query", "expected_tool_use", "expected_intermediate_agent_responses", "reference"}
)
_NAMED_KEYS = frozenset({"name", "data", "initial_session"})
_TURN = "a turn {query, expected_tool_use[], expected_intermediate_agent_responses[], reference}"
# Row keys beyond the legacy ones are kept per turn index and written back.
_EXTRA = "adk_legacy_extra"


def _is_turns(items: list[object]) -> bool:
    return bool(items) and all(
        isinstance(t, Mapping) and "query" in t and set(t) <= _TURN_KEYS for t in items
    )


def detect(path: Path | None, data: object) -> bool:
    """A non-empty list of legacy turns, or of named `{name, data: [turns]}` cases."""
    if not isinstance(data, list) or not data:
        return False
    if _is_turns(data):
        return True
    return all(
        isinstance(item, Mapping)
        and set(item) <= _NAMED_KEYS
        and isinstance(item.get("name"), str)
        and isinstance(item.get("data"), list)
        and _is_turns(item["data"])
        for item in data
    )


def _derived_id(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "assay:adk-legacy:" + ":".join(parts)))


def _text(obj: Mapping[str, object], loc: Loc, key: str, required: bool = False) -> str | None:
    if obj.get(key) is None:
        if required:
            raise loc.key(key).error("missing", expected=f"{key}: a string")
        return None
    return loc.key(key).expect_str(obj[key], f"{key}: a string")


def _load_turn(raw: object, loc: Loc, turn_id: str, extras: dict[str, object]) -> Turn:
    row = loc.expect_dict(raw, _TURN)
    steps: list[Step] = []
    uses = row.get("expected_tool_use")
    what = "expected_tool_use: a list of {tool_name, tool_input}"
    for ul, use in loc.key("expected_tool_use").items([] if uses is None else uses, what):
        obj = ul.expect_dict(use, "{tool_name, tool_input}")
        args = obj.get("tool_input")
        args = (
            {} if args is None else ul.key("tool_input").expect_dict(args, "tool_input: an object")
        )
        name = _text(obj, ul, "tool_name", required=True) or ""
        steps.append(Step(tool_call=ToolCall(name=name, args=args)))
    key = "expected_intermediate_agent_responses"
    responses = row.get(key)
    what = f"{key}: a list of {{author, text}}"
    for rl, item in loc.key(key).items([] if responses is None else responses, what):
        obj = rl.expect_dict(item, "{author, text}")
        text = _text(obj, rl, "text", required=True) or ""
        steps.append(Step(agent_message=AgentMessage(author=_text(obj, rl, "author"), text=text)))
    extra = {k: v for k, v in row.items() if k not in _TURN_KEYS}
    if extra:
        extras[turn_id] = extra
    return Turn(
        id=turn_id,
        user_input=UserInput(text=_text(row, loc, "query", required=True)),
        steps=steps,
        final_response=_text(row, loc, "reference"),
    )


def _session(raw: object, loc: Loc) -> SessionInput | None:
    obj = loc.expect_dict(raw, "an initial session {app_name, user_id, state}")
    if not obj:
        return None  # as ADK: an empty session means none
    state = obj.get("state")
    return SessionInput(  # ADK writes "" for an unknown app or user
        app_name=_text(obj, loc, "app_name") or None,
        user_id=_text(obj, loc, "user_id") or None,
        state={} if state is None else loc.key("state").expect_dict(state, "state: an object"),
    )


def _load_case(rows: object, loc: Loc, case_id: str, session: SessionInput | None) -> EvalCase:
    loc = loc.case(case_id)
    extras: dict[str, Any] = {}
    turns = [
        _load_turn(raw, tl, _derived_id(case_id, str(i)), extras)
        for i, (tl, raw) in enumerate(loc.items(rows, f"a list of turns, each {_TURN}"))
    ]
    metadata = {_EXTRA: extras} if extras else {}
    return EvalCase(id=case_id, reference=turns, session_input=session, metadata=metadata)


def load_data(
    data: object,
    *,
    file: str | None,
    mapping: Mapping[str, str] | None = None,
    session: SessionInput | None = None,
) -> EvalSet:
    """Load a parsed legacy file; `session` comes from an initial-session file, if any."""
    if mapping:
        raise InputError(
            "column mappings (--map) apply to row formats, not to ADK files", file=file
        )
    root = Loc(file)
    items = root.expect_list(data, f"a list of turns, each {_TURN}")
    set_id = _derived_id(file or "")
    if items and all(isinstance(i, Mapping) and "data" in i and "query" not in i for i in items):
        cases = []
        for cl, item in root.items(items):
            obj = cl.expect_dict(item)
            name = _text(obj, cl, "name", required=True) or ""
            raw_session = obj.get("initial_session")
            named = (
                None if raw_session is None else _session(raw_session, cl.key("initial_session"))
            )
            cases.append(_load_case(obj.get("data"), cl.key("data"), name, named or session))
        check_unique_ids([case.id for case in cases], file)
    else:
        cases = [_load_case(items, root, file or "legacy", session)]
    return EvalSet(id=set_id, name=set_id, cases=cases)


def load_with_session(path: Path, session_path: Path | None = None) -> EvalSet:
    """Load a legacy file with its initial session (default: `initial.session.json` beside)."""
    if session_path is None and (path.parent / SESSION_FILE).is_file():
        session_path = path.parent / SESSION_FILE
    session = None
    if session_path is not None:
        session = _session(read_structured(session_path), Loc(str(session_path)))
    return load_data(read_structured(path), file=str(path), session=session)


def load_path(path: Path, data: object, mapping: Mapping[str, str] | None) -> EvalSet:
    """Dispatcher hook: like `load_data`, also reading the initial session beside `path`."""
    if mapping:
        raise InputError(
            "column mappings (--map) apply to row formats, not to ADK files", file=str(path)
        )
    if (path.parent / SESSION_FILE).is_file():
        return load_with_session(path)
    return load_data(data, file=str(path))


def _dump_turn(turn: Turn, loc: Loc, extra: Mapping[str, object]) -> dict[str, object]:
    u = turn.user_input
    if u.blobs or u.tool_responses or u.dtmf or u.event or u.variables:
        raise loc.error("the legacy format holds only text user input", expected="--to adk")
    uses, responses = [], []
    for step in turn.steps:
        if step.tool_call is not None:
            uses.append({"tool_name": step.tool_call.name, "tool_input": step.tool_call.args})
        elif (m := step.agent_message) is not None:
            responses.append({"author": m.author, "text": m.text})
        else:
            raise loc.error(
                f"has a {step.kind} step; the legacy format holds only tool calls and "
                "intermediate agent responses",
                expected="--to adk",
            )
    row: dict[str, Any] = {"query": u.text or "", "expected_tool_use": uses}
    if responses:
        row["expected_intermediate_agent_responses"] = responses
    if turn.final_response is not None:
        row["reference"] = turn.final_response
    return {**row, **extra}


def _dump_rows(case: EvalCase) -> list[dict[str, object]]:
    loc = Loc(None, "$", case.id)
    if case.scenario is not None:
        raise loc.error(
            "is a conversation scenario", expected="golden conversations only (--to adk)"
        )
    extras = case.metadata.get(_EXTRA)
    extras = extras if isinstance(extras, dict) else {}
    return [
        _dump_turn(t, loc.key(f"reference[{i}]"), extras.get(t.id or "", {}))
        for i, t in enumerate(case.reference or [])
    ]


def dump(evalset: EvalSet) -> list[dict[str, object]]:
    """One case without a session: the list of turns; otherwise the named form."""
    cases = evalset.cases
    if len(cases) == 1 and cases[0].session_input is None:
        return _dump_rows(cases[0])
    out = []
    for case in cases:
        item: dict[str, Any] = {"name": case.id, "data": _dump_rows(case)}
        if (s := case.session_input) is not None:
            item["initial_session"] = {
                "app_name": s.app_name or "",
                "user_id": s.user_id or "",
                "state": s.state,
            }
        out.append(item)
    return out


def write(evalset: EvalSet, path: Path) -> None:
    """Write `dump(evalset)` as indented UTF-8 JSON."""
    path.write_text(
        json.dumps(dump(evalset), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


__all__ = [
    "NAME",
    "SESSION_FILE",
    "detect",
    "dump",
    "load_data",
    "load_path",
    "load_with_session",
    "write",
]
