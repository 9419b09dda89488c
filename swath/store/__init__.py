"""The requester's store: sources, jobs, WARCs and exports in SQLAlchemy, migrated with Alembic."""

from swath.store.db import Store, StoreError

__all__ = ["Store", "StoreError"]
