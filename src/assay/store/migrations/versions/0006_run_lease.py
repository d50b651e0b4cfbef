"""Run ownership: the process executing a run and until when its lease holds.

Two identical `assay eval` commands started one after the other used to share a run
(the second resumed the first's live run); with an owner and a lease renewed by a
heartbeat, only a run whose owner is gone is resumed.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 23:45:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from assay.store.types import UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner", sa.String(length=256), nullable=True))
        batch_op.add_column(sa.Column("lease_until", UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("lease_until")
        batch_op.drop_column("owner")
