"""Alembic migrations of the store schema, run by `Store.open` (see `connect.migrate`)."""
