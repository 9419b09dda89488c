"""WACZ packages of a collection's WARCs, made with the field's own tool (the `wacz` package): the WARCs, a CDXJ
index (`indexes/index.cdx.gz`), a pages list and a datapackage, so ReplayWeb.page and pywb open them.

swath writes the pages list itself: an API harvest has no HTML pages for `wacz --detect-pages` to find, so every
2xx HTTP capture is a page (its URL and capture time). Derived records (urn: URIs) are in the index, not pages.
See docs/wacz.md.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from fastwarc.warc import ArchiveIterator, WarcRecordType

from swath.core.errors import SwathError
from swath.core.paths import safe_id, staged_path, stays_inside
from swath.core.storage import storage_fault, storage_writes
from swath.core.warc_files import is_object_url, open_warc
from swath.exporters.warc_index import is_warc
from swath.messages import codes

PAGES_FORMAT = "json-pages-1.0"  # the WACZ spec's pages.jsonl header format


@dataclass(frozen=True)
class Packaged:
    """A WACZ written: where, how many WARCs and pages went in."""

    path: Path
    warcs: int
    pages: int


@dataclass(frozen=True)
class Found:
    """The WARCs to package, and those skipped: links (or files under linked folders) leading out of the root."""

    warcs: list[Path]
    outside: list[Path]


def of_harvests(harvest_ids: Iterable[str]) -> Callable[[str], bool]:
    """Whether a WARC file name is one of these harvests' (any, when none is named): the id, a dash and a date
    (swath's and SFM's names), so `run-1` never takes the files of `run-1-b`, which also start with `run-1-`."""
    pattern = re.compile("|".join(rf"{re.escape(safe_id(h))}-\d{{8}}" for h in harvest_ids))
    return lambda name: not pattern.pattern or pattern.match(name) is not None


def collection_warcs(path: Path, *, harvest_ids: Iterable[str] = (), root: Path | None = None) -> Found:
    """The complete WARCs under a collection folder (never `.open` ones or swath's own `.swath/`), in path order;
    with `harvest_ids`, only those harvests' files (their names start with the harvest id). A WARC whose real path
    is outside `root` (default: the folder itself) is skipped, never packaged: a planted link must not carry an
    outside file into the package."""
    ours = of_harvests(harvest_ids)
    found: list[Path] = []
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        # a regular file (a FIFO named like a WARC would hold the package for ever, waiting for a writer)
        found.extend(Path(folder) / name for name in files
                     if is_warc(name) and ours(name) and os.path.isfile(os.path.join(folder, name)))
    bound = root or path
    inside = [warc for warc in found if stays_inside(bound, warc)]
    return Found(sorted(inside, key=str), sorted(set(found) - set(inside), key=str))


def pages(warcs: Iterable[Path | str]) -> Iterator[dict[str, str]]:
    """A page for every 2xx HTTP response captured (URL and WARC-Date), in file order (an s3:// WARC is read
    by ranged GETs, core/warc_files.py)."""
    for warc in warcs:
        with open_warc(warc) as fh:
            for record in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
                status = (record.http_headers.status_code if record.http_headers else None) or 0
                url = record.headers.get("WARC-Target-URI") or ""
                if 200 <= status < 300 and url.startswith(("http://", "https://")):
                    yield {"url": url, "ts": record.headers.get("WARC-Date") or "", "title": url}


def package(warcs: Sequence[Path | str], output: Path, *, title: str, description: str = "") -> Packaged:
    """Write `output` (a .wacz) holding `warcs`, indexed by the `wacz` package; SwathError if nothing to pack
    or the tool refused. An s3:// WARC is streamed to the package's temporary folder first (its bytes go into the
    package whole; the tool reads files), once."""
    from wacz.main import main as wacz_main  # heavy (frictionless): imported when a package is made

    if not warcs:
        raise SwathError("no WARC files to package; check the collection path (and --harvest ids)",
                         code=codes.WACZ_FAILED)
    names = [_name(w) for w in warcs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # the WACZ keeps archive/<file name>: one name, one file
        raise SwathError(f"two WARC files share the name {twice[0]}; package them separately",
                         code=codes.WACZ_FAILED)
    with storage_writes(output):
        output.parent.mkdir(parents=True, exist_ok=True)
    with storage_writes(output), tempfile.TemporaryDirectory(prefix="swath-wacz-") as tmp, \
            staged_path(output) as partial:
        files = [_local(w, Path(tmp)) for w in warcs]
        pages_file = Path(tmp) / "pages.jsonl"
        count = 0
        with open(pages_file, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"format": PAGES_FORMAT, "id": "pages", "title": title}) + "\n")
            for page in pages(files):
                fh.write(json.dumps(page) + "\n")
                count += 1
        args = ["create", "-o", str(partial), "--title", title, *(["--desc", description] if description else []),
                *(["-p", str(pages_file)] if count else []), *map(str, files)]
        chatter = io.StringIO()
        try:
            with contextlib.redirect_stdout(chatter):  # the tool narrates every step on stdout
                result = wacz_main(args)
        except Exception as exc:
            fault = storage_fault(exc, partial)  # a full or read-only disk says so, with its code
            if fault is not None:
                raise fault from exc
            raise SwathError(f"the wacz tool failed: {type(exc).__name__}: {exc}", code=codes.WACZ_FAILED) from exc
        if result not in (0, None):
            raise SwathError(f"the wacz tool failed: {chatter.getvalue().strip()[-500:]}", code=codes.WACZ_FAILED)
    return Packaged(path=output, warcs=len(warcs), pages=count)


def _name(warc: Path | str) -> str:
    return str(warc).rsplit("/", 1)[-1]


def _local(warc: Path | str, tmp: Path) -> Path:
    """The WARC as a local file: itself, or an s3:// object streamed (ranged GETs) into `tmp/warcs/`."""
    if not is_object_url(warc):
        if not os.path.isfile(warc):  # an indexed WARC replaced by a FIFO or device: never waited on
            raise SwathError(f"{warc} is not a regular file; not packaged", code=codes.WACZ_FAILED)
        return Path(warc)
    staged = tmp / "warcs" / _name(warc)
    staged.parent.mkdir(exist_ok=True)
    with open_warc(warc) as source, open(staged, "wb") as fh:
        shutil.copyfileobj(source, fh, 1 << 20)
    return staged
