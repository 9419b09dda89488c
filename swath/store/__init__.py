"""The requester's store: sources, jobs, WARCs and exports in SQLAlchemy, migrated with Alembic."""

from swath.store import web_models  # noqa: F401  (the web tables join Base.metadata wherever the store is used)
from swath.store.db import Store, StoreError

__all__ = ["Store", "StoreError"]
