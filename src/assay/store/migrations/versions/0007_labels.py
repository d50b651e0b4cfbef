"""People's labels on judged results (issue #35): one verdict per person, metric and case
run of a run, with a note, who gave it and when; and the history of every label set or
deleted.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 02:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from assay.store.types import UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "labels",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
            autoincrement=True,
        ),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("run_index", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=256), nullable=False),
        sa.Column("author", sa.String(length=256), nullable=False),
        sa.Column("label", sa.String(length=64), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("verdict", sa.String(length=8), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_labels_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_labels")),
        sa.UniqueConstraint(
            "run_id",
            "eval_set_id",
            "case_id",
            "run_index",
            "metric",
            "author",
            name=op.f("uq_labels_run_id_eval_set_id_case_id_run_index_metric_author"),
        ),
    )

    op.create_table(
        "label_history",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
            autoincrement=True,
        ),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("run_index", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=256), nullable=False),
        sa.Column("author", sa.String(length=256), nullable=False),
        sa.Column("action", sa.String(length=8), nullable=False),
        sa.Column("label", sa.String(length=64), nullable=True),
        sa.Column("verdict", sa.String(length=8), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_label_history_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_history")),
    )
    with op.batch_alter_table("label_history", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_label_history_run_id_case_id"), ["run_id", "case_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("label_history")
    op.drop_table("labels")
