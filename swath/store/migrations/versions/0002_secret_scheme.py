"""Secrets carry their scheme: "fernet" (sealed with SWATH_SECRET_KEY) or "plain" (every row before this one).

The rows themselves are not touched here: sealing needs the key, which the services that migrate on start may
not hold; `swath secrets migrate` seals the plain rows (docs/security.md, "Credentials at rest").

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 19:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('secrets') as batch_op:
        batch_op.add_column(sa.Column('scheme', sa.String(length=20), server_default='plain', nullable=False))


def downgrade() -> None:
    sealed = op.get_bind().scalar(sa.text("SELECT count(*) FROM secrets WHERE scheme <> 'plain'"))
    if sealed:
        # an older swath would send the Fernet token as the credential itself
        raise RuntimeError(f"{sealed} stored credential(s) are encrypted; older swath versions cannot read "
                           "them: remove those sources or store env: references before downgrading")
    with op.batch_alter_table('secrets') as batch_op:
        batch_op.drop_column('scheme')
