"""Notification settings of web users and the services' last reports (swath/store/notify_models.py).

Revision ID: 0007
Revises: 0006 (source names unique per group)
Create Date: 2026-11-27 03:40:00

"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'web_notify_settings',
        sa.Column('user_id', sa.String(length=32), nullable=False),
        sa.Column('email', sa.String(length=254), nullable=False),
        sa.Column('harvest_failed', sa.Boolean(), nullable=False),
        sa.Column('stream_stopped', sa.Boolean(), nullable=False),
        sa.Column('export_ready', sa.Boolean(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['web_users.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('user_id'),
    )
    op.create_table(
        'service_reports',
        sa.Column('service', sa.String(length=200), nullable=False),
        sa.Column('host', sa.String(length=200), nullable=False),
        sa.Column('instance', sa.String(length=100), nullable=False),
        sa.Column('role', sa.String(length=20), nullable=False),
        sa.Column('first_seen', sa.DateTime(), nullable=False),
        sa.Column('last_seen', sa.DateTime(), nullable=False),
        sa.Column('last_id', sa.String(length=200), nullable=False),
        sa.Column('last_status', sa.String(length=30), nullable=False),
        sa.PrimaryKeyConstraint('service', 'host', 'instance'),
    )


def downgrade() -> None:
    op.drop_table('service_reports')
    op.drop_table('web_notify_settings')
