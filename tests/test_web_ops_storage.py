"""The Operations page's object storage part (swath/web/ops_services.py): with WARCs in S3 and a replica, the
replication lag (WARCs not yet copied, the oldest one's age) and the last `swath storage verify` (when, counts);
nothing of it when the WARCs are on the local filesystem. Counts are worked out from what the test records."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from sqlalchemy import update

from swath.core.config import Config
from swath.messages.model import WarcCreated
from swath.monitor import record_warc_created
from swath.shared.humanize import ago
from swath.store import Store
from swath.store.models import Warc, utcnow
from swath.store.storage_models import MISSING, OK, PRIMARY, REPLICA
from swath.store.storage_repo import finish_check, record_copy, start_check
from tests.webkit import client, login, user, web_config

TAG = re.compile(r"<[^>]+>")


def _text(page: str, element_id: str) -> str:
    found = re.search(rf'<p id="{element_id}"[^>]*>(.*?)</p>', page, re.S)
    assert found, element_id
    return " ".join(TAG.sub("", found.group(1)).split())


def _warcs(store: Store, count: int) -> list[str]:
    ids = []
    with store.session() as s:
        for n in range(count):
            record_warc_created(s, WarcCreated(
                path=f"s3://archive/swath/set1/coll1/w{n}.warc.gz", sha1=f"{n:040d}", bytes=1000 + n,
                warc_id=f"w{n}", date_created="2026-11-27T06:00:00+00:00", collection_set_id="set1",
                collection_id="coll1", harvest_id=f"h{n}", harvest_type="generic_pages"), data_root=None)
            ids.append(f"w{n}")
    return ids


def test_replication_lag_and_last_verification_are_shown_with_object_storage(config: Config, broker) -> None:
    config = web_config(dataclasses.replace(config, storage_url="s3://archive/swath",
                                            storage_replica_url="s3://copies/swath"))
    store = Store(url=config.db_url)
    user(store, "ada", admin=True, groups=("lib",))
    ids = _warcs(store, 5)
    replicated, waiting = ids[:2], ids[2:]
    oldest = utcnow() - dt.timedelta(hours=3)
    with store.session() as s:
        for warc_id in replicated:
            record_copy(s, warc_id=warc_id, target=REPLICA, result=OK, replicated=True)
        s.execute(update(Warc).where(Warc.id == waiting[0]).values(recorded_at=oldest))
        check = start_check(s, collection_id=None, deep=False)
        finish_check(s, check, warcs=5, copies=10, ok=7, missing=2, differs=1)
    c = client(config, store)
    login(c, "ada")
    page = c.get("/ops").text
    lag = _text(page, "replication-lag")
    assert f"{len(waiting)} WARC(s) not yet in the replica" in lag
    assert f"the oldest recorded {ago(oldest)}" in lag  # the oldest waiting WARC's age, as the page words ages
    assert f'datetime="{oldest.isoformat()}Z"' in page
    last = _text(page, "last-verification")
    assert "5 WARC(s), 10 copies — 7 ok, 2 missing, 1 differ" in last
    assert "s3://copies/swath" in page
    with store.session() as s:  # the waiting ones copied: no lag left
        for warc_id in waiting:
            record_copy(s, warc_id=warc_id, target=REPLICA, result=OK, replicated=True)
        record_copy(s, warc_id=ids[0], target=PRIMARY, result=MISSING)  # a primary check does not count as lag
    assert "0 WARC(s) not yet in the replica" in _text(c.get("/ops").text, "replication-lag")
    store.close()


def test_nothing_of_object_storage_is_shown_when_warcs_are_local(config: Config, broker) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", admin=True, groups=("lib",))
    _warcs(store, 2)
    c = client(config, store)
    login(c, "ada")
    page = c.get("/ops").text
    assert "Object storage" not in page and "replication-lag" not in page and "last-verification" not in page
    store.close()
