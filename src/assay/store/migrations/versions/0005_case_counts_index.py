"""The run's counts by status and execution state from the index alone.

Finishing a run recounts its case results by (status, execution_state). With the
index on (run_id, status) alone that read every result's row, documents included;
with execution_state in the index it reads the index.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 15:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

_OLD = "ix_case_results_run_id_status"
_NEW = "ix_case_results_run_id_status_execution_state"


def upgrade() -> None:
    with op.batch_alter_table("case_results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f(_OLD))
        batch_op.create_index(
            batch_op.f(_NEW), ["run_id", "status", "execution_state"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("case_results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f(_NEW))
        batch_op.create_index(batch_op.f(_OLD), ["run_id", "status"], unique=False)
