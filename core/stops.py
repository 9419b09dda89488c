"""Stops that arrive while no worker runs their harvest, remembered in the shared data root.

Every replica hears every harvest.stop; one that is not running the harvest records it here, so a stream
whose start message is being redelivered (its worker died) stops as soon as a replica picks it up again,
instead of running on forever.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from swath.core.paths import make_dirs_inside, write_atomic

_DIR = ".swath/stops"  # beside the exporters' index cache; WARC scans skip .swath


def _marker(data_root: Path, harvest_id: str) -> Path:
    # ids are requester-chosen text: hash them into a safe, fixed-length file name
    return data_root / _DIR / hashlib.sha1(harvest_id.encode("utf-8")).hexdigest()


def record_stop(data_root: Path, harvest_id: str) -> None:
    marker = _marker(data_root, harvest_id)
    make_dirs_inside(data_root, marker.parent)
    write_atomic(marker, harvest_id.encode("utf-8"))


def stop_recorded(data_root: Path, harvest_id: str) -> bool:
    return _marker(data_root, harvest_id).exists()


def clear_stop(data_root: Path, harvest_id: str) -> None:
    _marker(data_root, harvest_id).unlink(missing_ok=True)
