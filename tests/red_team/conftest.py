"""Red-team test fixtures: `store_url`, an empty store on SQLite and on a real PostgreSQL
server (tests/store/postgres_server.py; ASSAY_SKIP_POSTGRES=1 skips the PostgreSQL half)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))

from postgres_server import _shared_postgres_database, postgres_server, store_url

__all__ = ["_shared_postgres_database", "postgres_server", "store_url"]
