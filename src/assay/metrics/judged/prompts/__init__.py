"""Versioned judge prompt templates, all in this folder.

Each template is a text file `NAME.vN.txt` holding a system part and a user part
separated by a line `---user---`; `{placeholders}` are filled with `str.format`-style
fields (literal braces doubled). The version is part of the cache key, so editing a
prompt means adding `vN+1` and pointing the metric at it, never editing in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

_SPLIT = "---user---"
_NAME = re.compile(r"^(?P<name>[a-z0-9_]+)\.v(?P<version>\d+)\.txt$")


class RenderedPrompt(list[dict[str, str]]):
    """Chat messages rendered from a template, carrying the template's id (`name.vN`):
    the judge puts it in its cache key, so replies to one version never answer another."""

    def __init__(self, messages: list[dict[str, str]], prompt_version: str) -> None:
        super().__init__(messages)
        self.prompt_version = prompt_version


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    version: int
    system: str
    user: str

    @property
    def id(self) -> str:
        return f"{self.name}.v{self.version}"

    def render(self, **fields: object) -> RenderedPrompt:
        """Chat messages for the judge: a system message and a user message."""
        messages = [
            {"role": "system", "content": self.system.format(**fields).strip()},
            {"role": "user", "content": self.user.format(**fields).strip()},
        ]
        return RenderedPrompt(messages, self.id)


@cache
def _all() -> dict[str, PromptTemplate]:
    found: dict[str, PromptTemplate] = {}
    for entry in resources.files(__package__).iterdir():
        match = _NAME.match(entry.name)
        if match is None:
            continue
        text = entry.read_text(encoding="utf-8")
        if _SPLIT not in text:
            raise ValueError(f"prompt {entry.name} lacks the '{_SPLIT}' separator line")
        system, user = text.split(_SPLIT, 1)
        template = PromptTemplate(match["name"], int(match["version"]), system, user)
        found[template.id] = template
    return found


def get_prompt(name: str, version: int | None = None) -> PromptTemplate:
    """A template by name; the highest version unless `version` is given."""
    templates = _all()
    if version is not None:
        return templates[f"{name}.v{version}"]
    versions = [t for t in templates.values() if t.name == name]
    if not versions:
        raise KeyError(f"no judge prompt named {name!r}")
    return max(versions, key=lambda t: t.version)


def prompt_ids() -> list[str]:
    return sorted(_all())
