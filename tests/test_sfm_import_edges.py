"""`swath sfm import` at its edges (the site of tests/sfmkit.py): WARC rows naming a file outside the harvest root
or not a file, a second run after SFM harvested more (only that is taken), a name swath has already (the source
gets SFM's id beside it), and a collection id that is not one folder name (skipped with its WARCs)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os

from sqlalchemy import create_engine, text

from swath.core.config import Config
from swath.messages import codes
from swath.sfm_bring import BAD_IDS
from swath.sfm_import import SfmWarc
from swath.sfm_warcs import check_warc
from swath.store import Store, repo
from swath.store.secrets import SecretBox, generate_key
from tests.sfmkit import SITE, new, pg_url, run_import, site  # noqa: F401  (pg_url, site: fixtures)


def test_a_warc_row_naming_a_file_outside_the_harvest_root_or_not_a_file_is_reported(tmp_path):
    root, outside = tmp_path / "sfm-collection-set-data", tmp_path / "elsewhere"
    (root / "collection_set" / "a-folder.warc.gz").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "passwd"
    secret.write_bytes(b"root:x:0:0")
    (root / "collection_set" / "planted.warc.gz").symlink_to(secret)
    config = Config(data_root=tmp_path / "data", harvest_root=root)
    digest = hashlib.sha1(secret.read_bytes()).hexdigest()

    def check(path: str):
        return check_warc(config, SfmWarc(warc_id=new(), path=path, sha1=digest, bytes=secret.stat().st_size,
                                          date_created=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)))

    for path in (str(secret), f"{root}/../elsewhere/passwd", str(root / "collection_set" / "planted.warc.gz")):
        problem = check(path)
        assert problem is not None and problem.code == codes.PATH_OUTSIDE_DATA_ROOT, path
    os.mkfifo(root / "collection_set" / "fifo.warc.gz")  # opening it blocking would wait for a writer forever
    for name in ("a-folder.warc.gz", "fifo.warc.gz"):
        problem = check(str(root / "collection_set" / name))
        assert problem is not None and problem.code == codes.SFM_WARC_MISSING and "not a file" in problem.message
    too_long = check(f"{root}/{'a' * 1000}.warc.gz")  # longer than the index's path column
    assert too_long is not None and too_long.code == codes.BAD_REQUEST
    (root / "copy.warc.gz").write_bytes(secret.read_bytes())
    assert check(str(root / "copy.warc.gz")) is None  # the same bytes inside the root: the row holds


def test_a_later_run_takes_only_what_sfm_gained_and_a_taken_name_gets_sfm_s_id(site, data_root):
    url, harvest_root, _ = site
    key = generate_key()
    store = Store(url=f"sqlite:///{data_root / 'swath.sqlite'}")
    with store.session() as s:  # a source made in swath before the import, named as an SFM collection is
        repo.create_source(s, name="flickr_user", harvest_type="flickr_user", platform="flickr", seeds=[], options={},
                           credentials={}, secrets={}, box=SecretBox(), collection_set_id="default", collection_id=None)
    first = json.loads(run_import(url, data_root, harvest_root, key).stdout)
    flickr = next(c for c in first["collections"] if c["type"] == "flickr_user")
    assert flickr["source"] == f"flickr_user (sfm {flickr['sfm_id']})" and flickr["equal"]

    # SFM harvests the Tumblr collection once more after the first import
    engine = create_engine(url)
    body = os.urandom(700)
    with engine.begin() as conn:
        coll_pk, set_id, coll_id = conn.execute(text(
            "SELECT c.id, s.collection_set_id, c.collection_id FROM ui_collection c JOIN ui_collectionset s "
            "ON s.id = c.collection_set_id WHERE c.harvest_type = 'tumblr_blog_posts'")).one()
        harvest_pk = conn.execute(text("INSERT INTO ui_harvest (harvest_type, harvest_id, collection_id, status, "
                                       "date_requested, date_updated, warcs_count, warcs_bytes) VALUES "
                                       "('tumblr_blog_posts', :i, :c, 'completed success', now(), now(), 1, :b) "
                                       "RETURNING id"), {"i": new(), "c": coll_pk, "b": len(body)}).scalar_one()
        path = harvest_root / "collection_set" / set_id / coll_id / "later.warc.gz"
        path.parent.mkdir(parents=True)
        path.write_bytes(body)
        conn.execute(text("INSERT INTO ui_warc (harvest_id, warc_id, path, sha1, bytes, date_created, date_added, "
                          "date_updated) VALUES (:h, :i, :p, :s, :b, now(), now(), now())"),
                     {"h": harvest_pk, "i": new(), "p": str(path), "s": hashlib.sha1(body).hexdigest(),
                      "b": len(body)})
    engine.dispose()
    second = json.loads(run_import(url, data_root, harvest_root, key).stdout)
    assert second["imported"] == {"jobs": 1, "warcs": 1, "warc_bytes": len(body)}
    tumblr = next(c for c in second["collections"] if c["type"] == "tumblr_blog_posts")
    assert tumblr["equal"] and tumblr["swath"]["harvests"] == 1 and tumblr["swath"]["warc_bytes"] == len(body)
    with store.session() as s:
        assert {src.name for src in repo.list_sources(s)} >= {"flickr_user", flickr["source"]}
    store.close()


def test_a_collection_whose_id_is_not_one_folder_name_is_skipped_with_its_warcs(site, data_root):
    url, harvest_root, _ = site
    engine = create_engine(url)
    with engine.begin() as conn:  # a hostile or broken row: the id becomes collections/<set>/<id> in swath
        conn.execute(text("UPDATE ui_collection SET collection_id = '../escape' WHERE harvest_type = 'flickr_user'"))
    engine.dispose()
    report = json.loads(run_import(url, data_root, harvest_root, generate_key()).stdout)
    flickr = next(c for _, cs in SITE for c in cs if c[0] == "flickr_user")
    assert report["skipped"][BAD_IDS] == {"code": codes.BAD_REQUEST, "collections": 1, "seeds": len(flickr[2]),
                                          "harvests": len(flickr[3])}
    assert report["left_out"]["warcs_of_collections_with_bad_ids"] == sum(len(h) for h in flickr[3])
    store = Store(url=f"sqlite:///{data_root / 'swath.sqlite'}")
    with store.session() as s:
        assert "flickr_user" not in {src.harvest_type for src in repo.list_sources(s)}
        assert repo.warcs_for_collection(s, "../escape") == []
    store.close()
