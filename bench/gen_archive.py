"""Build an archive of many small WARCs, deterministically, with the warc_created message of each: the input of
bench/bench_export_index.py and tests/test_export_index.py.

    .venv/bin/python bench/gen_archive.py --warcs 1000 --out /tmp/swath-archive

WARC n is `collections/set1/c<n // per_collection>/<n>.warc.gz`, harvested by seed `seed-<n // seed_warcs>`
(uid `<1000 + that number>`), dated `BASE + n hours`, holding one Twitter v2 search page. Seed 0's WARCs
hold `seed_items` tweets between them; every other WARC holds `other_items`, all by its own seed's user,
so only a seed's WARCs hold its items.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
from pathlib import Path
from typing import Any

import orjson
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

BASE = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
URL = "https://api.twitter.com/2/tweets/search/recent?query=archive&max_results=100"
TYPE = "twitter_search_2"


def seed_of(n: int, seed_warcs: int) -> tuple[str, str]:
    """(seed id, uid) of WARC n."""
    k = n // seed_warcs
    return f"seed-{k}", str(1000 + k)


def warc_date(n: int) -> dt.datetime:
    return BASE + dt.timedelta(hours=n)


def _page(n: int, items: int, uid: str, first_id: int) -> bytes:
    when = warc_date(n)
    data = [{"id": str(first_id + i), "text": f"tweet {first_id + i} of warc {n}", "author_id": uid,
             "created_at": (when - dt.timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")}
            for i in range(items)]
    return orjson.dumps({"data": data, "meta": {"result_count": items}})


def generate(*, out: Path, warcs: int, per_collection: int = 100, seed_warcs: int = 10, seed_items: int = 1000,
             other_items: int = 2) -> dict[str, Any]:
    """Write the archive under `out` (the data root); returns its manifest: per WARC its path, collection,
    seed, uid, date and items, and the warc_created bodies."""
    entries, messages = [], []
    next_id = 10**15
    for n in range(warcs):
        seed_id, uid = seed_of(n, seed_warcs)
        collection = f"c{n // per_collection:04d}"
        items = seed_items // seed_warcs if seed_id == "seed-0" else other_items
        body = _page(n, items, uid, next_id)
        next_id += items
        folder = out / "collections" / "set1" / collection
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{n:06d}.warc.gz"
        stamp = warc_date(n).strftime("%Y-%m-%dT%H:%M:%SZ")
        buffer = io.BytesIO()
        http = StatusAndHeaders("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
                                protocol="HTTP/1.1")
        writer = WARCWriter(buffer, gzip=True)
        writer.write_record(writer.create_warc_record(URL, "response", payload=io.BytesIO(body), http_headers=http,
                                                      warc_headers_dict={"WARC-Date": stamp}))
        data = buffer.getvalue()
        path.write_bytes(data)
        iso = warc_date(n).isoformat()
        entries.append({"n": n, "path": str(path), "collection": collection, "seed": seed_id, "uid": uid,
                        "date": iso, "items": items})
        messages.append({
            "warc": {"path": str(path), "sha1": hashlib.sha1(data).hexdigest(), "bytes": len(data), "id": f"w{n}",
                     "date_created": iso, "date_first": iso, "date_last": iso},
            "collection_set": {"id": "set1"}, "collection": {"id": collection},
            "harvest": {"id": f"h-{seed_id}", "type": TYPE}, "seeds": [{"id": seed_id, "uid": uid}],
        })
    return {"warcs": entries, "messages": messages}


def index_messages(store: Any, messages: list[dict[str, Any]], *, data_root: Path) -> None:
    """Record the warc_created bodies as the monitor does, in one transaction."""
    from swath.messages.model import WarcCreated
    from swath.monitor import record_warc_created

    with store.session() as s:
        for body in messages:
            record_warc_created(s, WarcCreated.from_dict(body), data_root=data_root)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warcs", type=int, default=1000)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    manifest = generate(out=args.out, warcs=args.warcs)
    print(f"{len(manifest['warcs'])} WARCs under {args.out}")


if __name__ == "__main__":
    main()
