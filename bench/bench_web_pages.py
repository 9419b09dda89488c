"""Server time of each main page of the web application at two sizes of installation: 20 collections / 200
runs and 2,000 collections / 20,000 runs (issue #32: no page's time should grow more than 2x between them).

    .venv/bin/python bench/bench_web_pages.py --work /tmp/swath-bench-web [--rounds 5]

Each size is a SQLite store under --work with one group, collection sets of 20 collections each, OAI-PMH
collections of 3 seeds, runs spread over them (finished, with stats) and as many exports asked in the web; a
member of the group and the pages fetched in-process (Starlette's TestClient, no network), one discarded
fetch first, the median of the rounds after it. Admin pages that reach the broker (/ops, an admin's /status)
are left out: the broker's time is not the page's. Prints one JSON object per size and the ratios.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PER_SET = 20


def build(root: Path, collections: int, runs: int):  # -> (config, store)
    from swath.core.config import Config
    from swath.store import Store, web_repo
    from swath.store.models import Export, Job, Source, utcnow
    from swath.store.web_models import CollectionSet, ExportRequest
    from swath.web.auth import add_user
    from tests.webkit import PASSWORD

    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    config = dataclasses.replace(Config.from_env({"SWATH_DATA_ROOT": str(root)}),
                                 db_url=f"sqlite:///{root}/swath.sqlite", secret_key="")
    store = Store(url=config.db_url)
    add_user(store, name="member", password=PASSWORD, is_admin=False, groups=["lib"])
    now = utcnow()
    with store.session() as s:
        group = web_repo.group_named(s, "lib")
        sets = [CollectionSet(id=f"set-{n}", name=f"Set {n}", group_id=group.id)
                for n in range(max(1, collections // PER_SET))]
        s.add_all(sets)
        sources = [Source(id=f"src{n:06d}", name=f"Collection {n}", harvest_type="oai_pmh", platform="oai_pmh",
                          seeds=[{"id": f"s{n}-{k}", "token": f"https://oai{k}.example.org/oai"} for k in range(3)],
                          options={}, credentials={}, collection_set_id=sets[n % len(sets)].id,
                          collection_id=f"c{n}", validation="accepted") for n in range(collections)]
        s.add_all(sources)
        s.flush()
        s.add_all(Job(id=f"run{n:07d}", source_id=sources[n % collections].id, harvest_type="oai_pmh",
                      routing_key="harvest.start.oai_pmh.oai_pmh", trigger="schedule", status="completed success",
                      stats={"2026-11-01": {"records": 10}}, created_at=now - dt.timedelta(minutes=n),
                      updated_at=now - dt.timedelta(minutes=n), service="OAI-PMH Harvester")
                  for n in range(runs))
        exports = [Export(id=f"exp{n:06d}", export_type="oai_pmh", format="csv", status="completed success",
                          collection_id=sources[n % collections].collection_id) for n in range(collections)]
        s.add_all(exports)
        s.add_all(ExportRequest(export_id=e.id, collection_set_id=sources[n].collection_set_id,
                                source_id=sources[n].id, user_name="member") for n, e in enumerate(exports))
    return config, store


def time_pages(config, store, rounds: int) -> dict[str, float]:
    from tests.webkit import client, login

    c = client(config, store)
    login(c, "member")
    pages = {"home": "/", "set": "/sets/set-0", "collection": "/collections/src000000", "run": "/runs/run0000000",
             "run json": "/runs/run0000000.json", "exports": "/exports", "status": "/status"}
    out = {}
    for name, url in pages.items():
        assert c.get(url).status_code == 200, url  # discarded: warms caches and templates
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            response = c.get(url)
            times.append(time.perf_counter() - start)
            assert response.status_code == 200, url
        out[name] = round(statistics.median(times) * 1000, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=Path("/tmp/swath-bench-web"))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = {}
    for collections, runs in ((20, 200), (2000, 20000)):
        config, store = build(args.work / f"c{collections}", collections, runs)
        results[collections] = time_pages(config, store, args.rounds)
        store.close()
        print(json.dumps({"collections": collections, "runs": runs, "ms": results[collections]}))
    ratios = {page: round(results[2000][page] / results[20][page], 2) for page in results[20]}
    print(json.dumps({"ratio 2000/20": ratios}))
    return 0 if all(r <= 2 for r in ratios.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
