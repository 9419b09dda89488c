"""Hostile API JSON through the exporters: real responses from SFM's WARCs, mutated at random places.

Every remote response is untrusted. Whatever shape a page takes, reading its items, building every
table row, encoding it in every format and making its dedupe key must not raise: an odd item may lose
cells, never the export.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swath.exporters import registry
from swath.exporters.dedupe import dedupe_key
from swath.exporters.items import docs
from swath.exporters.records import sources_for
from swath.exporters.warc_reader import Response, iter_responses
from swath.exporters.writers import FORMATS

pytestmark = pytest.mark.reliability

# One export type per JSON source class: the social platforms SFM's WARCs hold (and, below, a dataset record).
EXPORT_TYPES = ["twitter_search", "twitter_search_2", "flickr_user", "tumblr_blog_posts", "weibo_timeline"]
PER_SOURCE = 3  # skeleton documents kept per source: different endpoints and shapes
LIST_KEEP = 2  # lists cut to their first items: the shapes matter, not the count

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _trim(value: Any) -> Any:
    if isinstance(value, list):
        return [_trim(v) for v in value[:LIST_KEEP]]
    if isinstance(value, dict):
        return {k: _trim(v) for k, v in value.items()}
    return value


def _skeletons(fixtures: Path) -> list[tuple[str, str, Any]]:
    """(export type, URL, trimmed JSON document) of fixture responses that give items."""
    found: list[tuple[str, str, Any]] = []
    for export_type in EXPORT_TYPES:
        classes = registry.lookup(export_type).sources
        kept: dict[type, int] = {}
        for warc in sorted(fixtures.glob("sfm-warcs/**/*.warc.gz")):
            for resp in iter_responses(warc, on_truncated=lambda path, message: None):
                for source in sources_for(export_type, {}):
                    if kept.get(type(source), 0) >= PER_SOURCE or not source.reads(resp):
                        continue
                    for doc in docs(resp.body, lambda n: None):
                        one = Response(url=resp.url, date=resp.date, body=doc.body, warc="", offset=0)
                        if any(True for _ in source.items(one, want_raw=False, on_bad=lambda n: None)):
                            found.append((export_type, resp.url, _trim(doc.value)))
                            kept[type(source)] = kept.get(type(source), 0) + 1
                            break
        assert set(kept) == set(classes), f"{export_type}: no fixture response gave items for {classes}"
    return found


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _replaced(value[head], rest, new)}
    if isinstance(value, list) and isinstance(head, int) and head < len(value):
        return [*value[:head], _replaced(value[head], rest, new), *value[head + 1:]]
    return value


# A dataset record as the metadata backends write it (docs/metadata-harvesting.md): swath's own JSON, but
# its values come from remote catalogues.
DATASET_RECORD = {
    "id": "ds-1", "status": "active",
    "harvest": {"backend": "ckan", "source_id": "src", "domain": "data.example.org", "last_update": "2026-01-02",
                "source_url": "https://data.example.org/dataset/ds-1"},
    "dataset": {"title": "Trees", "description": "All the trees", "tags": ["trees", "city"], "frequency": "annual",
                "temporal_coverage": {"start": "2020-01-01", "end": "2020-12-31"}, "license": "CC-BY-4.0",
                "created_at": "2020-01-01T00:00:00Z", "last_modified": "2021-05-06T07:08:09Z",
                "resources": [{"url": "https://data.example.org/trees.csv", "format": "csv"}],
                "extras": {"uri": "https://data.example.org/dataset/ds-1", "ckan:name": "trees"}},
}


@pytest.fixture(scope="module")
def skeletons(fixtures_dir: Path) -> list[tuple[str, str, Any]]:
    return [*_skeletons(fixtures_dir), ("ckan", DATASET_URL, DATASET_RECORD)]


DATASET_URL = "urn:swath:dataset:ckan:src:ds-1"


def _export_everything(export_type: str, url: str, document: Any) -> int:
    """Read the document's items and build, encode and key each in every format; the items read."""
    resp = Response(url=url, date=dt.datetime(2020, 1, 2, tzinfo=dt.UTC), body=json.dumps(document).encode(),
                    warc="fuzz.warc.gz", offset=0, item_type="dataset" if url == DATASET_URL else None)
    count = 0
    for writer_cls in FORMATS.values():
        for source in sources_for(export_type, {}):
            if not source.reads(resp):
                continue
            for item in source.items(resp, want_raw=writer_cls.needs_raw, on_bad=lambda n: None):
                encode = writer_cls.encoder(source.table.headers)
                row = source.table.row(item) if writer_cls.needs_row else None
                if row is not None:
                    assert len(row) == len(source.table.headers)
                encode(item, row)
                dedupe_key(item.key or item.id)
                _ = item.date, item.uid
                count += 1
    return count


def test_fixture_documents_export_in_every_format(skeletons):
    """The skeletons themselves (the unmutated control): every one gives items."""
    assert skeletons
    for export_type, url, document in skeletons:
        assert _export_everything(export_type, url, document) > 0, (export_type, url)


# (too_slow too, as in tests/seeds.py's profiles: a list given here replaces the profile's)
@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_documents_never_fail_the_export(skeletons, data):
    export_type, url, document = skeletons[data.draw(st.integers(0, len(skeletons) - 1), label="skeleton")]
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        path = data.draw(st.sampled_from(_paths(document)), label="path")
        document = _replaced(document, path, data.draw(json_values, label="value"))
    _export_everything(export_type, url, document)
