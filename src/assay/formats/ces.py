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

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import EvalCase, EvalSet, Rubric
from assay.errors import InputError
from assay.formats._ces_parts import (
    AUDIO,
    DISPLAY,
    OWN_KEYS,
    REFS,
    RESOURCES,
    ROOT_SPANS,
    read_scenario,
    read_turn,
)
from assay.formats._ces_scrapi import is_scrapi, load_scrapi
from assay.formats._ces_write import dump, write
from assay.formats._common import Loc, check_unique_ids, read_structured
from assay.formats._fit_ces import fit, is_synth

NAME = "ces"


# ----------------------------------------------------------------------------- detection


def _is_evaluation(d: object) -> bool:
    if not isinstance(d, Mapping):
        return False
    golden, scenario = d.get("golden"), d.get("scenario")
    return (isinstance(golden, Mapping) and "turns" in golden) or (
        isinstance(scenario, Mapping)
        and bool(scenario.keys() & {"task", "rubrics", "scenarioExpectations", "userFacts"})
    )


def _is_resource(d: object) -> bool:
    return isinstance(d, Mapping) and isinstance(d.get("llmCriteria"), Mapping)


def detect(path: Path | None, data: object) -> bool:
    if isinstance(data, list):
        return bool(data) and all(_is_evaluation(d) for d in data)
    if isinstance(data, Mapping) and isinstance(data.get("evaluations"), list):
        return all(_is_evaluation(d) for d in data["evaluations"])
    return _is_evaluation(data) or _is_resource(data) or is_scrapi(data)


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
    elif is_scrapi(data):
        cases = load_scrapi(root, data)
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
    if resources:
        # A resource a case links to is that case's rubric; only resources saying more
        # than a rubric does (a name, tags) or linked by no case stay in the metadata.
        linked = {(r.id, r.text) for case in evalset.cases for r in case.rubrics}
        kept = [
            r
            for r in resources
            if not (is_synth(r) and (r[DISPLAY], r["llmCriteria"]["prompt"]) in linked)
        ]
        if kept:
            evalset.metadata[RESOURCES] = kept
        else:
            evalset.metadata.pop(RESOURCES, None)
    return evalset


def _resource(loc: Loc, data: object) -> dict[str, Any]:
    res = loc.expect_dict(data, "an EvaluationExpectation {displayName, llmCriteria: {prompt}}")
    criteria = loc.key("llmCriteria").expect_dict(res.get("llmCriteria"), "{prompt}")
    loc.key("llmCriteria").key("prompt").expect_str(criteria.get("prompt"))
    if not isinstance(res.get(DISPLAY) or res.get("name"), str):
        raise loc.error("no displayName or name", expected="a named expectation")
    return res


def _evaluation(loc: Loc, data: object) -> EvalCase:
    ev = loc.expect_dict(data, "a CES Evaluation object")
    case_id = ev.get("name") or ev.get(DISPLAY)
    if not isinstance(case_id, str):
        raise loc.error("the evaluation has no name or displayName", expected="a string name")
    loc = loc.case(case_id)
    meta: dict[str, Any] = {}
    if isinstance(ev.get(DISPLAY), str) and ev[DISPLAY] != case_id:
        meta[DISPLAY] = ev[DISPLAY]  # the id is the name; the display name differs
    rubrics: list[Rubric] = []
    reference = scenario = None
    if "golden" in ev:
        golden = loc.key("golden").expect_dict(ev["golden"], "{turns, evaluationExpectations}")
        reference = [
            read_turn(tl, t, meta, i)
            for i, (tl, t) in enumerate(
                loc.key("golden").key("turns").items(golden.get("turns"), "a list of golden turns")
            )
        ]
        rubrics = _expectation_refs(loc.key("golden"), golden, meta)
    elif "scenario" in ev:
        sc = loc.key("scenario").expect_dict(ev["scenario"], "a scenario object")
        scenario = read_scenario(loc.key("scenario"), sc)
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
    meta.update((k, v) for k, v in ev.items() if k not in OWN_KEYS)
    return EvalCase(
        id=case_id,
        tags=tags,
        description=description,
        reference=reference,
        scenario=scenario,
        rubrics=rubrics,
        metadata=meta,
    )


def _expectation_refs(
    loc: Loc, body: Mapping[str, object], meta: dict[str, object]
) -> list[Rubric]:
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


# ----------------------------------------------------------------------------- linking


def link_expectations(evalsets: list[EvalSet]) -> list[EvalSet]:
    """Copies of `evalsets` whose cases get the expectation resources they refer to.

    Resources come from every set's `evaluation_expectations` metadata (stand-alone
    EvaluationExpectation files, or the `evaluationExpectations` of a wrapper file). A
    reference matches a resource's displayName, its name, or the last segment of its
    name; a match adds the rubric `{id: displayName, text: llmCriteria.prompt}` (once)
    and leaves the case's list of unresolved references.
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
            unresolved = []
            for ref in case.metadata.get(REFS, []):
                found = by_ref.get(ref) or by_ref.get(ref.rsplit("/", 1)[-1])
                if found is None:
                    unresolved.append(ref)
                elif found.id not in have:
                    case.rubrics.append(found.model_copy())
                    have.add(found.id)
            if unresolved:
                case.metadata[REFS] = unresolved
            else:
                case.metadata.pop(REFS, None)
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


__all__ = [
    "AUDIO",
    "DISPLAY",
    "NAME",
    "REFS",
    "RESOURCES",
    "ROOT_SPANS",
    "detect",
    "dump",
    "fit",
    "link_expectations",
    "load_data",
    "write",
]
