"""The requester's store: sources, jobs, WARCs and exports in SQLAlchemy, migrated with Alembic."""

from swath.store import (  # noqa: F401  (their tables join Base.metadata wherever the store is used)
    group_credentials,
    notify_models,
    storage_models,
    web_models,
)
from swath.store.db import Store, StoreError

__all__ = ["Store", "StoreError"]
