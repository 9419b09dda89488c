"""An index on jobs.created_at: the newest runs (home page, /status) are read from it instead of sorting every
run of the installation (issue #32: a page's time must not grow with the number of runs).

Revision ID: 0010
Revises: 0009 (purge_after)
Create Date: 2026-11-27 04:10:00
"""

from __future__ import annotations

from alembic import op

revision = '0010'  # renumber here and in down_revision only: nothing else names it
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_jobs_created_at', 'jobs', ['created_at'])


def downgrade() -> None:
    op.drop_index('ix_jobs_created_at', table_name='jobs')
