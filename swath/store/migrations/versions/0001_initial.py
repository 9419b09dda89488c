"""Initial schema: sources, secrets, jobs, warcs, exports, rejected messages, attachments.

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-21 23:47:58.660861
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('exports',
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('export_type', sa.String(length=100), nullable=True),
    sa.Column('format', sa.String(length=30), nullable=True),
    sa.Column('path', sa.String(length=1000), nullable=True),
    sa.Column('collection_id', sa.String(length=100), nullable=True),
    sa.Column('status', sa.String(length=30), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('date_started', sa.String(length=40), nullable=True),
    sa.Column('date_ended', sa.String(length=40), nullable=True),
    sa.Column('infos', sa.JSON(), nullable=False),
    sa.Column('warnings', sa.JSON(), nullable=False),
    sa.Column('errors', sa.JSON(), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('service', sa.String(length=200), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('rejected_messages',
    sa.Column('digest', sa.String(length=40), nullable=False),
    sa.Column('routing_key', sa.String(length=300), nullable=False),
    sa.Column('code', sa.String(length=60), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('seen_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('digest')
    )
    op.create_table('sources',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('harvest_type', sa.String(length=100), nullable=False),
    sa.Column('platform', sa.String(length=100), nullable=False),
    sa.Column('seeds', sa.JSON(), nullable=False),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('credentials', sa.JSON(), nullable=False),
    sa.Column('collection_set_id', sa.String(length=100), nullable=False),
    sa.Column('collection_id', sa.String(length=100), nullable=False),
    sa.Column('validation', sa.String(length=20), nullable=False),
    sa.Column('validation_comment', sa.Text(), nullable=True),
    sa.Column('validated_at', sa.DateTime(), nullable=True),
    sa.Column('schedule_kind', sa.String(length=20), nullable=True),
    sa.Column('schedule_expr', sa.String(length=100), nullable=True),
    sa.Column('next_due', sa.DateTime(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('deleted_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    with op.batch_alter_table('sources', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sources_next_due'), ['next_due'], unique=False)

    op.create_table('warcs',
    sa.Column('id', sa.String(length=100), nullable=False),
    sa.Column('path', sa.String(length=1000), nullable=False),
    sa.Column('sha1', sa.String(length=40), nullable=False),
    sa.Column('bytes', sa.BigInteger(), nullable=False),
    sa.Column('date_created', sa.String(length=40), nullable=False),
    sa.Column('collection_set_id', sa.String(length=100), nullable=False),
    sa.Column('collection_id', sa.String(length=100), nullable=False),
    sa.Column('harvest_id', sa.String(length=200), nullable=False),
    sa.Column('harvest_type', sa.String(length=100), nullable=False),
    sa.Column('recorded_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('warcs', schema=None) as batch_op:
        batch_op.create_index('ix_warcs_collection', ['collection_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_warcs_harvest_id'), ['harvest_id'], unique=False)

    op.create_table('attachments',
    sa.Column('source_id', sa.String(length=32), nullable=False),
    sa.Column('remote_id', sa.String(length=500), nullable=False),
    sa.Column('item_id', sa.String(length=500), nullable=False),
    sa.Column('attached_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['source_id'], ['sources.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('source_id', 'remote_id')
    )
    op.create_table('jobs',
    sa.Column('id', sa.String(length=200), nullable=False),
    sa.Column('source_id', sa.String(length=32), nullable=True),
    sa.Column('harvest_type', sa.String(length=100), nullable=False),
    sa.Column('routing_key', sa.String(length=300), nullable=False),
    sa.Column('trigger', sa.String(length=20), nullable=False),
    sa.Column('scheduled_for', sa.DateTime(), nullable=True),
    sa.Column('status', sa.String(length=30), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('published_at', sa.DateTime(), nullable=True),
    sa.Column('stop_requested_at', sa.DateTime(), nullable=True),
    sa.Column('date_started', sa.String(length=40), nullable=True),
    sa.Column('date_ended', sa.String(length=40), nullable=True),
    sa.Column('stats', sa.JSON(), nullable=False),
    sa.Column('infos', sa.JSON(), nullable=False),
    sa.Column('warnings', sa.JSON(), nullable=False),
    sa.Column('errors', sa.JSON(), nullable=False),
    sa.Column('token_updates', sa.JSON(), nullable=False),
    sa.Column('uids', sa.JSON(), nullable=False),
    sa.Column('warcs_count', sa.Integer(), nullable=False),
    sa.Column('warcs_bytes', sa.BigInteger(), nullable=False),
    sa.Column('service', sa.String(length=200), nullable=True),
    sa.Column('host', sa.String(length=200), nullable=True),
    sa.Column('instance', sa.String(length=100), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['source_id'], ['sources.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('source_id', 'scheduled_for', name='uq_jobs_source_slot')
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jobs_source_id'), ['source_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_status'), ['status'], unique=False)

    op.create_table('secrets',
    sa.Column('source_id', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['source_id'], ['sources.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('source_id', 'name')
    )


def downgrade() -> None:
    op.drop_table('secrets')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_status'))
        batch_op.drop_index(batch_op.f('ix_jobs_source_id'))

    op.drop_table('jobs')
    op.drop_table('attachments')
    with op.batch_alter_table('warcs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_warcs_harvest_id'))
        batch_op.drop_index('ix_warcs_collection')

    op.drop_table('warcs')
    with op.batch_alter_table('sources', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sources_next_due'))

    op.drop_table('sources')
    op.drop_table('rejected_messages')
    op.drop_table('exports')
