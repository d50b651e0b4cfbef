"""API keys of the REST service: create (shown once), list, revoke, verify.

A key reads `assay_<id>_<secret>`. Only a salted SHA-256 of the secret is stored, so a
copy of the database does not give access; verification looks the key up by id and
compares hashes in constant time.

A key that verified is remembered in memory (by the SHA-256 of the whole key, never the
key itself) for `VERIFIED_TTL_S`, so a busy server does not look it up on every request.
Revoking through the same `Store` forgets every remembered key at once; a revocation
made elsewhere (`assay keys revoke` in another process, another server worker) takes
effect within `VERIFIED_TTL_S`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, Row, bindparam, insert, select, update

from assay.errors import StoreError
from assay.store._repository import Repository, database_errors
from assay.store.schema import api_keys
from assay.store.types import utcnow

KEY_PREFIX = "assay"
# Recording every request's use would make each read a write; a minute is precise
# enough to see which keys are in use.
_LAST_USED_RESOLUTION = timedelta(minutes=1)
VERIFIED_TTL_S = 2.0
"""How long a verified key is trusted without a look-up (the bound on how late a
revocation made by another process takes effect)."""
_MAX_REMEMBERED = 10_000
# Built once: a statement object reused keeps SQLAlchemy's compiled-statement cache key.
_BY_ID = select(api_keys).where(api_keys.c.id == bindparam("key_id"))


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
    """The `api_keys` table, with recently verified keys remembered (see the module)."""

    def __init__(self, engine: Engine, url: str) -> None:
        super().__init__(engine, url)
        self.clock: Callable[[], float] = time.monotonic
        self._verified: dict[bytes, tuple[ApiKeyInfo, float]] = {}
        self._lock = threading.Lock()

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
        with self._lock:
            self._verified.clear()
        return _info(row)

    @database_errors
    def by_id(self, key_id: str) -> ApiKeyInfo | None:
        """The key with id `key_id` (revoked or not), or None; for sessions that hold a
        key's id, never its secret (the viewer's login cookie)."""
        with self._engine.connect() as conn:
            row = conn.execute(_BY_ID, {"key_id": key_id}).first()
        return None if row is None else _info(row)

    def remembered(self, key: str) -> ApiKeyInfo | None:
        """The key's info if it verified less than `VERIFIED_TTL_S` ago (no database
        access, so callers on an event loop can ask first); None otherwise."""
        digest = hashlib.sha256(key.encode()).digest()
        with self._lock:
            found = self._verified.get(digest)
        if found is None or self.clock() - found[1] >= VERIFIED_TTL_S:
            return None
        return found[0]

    @database_errors
    def verify(self, key: str) -> ApiKeyInfo | None:
        """The active key `key` is, or None (unknown, malformed or revoked)."""
        known = self.remembered(key)
        if known is not None:
            return known
        prefix, _, rest = key.partition("_")
        key_id, _, secret = rest.partition("_")
        if prefix != KEY_PREFIX or not key_id or not secret:
            return None
        checked_at = self.clock()
        with self._engine.connect() as conn:
            row = conn.execute(_BY_ID, {"key_id": key_id}).first()
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
        info = _info(row)
        with self._lock:
            if len(self._verified) >= _MAX_REMEMBERED:
                self._verified.clear()
            # Timed from before the look-up: a revocation committed during it is seen
            # within the bound too.
            self._verified[hashlib.sha256(key.encode()).digest()] = (info, checked_at)
        return info


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
