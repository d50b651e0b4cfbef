"""Google ADK eval sets (`*.evalset.json`) and stand-alone scenario files (SPEC §2.1).

Reading accepts snake_case or camelCase keys anywhere and treats `null` as absent, so a
pydantic dump with every unset genai field written out loads like a hand-written file;
`intermediate_data` may be `{tool_uses, tool_responses, intermediate_responses}` or
`{invocation_events}`. Writing uses snake_case and shapes google-adk's own `EvalSet`
model validates, choosing `invocation_events` only when a turn's steps interleave.

Nothing is lost on load → dump → load:
- unknown set / case keys go to `metadata` verbatim and are written back;
- parts of a case the model holds only in part (several or `thought` text parts, events
  with usage metadata, persona behaviours, rubric types the model does not know,
  invocation keys such as `app_details`) are kept verbatim in
  `case.metadata["adk_unmapped"]` and written back while the model still means the same;
- model fields ADK has no place for (tags, expected facts, CES expectations, ...) are
  written under the case key `"assay"`, an extra field google-adk keeps and ignores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import EvalCase, EvalSet, Persona, Scenario, Turn, UserInput
from assay.errors import InputError
from assay.formats import _adk_content as c
from assay.formats._adk_grounding import events_grounding
from assay.formats._adk_usage import events_cost
from assay.formats._common import Loc, check_unique_ids, validate
from assay.formats._fit_adk import fit
from assay.formats._golden import mirror, transfers
from assay.formats._loss import refuse

NAME = "adk"
UNMAPPED = "adk_unmapped"
EXT = "assay"

_SET_KEYS = frozenset(
    {"eval_set_id", "name", "description", "eval_cases", "creation_timestamp", EXT}
)
_CASE_KEYS = frozenset(
    {"eval_id", "conversation", "conversation_scenario", "session_input", "rubrics",
     "final_session_state", "creation_timestamp", EXT}
)  # fmt: skip
_INVOCATION_KEYS = frozenset(
    {"invocation_id", "user_content", "final_response", "intermediate_data", "rubrics",
     "creation_timestamp", "duration", "model_duration", "tool_duration"}
)  # fmt: skip
_SCENARIO_KEYS = frozenset({"starting_prompt", "conversation_plan", "user_persona"})
_VERTEX_KEYS = frozenset(
    {"prompt", "response", "reference", "predicted_trajectory", "reference_trajectory",
     "expected_trajectory", "eval_case_id", "rubric_groups"}
)  # fmt: skip
# Model fields ADK has no place for, carried under the case key "assay".
_CASE_EXT = frozenset(
    {"tags", "description", "actual", "expected_response", "expected_facts",
     "expected_retrieved_context", "guidelines"}
)  # fmt: skip
_SCENARIO_EXT = frozenset(
    {"task", "user_facts", "max_turns", "rubrics", "expectations", "variable_overrides",
     "user_goal_behavior", "initiator"}
)  # fmt: skip
_TURN_EXT = frozenset({"expectations", "error", "usage", "model_calls"})
_USER_EXT = frozenset({"dtmf", "event", "variables"})
_EXT_KEYS = _CASE_EXT | {"reference", "scenario", "turns", "metadata"}
_NOWHERE = Loc(None, f"$.{UNMAPPED}")
_SCENARIO = "{starting_prompt, conversation_plan, user_persona?}"
_INVOCATION = "an invocation {invocation_id, user_content, final_response?, intermediate_data?}"


def _has(obj: Mapping[str, object], key: str) -> bool:
    return obj.get(key) is not None or obj.get(c.camel(key)) is not None


def _is_scenarios_file(obj: Mapping[str, object]) -> bool:
    items = obj.get("scenarios")
    return (
        isinstance(items, list)
        and not _has(obj, "eval_cases")
        and all(
            isinstance(s, Mapping) and (_has(s, "starting_prompt") or _has(s, "conversation_plan"))
            for s in items
        )
    )


def detect(path: Path | None, data: object) -> bool:
    """An ADK EvalSet (cases with `conversation` / `conversation_scenario`) or scenarios file.

    Vertex datasets share the `eval_cases` envelope but hold `prompt`-style cases; those
    are never claimed.
    """
    if not isinstance(data, Mapping):
        return False
    if _is_scenarios_file(data):
        return True
    cases = data.get("eval_cases", data.get("evalCases"))
    has_id = _has(data, "eval_set_id")
    if not isinstance(cases, list):
        return has_id
    dicts = [case for case in cases if isinstance(case, Mapping)]
    if any(c.snake(k) in _VERTEX_KEYS for case in dicts for k in case):
        return False
    if not cases:
        return has_id
    return any(_has(case, "conversation") or _has(case, "conversation_scenario") for case in dicts)


# -- loading -----------------------------------------------------------------------------


def load_data(
    data: object, *, file: str | None, mapping: Mapping[str, str] | None = None
) -> EvalSet:
    """Load a parsed ADK EvalSet (or `{"scenarios": [...]}` file) into the core model."""
    if mapping:
        raise InputError(
            "column mappings (--map) apply to row formats, not to ADK eval sets", file=file
        )
    root = Loc(file)
    obj = root.expect_dict(data, "an ADK eval set {eval_set_id, eval_cases[]} or {scenarios[]}")
    if _is_scenarios_file(obj):
        return _load_scenarios_file(obj, root)
    set_id = c.need_str(obj, root, "eval_set_id")
    raw_cases, cl = c.get_field(obj, root, "eval_cases")
    if raw_cases is None:
        raise cl.error("missing", expected="eval_cases: a list of eval cases")
    cases = [_load_case(raw, at) for at, raw in cl.items(raw_cases, "eval_cases: a list of cases")]
    check_unique_ids([case.id for case in cases], file)
    metadata = c.unknown_keys(obj, _SET_KEYS)
    ext, xl = _ext(obj, root)
    metadata.update(xl.key("metadata").expect_dict(ext.get("metadata", {})))
    return EvalSet(
        id=set_id,
        name=c.get_str(obj, root, "name"),
        description=c.get_str(obj, root, "description"),
        cases=cases,
        created_at=c.get_number(obj, root, "creation_timestamp"),
        metadata=metadata,
    )


def _ext(obj: Mapping[str, object], loc: Loc) -> tuple[dict[str, object], Loc]:
    value, at = c.get_field(obj, loc, EXT)
    if value is None:
        return {}, at
    ext = at.expect_dict(value, "assay: an object of assay model fields")
    for key in ext:
        if key not in _EXT_KEYS:
            raise at.key(key).error("unknown field", expected=f"one of {sorted(_EXT_KEYS)}")
    return ext, at


def _load_case(raw: object, loc: Loc) -> EvalCase:
    case = loc.expect_dict(raw, "an eval case {eval_id, conversation[] | conversation_scenario}")
    case_id = c.need_str(case, loc, "eval_id")
    loc = loc.case(case_id)
    ext, xl = _ext(case, loc)
    conv, cvl = c.get_field(case, loc, "conversation")
    scenario, sl = c.get_field(case, loc, "conversation_scenario")
    if (conv is None) == (scenario is None):
        problem = "both" if conv is not None else "neither of"
        raise loc.error(
            f"has {problem} conversation and conversation_scenario",
            expected=f"exactly one of conversation[] or conversation_scenario {_SCENARIO}",
        )
    unmapped: dict[str, Any] = {}
    data: dict[str, Any] = {"id": case_id, "metadata": c.unknown_keys(case, _CASE_KEYS)}
    if conv is not None:
        turns_ext = xl.key("turns").expect_dict(ext.get("turns", {}))
        turns: list[Turn] = []
        conv_unmapped: dict[str, Any] = {}
        for il, item in cvl.items(conv, "conversation: a list of invocations"):
            index = str(len(turns))
            um: dict[str, Any] = {}
            at = xl.key("turns").key(index)
            turns.append(_load_invocation(item, il, um, turns_ext.get(index), at))
            if um:
                conv_unmapped[index] = um
        if conv_unmapped:
            unmapped["conversation"] = conv_unmapped
        data["reference"] = turns
    else:
        data["scenario"] = _load_scenario(scenario, sl, unmapped, ext.get("scenario"), xl)
    session, ssl = c.get_field(case, loc, "session_input")
    if session is not None:
        data["session_input"] = parsed = c.read_session(session, ssl)
        c.keep_if_lossy(unmapped, "session_input", session, c.render_session(parsed))
    rubrics, rl = c.get_field(case, loc, "rubrics")
    if rubrics is not None:
        data["rubrics"] = read = c.read_rubrics(rubrics, rl)
        c.keep_if_lossy(unmapped, "rubrics", rubrics, c.render_rubrics(read))
    state, fl = c.get_field(case, loc, "final_session_state")
    if state is not None:
        data["final_session_state"] = fl.expect_dict(state, "final_session_state: an object")
    data["created_at"] = c.get_number(case, loc, "creation_timestamp")
    data.update({k: v for k, v in ext.items() if k in _CASE_EXT or k == "reference"})
    data["metadata"].update(xl.key("metadata").expect_dict(ext.get("metadata", {})))
    if unmapped:
        data["metadata"][UNMAPPED] = unmapped
    return validate(EvalCase, data, xl, "assay model fields")


def _adk_user(u: UserInput) -> UserInput:
    """The part of a user input an ADK `user_content` holds."""
    return u.model_copy(update={"dtmf": None, "event": None, "variables": None})


def _load_invocation(
    raw: object, loc: Loc, um: dict[str, object], ext: object, ext_loc: Loc
) -> Turn:
    inv = loc.expect_dict(raw, _INVOCATION)
    ext = ext_loc.expect_dict(ext if ext is not None else {})
    data = {k: v for k, v in ext.items() if k != "user_input"}
    content, ul = c.get_field(inv, loc, "user_content")
    if content is None:
        raise ul.error("missing", expected="user_content: {role, parts[]}")
    data["user_input"] = user = c.read_user_input(content, ul, ext.get("user_input"))
    c.keep_if_lossy(um, "user_content", content, c.render_user(_adk_user(user)))
    final, fl = c.get_field(inv, loc, "final_response")
    if final is not None:
        data["final_response"] = text = c.read_final_text(final, fl)
        c.keep_if_lossy(um, "final_response", final, None if text is None else c.render_text(text))
    steps, dl = c.get_field(inv, loc, "intermediate_data")
    if steps is not None:
        data["steps"] = read = c.read_steps(steps, dl)
        c.keep_if_lossy(um, "intermediate_data", steps, c.render_steps(read))
        calls, usage = events_cost(steps, dl)
        # As ADK's inference_call_count_v1: events present -> a count, 0 included
        # (unless the file says the count was not recorded: see `_dump_invocation`).
        if calls is not None and "model_calls" not in data:
            data["model_calls"] = calls
        if usage is not None and "usage" not in data:
            data["usage"] = usage
        grounding = events_grounding(steps, dl)
        if grounding is not None and "grounding" not in data:
            data["grounding"] = grounding
    rubrics, rl = c.get_field(inv, loc, "rubrics")
    if rubrics is not None:
        data["rubrics"] = parsed = c.read_rubrics(rubrics, rl)
        c.keep_if_lossy(um, "rubrics", rubrics, c.render_rubrics(parsed))
    data["id"] = c.get_str(inv, loc, "invocation_id") or None
    data["created_at"] = c.get_number(inv, loc, "creation_timestamp")
    data["latency_s"] = c.get_number(inv, loc, "duration")
    data["model_latency_s"] = c.get_number(inv, loc, "model_duration")
    data["tool_latency_s"] = c.get_number(inv, loc, "tool_duration")
    um.update({c.snake(k): v for k, v in c.unknown_keys(inv, _INVOCATION_KEYS).items()})
    turn = validate(Turn, data, ext_loc, "assay turn fields")
    if turn.expectations and _said(turn) == mirror(turn.expectations):
        # The native fields only mirror the expectations (see `_dump_invocation`).
        turn.steps, turn.final_response = transfers(turn), None
    return turn


def _said(turn: Turn) -> tuple[list[object], str | None]:
    return [s for s in turn.steps if s.agent_transfer is None], turn.final_response


def _load_scenario(
    raw: object, loc: Loc, unmapped: dict[str, object], ext: object, ext_loc: Loc
) -> Scenario:
    obj = loc.expect_dict(raw, f"conversation_scenario: {_SCENARIO}")
    ext_loc = ext_loc.key("scenario")
    data = dict(ext_loc.expect_dict(ext if ext is not None else {}))
    persona, pl = c.get_field(obj, loc, "user_persona")
    if persona is not None:
        parsed = c.read_persona(persona, pl)
        data.setdefault("persona", parsed)
        c.keep_if_lossy(unmapped, "user_persona", persona, c.render_persona(parsed))
    data["starting_prompt"] = c.get_str(obj, loc, "starting_prompt")
    data["conversation_plan"] = c.get_str(obj, loc, "conversation_plan")
    extra = c.unknown_keys(obj, _SCENARIO_KEYS)
    if extra:
        unmapped["conversation_scenario"] = {c.snake(k): v for k, v in extra.items()}
    return validate(Scenario, data, ext_loc, "assay scenario fields")


def _scenario_id(raw: Mapping[str, object]) -> str:
    # As `adk eval_set add_eval_case` names a scenario: the first 8 hex digits of the
    # SHA-256 of its sorted JSON (identical ids for scenarios without a persona).
    persona = raw.get("user_persona", raw.get("userPersona"))
    payload = {
        "starting_prompt": raw.get("starting_prompt", raw.get("startingPrompt")),
        "conversation_plan": raw.get("conversation_plan", raw.get("conversationPlan")),
        "user_persona": c.norm(persona),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:8]


def _load_scenarios_file(obj: Mapping[str, object], root: Loc) -> EvalSet:
    items, il = c.get_field(obj, root, "scenarios")
    cases = []
    for sl, raw in il.items(items, f"scenarios: a list of {_SCENARIO}"):
        unmapped: dict[str, Any] = {}
        scenario = _load_scenario(raw, sl, unmapped, None, sl)
        metadata = {UNMAPPED: unmapped} if unmapped else {}
        cases.append(EvalCase(id=_scenario_id(raw), scenario=scenario, metadata=metadata))
    check_unique_ids([case.id for case in cases], root.file)
    set_id = Path(root.file).stem if root.file else "scenarios"
    return EvalSet(id=set_id, cases=cases, metadata=c.unknown_keys(obj, frozenset({"scenarios"})))


# -- writing -----------------------------------------------------------------------------


def dump(evalset: EvalSet) -> dict[str, object]:
    """The eval set as an ADK `*.evalset.json` object (snake_case).

    The set is fitted first (`assay.formats._fit_adk`); a set whose fit loses a field
    is refused with `ConversionLossError`.
    """
    evalset, losses = fit(evalset)
    if losses:
        raise refuse(losses, "an ADK eval set")
    out: dict[str, Any] = {"eval_set_id": evalset.id}
    if evalset.name is not None:
        out["name"] = evalset.name
    if evalset.description is not None:
        out["description"] = evalset.description
    out["eval_cases"] = [_dump_case(case) for case in evalset.cases]
    if evalset.created_at is not None:
        out["creation_timestamp"] = evalset.created_at
    ext: dict[str, Any] = {}
    _put_metadata(out, evalset.metadata, _SET_KEYS, ext)
    if ext:
        out[EXT] = ext
    return out


def write(evalset: EvalSet, path: Path) -> None:
    """Write `dump(evalset)` as indented UTF-8 JSON."""
    text = json.dumps(dump(evalset), indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def _put_metadata(
    out: dict[str, object],
    metadata: Mapping[str, object],
    known: frozenset[str],
    ext: dict[str, Any],
) -> None:
    for key, value in metadata.items():
        if key == UNMAPPED:
            continue
        if c.snake(key) in known or key in out:
            ext.setdefault("metadata", {})[key] = value  # would shadow an ADK field
        else:
            out[key] = value


def _sub(mapping: Mapping[str, object], key: str) -> dict[str, object]:
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def _dump_case(case: EvalCase) -> dict[str, object]:
    um = _sub(case.metadata, UNMAPPED)
    out: dict[str, Any] = {"eval_id": case.id}
    ext = case.model_dump(mode="json", include=set(_CASE_EXT), exclude_defaults=True)
    if case.scenario is not None:
        out["conversation_scenario"] = _dump_scenario(case.scenario, um, ext)
        if case.reference is not None:
            ext["reference"] = [
                t.model_dump(mode="json", exclude_defaults=True) for t in case.reference
            ]
    else:
        if case.reference is None:
            ext["reference"] = None  # ADK needs a conversation; this marks it as absent
        conv_um = _sub(um, "conversation")
        turns_ext: dict[str, Any] = {}
        out["conversation"] = [
            _dump_invocation(turn, _sub(conv_um, str(i)), turns_ext, str(i))
            for i, turn in enumerate(case.reference or [])
        ]
        if turns_ext:
            ext["turns"] = turns_ext
    if (session := case.session_input) is not None:
        out["session_input"] = c.pick(
            um.get("session_input"), c.render_session(session),
            lambda r: c.read_session(r, _NOWHERE) == session,
        )  # fmt: skip
    if case.rubrics:
        out["rubrics"] = c.pick(
            um.get("rubrics"), c.render_rubrics(case.rubrics),
            lambda r: c.read_rubrics(r, _NOWHERE) == case.rubrics,
        )  # fmt: skip
    if case.final_session_state is not None:
        out["final_session_state"] = case.final_session_state
    if case.created_at is not None:
        out["creation_timestamp"] = case.created_at
    _put_metadata(out, case.metadata, _CASE_KEYS, ext)
    if ext:
        out[EXT] = ext
    return out


def _dump_scenario(
    s: Scenario, um: Mapping[str, object], ext: dict[str, object]
) -> dict[str, object]:
    out: dict[str, Any] = {}
    if s.starting_prompt is not None:
        out["starting_prompt"] = s.starting_prompt
    if s.conversation_plan is not None:
        out["conversation_plan"] = s.conversation_plan
    if (persona := s.persona) is not None:
        out["user_persona"] = c.pick(
            um.get("user_persona"), c.render_persona(persona),
            lambda r: c.read_persona(r, _NOWHERE) == persona,
        )  # fmt: skip
    out.update(_sub(um, "conversation_scenario"))
    scenario_ext = s.model_dump(mode="json", include=set(_SCENARIO_EXT), exclude_defaults=True)
    if isinstance(persona, Persona) and persona.display_name is not None:
        scenario_ext["persona"] = persona.model_dump(mode="json", exclude_none=True)
    if scenario_ext:
        ext["scenario"] = scenario_ext
    return out


def _dump_invocation(
    turn: Turn, um: Mapping[str, object], turns_ext: dict[str, object], index: str
) -> dict[str, object]:
    out: dict[str, Any] = {}
    if turn.id is not None:
        out["invocation_id"] = turn.id
    user = _adk_user(turn.user_input)
    steps, final_text = turn.steps, turn.final_response
    if turn.expectations and _said(turn) == ([], None):
        # What ADK's evaluator can check of the expectations (kept whole under "assay").
        mirrored, final_text = mirror(turn.expectations)
        steps = transfers(turn) + mirrored
    out["user_content"] = c.pick(
        um.get("user_content"), c.render_user(user),
        lambda r: c.read_user_input(r, _NOWHERE) == user,
    )  # fmt: skip
    final = c.pick(
        um.get("final_response"),
        None if final_text is None else c.render_text(final_text),
        lambda r: c.read_final_text(r, _NOWHERE) == final_text,
    )
    if final is not None:
        out["final_response"] = final
    out["intermediate_data"] = c.pick(
        um.get("intermediate_data"), c.render_steps(steps),
        lambda r: c.read_steps(r, _NOWHERE) == steps,
    )  # fmt: skip
    if turn.rubrics:
        out["rubrics"] = c.pick(
            um.get("rubrics"), c.render_rubrics(turn.rubrics),
            lambda r: c.read_rubrics(r, _NOWHERE) == turn.rubrics,
        )  # fmt: skip
    if turn.created_at is not None:
        out["creation_timestamp"] = turn.created_at
    if turn.latency_s is not None:
        out["duration"] = turn.latency_s
    if turn.model_latency_s is not None:
        out["model_duration"] = turn.model_latency_s
    if turn.tool_latency_s is not None:
        out["tool_duration"] = turn.tool_latency_s
    out.update({k: v for k, v in um.items() if k not in _INVOCATION_KEYS})
    extra = turn.model_dump(mode="json", include=set(_TURN_EXT), exclude_defaults=True)
    user_extra = turn.user_input.model_dump(
        mode="json", include=set(_USER_EXT), exclude_defaults=True
    )
    if user_extra:
        extra["user_input"] = user_extra
    written = out["intermediate_data"]
    if turn.grounding and events_grounding(written, _NOWHERE) != turn.grounding:
        # Grounding the written events do not carry (e.g. of a run's turns) is kept.
        extra["grounding"] = [g.model_dump(mode="json") for g in turn.grounding]
    if turn.model_calls is None and isinstance(written, dict) and "invocation_events" in written:
        # Events imply a model call count when read back; say there was none recorded.
        extra["model_calls"] = None
    if extra:
        turns_ext[index] = extra
    return out


__all__ = ["EXT", "NAME", "UNMAPPED", "detect", "dump", "fit", "load_data", "write"]
