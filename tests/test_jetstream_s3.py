"""bluesky_jetstream with object storage (SWATH_STORAGE_URL=s3://...): a run killed with events in its open WARC is
resumed by `swath harvest run` (claim and state in PostgreSQL), which uploads the recovered WARC first; the catch-up
reads the harvest's WARCs from the store, so the resumed connection asks from the newest recorded event and no
event is recorded twice. Real SeaweedFS (tests/seaweed.py), real PostgreSQL, the fake Jetstream."""

from __future__ import annotations

import io
import json
import os
import signal

import orjson
from warcio.archiveiterator import ArchiveIterator

from swath.messages import codes
from tests.enginekit import HarvestProcess, wait_for
from tests.fakes.bluesky import FakeJetstream
from tests.fakes.social import start_body
from tests.requesterkit import pg_url  # noqa: F401  (fixture)
from tests.seaweed import ACCESS_KEY, SECRET_KEY
from tests.test_bluesky_jetstream import ROOT, counted


def runner(message, env: dict[str, str]) -> HarvestProcess:
    """`swath harvest run --json MESSAGE` in a subprocess; its status lines collected."""
    return HarvestProcess(["swath", "harvest", "run", "--json", str(message)], env, cwd=ROOT, timeout=180)


def _stored_events(seaweed, storage_url: str) -> list[int]:
    """The time_us of every event in the bucket's WARCs, in WARC serial order (read with warcio)."""
    client = seaweed.client()
    bucket, _, prefix = storage_url.removeprefix("s3://").partition("/")
    keys = sorted((o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", [])
                   if o["Key"].endswith(".warc.gz")), key=lambda k: k.rpartition("-")[2])
    events = []
    for key in keys:
        data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        for rec in ArchiveIterator(io.BytesIO(data)):
            if rec.rec_type == "resource" and "/subscribe" in rec.rec_headers.get_header("WARC-Target-URI"):
                events += [orjson.loads(line)["time_us"] for line in rec.content_stream().read().splitlines()]
    return events


def test_a_resume_in_s3_mode_reads_the_uploaded_warcs_and_records_no_event_twice(s3_config, seaweed, data_root,
                                                                                  tmp_path, pg_url):  # noqa: F811
    with FakeJetstream() as fake:
        body = start_body("bluesky_jetstream", [], credentials={}, options={"jetstream_url": fake.url},
                          harvest_id="jet:s3kill9")
        message = tmp_path / "start.json"
        message.write_text(json.dumps(body))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWATH_")},
               "SWATH_DATA_ROOT": str(data_root), "SWATH_WARC_MAX_SECONDS": "300", "SWATH_STATUS_INTERVAL": "0.1",
               "PYTHONPATH": str(ROOT), "SWATH_DB_URL": pg_url, "SWATH_STORAGE_URL": s3_config.storage_url,
               "SWATH_STORAGE_ENDPOINT": s3_config.storage_endpoint, "SWATH_STORAGE_ACCESS_KEY_ID": ACCESS_KEY,
               "SWATH_STORAGE_SECRET_ACCESS_KEY": SECRET_KEY}
        first = runner(message, env)
        fake.emit(2500, pad=600)  # more than a segment's 1 MiB: written to the open WARC, which is never closed
        wait_for(lambda: any(p.stat().st_size > 8192 for p in data_root.rglob("*.open")),
                 what="a segment in the open WARC", timeout=120)
        first.proc.send_signal(signal.SIGKILL)
        first.wait()
        before = len(fake.events)

        second = runner(message, env)
        wait_for(lambda: len(fake.connections) == 2, what="the resumed run's connection", timeout=120)
        fake.emit(8)
        wait_for(lambda: counted(second.statuses, "events") == before + 8, what="every event counted once",
                 timeout=120)
        second.proc.send_signal(signal.SIGINT)  # harvest.stop
        assert second.wait() == 0
        events = list(fake.events)

    final = second.statuses[-1]
    assert final["status"] == "completed success", final
    assert counted([final], "events") == len(events) == before + 8
    warned = [n["code"] for n in final["warnings"]]
    assert codes.HARVEST_RESUMED in warned and codes.WARC_RECOVERED in warned
    assert not list(data_root.rglob("*.warc.gz")) and not list(data_root.rglob("*.open"))  # all in the store
    stored = _stored_events(seaweed, s3_config.storage_url)
    assert stored == [e["time_us"] for e in events]  # each event once, in order: none replayed into the WARCs
    # the resumed connection asked from the newest event in the uploaded WARCs, the recovered one included
    assert int(fake.connections[1]["cursor"][0]) in [e["time_us"] for e in events[:before]]
