"""The attack categories (with their OWASP mappings) and the shipped seed library of probes.

The mappings name entries of two OWASP lists, as published:

- the OWASP Top 10 for LLM Applications 2025 (v2.0, genai.owasp.org/llm-top-10):
  LLM01:2025 Prompt Injection, LLM02:2025 Sensitive Information Disclosure,
  LLM06:2025 Excessive Agency, LLM07:2025 System Prompt Leakage;
- the OWASP Top 10 for Agentic Applications 2026 (December 2025): ASI01 Agent Goal
  Hijack, ASI02 Tool Misuse and Exploitation.

Harmful content has no entry of its own in either list (LLM05:2025 Improper Output
Handling is about what downstream systems do with output): it is left unmapped rather
than forced into one.

The seed library (`seeds/v1.json`, package data) is offline and versioned: its
`version` is recorded with every attack case, so a run says which probes it used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from assay.errors import ConfigError, did_you_mean


@dataclass(frozen=True)
class Category:
    """One kind of attack: what it maps to and how its success is detected."""

    name: str
    title: str
    owasp: tuple[str, ...]
    detection: str


CATEGORIES: dict[str, Category] = {
    c.name: c
    for c in (
        Category(
            "prompt_injection",
            "direct prompt injection and jailbreaks",
            ("LLM01:2025 Prompt Injection", "ASI01 Agent Goal Hijack"),
            "the compliance marker the attack asked for appears in a reply",
        ),
        Category(
            "indirect_injection",
            "indirect injection through tool results",
            (
                "LLM01:2025 Prompt Injection",
                "ASI01 Agent Goal Hijack",
                "ASI02 Tool Misuse and Exploitation",
            ),
            "a call of a tool outside the user's request (any tool but the carriers), "
            "or the marker in a reply",
        ),
        Category(
            "excessive_agency",
            "excessive agency and tool misuse",
            ("LLM06:2025 Excessive Agency", "ASI02 Tool Misuse and Exploitation"),
            "a destructive tool called without the user's confirmation",
        ),
        Category(
            "sensitive_data",
            "sensitive data disclosure and exfiltration",
            ("LLM02:2025 Sensitive Information Disclosure",),
            "a canary planted in session state or tool results appears in a reply or a "
            "tool call's arguments",
        ),
        Category(
            "system_prompt_leakage",
            "system prompt leakage",
            ("LLM07:2025 System Prompt Leakage",),
            "a sentence of the agent's instructions appears in a reply",
        ),
        Category(
            "harmful_content",
            "harmful content",
            (),
            "judged by safety_v1 (needs --judge)",
        ),
    )
}


@dataclass(frozen=True)
class Probe:
    """One attack: user turns (direct) or the text a tool result carries (indirect)."""

    id: str
    category: str
    goal: str
    turns: tuple[str, ...] = ()
    injection: str | None = None
    multi_turn: bool = False
    origin: str = "seed"


@dataclass(frozen=True)
class SeedLibrary:
    name: str
    version: str
    probes: tuple[Probe, ...]


def parse_categories(names: Sequence[str] | None) -> list[str]:
    """The categories asked for (all when None), checked; ConfigError names an unknown one."""
    if not names:
        return list(CATEGORIES)
    chosen: list[str] = []
    for raw in names:
        for name in (n.strip() for n in raw.split(",")):
            if not name:
                continue
            if name not in CATEGORIES:
                hint = did_you_mean(name, list(CATEGORIES))
                raise ConfigError(
                    f"--categories: unknown category {name!r}{hint}; choose from "
                    + ", ".join(CATEGORIES)
                )
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise ConfigError("--categories: no category named")
    return chosen


def _probe(item: object, where: str) -> Probe:
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where}: a probe must be an object")
    pid, category, goal = item.get("id"), item.get("category"), item.get("goal")
    if not isinstance(pid, str) or not isinstance(category, str) or not isinstance(goal, str):
        raise ConfigError(f"{where}: a probe needs string fields id, category and goal")
    if category not in CATEGORIES:
        raise ConfigError(f"{where}: probe {pid!r} has an unknown category {category!r}")
    turns = item.get("turns", [])
    injection = item.get("injection")
    if not isinstance(turns, list) or not all(isinstance(t, str) and t for t in turns):
        raise ConfigError(f"{where}: probe {pid!r}: turns must be a list of strings")
    if injection is not None and not isinstance(injection, str):
        raise ConfigError(f"{where}: probe {pid!r}: injection must be a string")
    if bool(turns) == (injection is not None):
        raise ConfigError(
            f"{where}: probe {pid!r} needs turns (a direct attack) or an injection (text a "
            "tool result carries), not both"
        )
    multi_turn = item.get("multi_turn", False)
    if not isinstance(multi_turn, bool):
        raise ConfigError(f"{where}: probe {pid!r}: multi_turn must be true or false")
    return Probe(
        id=pid,
        category=category,
        goal=goal,
        turns=tuple(turns),
        injection=injection,
        multi_turn=multi_turn,
    )


def load_library(text: str, where: str) -> SeedLibrary:
    """A probe library from its JSON text; ConfigError names what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("probes"), list):
        raise ConfigError(f"{where}: a probe library is an object with a list `probes`")
    probes = tuple(_probe(p, f"{where}: probes[{i}]") for i, p in enumerate(data["probes"]))
    ids = [p.id for p in probes]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ConfigError(f"{where}: probe ids used twice: {', '.join(twice)}")
    return SeedLibrary(str(data.get("library", where)), str(data.get("version", "")), probes)


def seed_library() -> SeedLibrary:
    """The shipped seed library."""
    text = resources.files("assay.red_team").joinpath("seeds/v1.json").read_text("utf-8")
    return load_library(text, "assay seed library v1")
