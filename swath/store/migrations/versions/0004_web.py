"""The web application's tables: users, groups, memberships, collection sets, sessions, login attempts, change
history and export requesters (swath/store/web_models.py).

Revision ID: 0004
Revises: 0003 (the WARC index)
Create Date: 2026-11-22 22:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'web_groups',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )
    op.create_table(
        'web_users',
        sa.Column('id', sa.String(length=32), nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('password_hash', sa.String(length=300), nullable=False),
        sa.Column('is_admin', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('disabled_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )
    op.create_table(
        'web_memberships',
        sa.Column('user_id', sa.String(length=32), nullable=False),
        sa.Column('group_id', sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(['group_id'], ['web_groups.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['web_users.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('user_id', 'group_id'),
    )
    op.create_table(
        'web_collection_sets',
        sa.Column('id', sa.String(length=100), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('description', sa.Text(), nullable=True),
        sa.Column('group_id', sa.String(length=32), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('deactivated_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['group_id'], ['web_groups.id']),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_web_collection_sets_group_id'), 'web_collection_sets', ['group_id'])
    op.create_table(
        'web_sessions',
        sa.Column('token_hash', sa.String(length=64), nullable=False),
        sa.Column('user_id', sa.String(length=32), nullable=False),
        sa.Column('csrf', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('expires_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['web_users.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('token_hash'),
    )
    op.create_index(op.f('ix_web_sessions_user_id'), 'web_sessions', ['user_id'])
    op.create_table(
        'web_login_attempts',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.String(length=100), nullable=False),
        sa.Column('address', sa.String(length=100), nullable=False),
        sa.Column('ok', sa.Boolean(), nullable=False),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_web_login_attempts_name'), 'web_login_attempts', ['name'])
    op.create_index(op.f('ix_web_login_attempts_address'), 'web_login_attempts', ['address'])
    op.create_table(
        'web_changes',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('collection_set_id', sa.String(length=100), nullable=False),
        sa.Column('source_id', sa.String(length=32), nullable=True),
        sa.Column('user_name', sa.String(length=100), nullable=False),
        sa.Column('action', sa.String(length=60), nullable=False),
        sa.Column('detail', sa.Text(), nullable=False),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_web_changes_collection_set_id'), 'web_changes', ['collection_set_id'])
    op.create_index(op.f('ix_web_changes_source_id'), 'web_changes', ['source_id'])
    op.create_table(
        'web_export_requests',
        sa.Column('export_id', sa.String(length=200), nullable=False),
        sa.Column('collection_set_id', sa.String(length=100), nullable=False),
        sa.Column('source_id', sa.String(length=32), nullable=True),
        sa.Column('user_name', sa.String(length=100), nullable=False),
        sa.Column('requested_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('export_id'),
    )
    op.create_index(op.f('ix_web_export_requests_collection_set_id'), 'web_export_requests', ['collection_set_id'])


def downgrade() -> None:
    for table in ('web_export_requests', 'web_changes', 'web_login_attempts', 'web_sessions', 'web_collection_sets',
                  'web_memberships', 'web_users', 'web_groups'):
        op.drop_table(table)
