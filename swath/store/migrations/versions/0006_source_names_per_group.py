"""Source names unique per group, not across the store: the unique constraint on sources.name becomes a plain
index; repo.create_source checks a name against the sources of the same group's collection sets.

Revision ID: 0006
Revises: 0005 (the session's flash message)
Create Date: 2026-11-27 03:00:00
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from alembic import op
from alembic.operations import BatchOperations

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

# SQLite's constraint has no name: batch mode names it by this convention to drop it; PostgreSQL named it itself
SQLITE_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _unique_name() -> str:
    return "sources_name_key" if op.get_bind().dialect.name == "postgresql" else "uq_sources_name"


# SQLite's batch mode copies `sources` and drops the old table: with foreign keys on, that drop deletes the rows
# of these tables (ON DELETE CASCADE) or empties their source_id (SET NULL). Their rows are put back after it.
CASCADED = ('secrets', 'attachments')
NULLED = ('jobs',)


def _recreate(change: Callable[[BatchOperations], None]) -> None:
    bind = op.get_bind()
    saved = {t: list(bind.execute(sa.text(f'SELECT * FROM {t}')).mappings()) for t in (*CASCADED, *NULLED)} \
        if bind.dialect.name == 'sqlite' else {}
    with op.batch_alter_table('sources', naming_convention=SQLITE_CONVENTION) as batch_op:
        change(batch_op)
    for table, rows in saved.items():
        if table in CASCADED:
            bind.execute(sa.text(f'DELETE FROM {table}'))
            columns = list(map(str, rows[0].keys())) if rows else []
            insert = sa.text(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})")
            for row in rows:
                bind.execute(insert, dict(row))
        else:
            for row in rows:
                bind.execute(sa.text(f'UPDATE {table} SET source_id = :source_id WHERE id = :id'), dict(row))


def upgrade() -> None:
    def change(batch_op: BatchOperations) -> None:
        batch_op.drop_constraint(_unique_name(), type_='unique')
        batch_op.create_index('ix_sources_name', ['name'], unique=False)

    _recreate(change)


def downgrade() -> None:
    def change(batch_op: BatchOperations) -> None:
        batch_op.drop_index('ix_sources_name')
        batch_op.create_unique_constraint(_unique_name(), ['name'])

    _recreate(change)
