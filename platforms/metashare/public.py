"""What the `swath metashare` command uses of this room: a node over an LR storage directory, and LRs added to one.

The CLI (swath/commands/metashare.py) imports this module only; the room's other modules are its own.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Sequence
from pathlib import Path

from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.protocol import check_metadata_xml
from swath.platforms.metashare.server import NodeServer
from swath.platforms.metashare.storage import LRStorage

__all__ = ["MetashareError", "add_lrs", "check_lr_files", "open_node"]


def open_node(*, directory: Path, users: dict[str, str], host: str, port: int, public_url: str | None,
              tls: ssl.SSLContext | None) -> NodeServer:
    """A node serving the LRs in `directory` to `users` (name -> password), listening once this returns."""
    return NodeServer(storage=LRStorage(root=directory), users=users, host=host, port=port, public_url=public_url,
                      tls=tls)


def check_lr_files(files: Sequence[Path]) -> None:
    """Raise MetashareError (invalid_lr) unless every file is metadata XML the node and the export can read."""
    for path in files:
        check_metadata_xml(path.read_bytes(), what=str(path))


def add_lrs(directory: Path, files: Sequence[Path], *, source_url: str) -> Iterator[tuple[str, Path]]:
    """Add each file to `directory` as a new LR created on this node: (its new storage id, the file), one by one."""
    storage = LRStorage(root=directory)
    for path in files:
        yield storage.add_master(path.read_bytes(), source_url=source_url.rstrip("/")), path
