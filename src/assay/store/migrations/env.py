"""Alembic environment: migrates through the connection `Store.open` passes in.

Run by `assay.store.connect.migrate`; also works for Alembic commands given a URL
through `assay.store.connect.alembic_config(url=...)` (e.g. autogenerating a revision).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from assay.errors import StoreError
from assay.store.connect import create_store_engine, resolve_url
from assay.store.schema import metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    config = context.config
    url = config.get_main_option("sqlalchemy.url")
    if context.is_offline_mode():
        if url is None:
            raise StoreError("offline migrations need a URL: alembic_config(url=...)")
        context.configure(
            url=resolve_url(url).render_as_string(hide_password=False),
            target_metadata=metadata,
            literal_binds=True,
            render_as_batch=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = config.attributes.get("connection")
    if isinstance(connection, Connection):
        _run(connection)
        return
    if url is None:
        raise StoreError("migrations need a connection or a URL: alembic_config(...)")
    engine = create_store_engine(resolve_url(url))
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


_main()
