"""Aligned judges: a judge model plus what people taught it (issue #35).

An aligned judge is a base judge model with, for one judged metric, **guidelines**
distilled from the items where the model disagreed with people (semantic memory) and
**labelled examples** chosen among the most informative items (episodic memory),
MemAlign's idea. It is named and versioned in the store (`assay judge align`,
`assay judge list`), and used as a model string: `--judge aligned:NAME[@VERSION]` or
`judge_model_options.judge_model: "aligned:NAME"` in a criterion.

When the metric it was aligned for asks it, `AlignedJudge`
(`assay.judges.client`) adds the guidelines and the
examples to the metric's own prompt (after its system message) and calls the base model
as any judge does; its cache keys carry `NAME@VERSION`, so a new version never reads an
older one's replies. Other metrics of the run get the plain base model.

This module holds what an aligned judge is and how it prompts; building one (k-fold,
distilling, choosing examples) is `assay.session.align`, storing one
`assay.store.aligned_judges`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from assay.errors import ConfigError

#: the model-string prefix naming an aligned judge
ALIGNED_PREFIX = "aligned:"
#: a judge name: letters, digits, `.`, `_`, `-`; starts with a letter or digit
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: the largest version a reference may name (the store's column is a 32-bit integer)
MAX_VERSION = 2**31 - 1
#: the input fields an example shows, in this order (the labels file's columns)
EXAMPLE_FIELDS = ("prompt", "context", "reference", "response")


def is_aligned_ref(model: str | None) -> bool:
    """Whether a model string names an aligned judge (`aligned:NAME[@VERSION]`)."""
    return model is not None and model.strip().lower().startswith(ALIGNED_PREFIX)


def check_name(name: str) -> str:
    """`name` if it is a valid aligned-judge name; ConfigError naming it otherwise."""
    if not _NAME.match(name):
        raise ConfigError(
            f"aligned judge name {name!r}: use 1 to 128 letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    return name


def parse_ref(text: str) -> tuple[str, int | None]:
    """(name, version or None for the newest) from `NAME[@VERSION]`, with or without
    the `aligned:` prefix; ConfigError naming what is wrong."""
    ref = text.strip()
    if ref.lower().startswith(ALIGNED_PREFIX):
        ref = ref[len(ALIGNED_PREFIX) :]
    name, sep, version = ref.partition("@")
    check_name(name)
    if not sep:
        return name, None
    if not version.isascii() or not version.isdigit() or not 1 <= int(version) <= MAX_VERSION:
        raise ConfigError(
            f"aligned judge {text!r}: the version after '@' must be a whole number from 1"
            f" to {MAX_VERSION}, got {version!r}"
        )
    return name, int(version)


@dataclass(frozen=True)
class AlignedExample:
    """One labelled item shown to the judge: its inputs and the people's verdict."""

    inputs: Mapping[str, str]
    #: the verdict word the metric uses ("valid", "yes", "pass", ...)
    label: str
    note: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"inputs": dict(self.inputs), "label": self.label, "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> AlignedExample:
        inputs = data.get("inputs")
        note = data.get("note")
        return cls(
            inputs={str(k): str(v) for k, v in inputs.items()}
            if isinstance(inputs, Mapping)
            else {},
            label=str(data.get("label", "")),
            note=str(note) if note is not None else None,
        )


@dataclass(frozen=True)
class AlignedJudgeSpec:
    """What an aligned judge is: a base model and, for one metric, guidelines and examples.

    `version` 0 is an aligned judge not stored (the folds of `assay judge align`).
    """

    name: str
    version: int
    metric: str
    judge_model: str
    guidelines: tuple[str, ...] = ()
    examples: tuple[AlignedExample, ...] = ()
    kappa_before: float | None = None
    kappa_after: float | None = None
    #: how the judge was built and measured (folds, intervals, label counts), as JSON
    report: Mapping[str, object] = field(default_factory=dict)
    created_at: str | None = None

    @property
    def ref(self) -> str:
        """`NAME@VERSION`: what the cache keys carry."""
        return f"{self.name}@{self.version}"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "metric": self.metric,
            "judge_model": self.judge_model,
            "guidelines": list(self.guidelines),
            "examples": [e.to_dict() for e in self.examples],
            "kappa_before": self.kappa_before,
            "kappa_after": self.kappa_after,
            "report": dict(self.report),
            "created_at": self.created_at,
        }


@runtime_checkable
class AlignedJudgeSource(Protocol):
    """Where aligned judges are found by name (the store's `aligned_judges`)."""

    def resolve(self, name: str, version: int | None = None) -> AlignedJudgeSpec:
        """The judge `name` at `version` (None: the newest); ConfigError if none."""
        ...


class AlignedJudges:
    """Aligned judges held in memory (the folds of an alignment, tests)."""

    def __init__(self, specs: Sequence[AlignedJudgeSpec] = ()) -> None:
        self._specs: dict[str, list[AlignedJudgeSpec]] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: AlignedJudgeSpec) -> None:
        versions = self._specs.setdefault(spec.name, [])
        versions.append(spec)
        versions.sort(key=lambda s: s.version)

    def resolve(self, name: str, version: int | None = None) -> AlignedJudgeSpec:
        versions = self._specs.get(name)
        if not versions:
            raise ConfigError(f"no aligned judge named {name!r}")
        if version is None:
            return versions[-1]
        for spec in versions:
            if spec.version == version:
                return spec
        raise ConfigError(
            f"aligned judge {name!r} has no version {version}"
            f" (versions: {', '.join(str(s.version) for s in versions)})"
        )


def render_example(example: AlignedExample, index: int) -> str:
    """One example as the judge sees it: tagged inputs, the verdict, the note."""
    lines = [f'<example number="{index}">']
    keys = [k for k in EXAMPLE_FIELDS if k in example.inputs]
    keys += sorted(k for k in example.inputs if k not in EXAMPLE_FIELDS)
    for key in keys:
        lines.append(f"<{key}>\n{example.inputs[key]}\n</{key}>")
    lines.append(f"<human_verdict>{example.label}</human_verdict>")
    if example.note:
        lines.append(f"<human_note>{example.note}</human_note>")
    lines.append("</example>")
    return "\n".join(lines)


def alignment_text(guidelines: Sequence[str], examples: Sequence[AlignedExample]) -> str:
    """What an aligned judge adds to a metric's prompt ("" when it has nothing)."""
    parts: list[str] = []
    if guidelines:
        parts.append(
            "Guidelines from human reviewers (they override your own reading where the two"
            " differ):\n" + "\n".join(f"- {g}" for g in guidelines)
        )
    if examples:
        shown = "\n".join(render_example(e, i) for i, e in enumerate(examples, 1))
        parts.append(
            "Examples judged by human reviewers (the inputs, then the verdict they gave):\n" + shown
        )
    return "\n\n".join(parts)


def augment_messages(
    messages: Sequence[Mapping[str, object]], addition: str
) -> list[dict[str, object]]:
    """`messages` with `addition` appended to the first system message (a new system
    message first when there is none); unchanged when `addition` is empty."""
    out = [dict(m) for m in messages]
    if not addition:
        return out
    for message in out:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            message["content"] = f"{message['content']}\n\n{addition}"
            return out
    return [{"role": "system", "content": addition}, *out]
