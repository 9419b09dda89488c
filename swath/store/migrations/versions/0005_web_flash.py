"""A session's flash message: what the server says on the next page after a change (never text from a URL).

Revision ID: 0005
Revises: 0004 (the web application's tables)
Create Date: 2026-11-27 03:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('web_sessions') as batch_op:
        batch_op.add_column(sa.Column('flash', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('web_sessions') as batch_op:
        batch_op.drop_column('flash')
