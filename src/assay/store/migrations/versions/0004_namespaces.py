"""Project and location of resources and runs (CES `projects/*/locations/*`).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 00:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

# Rows written before namespaces were stored belong to the default one (what the /v1
# API and the MCP tools address).
_PROJECT = sa.text("'default'")
_LOCATION = sa.text("'global'")
_OLD_KEY = ["app", "kind", "id"]
_NEW_KEY = ["project", "location", "app", "kind", "id"]


def _columns() -> list[sa.Column[str]]:
    return [
        sa.Column("project", sa.String(length=128), server_default=_PROJECT, nullable=False),
        sa.Column("location", sa.String(length=128), server_default=_LOCATION, nullable=False),
    ]


def _rekey(key: list[str], unique: list[str], old_unique: str, new_unique: str) -> None:
    with op.batch_alter_table("resources", schema=None) as batch_op:
        batch_op.drop_constraint(old_unique, type_="unique")
        batch_op.drop_constraint("pk_resources", type_="primary")
        batch_op.create_primary_key("pk_resources", key)
        batch_op.create_unique_constraint(new_unique, unique)


def upgrade() -> None:
    with op.batch_alter_table("resources", schema=None) as batch_op:
        for column in _columns():
            batch_op.add_column(column)
    _rekey(
        _NEW_KEY,
        ["project", "location", "app", "kind", "display_name"],
        "uq_resources_app_kind_display_name",
        "uq_resources_project_location_app_kind_display_name",
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        for column in _columns():
            batch_op.add_column(column)
        batch_op.create_index(
            batch_op.f("ix_runs_project_location_app_created_at"),
            ["project", "location", "app", "created_at"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_project_location_app_created_at"))
        batch_op.drop_column("location")
        batch_op.drop_column("project")
    _rekey(
        _OLD_KEY,
        ["app", "kind", "display_name"],
        "uq_resources_project_location_app_kind_display_name",
        "uq_resources_app_kind_display_name",
    )
    with op.batch_alter_table("resources", schema=None) as batch_op:
        batch_op.drop_column("location")
        batch_op.drop_column("project")
