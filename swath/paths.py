"""Resolve paths named in messages, refusing anything outside the data root."""

from __future__ import annotations

import os
from pathlib import Path


class PathOutsideDataRoot(ValueError):
    """A message named a path that does not resolve inside the data root."""


def resolve_inside(data_root: Path, path: str | os.PathLike[str]) -> Path:
    """Return the real path of `path` (absolute, or relative to the data root) if it is inside the root.

    Symlinks are followed for the part that exists, so a link pointing out of the root is refused.
    """
    root = Path(os.path.realpath(data_root))
    raw = Path(path)
    if "\x00" in str(path):
        raise PathOutsideDataRoot("path contains a NUL byte")
    candidate = raw if raw.is_absolute() else root / raw
    real = Path(os.path.realpath(candidate))
    if real != root and root not in real.parents:
        raise PathOutsideDataRoot(
            f"path {str(path)!r} resolves to {str(real)!r}, outside the data root {str(root)!r}; "
            "use a path under SWATH_DATA_ROOT"
        )
    return real
