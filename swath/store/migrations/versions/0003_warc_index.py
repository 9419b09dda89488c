"""The WARC index exports select by: each WARC's path from the data root, its records' date range, and its
harvest's seeds (warc_seeds); WARCs recorded before this revision have none of them and stay selectable
by collection (and by any seed, since their seeds are not known).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 22:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('warcs') as batch_op:
        batch_op.add_column(sa.Column('rel_path', sa.String(length=1000), nullable=True))
        batch_op.add_column(sa.Column('date_first', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('date_last', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('seeds_known', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.create_index('ix_warcs_seeds_known', ['seeds_known'], unique=False)
    op.create_table('warc_seeds',
    sa.Column('warc_id', sa.String(length=100), nullable=False),
    sa.Column('seed_id', sa.String(length=200), nullable=False),
    sa.Column('uid', sa.String(length=200), nullable=True),
    sa.ForeignKeyConstraint(['warc_id'], ['warcs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('warc_id', 'seed_id')
    )
    with op.batch_alter_table('warc_seeds') as batch_op:
        batch_op.create_index(batch_op.f('ix_warc_seeds_seed_id'), ['seed_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_warc_seeds_uid'), ['uid'], unique=False)


def downgrade() -> None:
    op.drop_table('warc_seeds')
    with op.batch_alter_table('warcs') as batch_op:
        batch_op.drop_index('ix_warcs_seeds_known')
        batch_op.drop_column('seeds_known')
        batch_op.drop_column('date_last')
        batch_op.drop_column('date_first')
        batch_op.drop_column('rel_path')
