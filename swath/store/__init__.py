"""The requester's store: sources, jobs, WARCs and exports in SQLAlchemy, migrated with Alembic."""

from swath.store import notify_models, web_models  # noqa: F401  (their tables join Base.metadata wherever used)
from swath.store.db import Store, StoreError

__all__ = ["Store", "StoreError"]
