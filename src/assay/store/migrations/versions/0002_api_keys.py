"""API keys of the REST service (`assay keys create`).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 18:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import assay.store.types

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column("salt", sa.String(length=64), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", assay.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", assay.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
    )


def downgrade() -> None:
    op.drop_table("api_keys")
