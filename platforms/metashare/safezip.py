"""Read and write the protocol's small ZIP files in memory, refusing hostile archives before anything is stored.

Nothing is ever extracted to disk: entries are read into bytes, so a hostile name cannot place a file anywhere.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from collections.abc import Iterable

from swath.messages import codes
from swath.platforms.metashare.errors import MetashareError

_CHUNK = 64 * 1024


def read_zip(body: bytes, *, expected: tuple[str, ...], max_bytes: int, what: str) -> dict[str, bytes]:
    """Return {name: content} for a ZIP holding exactly `expected`, in that order, inflating to at most max_bytes.

    `what` names the archive in error messages (e.g. "LR 4f2e... ZIP").
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        head = body[:16]
        raise MetashareError(f"{what} is not a ZIP file ({exc}; starts with {head!r})", code=codes.BAD_ZIP) from None
    with archive:
        infos = archive.infolist()
        names = [info.filename for info in infos]
        unsafe = [name for name in names if not _is_safe_name(name)]
        if unsafe:
            raise MetashareError(f"{what} has unsafe entry names {unsafe!r}; refused", code=codes.ZIP_UNSAFE_NAME)
        if tuple(names) != expected:
            missing = [n for n in expected if n not in names]
            extra = [n for n in names if n not in expected or names.count(n) > 1]
            raise MetashareError(
                f"{what} must hold exactly {list(expected)} in that order; got {names!r}"
                f" (missing {missing!r}, extra {extra!r})", code=codes.ZIP_UNEXPECTED_ENTRIES,
            )
        declared = sum(info.file_size for info in infos)
        if declared > max_bytes:
            raise MetashareError(f"{what} declares {declared} bytes inflated, over the limit {max_bytes}",
                                 code=codes.ZIP_TOO_LARGE)
        budget = max_bytes
        out: dict[str, bytes] = {}
        for info in infos:
            if info.flag_bits & 0x1:
                raise MetashareError(f"{what} entry {info.filename!r} is encrypted", code=codes.BAD_ZIP)
            content = _read_capped(archive, info, budget, what)
            budget -= len(content)
            out[info.filename] = content
        return out


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, what: str) -> bytes:
    # Declared sizes can lie, so count what actually inflates and stop one chunk past the budget.
    parts: list[bytes] = []
    total = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(min(_CHUNK, budget - total + 1)):
                total += len(chunk)
                if total > budget:
                    raise MetashareError(f"{what} entry {info.filename!r} inflates past the limit",
                                         code=codes.ZIP_TOO_LARGE)
                parts.append(chunk)
    except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError, OSError) as exc:
        raise MetashareError(f"{what} entry {info.filename!r} cannot be read: {exc}", code=codes.BAD_ZIP) from None
    return b"".join(parts)


def _is_safe_name(name: str) -> bool:
    if not name or "\x00" in name or "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return False
    return ".." not in posixpath.normpath(name).split("/") and ".." not in name.split("/")


def write_zip(entries: Iterable[tuple[str, bytes]]) -> bytes:
    """A deflated ZIP with the entries in the given order (the server side of the protocol)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries:
            archive.writestr(name, content)
    return buffer.getvalue()
