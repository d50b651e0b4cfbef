"""API keys of the REST service: create (shown once), list, revoke, verify.

A key reads `assay_<id>_<secret>`. Only a salted SHA-256 of the secret is stored, so a
copy of the database does not give access; verification looks the key up by id and
compares hashes in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, insert, select, update

from assay.errors import StoreError
from assay.store._repository import Repository, database_errors
from assay.store.schema import api_keys
from assay.store.types import utcnow

KEY_PREFIX = "assay"
# Recording every request's use would make each read a write; a minute is precise
# enough to see which keys are in use.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """What is known about a key besides its secret."""

    id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class ApiKeyRepository(Repository):
    """The `api_keys` table."""

    @database_errors
    def create(self, name: str) -> tuple[ApiKeyInfo, str]:
        """A new key named `name`; returns its info and the full key (not stored)."""
        if not name.strip():
            raise StoreError("an API key needs a non-empty name")
        key_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        now = utcnow()
        with self._writer.begin() as conn:
            conn.execute(
                insert(api_keys).values(
                    id=key_id,
                    name=name.strip(),
                    salt=salt,
                    secret_hash=_hash(salt, secret),
                    created_at=now,
                )
            )
        info = ApiKeyInfo(key_id, name.strip(), now, None, None)
        return info, f"{KEY_PREFIX}_{key_id}_{secret}"

    @database_errors
    def list_keys(self) -> list[ApiKeyInfo]:
        """Every key, revoked ones included, oldest first."""
        query = select(api_keys).order_by(api_keys.c.created_at, api_keys.c.id)
        with self._engine.connect() as conn:
            return [_info(row) for row in conn.execute(query)]

    @database_errors
    def revoke(self, key_id: str) -> ApiKeyInfo:
        """Revoke the key (requests with it fail from now on); StoreError if unknown."""
        with self._writer.begin() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).first()
            if row is None:
                raise StoreError(f"no API key with id {key_id!r} (see `assay keys list`)")
            if row.revoked_at is None:
                conn.execute(
                    update(api_keys).where(api_keys.c.id == key_id).values(revoked_at=utcnow())
                )
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).one()
        return _info(row)

    @database_errors
    def verify(self, key: str) -> ApiKeyInfo | None:
        """The active key `key` is, or None (unknown, malformed or revoked)."""
        prefix, _, rest = key.partition("_")
        key_id, _, secret = rest.partition("_")
        if prefix != KEY_PREFIX or not key_id or not secret:
            return None
        with self._engine.connect() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).first()
        if row is None or not hmac.compare_digest(row.secret_hash, _hash(row.salt, secret)):
            return None
        if row.revoked_at is not None:
            return None
        now = utcnow()
        if row.last_used_at is None or now - row.last_used_at > _LAST_USED_RESOLUTION:
            with self._writer.begin() as conn:
                conn.execute(
                    update(api_keys).where(api_keys.c.id == key_id).values(last_used_at=now)
                )
        return _info(row)


def _hash(salt: str, secret: str) -> str:
    return hashlib.sha256(f"{salt}:{secret}".encode()).hexdigest()


def _info(row: Row[Any]) -> ApiKeyInfo:
    return ApiKeyInfo(
        id=row.id,
        name=row.name,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
    )
