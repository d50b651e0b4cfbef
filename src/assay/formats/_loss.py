"""What a conversion drops: `Loss` records and the `Losses` collector of the `fit`s.

Every format that can be written has a `fit(evalset) -> (fitted, losses)`: `fitted` is
the set as the format holds it (translated where the format says the same thing in
other words, e.g. ADK expected tool uses as CES tool-call expectations) and `losses`
names every field the format has no place for. Writing a fitted set and reading it
back gives the fitted set again; writing refuses a set whose fit loses anything.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from assay.errors import ConversionLossError


@dataclass(frozen=True)
class Loss:
    """A field of one case (or of the set, `case_id=None`) the target cannot hold.

    `field` is the model path with `[]` for list items, e.g. `reference[].id`.
    """

    case_id: str | None
    field: str


@dataclass
class Losses:
    items: list[Loss] = field(default_factory=list)

    def add(self, case_id: str | None, name: str) -> None:
        self.items.append(Loss(case_id, name))

    def __bool__(self) -> bool:
        return bool(self.items)


def by_field(losses: list[Loss]) -> list[tuple[str, int, int]]:
    """`(field, occurrences, cases)` per field, most frequent first; a set-level field
    is named `the set's FIELD` and counts no case."""
    counts: Counter[str] = Counter()
    cases: dict[str, set[str]] = {}
    for loss in losses:
        label = loss.field if loss.case_id is not None else f"the set's {loss.field}"
        counts[label] += 1
        ids = cases.setdefault(label, set())
        if loss.case_id is not None:
            ids.add(loss.case_id)
    return [(name, n, len(cases[name])) for name, n in counts.most_common()]


def by_case(losses: list[Loss]) -> list[tuple[str | None, list[tuple[str, int]]]]:
    """Per case (in first-seen order), its lost fields with their counts."""
    out: dict[str | None, Counter[str]] = {}
    for loss in losses:
        out.setdefault(loss.case_id, Counter())[loss.field] += 1
    return [(case, list(counter.items())) for case, counter in out.items()]


def describe(losses: list[Loss], target: str, limit: int = 20) -> str:
    """A message naming each case and field: the fields on the line when one case lost
    them; else one line per case (the first `limit` cases, then "and N more cases"),
    after one line for the fields every such case lost, so a long refusal stays short."""
    groups = by_case(losses)

    def fields_of(fields: list[tuple[str, int]]) -> str:
        return ", ".join(f"{f} (x{n})" if n > 1 else f for f, n in fields)

    if len(groups) == 1 and groups[0][0] is not None:  # the error names the case
        return f"{target} cannot hold these fields: {fields_of(groups[0][1])}"
    cases = [(case_id, fields) for case_id, fields in groups if case_id is not None]
    lines = [f"  the set: {fields_of(fields)}" for case_id, fields in groups if case_id is None]
    common: list[str] = []
    if len(cases) > 1:
        names = [{f for f, _ in fields} for _, fields in cases]
        common = [f for f, _ in cases[0][1] if all(f in n for n in names)]
        if common:
            lines.append(f"  all {len(cases)} cases: {', '.join(common)}")
    rest = [(case_id, [(f, n) for f, n in fields if f not in common or n > 1])
            for case_id, fields in cases]  # fmt: skip
    for case_id, fields in rest[:limit]:
        lines.append(f"  case {case_id!r}" + (f": {fields_of(fields)}" if fields else ""))
    if len(rest) > limit:
        lines.append(f"  and {len(rest) - limit} more cases")
    return f"{target} cannot hold these fields:\n" + "\n".join(lines)


def refuse(losses: list[Loss], target: str) -> ConversionLossError:
    """The error for writing a set whose fit loses `losses`; located at the case when
    they all belong to one."""
    cases = {loss.case_id for loss in losses}
    return ConversionLossError(
        describe(losses, target),
        losses=[(loss.case_id, loss.field) for loss in losses],
        case_id=cases.pop() if len(cases) == 1 else None,
        expected=f"data {target} can hold; pass --lossy to convert anyway and drop them",
    )
