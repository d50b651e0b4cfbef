"""CES-shaped resources (evaluations, evaluation datasets, personas).

One generic table: the REST service keeps the resource JSON in `body` and this module
owns what CES manages around it — the id, a display name unique within the app and
kind, an etag that changes on every write, and create/update times. Every operation
applies the current namespace (project and location, `assay.store.namespace`): a
resource of one namespace is invisible from another.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from assay.errors import StoreError
from assay.store._repository import Repository, database_errors
from assay.store.exceptions import (
    EtagMismatchError,
    ResourceConflictError,
    ResourceNotFoundError,
)
from assay.store.namespace import DEFAULT_LOCATION, DEFAULT_PROJECT, current_namespace
from assay.store.schema import RESOURCE_KINDS, resources
from assay.store.types import utcnow

# The statements of reads and updates, built once with bound parameters (named k_* and
# new_*: an UPDATE reserves the columns' own names): a statement object that is
# reused keeps its cache key, so SQLAlchemy finds the compiled SQL without rebuilding
# and re-hashing the expression tree on every request (most of a read's CPU time).
_SCOPE = and_(
    resources.c.project == bindparam("k_project"),
    resources.c.location == bindparam("k_location"),
    resources.c.app == bindparam("k_app"),
    resources.c.kind == bindparam("k_kind"),
)
# Columns in `Resource`'s field order: rows are turned into resources by position.
_COLUMNS = [
    resources.c[name]
    for name in (
        "app", "kind", "id", "display_name", "body", "etag", "create_time", "update_time",
        "project", "location",
    )
]  # fmt: skip
_GET = select(*_COLUMNS).where(_SCOPE, resources.c.id == bindparam("k_id"))
_ORDERED = select(*_COLUMNS).where(_SCOPE).order_by(resources.c.create_time, resources.c.id)
_LIST_ALL = _ORDERED
_LIST_PAGE = _ORDERED.offset(bindparam("offset")).limit(bindparam("limit"))
_ETAG = select(resources.c.etag).where(_SCOPE, resources.c.id == bindparam("k_id"))
# Compare-and-set on the etag read before it (bound names differ from the columns set).
_REPLACE = (
    update(resources)
    .where(_SCOPE, resources.c.id == bindparam("k_id"), resources.c.etag == bindparam("read_etag"))
    .values(
        display_name=bindparam("new_display_name"),
        body=bindparam("new_body"),
        etag=bindparam("new_etag"),
        update_time=bindparam("new_update_time"),
    )
)
_REPLACE_RETURNING = _REPLACE.returning(*_COLUMNS)
_BODIES = (
    select(resources.c.id, resources.c.body)
    .where(_SCOPE)
    .order_by(resources.c.create_time, resources.c.id)
)


def _scope(app: str, kind: str) -> dict[str, str]:
    ns = current_namespace()
    return {"k_project": ns.project, "k_location": ns.location, "k_app": app, "k_kind": kind}


@dataclass(frozen=True, slots=True)
class Resource:
    """A stored evaluation, evaluation dataset or persona."""

    app: str
    kind: str
    id: str
    display_name: str
    body: dict[str, Any]
    etag: str
    create_time: datetime
    update_time: datetime
    project: str = DEFAULT_PROJECT
    location: str = DEFAULT_LOCATION


class ResourceRepository(Repository):
    """get / put / list / delete of resources, with etag checks on writes."""

    @database_errors
    def get(self, app: str, kind: str, resource_id: str) -> Resource | None:
        """The resource, or None when the app has no such `kind` with that id."""
        _check_kind(kind)
        with self._engine.connect() as conn:
            row = conn.execute(_GET, {**_scope(app, kind), "k_id": resource_id}).first()
        return None if row is None else _resource(row)

    @database_errors
    def create(
        self,
        app: str,
        kind: str,
        resource_id: str,
        *,
        display_name: str,
        body: Mapping[str, Any],
    ) -> Resource:
        """Create the resource; ResourceConflictError if the id or display name is taken.

        Insert-only: the primary key decides between concurrent creates of one id, so
        exactly one succeeds and no acknowledged create is overwritten by another.
        """
        _check_kind(kind)
        row = _new_row(app, kind, resource_id, display_name, body, utcnow())
        try:
            with self._writer.begin() as conn:
                conn.execute(insert(resources).values(**row))
        except IntegrityError as exc:
            raise self._conflict(app, kind, resource_id, display_name) from exc
        return _resource_of(row)

    @database_errors
    def create_many(
        self, app: str, kind: str, items: Sequence[tuple[str, str, Mapping[str, Any]]]
    ) -> list[Resource]:
        """Create resources given as (id, display name, body) in one transaction.

        All or nothing: an id or display name taken (by a stored resource or by another
        item) raises ResourceConflictError and creates none of them, so the caller can
        create them one at a time to learn which one clashed.
        """
        _check_kind(kind)
        if not items:
            return []
        now = utcnow()
        # A microsecond apart, so they list in the order given (by create time).
        rows = [
            _new_row(app, kind, resource_id, display_name, body, now + timedelta(microseconds=i))
            for i, (resource_id, display_name, body) in enumerate(items)
        ]
        try:
            with self._writer.begin() as conn:
                conn.execute(insert(resources), rows)
        except IntegrityError as exc:
            raise ResourceConflictError(
                f"one of {len(rows)} {kind} clashes with a stored one (id or display name)"
            ) from exc
        return [_resource_of(row) for row in rows]

    @database_errors
    def put(
        self,
        app: str,
        kind: str,
        resource_id: str,
        *,
        display_name: str,
        body: Mapping[str, Any],
        etag: str | None = None,
    ) -> Resource:
        """Create the resource, or replace its display name and body.

        With `etag`, the write only happens if it is the stored etag (a stale one
        raises EtagMismatchError; one for a missing resource ResourceNotFoundError).
        A display name used by another resource raises ResourceConflictError.
        """
        _check_kind(kind)
        if not display_name:
            raise StoreError(f"{kind} {resource_id!r} needs a non-empty display name")
        now = utcnow()
        values = {
            "display_name": display_name,
            "body": dict(body),
            "etag": secrets.token_hex(8),
            "update_time": now,
        }
        key = {**_scope(app, kind), "k_id": resource_id}
        new = {f"new_{name}": value for name, value in values.items()}
        try:
            with self._writer.begin() as conn:
                if etag is not None:
                    # The guarded update (every service update) is one statement: the
                    # compare-and-set answers the new row, so the write turn is held
                    # for one round trip instead of three (see `_write_queue`).
                    row = conn.execute(
                        _REPLACE_RETURNING, {**key, "read_etag": etag, **new}
                    ).first()
                    if row is None:
                        if conn.execute(_ETAG, key).first() is None:
                            raise _not_found(app, kind, resource_id)
                        raise _stale(kind, resource_id)
                    return _resource(row)
                current = conn.execute(_ETAG, key).first()
                if current is None:
                    ns = current_namespace()
                    ids = {
                        "project": ns.project,
                        "location": ns.location,
                        "app": app,
                        "kind": kind,
                        "id": resource_id,
                        "create_time": now,
                    }
                    conn.execute(insert(resources).values(**ids, **values))
                else:
                    # Compare-and-set on the etag read above: a concurrent writer
                    # between the read and this update makes it match no row.
                    changed = conn.execute(_REPLACE, {**key, "read_etag": current.etag, **new})
                    if changed.rowcount != 1:
                        raise _stale(kind, resource_id)
                row = conn.execute(_GET, key).one()
        except IntegrityError as exc:
            raise self._conflict(app, kind, resource_id, display_name) from exc
        return _resource(row)

    @database_errors
    def list_resources(
        self, app: str, kind: str, *, offset: int = 0, limit: int | None = None
    ) -> list[Resource]:
        """The app's resources of `kind`, oldest first (`limit` of them from `offset`)."""
        _check_kind(kind)
        params: dict[str, Any] = _scope(app, kind)
        query = _LIST_ALL
        if limit is not None or offset:
            # SQLite and PostgreSQL disagree on how to say "no limit": -1 vs NULL.
            query = _LIST_PAGE
            params.update(offset=offset, limit=limit if limit is not None else 2**62)
        with self._engine.connect() as conn:
            return [_resource(row) for row in conn.execute(query, params)]

    @database_errors
    def bodies(self, app: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """(id, body) of the app's resources of `kind`, oldest first: the cheap read for
        callers that need only the JSON (e.g. which datasets list an evaluation)."""
        _check_kind(kind)
        with self._engine.connect() as conn:
            return [(row.id, row.body) for row in conn.execute(_BODIES, _scope(app, kind))]

    @database_errors
    def list_all(self, kind: str) -> list[Resource]:
        """Every resource of `kind` in every namespace (for work that spans them, such as
        starting scheduled runs); each carries its project and location."""
        _check_kind(kind)
        query = select(*_COLUMNS).where(resources.c.kind == kind).order_by(resources.c.create_time)
        with self._engine.connect() as conn:
            return [_resource(row) for row in conn.execute(query)]

    @database_errors
    def delete(self, app: str, kind: str, resource_id: str, *, etag: str | None = None) -> None:
        """Delete the resource (only if its etag is `etag`, when given)."""
        _check_kind(kind)
        where = _key(app, kind, resource_id)
        with self._writer.begin() as conn:
            current = conn.execute(select(resources.c.etag).where(where)).first()
            if current is None:
                raise _not_found(app, kind, resource_id)
            if etag is not None and etag != current.etag:
                raise _stale(kind, resource_id)
            conn.execute(resources.delete().where(where, resources.c.etag == current.etag))

    def _conflict(
        self, app: str, kind: str, resource_id: str, display_name: str
    ) -> ResourceConflictError:
        # The transaction was rolled back; look again to say which key clashed.
        if self.get(app, kind, resource_id) is not None:
            return ResourceConflictError(
                f"{kind} {resource_id!r} already exists in app {app!r} (created concurrently)"
            )
        return ResourceConflictError(
            f"display name {display_name!r} is already used by another of the {kind} "
            f"in app {app!r}; display names are unique within an app"
        )


def _check_kind(kind: str) -> None:
    if kind not in RESOURCE_KINDS:
        raise StoreError(
            f"unknown resource kind {kind!r}; expected one of {', '.join(RESOURCE_KINDS)}"
        )


def _in_namespace() -> ColumnElement[bool]:
    ns = current_namespace()
    return and_(resources.c.project == ns.project, resources.c.location == ns.location)


def _key(app: str, kind: str, resource_id: str) -> ColumnElement[bool]:
    c = resources.c
    return and_(_in_namespace(), c.app == app, c.kind == kind, c.id == resource_id)


def _not_found(app: str, kind: str, resource_id: str) -> ResourceNotFoundError:
    return ResourceNotFoundError(f"no {kind} {resource_id!r} in app {app!r}")


def _stale(kind: str, resource_id: str) -> EtagMismatchError:
    return EtagMismatchError(
        f"{kind} {resource_id!r} was changed since it was read (stale etag); "
        "read it again and retry the update"
    )


def _resource(row: Sequence[Any]) -> Resource:
    """A row of `select(*_COLUMNS)` (by position: a list reads thousands of them)."""
    app, kind, rid, display_name, body, etag, created, updated, project, location = row
    return Resource(
        app, kind, rid, display_name, dict(body), etag, created, updated, project, location
    )


def _new_row(
    app: str,
    kind: str,
    resource_id: str,
    display_name: str,
    body: Mapping[str, object],
    created: datetime,
) -> dict[str, Any]:
    """The table row of a new resource in the current namespace, created at `created`."""
    if not display_name:
        raise StoreError(f"{kind} {resource_id!r} needs a non-empty display name")
    ns = current_namespace()
    return {
        "project": ns.project,
        "location": ns.location,
        "app": app,
        "kind": kind,
        "id": resource_id,
        "display_name": display_name,
        "body": dict(body),
        "etag": secrets.token_hex(8),
        "create_time": created,
        "update_time": created,
    }


def _resource_of(row: Mapping[str, Any]) -> Resource:
    return Resource(
        app=row["app"],
        kind=row["kind"],
        id=row["id"],
        display_name=row["display_name"],
        body=dict(row["body"]),
        etag=row["etag"],
        create_time=row["create_time"],
        update_time=row["update_time"],
        project=row["project"],
        location=row["location"],
    )
