"""What an export.start asks for, checked and resolved: the export type, the format's writer, the folder.

A request no export can answer ends the export with a failure status (ExportFailed carries its code);
a message that does not validate raises InvalidMessage, which the worker runtime dead-letters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swath.core.paths import PathOutsideDataRoot, resolve_inside
from swath.exporters import registry
from swath.exporters.report import Report
from swath.exporters.writers import FORMATS, Writer
from swath.messages import codes
from swath.messages.model import ExportStart


class ExportFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, kw_only=True)
class Request:
    start: ExportStart
    export_type: registry.ExportType
    writer_cls: type[Writer]
    directory: Path  # inside the data root, created

    @property
    def dedupe(self) -> bool:
        """Current-state tables (datasets, LRs, Xesam payloads) always keep only the latest copy of an item."""
        return self.start.dedupe or self.export_type.current_state


def export_id(body: Any) -> str:
    """The id statuses carry; none is published before accept() has checked it."""
    value = body.get("id") if isinstance(body, dict) else None
    return value if isinstance(value, str) else ""


def accept(body: Any, report: Report) -> ExportStart | None:
    """The message as an ExportStart, or None once a request without exactly one of seeds/collection got
    its failure status."""
    # SFM asks for exactly one of seeds/collection: a failure status, not a dead letter.
    if isinstance(body, dict) and isinstance(body.get("id"), str) and body["id"]:
        if ("seeds" in body) == ("collection" in body):
            report.failed(codes.BAD_REQUEST, "an export needs exactly one of seeds or collection")
            return None
    return ExportStart.from_dict(body)  # InvalidMessage: the runtime dead-letters it


def resolve(start: ExportStart, *, data_root: Path) -> Request:
    """The type, format and folder the message names, or ExportFailed with the code that says which is wrong."""
    try:
        export_type = registry.lookup(start.type)
    except registry.UnknownExportType:
        raise ExportFailed(codes.UNKNOWN_TYPE, f"no exporter for type {start.type!r}; "
                           f"known: {', '.join(registry.export_types())}") from None
    writer_cls = FORMATS.get(start.format)
    if writer_cls is None:
        raise ExportFailed(codes.UNSUPPORTED_EXPORT_FORMAT,
                           f"format {start.format!r} is not one of {', '.join(FORMATS)}")
    try:
        directory = resolve_inside(data_root, start.path)
    except PathOutsideDataRoot as exc:
        raise ExportFailed(codes.PATH_OUTSIDE_DATA_ROOT, str(exc)) from None
    directory.mkdir(parents=True, exist_ok=True)
    return Request(start=start, export_type=export_type, writer_cls=writer_cls, directory=directory)
