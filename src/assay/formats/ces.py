"""Google CES `Evaluation` resources (SPEC §2.6), camelCase JSON or YAML.

One Evaluation is one `EvalCase` (id: `name`, else `displayName`; `displayName` is kept
in metadata). A file holds one Evaluation, a list of them, or `{evaluations: [...],
evaluationExpectations?: [...], name?, description?}`; the set id is the file name.

- `golden.turns[].steps[]` → `EvalCase.reference`: `userInput` steps (text, dtmf,
  audio, image, blob, variables, event, toolResponses; one of each kind per turn) merge
  into `Turn.user_input` (audio becomes a blob of type `audio/*`; `willContinue` is not
  kept); `agentTransfer` steps become `agent_transfer` steps; `expectation` steps become
  `Turn.expectations` (tool call, tool response, agent response with its text chunks
  joined, agent transfer, updated variables or mock tool response, plus the note). A
  turn's `rootSpan` is kept in metadata (`ces:root_spans`).
- `scenario` → `EvalCase.scenario`: task, userFacts, maxTurns, rubrics (strings, given
  the ids `rubric-1`, `rubric-2`, ...), scenarioExpectations, variableOverrides,
  userGoalBehavior, plus assay's startingPrompt, conversationPlan, persona, initiator.
- `evaluationExpectations` (golden or scenario): references (display or resource
  names) stay in metadata (`ces:evaluation_expectations`); inline resources become case
  rubrics `{id: displayName, text: llmCriteria.prompt}`.
- Other top-level keys (evaluationDatasets, createTime, etag, ...) stay in metadata.

A stand-alone `EvaluationExpectation` resource (`{name?, displayName, llmCriteria:
{prompt}, tags?}`) loads as an `EvalSet` without cases holding it in metadata
(`evaluation_expectations`). `link_expectations` turns references into case rubrics
when resources and evaluations are loaded together; loading an evaluation file does so
by itself with the resources of a CES export folder `evaluationExpectations/` beside the
file's folder (or one level higher). Unresolved references stay references.

The cxas-scrapi golden shorthand YAML (`common_session_parameters`, `conversations[
{conversation, tags, session_parameters, turns[{user, agent, tool_calls[{action,
args}]}], expectations[]}]`) loads too: session parameters become the first turn's
variables, agent replies and tool calls expectations, conversation expectations rubrics
(`expectation-1`, ...). Its turn-eval shorthand (typed `contains` / `tool_output`
checks) has no CES equivalent and is refused with an error.

Writing produces camelCase JSON (YAML for `.yaml` / `.yml`). Reference tool calls,
tool responses, variable updates and final responses become the matching
expectations; recorded (actual) turns, expected responses/facts/context, guidelines,
session state and intermediate agent messages have no CES form and raise an error.
Turn ids, timings and token usage, the session's app name and user id, and timestamps
are not written (an Evaluation belongs to an app by its resource path).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

import yaml

from assay.errors import InputError
from assay.formats._common import Loc, check_unique_ids, read_structured
from assay.model.core import (
    AgentTransfer,
    Blob,
    EvalCase,
    EvalSet,
    Expectation,
    Initiator,
    Persona,
    Rubric,
    Scenario,
    ScenarioExpectation,
    Step,
    ToolCall,
    ToolExpectation,
    ToolResponse,
    Turn,
    UserFact,
    UserGoalBehavior,
    UserInput,
)

NAME = "ces"

REFS = "ces:evaluation_expectations"
ROOT_SPANS = "ces:root_spans"
RESOURCES = "evaluation_expectations"
DISPLAY = "displayName"
AUDIO = "audio/*"
_OWN_KEYS = {"name", "displayName", "description", "tags", "golden", "scenario"}


# ----------------------------------------------------------------------------- detection


def _is_evaluation(d: Any) -> bool:
    if not isinstance(d, Mapping):
        return False
    golden, scenario = d.get("golden"), d.get("scenario")
    return (isinstance(golden, Mapping) and "turns" in golden) or (
        isinstance(scenario, Mapping)
        and bool(scenario.keys() & {"task", "rubrics", "scenarioExpectations", "userFacts"})
    )


def _is_resource(d: Any) -> bool:
    return isinstance(d, Mapping) and isinstance(d.get("llmCriteria"), Mapping)


def _is_scrapi(d: Any) -> bool:
    convs = d.get("conversations") if isinstance(d, Mapping) else None
    return (
        isinstance(convs, list)
        and bool(convs)
        and all(isinstance(c, Mapping) and "conversation" in c for c in convs)
    )


def detect(path: Path | None, data: Any) -> bool:
    if isinstance(data, list):
        return bool(data) and all(_is_evaluation(d) for d in data)
    if isinstance(data, Mapping) and isinstance(data.get("evaluations"), list):
        return all(_is_evaluation(d) for d in data["evaluations"])
    return _is_evaluation(data) or _is_resource(data) or _is_scrapi(data)


# ----------------------------------------------------------------------------- loading


def load_data(data: Any, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet:
    """Load CES evaluations (or an expectation resource, or scrapi goldens) into a set."""
    if mapping:
        raise InputError(
            "CES evaluations take no column mapping", file=file, expected="no --map for --from ces"
        )
    root = Loc(file)
    name = description = None
    resources: list[dict[str, Any]] = []
    set_meta: dict[str, Any] = {}
    if isinstance(data, list):
        cases = [_evaluation(loc, d) for loc, d in root.items(data)]
    elif isinstance(data, Mapping) and "evaluations" in data:
        cases = [
            _evaluation(loc, d)
            for loc, d in root.key("evaluations").items(
                data["evaluations"], "a list of evaluations"
            )
        ]
        for loc, res in root.key("evaluationExpectations").items(
            data.get("evaluationExpectations", [])
        ):
            resources.append(_resource(loc, res))
        for key in ("name", "description"):
            if data.get(key) is not None:
                root.key(key).expect_str(data[key])
        name = data.get("name")
        description = data.get("description")
        set_meta = {
            k: v
            for k, v in data.items()
            if k not in ("evaluations", "evaluationExpectations", "name", "description")
        }
    elif _is_resource(data):
        cases, resources = [], [_resource(root, data)]
    elif _is_scrapi(data):
        cases = _scrapi(root, data)
    else:
        cases = [_evaluation(root, data)]
    check_unique_ids([c.id for c in cases], file)
    if resources:
        set_meta[RESOURCES] = resources
    set_id = Path(file).stem if file else (cases[0].id if len(cases) == 1 else "ces")
    evalset = EvalSet(id=set_id, name=name, description=description, cases=cases, metadata=set_meta)
    if any(c.metadata.get(REFS) for c in cases):
        found = _export_resources(Path(file)) if file is not None else []
        if found or resources:
            evalset = link_expectations([evalset, *found])[0]
    return evalset


def _resource(loc: Loc, data: Any) -> dict[str, Any]:
    res = loc.expect_dict(data, "an EvaluationExpectation {displayName, llmCriteria: {prompt}}")
    criteria = loc.key("llmCriteria").expect_dict(res.get("llmCriteria"), "{prompt}")
    loc.key("llmCriteria").key("prompt").expect_str(criteria.get("prompt"))
    if not isinstance(res.get(DISPLAY) or res.get("name"), str):
        raise loc.error("no displayName or name", expected="a named expectation")
    return res


def _evaluation(loc: Loc, data: Any) -> EvalCase:
    ev = loc.expect_dict(data, "a CES Evaluation object")
    case_id = ev.get("name") or ev.get(DISPLAY)
    if not isinstance(case_id, str):
        raise loc.error("the evaluation has no name or displayName", expected="a string name")
    loc = loc.case(case_id)
    meta: dict[str, Any] = {}
    if isinstance(ev.get(DISPLAY), str):
        meta[DISPLAY] = ev[DISPLAY]
    rubrics: list[Rubric] = []
    reference = scenario = None
    if "golden" in ev:
        golden = loc.key("golden").expect_dict(ev["golden"], "{turns, evaluationExpectations}")
        reference = [
            _turn(tl, t, meta, i)
            for i, (tl, t) in enumerate(
                loc.key("golden").key("turns").items(golden.get("turns"), "a list of golden turns")
            )
        ]
        rubrics = _expectation_refs(loc.key("golden"), golden, meta)
    elif "scenario" in ev:
        sc = loc.key("scenario").expect_dict(ev["scenario"], "a scenario object")
        scenario = _scenario(loc.key("scenario"), sc)
        rubrics = _expectation_refs(loc.key("scenario"), sc, meta)
    else:
        raise loc.error(
            "neither golden nor scenario", expected="an Evaluation with golden turns or a scenario"
        )
    tags = [
        loc.key("tags").idx(i).expect_str(t)
        for i, t in enumerate(loc.key("tags").expect_list(ev.get("tags", []), "a list of strings"))
    ]
    description = ev.get("description")
    if description is not None:
        loc.key("description").expect_str(description)
    meta.update((k, v) for k, v in ev.items() if k not in _OWN_KEYS)
    return EvalCase(
        id=case_id,
        tags=tags,
        description=description,
        reference=reference,
        scenario=scenario,
        rubrics=rubrics,
        metadata=meta,
    )


def _expectation_refs(loc: Loc, body: Mapping[str, Any], meta: dict[str, Any]) -> list[Rubric]:
    refs: list[str] = []
    rubrics: list[Rubric] = []
    for item_loc, item in loc.key("evaluationExpectations").items(
        body.get("evaluationExpectations", [])
    ):
        if isinstance(item, str):
            refs.append(item)
        else:
            res = _resource(item_loc, item)
            extra = set(res) - {DISPLAY, "name", "llmCriteria"}
            if extra or set(res["llmCriteria"]) != {"prompt"}:
                raise item_loc.error(
                    f"unsupported keys {sorted(extra)}",
                    expected="an inline {displayName, llmCriteria: {prompt}}",
                )
            rubrics.append(
                Rubric(id=res.get(DISPLAY) or res["name"], text=res["llmCriteria"]["prompt"])
            )
    if refs:
        meta[REFS] = refs
    return rubrics


def _tool_name(loc: Loc, d: Mapping[str, Any]) -> str:
    if isinstance(d.get("tool"), str):
        return str(d["tool"])
    ts = d.get("toolsetTool")
    if isinstance(ts, Mapping) and isinstance(ts.get("toolset"), str):
        # Encoded as the tool's resource path so a round trip can restore it.
        return f"{ts['toolset']}/tools/{ts['toolId']}" if ts.get("toolId") else ts["toolset"]
    raise loc.error("no tool", expected="tool (a name) or toolsetTool {toolset, toolId}")


def _call(loc: Loc, data: Any) -> ToolCall:
    d = loc.expect_dict(data, "a tool call {tool, args}")
    args = loc.key("args").expect_dict(d.get("args", {}), "an object of arguments")
    return ToolCall(id=d.get("id"), name=_tool_name(loc, d), args=args)


def _response(loc: Loc, data: Any) -> ToolResponse:
    d = loc.expect_dict(data, "a tool response {tool, response}")
    return ToolResponse(id=d.get("id"), name=_tool_name(loc, d), response=d.get("response"))


def _agent_text(loc: Loc, data: Any) -> str:
    d = loc.expect_dict(data, "a message {role, chunks: [{text}]}")
    texts = []
    for cl, chunk in loc.key("chunks").items(d.get("chunks"), "a list of text chunks"):
        texts.append(
            cl.key("text").expect_str(
                chunk.get("text") if isinstance(chunk, Mapping) else None, "a text chunk"
            )
        )
    return "".join(texts)


_EXPECT = (
    "toolCall",
    "toolResponse",
    "agentResponse",
    "agentTransfer",
    "updatedVariables",
    "mockToolResponse",
)


def _expectation(loc: Loc, data: Any) -> Expectation:
    d = loc.expect_dict(data, "a golden expectation")
    kinds = [k for k in _EXPECT if k in d]
    unknown = set(d) - {*_EXPECT, "note"}
    if len(kinds) != 1 or unknown:
        extra = f" and unknown keys {sorted(unknown)}" if unknown else ""
        raise loc.error(
            f"holds {kinds or 'no check'}{extra}",
            expected=f"a note and exactly one of {', '.join(_EXPECT)}",
        )
    kind, value, kl = kinds[0], d[kinds[0]], loc.key(kinds[0])
    note = d.get("note")
    if kind == "toolCall":
        return Expectation(note=note, tool_call=_call(kl, value))
    if kind == "toolResponse":
        return Expectation(note=note, tool_response=_response(kl, value))
    if kind == "mockToolResponse":
        return Expectation(note=note, mock_tool_response=_response(kl, value))
    if kind == "agentResponse":
        return Expectation(note=note, agent_response=_agent_text(kl, value))
    if kind == "agentTransfer":
        target = kl.key("targetAgent").expect_str(kl.expect_dict(value).get("targetAgent"))
        return Expectation(note=note, agent_transfer=target)
    return Expectation(note=note, updated_variables=kl.expect_dict(value))


def _user_input(loc: Loc, d: dict[str, Any], fields: dict[str, Any]) -> None:
    for key, value in d.items():
        kl = loc.key(key)
        if key == "willContinue":
            continue
        if key in ("image", "blob", "audio"):
            blob = (
                Blob(mime_type=AUDIO, data=kl.expect_str(value))
                if key == "audio"
                else Blob(
                    mime_type=kl.key("mimeType").expect_str(kl.expect_dict(value).get("mimeType")),
                    data=kl.key("data").expect_str(value.get("data")),
                )
            )
            fields.setdefault("blobs", []).append(blob)
            continue
        if key == "toolResponses":
            items = value.get("toolResponses") if isinstance(value, Mapping) else value
            parsed: Any = [_response(il, i) for il, i in kl.items(items, "a list of responses")]
            key = "tool_responses"
        elif key in ("text", "dtmf"):
            parsed = kl.expect_str(value)
        elif key == "event":
            parsed = value.get("event") if isinstance(value, Mapping) else value
            parsed = kl.expect_str(parsed, "an event {event: name}")
        elif key == "variables":
            parsed = kl.expect_dict(value)
        else:
            raise kl.error(
                "unknown user input",
                expected="text, dtmf, audio, image, blob, variables, event or toolResponses",
            )
        if key in fields:
            raise kl.error(f"a second {key} input in one turn", expected=f"one {key} per turn")
        fields[key] = parsed


def _turn(loc: Loc, data: Any, meta: dict[str, Any], index: int) -> Turn:
    d = loc.expect_dict(data, "a golden turn {steps}")
    if "rootSpan" in d:
        meta.setdefault(ROOT_SPANS, {})[str(index)] = d["rootSpan"]
    fields: dict[str, Any] = {}
    steps: list[Step] = []
    expectations: list[Expectation] = []
    for sl, step in loc.key("steps").items(d.get("steps"), "a list of steps"):
        s = sl.expect_dict(step, "a step {userInput | agentTransfer | expectation}")
        if len(s) != 1 or next(iter(s)) not in ("userInput", "agentTransfer", "expectation"):
            raise sl.error(
                f"keys {sorted(s)}", expected="exactly one of userInput, agentTransfer, expectation"
            )
        if "userInput" in s:
            _user_input(
                sl.key("userInput"), sl.key("userInput").expect_dict(s["userInput"]), fields
            )
        elif "agentTransfer" in s:
            tl = sl.key("agentTransfer")
            target = tl.key("targetAgent").expect_str(
                tl.expect_dict(s["agentTransfer"]).get("targetAgent")
            )
            steps.append(Step(agent_transfer=AgentTransfer(target_agent=target)))
        else:
            expectations.append(_expectation(sl.key("expectation"), s["expectation"]))
    return Turn(user_input=UserInput(**fields), steps=steps, expectations=expectations)


def _scenario(loc: Loc, sc: dict[str, Any]) -> Scenario:
    fields: dict[str, Any] = {}
    for key, value in sc.items():
        kl = loc.key(key)
        if key in ("task", "startingPrompt", "conversationPlan"):
            fields[
                {
                    "task": "task",
                    "startingPrompt": "starting_prompt",
                    "conversationPlan": "conversation_plan",
                }[key]
            ] = kl.expect_str(value)
        elif key == "userFacts":
            fields["user_facts"] = [
                UserFact(
                    name=il.key("name").expect_str(il.expect_dict(f).get("name")),
                    value=il.key("value").expect_str(f.get("value")),
                )
                for il, f in kl.items(value)
            ]
        elif key == "maxTurns":
            if not isinstance(value, int) or isinstance(value, bool):
                raise kl.error(f"got {value!r}", expected="an integer")
            fields["max_turns"] = value
        elif key == "rubrics":
            fields["rubrics"] = [
                Rubric(id=f"rubric-{i + 1}", text=il.expect_str(r))
                for i, (il, r) in enumerate(kl.items(value))
            ]
        elif key == "scenarioExpectations":
            fields["expectations"] = [_scenario_expectation(il, e) for il, e in kl.items(value)]
        elif key == "variableOverrides":
            fields["variable_overrides"] = kl.expect_dict(value)
        elif key in ("userGoalBehavior", "initiator"):
            enum: type[Enum] = UserGoalBehavior if key == "userGoalBehavior" else Initiator
            choices = [e.value for e in enum]
            if value not in choices:
                raise kl.error(f"got {value!r}", expected=f"one of {', '.join(choices)}")
            fields["user_goal_behavior" if key == "userGoalBehavior" else "initiator"] = value
        elif key == "persona":
            fields["persona"] = _persona(kl, value)
        elif key != "evaluationExpectations":
            raise kl.error(
                "unknown scenario field",
                expected="task, userFacts, maxTurns, rubrics, "
                "scenarioExpectations, variableOverrides, userGoalBehavior, "
                "evaluationExpectations, startingPrompt, conversationPlan, persona",
            )
    return Scenario(**fields)


def _persona(loc: Loc, value: Any) -> Persona | str:
    if isinstance(value, str):
        return value
    d = loc.expect_dict(value, "a persona id or {name, displayName, description, personality}")
    if set(d) - {"name", DISPLAY, "description", "personality"} or not isinstance(
        d.get("name"), str
    ):
        raise loc.error(
            f"keys {sorted(d)}", expected="{name, displayName?, description?, personality?}"
        )
    return Persona(
        id=d["name"],
        display_name=d.get(DISPLAY),
        description=d.get("description"),
        personality=d.get("personality"),
    )


def _scenario_expectation(loc: Loc, data: Any) -> ScenarioExpectation:
    d = loc.expect_dict(data, "{toolExpectation} or {agentResponse}")
    note = d.get("note")
    if "toolExpectation" in d and "agentResponse" not in d:
        tl = loc.key("toolExpectation")
        te = tl.expect_dict(d["toolExpectation"], "{expectedToolCall, mockToolResponse}")
        mock = te.get("mockToolResponse")
        return ScenarioExpectation(
            note=note,
            tool_expectation=ToolExpectation(
                expected_tool_call=_call(tl.key("expectedToolCall"), te.get("expectedToolCall")),
                mock_tool_response=None
                if mock is None
                else _response(tl.key("mockToolResponse"), mock),
            ),
        )
    if "agentResponse" in d and "toolExpectation" not in d:
        return ScenarioExpectation(
            note=note, agent_response=_agent_text(loc.key("agentResponse"), d["agentResponse"])
        )
    raise loc.error(f"keys {sorted(d)}", expected="exactly one of toolExpectation, agentResponse")


def _scrapi(root: Loc, data: Mapping[str, Any]) -> list[EvalCase]:
    convs = data["conversations"]
    if any("turns" not in c for c in convs):
        raise root.key("conversations").error(
            "this is a cxas-scrapi turn-eval file; its typed checks (contains, equals, "
            "tool_output, ...) have no CES Evaluation equivalent",
            expected="a CES Evaluation, or the scrapi golden shorthand with turns",
        )
    common = root.key("common_session_parameters").expect_dict(
        data.get("common_session_parameters") or {}
    )
    cases = []
    for cl, conv in root.key("conversations").items(convs):
        case_id = cl.key("conversation").expect_str(conv.get("conversation"))
        cl = cl.case(case_id)
        variables = {
            **common,
            **cl.key("session_parameters").expect_dict(conv.get("session_parameters") or {}),
        }
        turns = []
        for i, (tl, t) in enumerate(cl.key("turns").items(conv["turns"])):
            t = tl.expect_dict(t, "{user, agent, tool_calls}")
            user = t.get("user")
            exps = [
                Expectation(
                    tool_call=ToolCall(
                        name=al.key("action").expect_str(al.expect_dict(a).get("action")),
                        args=al.key("args").expect_dict(a.get("args") or {}),
                    )
                )
                for al, a in tl.key("tool_calls").items(t.get("tool_calls") or [])
            ]
            if t.get("agent") is not None:
                exps.append(Expectation(agent_response=tl.key("agent").expect_str(t["agent"])))
            turns.append(
                Turn(
                    user_input=UserInput(
                        text=None if user is None else tl.key("user").expect_str(user),
                        variables=variables if i == 0 and variables else None,
                    ),
                    expectations=exps,
                )
            )
        rubrics = [
            Rubric(id=f"expectation-{i + 1}", text=el.expect_str(e))
            for i, (el, e) in enumerate(
                cl.key("expectations").items(conv.get("expectations") or [])
            )
        ]
        tags = [str(t) for t in cl.key("tags").expect_list(conv.get("tags") or [])]
        cases.append(
            EvalCase(
                id=case_id, tags=tags, reference=turns, rubrics=rubrics, metadata={DISPLAY: case_id}
            )
        )
    return cases


# ----------------------------------------------------------------------------- linking


def link_expectations(evalsets: list[EvalSet]) -> list[EvalSet]:
    """Copies of `evalsets` whose cases get the expectation resources they refer to.

    Resources come from every set's `evaluation_expectations` metadata (stand-alone
    EvaluationExpectation files, or the `evaluationExpectations` of a wrapper file). A
    reference matches a resource's displayName, its name, or the last segment of its
    name; a match adds the rubric `{id: displayName, text: llmCriteria.prompt}` (once).
    """
    by_ref: dict[str, Rubric] = {}
    for es in evalsets:
        for res in es.metadata.get(RESOURCES, []):
            rid = res.get(DISPLAY) or res["name"]
            rubric = Rubric(id=rid, text=res["llmCriteria"]["prompt"])
            for key in (res.get(DISPLAY), res.get("name")):
                if isinstance(key, str):
                    by_ref[key] = rubric
                    by_ref[key.rsplit("/", 1)[-1]] = rubric
    out = []
    for es in evalsets:
        es = es.model_copy(deep=True)
        for case in es.cases:
            have = {r.id for r in case.rubrics}
            for ref in case.metadata.get(REFS, []):
                found = by_ref.get(ref) or by_ref.get(ref.rsplit("/", 1)[-1])
                if found is not None and found.id not in have:
                    case.rubrics.append(found.model_copy())
                    have.add(found.id)
        out.append(es)
    return out


def _export_resources(file: Path) -> list[EvalSet]:
    """Expectation resources of the CES export folder around an evaluation file."""
    for folder in (file.parent.parent, file.parent.parent.parent):
        res_dir = folder / "evaluationExpectations"
        if res_dir.is_dir():
            found = []
            for p in sorted(res_dir.rglob("*")):
                if p.suffix.lower() in (".json", ".yaml", ".yml") and p.is_file():
                    data = read_structured(p)
                    if _is_resource(data):
                        found.append(load_data(data, file=str(p), mapping=None))
            return found
    return []


# ----------------------------------------------------------------------------- writing


def dump(evalset: EvalSet) -> Any:
    """One Evaluation object, an expectation resource, or `{evaluations: [...]}`."""
    evaluations = [_dump_case(c) for c in evalset.cases]
    resources = list(evalset.metadata.get(RESOURCES, []))
    others = {k: v for k, v in evalset.metadata.items() if k != RESOURCES}
    plain = evalset.name is None and evalset.description is None and not others
    if plain and len(evaluations) == 1 and not resources:
        return evaluations[0]
    if plain and not evaluations and len(resources) == 1:
        return resources[0]
    out: dict[str, Any] = {}
    if evalset.name is not None:
        out["name"] = evalset.name
    if evalset.description is not None:
        out["description"] = evalset.description
    out.update(others)
    out["evaluations"] = evaluations
    if resources:
        out["evaluationExpectations"] = resources
    return out


def write(evalset: EvalSet, path: Path) -> None:
    data = dump(evalset)
    if path.suffix.lower() in (".yaml", ".yml"):
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


def _dump_case(case: EvalCase) -> dict[str, Any]:
    def fail(message: str) -> InputError:
        return InputError(
            f"cannot be written as a CES Evaluation: {message}",
            case_id=case.id,
            expected="golden turns or a scenario; use adk or trace otherwise",
        )

    blocked = [
        f
        for f in (
            "actual",
            "expected_response",
            "expected_facts",
            "expected_retrieved_context",
            "guidelines",
            "final_session_state",
        )
        if getattr(case, f) is not None
    ]
    if case.session_input is not None and case.session_input.state:
        blocked.append("session_input.state")
    if blocked:
        raise fail(f"it has {', '.join(blocked)}")
    display = case.metadata.get(DISPLAY, case.id)
    out: dict[str, Any] = {} if case.id == display else {"name": case.id}
    out[DISPLAY] = display
    if case.description is not None:
        out["description"] = case.description
    if case.tags:
        out["tags"] = list(case.tags)
    for key, value in case.metadata.items():
        if key not in (DISPLAY, REFS, ROOT_SPANS):
            if key in _OWN_KEYS:
                raise fail(f"metadata key {key!r} collides with an Evaluation field")
            out[key] = value
    refs = list(case.metadata.get(REFS, []))
    linked = set(refs)
    inline = [
        {DISPLAY: r.id, "llmCriteria": {"prompt": r.text}}
        for r in case.rubrics
        if r.id not in linked
    ]
    if case.scenario is not None:
        body = _dump_scenario(case.scenario)
        key = "scenario"
    elif case.reference is not None:
        spans = case.metadata.get(ROOT_SPANS, {})
        body = {
            "turns": [_dump_turn(t, spans.get(str(i)), fail) for i, t in enumerate(case.reference)]
        }
        key = "golden"
    else:
        raise fail("it has neither reference turns nor a scenario")
    if refs or inline:
        body["evaluationExpectations"] = [*refs, *inline]
    out[key] = body
    return out


def _dump_tool(name: str) -> dict[str, Any]:
    if "/toolsets/" in name:
        toolset, sep, tool_id = name.partition("/tools/")
        return {"toolsetTool": {"toolset": toolset, **({"toolId": tool_id} if sep else {})}}
    return {"tool": name}


def _dump_call(call: ToolCall) -> dict[str, Any]:
    return {**({"id": call.id} if call.id else {}), **_dump_tool(call.name), "args": call.args}


def _dump_response(resp: ToolResponse) -> dict[str, Any]:
    return {
        **({"id": resp.id} if resp.id else {}),
        **_dump_tool(resp.name),
        "response": resp.response,
    }


def _dump_expectation(e: Expectation) -> dict[str, Any]:
    out: dict[str, Any] = {} if e.note is None else {"note": e.note}
    if e.tool_call is not None:
        out["toolCall"] = _dump_call(e.tool_call)
    elif e.tool_response is not None:
        out["toolResponse"] = _dump_response(e.tool_response)
    elif e.mock_tool_response is not None:
        out["mockToolResponse"] = _dump_response(e.mock_tool_response)
    elif e.agent_response is not None:
        out["agentResponse"] = {"role": "agent", "chunks": [{"text": e.agent_response}]}
    elif e.agent_transfer is not None:
        out["agentTransfer"] = {"targetAgent": e.agent_transfer}
    else:
        out["updatedVariables"] = e.updated_variables or {}
    return {"expectation": out}


def _dump_turn(t: Turn, span: Any, fail: Any) -> dict[str, Any]:
    ui = t.user_input
    steps: list[dict[str, Any]] = []
    if ui.variables is not None:
        steps.append({"userInput": {"variables": ui.variables}})
    if ui.event is not None:
        steps.append({"userInput": {"event": {"event": ui.event}}})
    if ui.text is not None:
        steps.append({"userInput": {"text": ui.text}})
    if ui.dtmf is not None:
        steps.append({"userInput": {"dtmf": ui.dtmf}})
    for blob in ui.blobs:
        kind = (
            "audio"
            if blob.mime_type == AUDIO
            else "image"
            if blob.mime_type.startswith("image/")
            else "blob"
        )
        value = blob.data if kind == "audio" else {"mimeType": blob.mime_type, "data": blob.data}
        steps.append({"userInput": {kind: value}})
    if ui.tool_responses:
        steps.append(
            {
                "userInput": {
                    "toolResponses": {
                        "toolResponses": [_dump_response(r) for r in ui.tool_responses]
                    }
                }
            }
        )
    checks: list[Expectation] = []
    for step in t.steps:
        if step.agent_transfer is not None:
            steps.append({"agentTransfer": {"targetAgent": step.agent_transfer.target_agent}})
        elif step.tool_call is not None:
            checks.append(Expectation(tool_call=step.tool_call))
        elif step.tool_response is not None:
            checks.append(Expectation(tool_response=step.tool_response))
        elif step.variables_update is not None:
            checks.append(Expectation(updated_variables=step.variables_update))
        else:
            raise fail(f"a reference turn holds a {step.kind} step")
    if t.final_response is not None:
        checks.append(Expectation(agent_response=t.final_response))
    if t.rubrics:
        raise fail("a reference turn has rubrics")
    steps.extend(_dump_expectation(e) for e in [*checks, *t.expectations])
    out: dict[str, Any] = {"steps": steps}
    if span is not None:
        out["rootSpan"] = span
    return out


def _dump_scenario(s: Scenario) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.task is not None:
        out["task"] = s.task
    if s.starting_prompt is not None:
        out["startingPrompt"] = s.starting_prompt
    if s.conversation_plan is not None:
        out["conversationPlan"] = s.conversation_plan
    if s.user_facts:
        out["userFacts"] = [{"name": f.name, "value": f.value} for f in s.user_facts]
    if s.max_turns is not None:
        out["maxTurns"] = s.max_turns
    if s.rubrics:
        out["rubrics"] = [r.text for r in s.rubrics]
    if s.expectations:
        out["scenarioExpectations"] = [_dump_scenario_expectation(e) for e in s.expectations]
    if s.variable_overrides:
        out["variableOverrides"] = s.variable_overrides
    if s.user_goal_behavior != UserGoalBehavior.USER_GOAL_SATISFIED:
        out["userGoalBehavior"] = s.user_goal_behavior.value
    if s.initiator.value != "USER":
        out["initiator"] = s.initiator.value
    if isinstance(s.persona, Persona):
        p = s.persona
        out["persona"] = {
            "name": p.id,
            **({DISPLAY: p.display_name} if p.display_name else {}),
            **({"description": p.description} if p.description else {}),
            **({"personality": p.personality} if p.personality else {}),
        }
    elif s.persona is not None:
        out["persona"] = s.persona
    return out


def _dump_scenario_expectation(e: ScenarioExpectation) -> dict[str, Any]:
    out: dict[str, Any] = {} if e.note is None else {"note": e.note}
    if e.tool_expectation is not None:
        te: dict[str, Any] = {"expectedToolCall": _dump_call(e.tool_expectation.expected_tool_call)}
        if e.tool_expectation.mock_tool_response is not None:
            te["mockToolResponse"] = _dump_response(e.tool_expectation.mock_tool_response)
        out["toolExpectation"] = te
    else:
        out["agentResponse"] = {"role": "agent", "chunks": [{"text": e.agent_response or ""}]}
    return out
