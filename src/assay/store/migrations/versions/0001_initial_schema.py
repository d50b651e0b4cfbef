"""Initial schema: runs, case results, CES resources and the judge cache.

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-21 20:14:43.186397
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import assay.store.types

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "judge_cache",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("backend", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("reply", assay.store.types.JSONValue(), nullable=False),
        sa.Column("created_at", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_judge_cache")),
    )
    op.create_table(
        "resources",
        sa.Column("app", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("id", sa.String(length=256), nullable=False),
        sa.Column("display_name", sa.String(length=512), nullable=False),
        sa.Column("body", assay.store.types.JSONValue(), nullable=False),
        sa.Column("etag", sa.String(length=64), nullable=False),
        sa.Column("create_time", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("update_time", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("app", "kind", "id", name=op.f("pk_resources")),
        sa.UniqueConstraint(
            "app", "kind", "display_name", name=op.f("uq_resources_app_kind_display_name")
        ),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column(
            "app", sa.String(length=128), server_default=sa.text("'default'"), nullable=False
        ),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("agent", sa.Text(), nullable=True),
        sa.Column("eval_set_ids", assay.store.types.JSONValue(), nullable=False),
        sa.Column("metrics", assay.store.types.JSONValue(), nullable=False),
        sa.Column("config", assay.store.types.JSONValue(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=True),
        sa.Column("case_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("passed", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("failed", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("not_evaluated", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("errors", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("summary", assay.store.types.JSONValue(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", assay.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_runs_app_created_at"), ["app", "created_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_runs_status"), ["status"], unique=False)

    op.create_table(
        "case_results",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("eval_set_id", sa.String(), nullable=False),
        sa.Column("case_id", sa.String(), nullable=False),
        sa.Column("run_index", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("execution_state", sa.String(length=16), nullable=False),
        sa.Column("error_type", sa.String(length=64), nullable=True),
        sa.Column("latency_s", sa.Float(), nullable=True),
        sa.Column("created_at", assay.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("document", assay.store.types.JSONValue(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_case_results_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_case_results")),
        sa.UniqueConstraint(
            "run_id",
            "eval_set_id",
            "case_id",
            "run_index",
            name=op.f("uq_case_results_run_id_eval_set_id_case_id_run_index"),
        ),
    )
    with op.batch_alter_table("case_results", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_case_results_case_id"), ["case_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_case_results_run_id_status"), ["run_id", "status"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("case_results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_case_results_run_id_status"))
        batch_op.drop_index(batch_op.f("ix_case_results_case_id"))

    op.drop_table("case_results")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_status"))
        batch_op.drop_index(batch_op.f("ix_runs_app_created_at"))

    op.drop_table("runs")
    op.drop_table("resources")
    op.drop_table("judge_cache")
