"""Replicas and verification (issue 36): per WARC and store, when it was copied and last checked
(`warc_copies`), and each `swath storage verify` run's counts (`storage_checks`).

Revision ID: 0012
Revises: 0010 (the integrator re-chains it after 0011)
Create Date: 2026-11-27 06:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'  # renumber here and in down_revision only: nothing else names it
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'warc_copies',
        sa.Column('warc_id', sa.String(length=100), sa.ForeignKey('warcs.id', ondelete='CASCADE'), primary_key=True),
        sa.Column('target', sa.String(length=20), primary_key=True),
        sa.Column('replicated_at', sa.DateTime(), nullable=True),
        sa.Column('verified_at', sa.DateTime(), nullable=True),
        sa.Column('result', sa.String(length=20), nullable=True),
        sa.Column('detail', sa.String(length=500), nullable=True),
    )
    op.create_index('ix_warc_copies_target_replicated', 'warc_copies', ['target', 'replicated_at'])
    op.create_table(
        'storage_checks',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('started_at', sa.DateTime(), nullable=False),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.Column('collection_id', sa.String(length=100), nullable=True),
        sa.Column('deep', sa.Boolean(), nullable=False),
        sa.Column('warcs', sa.Integer(), nullable=False),
        sa.Column('copies', sa.Integer(), nullable=False),
        sa.Column('ok', sa.Integer(), nullable=False),
        sa.Column('missing', sa.Integer(), nullable=False),
        sa.Column('differs', sa.Integer(), nullable=False),
    )
    op.create_index('ix_storage_checks_started_at', 'storage_checks', ['started_at'])


def downgrade() -> None:
    op.drop_index('ix_storage_checks_started_at', table_name='storage_checks')
    op.drop_table('storage_checks')
    op.drop_index('ix_warc_copies_target_replicated', table_name='warc_copies')
    op.drop_table('warc_copies')
