"""Judge batches: the batches `--judge-batch` submitted to a vendor, until collected.

A run resumed after a crash finds the batch its judge requests went into and collects
it instead of submitting (and paying for) them again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 03:15:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from assay.store.types import JSONValue, UTCDateTime

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "judge_batches",
        sa.Column("batch_id", sa.String(length=256), nullable=False),
        sa.Column("backend", sa.String(length=64), nullable=False),
        sa.Column("endpoint", sa.String(length=1024), nullable=False),
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("request_keys", JSONValue(), nullable=False),
        sa.Column("submitted_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("collected_at", UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("batch_id"),
    )


def downgrade() -> None:
    op.drop_table("judge_batches")
