"""Personas of the simulated user: presets, persona files, and resolving a scenario's.

A scenario's `persona` is a `Persona` object or an id. Ids are looked up in the
personas the run was given (`SimulatorOptions.personas`, e.g. from `--persona-file`),
then among the presets ADK's user simulator ships (`NOVICE`, `EXPERT`, `EVALUATOR`,
described here in our own words). Lookups ignore case and also accept a CES resource
name (`.../personas/ID`) or a persona's display name. An id found nowhere is a
ConfigError naming the known ids; the engine reports the case as `CONFIG_ERROR`.

`load_personas(path)` reads a JSON or YAML file holding a list of personas, an object
`{"personas": [...]}` (a CES list response), or one persona. Each persona is CES's
`EvaluationPersona` (`name`, `displayName`, `description`, `personality`; resource
metadata such as `createTime` or `etag` is ignored) or ADK's `UserPersona` (`id`,
`description`, `behaviors[]`), whose behaviours become the personality text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from assay.core.cases import Persona
from assay.errors import ConfigError, InputError
from assay.formats._adk_content import read_persona
from assay.formats._common import Loc, read_structured

PRESET_PERSONAS: dict[str, Persona] = {
    "NOVICE": Persona(
        id="NOVICE",
        display_name="Novice",
        description=(
            "Someone with a problem they do not fully understand, who leans on the agent"
            " to guide them. Patient with questions, but unable to spot or fix the"
            " agent's mistakes."
        ),
        personality=(
            "- State only the broad goal you want next; wait for the agent to ask for"
            " the details, then give them.\n"
            "- Answer every question the agent asks as well as you can.\n"
            "- Do not correct the agent or troubleshoot its errors: if it fails, you end"
            " the conversation.\n"
            "- Speak casually and briefly, like a person in a chat."
        ),
    ),
    "EXPERT": Persona(
        id="EXPERT",
        display_name="Expert",
        description=(
            "Someone who knows exactly what they want and treats the agent as a tool to"
            " get it done quickly; little patience for small talk or needless questions."
        ),
        personality=(
            "- With each new request, give the goal and every detail needed for it at"
            " once.\n"
            "- Answer only questions relevant to your goals; steer the agent back when"
            " it drifts.\n"
            "- Point out the agent's mistakes and ask it to fix them, once; if it fails"
            " again, end the conversation.\n"
            "- Be brisk and professional."
        ),
    ),
    "EVALUATOR": Persona(
        id="EVALUATOR",
        display_name="Evaluator",
        description=("Someone checking whether the agent can accomplish the goals of the plan."),
        personality=(
            "- With each new request, give the goal and the details needed for it.\n"
            "- Answer only questions relevant to your goals.\n"
            "- Do not correct the agent; if it fails, end the conversation.\n"
            "- Speak naturally, as a customer would."
        ),
    ),
}

#: keys of a CES persona resource that carry no persona content
_RESOURCE_KEYS = frozenset({"createTime", "updateTime", "etag", "speechConfig", "uid"})
#: accepted spellings: CES's camelCase resource fields and our own model's snake_case
_FIELDS = {
    "name": "id",
    "id": "id",
    "displayName": "display_name",
    "display_name": "display_name",
    "description": "description",
    "personality": "personality",
}
_EXPECTED = (
    "a persona {name, displayName, description, personality} (CES) or"
    " {id, description, behaviors} (ADK)"
)


def _norm(key: str) -> str:
    return key.strip().rsplit("/personas/", 1)[-1].casefold()


def find_persona(persona_id: str, personas: Mapping[str, Persona]) -> Persona | None:
    """The persona `persona_id` names among `personas`, then the presets, or None."""
    wanted = _norm(persona_id)
    for pool in (personas, PRESET_PERSONAS):
        for key, persona in pool.items():
            names = (key, persona.id, persona.display_name or "")
            if any(name and _norm(name) == wanted for name in names):
                return persona
    return None


def resolve_persona(
    persona: Persona | str | None, personas: Mapping[str, Persona]
) -> Persona | None:
    """The scenario's persona as an object (None when it has none).

    Raises ConfigError for an id that names no known persona.
    """
    if persona is None or isinstance(persona, Persona):
        return persona
    found = find_persona(persona, personas)
    if found is None:
        known = sorted({*personas, *PRESET_PERSONAS})
        raise ConfigError(
            f"unknown persona {persona!r}; known personas are: {', '.join(known)}"
            " (give more with --persona-file FILE)"
        )
    return found


def _plain_persona(obj: dict[str, object], loc: Loc) -> Persona:
    unknown = set(obj) - set(_FIELDS) - _RESOURCE_KEYS
    if unknown:
        raise loc.error(f"unknown keys {sorted(unknown)}", expected=_EXPECTED)
    fields: dict[str, str] = {}
    for key, value in obj.items():
        if key in _FIELDS and value is not None:
            fields[_FIELDS[key]] = loc.key(key).expect_str(value, f"{key}: a string")
    persona_id = fields.pop("id", "").strip().rsplit("/personas/", 1)[-1]
    if not persona_id:
        raise loc.key("name").error("missing", expected="name (or id): the persona's id")
    return Persona(id=persona_id, **fields)


def _persona(raw: object, loc: Loc) -> Persona:
    obj = loc.expect_dict(raw, _EXPECTED)
    if "behaviors" in obj:
        found = read_persona(obj, loc)
        assert isinstance(found, Persona)  # an object never reads as a bare id
        return found
    return _plain_persona(obj, loc)


def personas_from_resources(bodies: Mapping[str, Mapping[str, object]]) -> dict[str, Persona]:
    """Personas from stored CES persona resources (`{id: body}`), keyed by id.

    The service snapshots an app's personas into each run, so scenarios naming a
    persona by id (or resource name, or display name) find the ones users created.
    """
    found: dict[str, Persona] = {}
    for persona_id, body in bodies.items():
        raw = {k: v for k, v in body.items() if k not in ("name", "id")}
        found[persona_id] = _persona({**raw, "name": persona_id}, Loc(f"personas/{persona_id}"))
    return found


def load_personas(path: str | Path) -> dict[str, Persona]:
    """Personas from a JSON or YAML file, keyed by id; InputError on a bad file."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such persona file", file=str(p))
    data = read_structured(p)
    loc = Loc(str(p))
    if isinstance(data, Mapping) and "personas" in data:
        loc = loc.key("personas")
        data = data["personas"]
    items = data if isinstance(data, list) else [data]
    if not items:
        raise loc.error("no personas", expected="a list of one or more personas")
    found: dict[str, Persona] = {}
    for i, raw in enumerate(items):
        at = loc.idx(i) if isinstance(data, list) else loc
        persona = _persona(raw, at)
        if persona.id in found:
            raise at.error(f"duplicate persona id {persona.id!r}", expected="unique ids")
        found[persona.id] = persona
    return found
