"""Aligned judges: a judge model with guidelines and examples learned from labels.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 02:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import assay.store.types

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "aligned_judges",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=256), nullable=False),
        sa.Column("judge_model", sa.Text(), nullable=False),
        sa.Column("guidelines", assay.store.types.JSONValue(), nullable=False),
        sa.Column("examples", assay.store.types.JSONValue(), nullable=False),
        sa.Column("kappa_before", sa.Float(), nullable=True),
        sa.Column("kappa_after", sa.Float(), nullable=True),
        sa.Column("report", assay.store.types.JSONValue(), nullable=False),
        sa.Column("created_at", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", "version", name=op.f("pk_aligned_judges")),
    )


def downgrade() -> None:
    op.drop_table("aligned_judges")
