"""Secrets a store keeps for the services over it (e.g. the key signing page tokens).

Each is 32 random bytes created on first use and never changed, so every server process
over one store (several workers, a restarted server) signs and checks with the same key,
and a token from one store is worthless against another. Creation is insert-only: of
processes racing to create a secret, one inserts it and the others read it back.
"""

from __future__ import annotations

import secrets
import threading

from sqlalchemy import Engine, insert, select
from sqlalchemy.exc import IntegrityError

from assay.errors import StoreError
from assay.store._repository import Repository, database_errors
from assay.store.schema import store_secrets
from assay.store.types import utcnow

SECRET_BYTES = 32


class SecretRepository(Repository):
    """The `store_secrets` table, with the secrets read so far kept in memory."""

    def __init__(self, engine: Engine, url: str) -> None:
        super().__init__(engine, url)
        self._known: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> bytes:
        """The secret called `name`, created on first use."""
        found = self._known.get(name)
        if found is None:
            with self._lock:
                found = self._known.get(name) or self._load_or_create(name)
                self._known[name] = found
        return found

    @database_errors
    def _load_or_create(self, name: str) -> bytes:
        query = select(store_secrets.c.value).where(store_secrets.c.name == name)
        with self._engine.connect() as conn:
            stored = conn.execute(query).scalar()
        if stored is None:
            value = secrets.token_hex(SECRET_BYTES)
            try:
                with self._writer.begin() as conn:
                    conn.execute(
                        insert(store_secrets).values(name=name, value=value, created_at=utcnow())
                    )
                stored = value
            except IntegrityError:
                # Another process created it first: use theirs.
                with self._engine.connect() as conn:
                    stored = conn.execute(query).scalar()
        if not isinstance(stored, str):
            raise StoreError(f"store {self.url}: the secret {name!r} could not be read")
        return bytes.fromhex(stored)
