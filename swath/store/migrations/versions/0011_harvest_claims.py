"""The claim and state of harvests without a shared filesystem (issue 36): `harvest_claims` (fencing token and
holder per harvest id), `harvest_state` (a collection's state, key by key) and `harvest_outcomes` (each
harvest's final-status record).

Revision ID: 0011
Revises: 0010 (jobs.created_at index)
Create Date: 2026-11-27 06:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011'  # renumber here and in down_revision only: nothing else names it
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'harvest_claims',
        sa.Column('harvest_id', sa.String(400), primary_key=True),
        sa.Column('token', sa.BigInteger(), nullable=False),
        sa.Column('host', sa.String(200), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('instance', sa.String(100), nullable=False),
        sa.Column('acquired_at', sa.DateTime(), nullable=False),
    )
    op.create_table(
        'harvest_state',
        sa.Column('scope', sa.String(1000), primary_key=True),
        sa.Column('key', sa.String(1000), primary_key=True),
        sa.Column('value', sa.Text(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
    )
    op.create_table(
        'harvest_outcomes',
        sa.Column('harvest_id', sa.String(400), primary_key=True),
        sa.Column('record', sa.Text(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table('harvest_outcomes')
    op.drop_table('harvest_state')
    op.drop_table('harvest_claims')
