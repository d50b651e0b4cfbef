"""Vertex cells: trajectories, and the less common columns (case fields, rubric groups,
latency and failure).

See `assay.formats.vertex` for the row shape. `STEP_FIELDS` and `RUBRIC_GROUPS` are
the metadata keys under which loading keeps what the model has no field for, and from
which writing restores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.core.cases import Rubric, RubricType, SessionInput, Step
from assay.formats._build import new_call, new_step, step_shell, tool_response
from assay.formats._columns import (
    content_text,
    decode_json,
    parse_expected,
    parse_str,
    parse_str_list,
    row_error,
)
from assay.formats._common import Loc, type_name, validate

STEP_FIELDS = "vertex:step_fields"
RUBRIC_GROUPS = "vertex:rubric_groups"
_FAILED = "agent call failed"
_TRAJECTORY = "a list of {tool_name, tool_input} objects (or a JSON string of one)"


def cell_path(base: str, index: int, key: str) -> str:
    """The JSON path of column `key` of row `index` of the rows at `base`."""
    return f"{base}[{index}].{key}"


def trajectory(
    value: Any,
    steps: list[Step],
    file: str | None,
    case_id: str,
    at: tuple[str, int, str],
    names: dict[str, str],
    owned: bool,
) -> list[dict[str, object]] | None:
    """Append the steps of a trajectory cell to `steps`; return its steps' other keys
    (None when there are none).

    `at` is `(base, row index, column)`, spelled out as a JSON path for errors only.
    The tool-call steps are built inline (as `_build.call_step_of` builds them): this
    loop runs for every step of every row. `owned` cells (parsed for this load) give
    their `tool_input` objects to the calls; other cells' are copied.
    """
    if type(value) is not list:
        value = decode_json(value, list, file, case_id, cell_path(*at), _TRAJECTORY)
    append = steps.append
    fields: list[dict[str, Any]] | None = None
    same_name = names.setdefault
    for i, item in enumerate(value):
        if type(item) is not dict:
            if not isinstance(item, Mapping):
                raise row_error(
                    file,
                    case_id,
                    cell_path(*at) + f"[{i}]",
                    f"got {type_name(item)}",
                    "a {tool_name, tool_input} object",
                )
            item = dict(item)
        name = item.get("tool_name")
        if type(name) is not str:
            raise row_error(
                file,
                case_id,
                cell_path(*at) + f"[{i}].tool_name",
                f"got {type_name(name)}",
                "a string tool name",
            )
        args = item.get("tool_input")
        if args is None:
            args = {}
        elif type(args) is not dict:
            raise row_error(
                file,
                case_id,
                cell_path(*at) + f"[{i}].tool_input",
                f"got {type_name(args)}",
                "an object of tool arguments",
            )
        elif not owned:
            args = dict(args)
        name = same_name(name, name)
        step, values = new_step()  # as `_build.call_step_of`: parent first
        call, call_values = new_call()
        call_values["name"] = name
        call_values["args"] = args
        values["tool_call"] = call
        append(step)
        if len(item) - ("tool_input" in item) > 1:
            output = item.get("tool_output")
            if output is not None:
                response_step, response_values = step_shell("tool_response")
                append(response_step)
                response_values["tool_response"] = tool_response(name, output)
            rest = {
                k: v for k, v in item.items() if k not in ("tool_name", "tool_input", "tool_output")
            }
            if rest:
                if fields is None:
                    fields = [{} for _ in range(len(value))]
                fields[i] = rest
    return fields


def optional_columns(
    row: dict[str, object], file: str | None, case_id: str, prefix: str, response: str | None
) -> tuple[dict[str, object] | None, dict[str, object] | None, str | None]:
    """Parse the less common columns of `row` (at JSON path `prefix`).

    Returns the case fields they set (rubric groups' layout under `RUBRIC_GROUPS`),
    the actual turn's `latency_s` / `error`, and the response (from `responses` when
    `response` is None).
    """

    def path(key: str) -> str:
        return f"{prefix}.{key}"

    extra: dict[str, Any] = {}
    turn_extra: dict[str, Any] = {}
    get = row.get
    if response is None and get("responses") is not None:
        cands = get("responses")
        if not isinstance(cands, list) or len(cands) != 1:
            raise row_error(
                file,
                case_id,
                path("responses"),
                "not a one-element list",
                "one response candidate (several are not supported)",
            )
        cand = cands[0]
        if isinstance(cand, Mapping) and "response" in cand:
            cand = cand["response"]
        response = content_text(cand, file, case_id, path("responses") + "[0]")
    if (v := get("latency_in_seconds")) is not None:
        turn_extra["latency_s"] = _number(v, file, case_id, path("latency_in_seconds"))
    if (v := get("failure")) is not None:
        if _flag(v, file, case_id, path("failure")):
            turn_extra["error"] = _FAILED
        else:
            turn_extra.setdefault("error", None)
    if (v := get("tags")) is not None:
        extra["tags"] = parse_str_list(v, file, case_id, path("tags"))
    if (v := get("description")) is not None:
        extra["description"] = parse_str(v, file, case_id, path("description"))
    if (v := get("rubric_groups")) is not None:
        extra["rubrics"], extra[RUBRIC_GROUPS] = _rubric_groups(
            v, file, case_id, path("rubric_groups")
        )
    extra.update(parse_expected(row, file, case_id, prefix))
    if (v := get("session_input")) is not None:
        where = path("session_input")
        obj = decode_json(v, dict, file, case_id, where, "an object")
        extra["session_input"] = validate(
            SessionInput, obj, Loc(file, where, case_id), "{app_name, user_id, state}"
        )
    if (v := get("final_session_state")) is not None:
        where = path("final_session_state")
        extra["final_session_state"] = decode_json(v, dict, file, case_id, where, "an object")
    return extra or None, turn_extra or None, response


def _number(value: object, file: str | None, case_id: str, path: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    elif hasattr(value, "__float__"):  # numpy scalars from DataFrames
        return float(value)
    raise row_error(file, case_id, path, f"got {type_name(value)} {value!r}", "a number")


def _flag(value: object, file: str | None, case_id: str, path: str) -> bool:
    if isinstance(value, str):
        value = {"0": 0, "1": 1, "false": 0, "true": 1}.get(value.strip().lower(), value)
    if hasattr(value, "__int__") and not isinstance(value, str) and value in (0, 1):
        return bool(value)
    raise row_error(file, case_id, path, f"got {value!r}", "0 or 1")


def _rubric_groups(
    value: object, file: str | None, case_id: str, path: str
) -> tuple[list[Rubric], dict[str, object] | None]:
    groups = decode_json(value, dict, file, case_id, path, "an object of named rubric groups")
    rubrics: list[Rubric] = []
    layout: dict[str, Any] = {}
    seen: set[str] = set()
    types = {t.value for t in RubricType}
    for gname, group in groups.items():
        gpath = f"{path}.{gname}"
        if not isinstance(group, Mapping) or not isinstance(group.get("rubrics", []), list):
            raise row_error(
                file, case_id, gpath, "not a rubric group", "{group_id?, rubrics: [...]}"
            )
        entries = []
        for j, item in enumerate(group.get("rubrics", [])):
            rpath = f"{gpath}.rubrics[{j}]"
            content = item.get("content") if isinstance(item, Mapping) else None
            prop = content.get("property") if isinstance(content, Mapping) else None
            text = prop.get("description") if isinstance(prop, Mapping) else None
            if not isinstance(text, str):
                raise row_error(
                    file,
                    case_id,
                    rpath,
                    "no rubric text",
                    "{rubric_id, content: {property: {description}}}",
                )
            rid = item.get("rubric_id", f"{gname}-{j + 1}")
            if not isinstance(rid, str):
                raise row_error(
                    file, case_id, f"{rpath}.rubric_id", f"got {type_name(rid)}", "a string"
                )
            if rid in seen:
                raise row_error(
                    file,
                    case_id,
                    f"{rpath}.rubric_id",
                    f"duplicate rubric id {rid!r}",
                    "rubric ids unique in a case",
                )
            seen.add(rid)
            rtype = item.get("type")
            mapped = rtype in types
            rubrics.append(Rubric(id=rid, text=text, type=RubricType(rtype) if mapped else None))
            rest = {
                k: v
                for k, v in item.items()
                if k not in ("rubric_id", "content") and not (k == "type" and mapped)
            }
            entries.append({"rubric_id": rid, **rest})
        layout[gname] = {**{k: v for k, v in group.items() if k != "rubrics"}, "rubrics": entries}
    if layout == {"rubrics": {"rubrics": [{"rubric_id": r.id} for r in rubrics]}}:
        return rubrics, None  # the layout `dump` writes by default: nothing to remember
    return rubrics, layout
