"""Alembic environment: run on the connection `swath.store.db.upgrade` hands over (no alembic.ini)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from swath.store import lease_models, notify_models, web_models  # noqa: F401  (their tables, for autogenerate)
from swath.store.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        # several services start at once against one database: one migrates, the others wait
        connection.execute(text("SELECT pg_advisory_xact_lock(727401)"))
    context.run_migrations()
