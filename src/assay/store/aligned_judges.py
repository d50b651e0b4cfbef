"""Aligned judges in the store: named, versioned, never changed once stored.

`assay judge align` saves one (`add`: the next version of its name); `assay judge list`
and `show` read them; a run's `JudgePool` finds `aligned:NAME[@VERSION]` through
`resolve`. Versions of a name count from 1; two processes saving the same name at once
get two versions (the primary key refuses a duplicate, and the loser takes the next).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import IntegrityError

from assay.errors import ConfigError, StoreError
from assay.judges.align import AlignedExample, AlignedJudgeSpec, check_name
from assay.store._repository import Repository, database_errors
from assay.store.schema import aligned_judges
from assay.store.types import utcnow

#: attempts at taking the next version when another writer takes it first
_ADD_ATTEMPTS = 5


class AlignedJudgeRepository(Repository):
    """The `aligned_judges` table (an `AlignedJudgeSource` for `JudgePool`)."""

    @database_errors
    def add(self, spec: AlignedJudgeSpec) -> AlignedJudgeSpec:
        """Store `spec` as the next version of its name; returns it with that version
        and its creation time (the version and time given are ignored)."""
        check_name(spec.name)
        for _ in range(_ADD_ATTEMPTS):
            now = utcnow()
            try:
                with self._writer.begin() as conn:
                    if conn.dialect.name == "postgresql":
                        # Writers of one name take turns (SQLite's write transaction
                        # already does): under contention retries alone could run out.
                        conn.execute(
                            text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                            {"key": f"aligned_judges:{spec.name}"},
                        )
                    latest = conn.execute(
                        select(func.max(aligned_judges.c.version)).where(
                            aligned_judges.c.name == spec.name
                        )
                    ).scalar()
                    version = int(latest or 0) + 1
                    conn.execute(
                        insert(aligned_judges).values(**_row(spec, version), created_at=now)
                    )
            except IntegrityError:
                continue  # another writer took this version: take the next
            return _spec({**_row(spec, version), "created_at": now})  # what was stored
        raise StoreError(f"could not store a new version of aligned judge {spec.name!r}")

    @database_errors
    def list_judges(self) -> list[AlignedJudgeSpec]:
        """Every version of every aligned judge, by name then version."""
        query = select(aligned_judges).order_by(aligned_judges.c.name, aligned_judges.c.version)
        with self._engine.connect() as conn:
            return [_spec(dict(row._mapping)) for row in conn.execute(query)]

    @database_errors
    def get(self, name: str, version: int | None = None) -> AlignedJudgeSpec | None:
        """The judge `name` at `version` (None: the newest), or None."""
        query = select(aligned_judges).where(aligned_judges.c.name == name)
        if version is None:
            query = query.order_by(aligned_judges.c.version.desc()).limit(1)
        else:
            query = query.where(aligned_judges.c.version == version)
        with self._engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else _spec(dict(row._mapping))

    def resolve(self, name: str, version: int | None = None) -> AlignedJudgeSpec:
        """The judge `name` at `version` (None: the newest); ConfigError naming what is
        missing, with the versions there are."""
        found = self.get(name, version)
        if found is not None:
            return found
        versions = [s.version for s in self.list_judges() if s.name == name]
        if not versions:
            raise ConfigError(
                f"no aligned judge named {name!r} in store {self.url}"
                " (see `assay judge list`; `assay judge align` makes one)"
            )
        raise ConfigError(
            f"aligned judge {name!r} has no version {version} in store {self.url}"
            f" (versions: {', '.join(map(str, versions))})"
        )


def _row(spec: AlignedJudgeSpec, version: int) -> dict[str, object]:
    return {
        "name": spec.name,
        "version": version,
        "metric": spec.metric,
        "judge_model": spec.judge_model,
        "guidelines": list(spec.guidelines),
        "examples": [e.to_dict() for e in spec.examples],
        "kappa_before": spec.kappa_before,
        "kappa_after": spec.kappa_after,
        "report": dict(spec.report),
    }


def _spec(row: Mapping[str, object]) -> AlignedJudgeSpec:
    guidelines = row["guidelines"]
    examples = row["examples"]
    report = row["report"]
    created = row.get("created_at")
    return AlignedJudgeSpec(
        name=str(row["name"]),
        version=int(str(row["version"])),
        metric=str(row["metric"]),
        judge_model=str(row["judge_model"]),
        guidelines=tuple(str(g) for g in _list(guidelines)),
        examples=tuple(
            AlignedExample.from_dict(e) for e in _list(examples) if isinstance(e, Mapping)
        ),
        kappa_before=_float(row.get("kappa_before")),
        kappa_after=_float(row.get("kappa_after")),
        report=dict(report) if isinstance(report, Mapping) else {},
        created_at=created.isoformat() if hasattr(created, "isoformat") else None,
    )


def _list(value: object) -> Sequence[object]:
    return value if isinstance(value, list) else []


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None
