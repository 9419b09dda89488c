"""Credentials as objects of a group (swath/store/group_credentials.py): a named credential and its sealed values.

Revision ID: 0008
Revises: 0007 (notification settings)
Create Date: 2026-11-27 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'  # renumber here and in down_revision only: nothing else names it
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'web_credentials',
        sa.Column('id', sa.String(32), primary_key=True),
        sa.Column('group_id', sa.String(32), sa.ForeignKey('web_groups.id', ondelete='CASCADE'), nullable=False),
        sa.Column('name', sa.String(200), nullable=False),
        sa.Column('platform', sa.String(100), nullable=False),
        sa.Column('created_by', sa.String(100), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('rotated_at', sa.DateTime(), nullable=True),
        sa.UniqueConstraint('group_id', 'name', name='uq_web_credentials_group_name'),
    )
    op.create_index('ix_web_credentials_group_id', 'web_credentials', ['group_id'])
    op.create_table(
        'web_credential_values',
        sa.Column('credential_id', sa.String(32), sa.ForeignKey('web_credentials.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('name', sa.String(100), primary_key=True),
        sa.Column('scheme', sa.String(20), nullable=False),
        sa.Column('value', sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table('web_credential_values')
    op.drop_index('ix_web_credentials_group_id', table_name='web_credentials')
    op.drop_table('web_credentials')
