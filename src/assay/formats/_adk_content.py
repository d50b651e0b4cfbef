"""Pieces of ADK eval sets (contents, steps, rubrics, personas, sessions) for `adk`.

Readers take parsed JSON plus a `Loc` (for located errors) and accept snake_case or
camelCase keys, treating `null` as absent; renderers write snake_case in the shapes
google-adk's pydantic models validate. `same_shape` and `pick` let a format keep a
piece of the input verbatim when the model holds it only in part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from pydantic.alias_generators import to_camel, to_snake

from assay.core.cases import (
    AgentMessage,
    Blob,
    Persona,
    Rubric,
    SessionInput,
    Step,
    ToolCall,
    ToolResponse,
    UserInput,
)
from assay.errors import InputError
from assay.formats._adk_version import thoughts_are_text
from assay.formats._common import Loc, type_name, validate

# Values under these keys are user data: their keys keep their spelling.
_DATA_KEYS = frozenset(
    {"args", "response", "state", "partial_args", "part_metadata", "custom_metadata", "labels"}
)
# In the tool_uses shape the steps of a turn read back as: calls, responses, messages.
_RANK = {"tool_call": 0, "tool_response": 1, "agent_message": 2}

PARTS = "a list of Part objects {text | function_call | function_response | inline_data}"
SHAPE_DATA = (
    "intermediate_data: {tool_uses[], tool_responses[], intermediate_responses[]} "
    "or {invocation_events[]}"
)


@cache
def camel(key: str) -> str:
    return to_camel(key)


@cache
def snake(key: str) -> str:
    return to_snake(key)


# -- reading helpers -----------------------------------------------------------------


def get_field(obj: Mapping[str, object], loc: Loc, key: str) -> tuple[object, Loc]:
    """The value under `key` in snake or camel case (null = absent) and its location."""
    value = obj.get(key)
    if value is not None:
        return value, loc.key(key)
    alt = camel(key)
    value = obj.get(alt)
    return value, loc.key(alt if value is not None else key)


def get_str(obj: Mapping[str, object], loc: Loc, key: str) -> str | None:
    value, at = get_field(obj, loc, key)
    return None if value is None else at.expect_str(value, f"{key}: a string")


def need_str(obj: Mapping[str, object], loc: Loc, key: str) -> str:
    value, at = get_field(obj, loc, key)
    if value is None:
        raise at.error("missing", expected=f"{key}: a string")
    return at.expect_str(value, f"{key}: a string")


def get_number(obj: Mapping[str, object], loc: Loc, key: str) -> float | None:
    value, at = get_field(obj, loc, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise at.error(f"got {type_name(value)}", expected=f"{key}: a number")
    return float(value)


def unknown_keys(obj: Mapping[str, object], known: frozenset[str]) -> dict[str, object]:
    return {k: v for k, v in obj.items() if v is not None and snake(k) not in known}


def norm(value: object, structural: bool = True) -> object:
    """Comparable form: snake_case structural keys, no nulls, no empty containers.

    User data (tool args, responses, state) is copied verbatim by the renderers, so it
    is compared as it is.
    """
    if isinstance(value, dict) and structural:
        out = {}
        for k, v in value.items():
            key = snake(k)
            n = norm(v, key not in _DATA_KEYS)
            if n is not None and n != {} and n != []:
                out[key] = n
        return out
    if isinstance(value, list) and structural:
        return [norm(v) for v in value]
    return value


def same_shape(raw: object, rendered: object) -> bool:
    """Whether `rendered` says all `raw` says (up to key style, nulls and empties)."""
    if raw == rendered:
        return True
    a, b = norm(raw), norm(rendered)
    if isinstance(a, dict) and isinstance(b, dict) and "role" not in a:
        b.pop("role", None)  # a missing role means the default one
    return bool(a == b)


def snake_struct(value: object, structural: bool = True) -> object:
    """`value` with its structural keys in snake_case (user data keeps its keys)."""
    if structural and isinstance(value, dict):
        return {snake(k): snake_struct(v, snake(k) not in _DATA_KEYS) for k, v in value.items()}
    if structural and isinstance(value, list):
        return [snake_struct(v) for v in value]
    return value


def keep_if_lossy(unmapped: dict[str, object], key: str, raw: object, rendered: object) -> None:
    """Keep `raw` (in snake_case) under `key` when its rendering would lose something."""
    if not same_shape(raw, rendered):
        unmapped[key] = snake_struct(raw)


# -- parts, contents, steps ----------------------------------------------------------


def read_parts(content: object, loc: Loc) -> list[tuple[Loc, dict[str, object]]]:
    obj = loc.expect_dict(content, "a Content object {role, parts[]}")
    parts, at = get_field(obj, loc, "parts")
    if parts is None:
        return []
    return [(pl, pl.expect_dict(p, "a Part object")) for pl, p in at.items(parts, PARTS)]


def join_texts(texts: list[str]) -> str:
    # As google-adk reads a Content: non-empty text parts joined by newlines.
    return "\n".join(t for t in texts if t)


def is_thought(part: Mapping[str, object]) -> bool:
    """Whether a text part is a thought that the followed google-adk leaves out of a
    Content's text (google-adk after 2.13; `_adk_version`)."""
    # The version is read first, so that a bad ASSAY_ADK_VERSION is reported on any text.
    return not thoughts_are_text() and part.get("thought") is True


def text_of(parts: list[tuple[Loc, dict[str, object]]]) -> str | None:
    texts = [
        t for pl, p in parts if (t := get_str(p, pl, "text")) is not None and not is_thought(p)
    ]
    return join_texts(texts) if texts else None


def read_final_text(raw: object, loc: Loc) -> str | None:
    return text_of(read_parts(raw, loc))


def read_tool_call(raw: object, loc: Loc) -> ToolCall:
    obj = loc.expect_dict(raw, "a function call {id?, name, args}")
    args, at = get_field(obj, loc, "args")
    return ToolCall(
        id=get_str(obj, loc, "id"),
        name=need_str(obj, loc, "name"),
        args={} if args is None else at.expect_dict(args, "args: an object"),
    )


def read_tool_response(raw: object, loc: Loc) -> ToolResponse:
    obj = loc.expect_dict(raw, "a function response {id?, name, response}")
    return ToolResponse(
        id=get_str(obj, loc, "id"),
        name=need_str(obj, loc, "name"),
        response=get_field(obj, loc, "response")[0],
    )


def read_user_input(raw: object, loc: Loc, ext: Mapping[str, object] | None = None) -> UserInput:
    parts = read_parts(raw, loc)
    blobs, responses = [], []
    for pl, part in parts:
        blob, bl = get_field(part, pl, "inline_data")
        if blob is not None:
            b = bl.expect_dict(blob, "inline_data: {mime_type, data}")
            blobs.append(Blob(mime_type=need_str(b, bl, "mime_type"), data=need_str(b, bl, "data")))
        response, rl = get_field(part, pl, "function_response")
        if response is not None:
            responses.append(read_tool_response(response, rl))
    data = {"text": text_of(parts), "blobs": blobs, "tool_responses": responses, **(ext or {})}
    return validate(UserInput, data, loc, "user content")


def read_steps(raw: object, loc: Loc) -> list[Step]:
    obj = loc.expect_dict(raw, SHAPE_DATA)
    events, at = get_field(obj, loc, "invocation_events")
    if events is not None:
        return read_events(events, at)
    steps: list[Step] = []
    uses, at = get_field(obj, loc, "tool_uses")
    what = "tool_uses: a list of function calls {id?, name, args}"
    steps += [Step(tool_call=read_tool_call(u, ul)) for ul, u in at.items(uses or [], what)]
    resp, at = get_field(obj, loc, "tool_responses")
    what = "tool_responses: a list of function responses {id?, name, response}"
    steps += [Step(tool_response=read_tool_response(r, rl)) for rl, r in at.items(resp or [], what)]
    inter, at = get_field(obj, loc, "intermediate_responses")
    for il, item in at.items(inter or [], "intermediate_responses: a list of [author, parts]"):
        if not isinstance(item, list) or len(item) != 2:
            raise il.error(f"got {type_name(item)}", expected="an [author, parts] pair")
        author = il.idx(0).expect_str(item[0], "the author: a string")
        parts = [(pl, pl.expect_dict(p, "a Part object")) for pl, p in il.idx(1).items(item[1])]
        text = text_of(parts)
        if text is not None:
            steps.append(Step(agent_message=AgentMessage(author=author or None, text=text)))
    return steps


def read_events(events: object, loc: Loc) -> list[Step]:
    steps: list[Step] = []
    for el, raw in loc.items(events, "invocation_events: a list of events {author, content}"):
        event = el.expect_dict(raw, "an event {author, content}")
        author = need_str(event, el, "author") or None
        ext, xl = get_field(event, el, "assay_step")
        if ext is not None:
            steps.append(validate(Step, xl.expect_dict(ext), xl, "one assay step"))
            continue
        content, cl = get_field(event, el, "content")
        run: list[str] = []  # consecutive text parts of one event make one message
        for pl, part in read_parts(content, cl) if content is not None else []:
            text = get_str(part, pl, "text")
            if text is not None:
                if not is_thought(part):
                    run.append(text)
                continue
            if run:
                steps.append(Step(agent_message=AgentMessage(author=author, text=join_texts(run))))
                run = []
            call, fl = get_field(part, pl, "function_call")
            if call is not None:
                steps.append(Step(tool_call=read_tool_call(call, fl)))
            response, rl = get_field(part, pl, "function_response")
            if response is not None:
                steps.append(Step(tool_response=read_tool_response(response, rl)))
        if run:
            steps.append(Step(agent_message=AgentMessage(author=author, text=join_texts(run))))
    return steps


def read_rubrics(raw: object, loc: Loc) -> list[Rubric]:
    what = "a rubric {rubric_id, rubric_content: {text_property}, type?}"
    out = []
    for rl, item in loc.items(raw, f"rubrics: a list of {what}"):
        obj = rl.expect_dict(item, what)
        content, cl = get_field(obj, rl, "rubric_content")
        if content is None:
            raise cl.error("missing", expected="rubric_content: {text_property?: string}")
        # ADK's text_property is optional: `rubric_content: {}` is a rubric without text.
        text = get_str(cl.expect_dict(content, "{text_property?}"), cl, "text_property")
        kind = get_str(obj, rl, "type")
        rid = need_str(obj, rl, "rubric_id")
        out.append(Rubric(id=rid, text=text, type=kind))
    return out


def read_persona(raw: object, loc: Loc) -> Persona | str:
    if isinstance(raw, str):
        return raw
    obj = loc.expect_dict(raw, 'user_persona: a preset id such as "NOVICE" or {id, ...}')
    behaviors, bl = get_field(obj, loc, "behaviors")
    lines: list[str] = []
    for one_l, one in bl.items(behaviors or [], "behaviors: a list of behaviors"):
        b = one_l.expect_dict(one, "a behavior {name, description, behavior_instructions[]}")
        if (description := get_str(b, one_l, "description")) is not None:
            lines.append(description)
        steps, sl = get_field(b, one_l, "behavior_instructions")
        lines += [f"- {il.expect_str(s)}" for il, s in sl.items(steps or [], "a list of strings")]
    return Persona(
        id=need_str(obj, loc, "id"),
        description=get_str(obj, loc, "description") or None,
        personality="\n".join(lines) if lines else None,
    )


def read_session(raw: object, loc: Loc) -> SessionInput:
    obj = loc.expect_dict(raw, "session_input: {app_name, user_id, state}")
    state, sl = get_field(obj, loc, "state")
    return SessionInput(
        app_name=get_str(obj, loc, "app_name") or None,
        user_id=get_str(obj, loc, "user_id") or None,
        state={} if state is None else sl.expect_dict(state, "state: an object"),
    )


# -- rendering (snake_case, as google-adk validates it) --------------------------------


def render_call(c: ToolCall) -> dict[str, object]:
    return {**({"id": c.id} if c.id is not None else {}), "name": c.name, "args": c.args}


def render_response(r: ToolResponse) -> dict[str, Any]:
    # genai wants an object or nothing; other values travel as ADK tools return them,
    # {output: ...} (`fit` reports them: they read back as that object).
    body = r.response if isinstance(r.response, dict) else {"output": r.response}
    out = {**({"id": r.id} if r.id is not None else {}), "name": r.name}
    return out if r.response is None else {**out, "response": body}


def render_text(text: str) -> dict[str, object]:
    return {"role": "model", "parts": [{"text": text}]}


def render_user(u: UserInput) -> dict[str, object]:
    parts: list[dict[str, Any]] = [] if u.text is None else [{"text": u.text}]
    parts += [{"inline_data": {"mime_type": b.mime_type, "data": b.data}} for b in u.blobs]
    parts += [{"function_response": render_response(r)} for r in u.tool_responses]
    return {"role": "user", "parts": parts}


def render_steps(steps: list[Step]) -> dict[str, object]:
    ranks = [_RANK.get(s.kind, -1) for s in steps]
    if min(ranks, default=0) >= 0 and ranks == sorted(ranks):
        return {
            "tool_uses": [render_call(c) for s in steps if (c := s.tool_call)],
            "tool_responses": [render_response(r) for s in steps if (r := s.tool_response)],
            "intermediate_responses": [
                [m.author or "", [{"text": m.text}]]
                for s in steps if (m := s.agent_message) is not None
            ],
        }  # fmt: skip
    # Steps interleave: only the event list keeps their order. ADK wants an author on
    # every event; tool events take the nearest agent's name.
    author = next((m.author for s in steps if (m := s.agent_message) and m.author), "agent")
    events = []
    for s in steps:
        if (m := s.agent_message) is not None:
            author = m.author or author
            events.append({"author": m.author or "", "content": render_text(m.text)})
        elif s.tool_call is not None:
            part = {"function_call": render_call(s.tool_call)}
            events.append({"author": author, "content": {"role": "model", "parts": [part]}})
        elif s.tool_response is not None:
            part = {"function_response": render_response(s.tool_response)}
            events.append({"author": author, "content": {"role": "user", "parts": [part]}})
        else:
            dumped = s.model_dump(mode="json", exclude_none=True)
            events.append({"author": author, "assay_step": dumped})
    return {"invocation_events": events}


def _rubric_content(r: Rubric) -> dict[str, object]:
    return {"text_property": r.text} if r.text is not None else {}


def render_rubrics(rubrics: list[Rubric]) -> list[dict[str, Any]]:
    return [
        {"rubric_id": r.id, "rubric_content": _rubric_content(r)}
        | ({"type": r.type} if r.type is not None else {})
        for r in rubrics
    ]


def render_persona(p: Persona | str) -> object:
    if isinstance(p, str):
        return p
    behaviors = [] if p.personality is None else [
        {"name": "personality", "description": p.personality,
         "behavior_instructions": [], "violation_rubrics": []}
    ]  # fmt: skip
    return {"id": p.id, "description": p.description or "", "behaviors": behaviors}


def render_session(s: SessionInput) -> dict[str, object]:
    return {"app_name": s.app_name or "", "user_id": s.user_id or "", "state": s.state}


def pick(raw: object, rendered: object, same: Callable[[object], bool]) -> object:
    """The verbatim input while it still means what the model says, else the rendering."""
    if raw is not None:
        try:
            if same(raw):
                return raw
        except InputError:
            pass  # kept input no longer parses (edited metadata): the model decides
    return rendered
