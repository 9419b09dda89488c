"""Deletion with retention: when a deleted collection (source) or collection set is purged, WARCs and all.

Revision ID: 0009
Revises: 0008 (group credentials)
Create Date: 2026-11-27 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

TABLES = ('sources', 'web_collection_sets')


def upgrade() -> None:
    for table in TABLES:  # nullable columns: no table copy, so SQLite's cascades never fire
        op.add_column(table, sa.Column('purge_after', sa.DateTime(), nullable=True))


def downgrade() -> None:
    for table in TABLES:  # a plain DROP COLUMN (SQLite >= 3.35, PostgreSQL): batch mode would copy `sources`
        op.execute(f'ALTER TABLE {table} DROP COLUMN purge_after')
