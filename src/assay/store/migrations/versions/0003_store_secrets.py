"""Secrets the services keep per store (the key signing page tokens).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 21:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import assay.store.types

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "store_secrets",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.Column("created_at", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_store_secrets")),
    )


def downgrade() -> None:
    op.drop_table("store_secrets")
