"""The capture clock on its own (harvesters/capture.py): a capture of a URI whose second is taken moves to
the next free second, old URIs are forgotten, and the work per capture does not grow with the URIs seen;
record ids and the digests of resource records, made by swath rather than by warcio."""

from __future__ import annotations

import uuid

from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from swath.harvesters.capture import CaptureClock, new_record_id
from swath.harvesters.redaction import Redactor
from swath.harvesters.warc_records import RecordFactory

T0 = "2026-11-27T03:00:00Z"


class _CountedUri(str):
    """A URI that counts how often it is hashed: the work a dict does with it (rebuilds included)."""

    hashes = 0

    def __hash__(self) -> int:
        _CountedUri.hashes += 1
        return super().__hash__()


def test_a_second_capture_of_a_uri_in_the_same_second_takes_the_next_one():
    clock = CaptureClock()
    assert clock.date("https://a.example/1", T0) == T0
    assert clock.date("https://a.example/1", T0) == "2026-11-27T03:00:01Z"
    assert clock.date("https://a.example/2", T0) == T0  # another URI keeps its own second


def test_a_uri_recaptured_after_thousands_of_others_within_the_window_still_gets_its_own_second():
    clock = CaptureClock()
    clock.date("https://a.example/first", T0)
    for i in range(3 * CaptureClock.PRUNE_AT):
        clock.date(f"https://a.example/{i}", T0)
    assert clock.date("https://a.example/first", T0) == "2026-11-27T03:00:01Z"


def test_uris_older_than_the_window_are_forgotten():
    clock = CaptureClock()
    for i in range(2 * CaptureClock.PRUNE_AT):
        clock.date(f"https://old.example/{i}", T0)
    later = "2026-11-27T03:10:00Z"  # ten minutes on: none of those can collide again
    for i in range(10):
        clock.date(f"https://new.example/{i}", later)
    assert len(clock._last) <= CaptureClock.PRUNE_AT
    assert clock.date("https://new.example/0", later) == "2026-11-27T03:10:01Z"  # the recent ones are kept


def test_work_per_capture_stays_bounded_past_the_prune_size():
    # the old clock rebuilt its whole table on every capture past PRUNE_AT URIs within the window:
    # 20,000 URIs in one second cost ~10^8 hashes there; here a few per capture
    clock = CaptureClock()
    uris = [_CountedUri(f"https://a.example/{i}") for i in range(5 * CaptureClock.PRUNE_AT)]
    _CountedUri.hashes = 0
    for uri in uris:
        clock.date(uri, T0)
    assert _CountedUri.hashes <= 8 * len(uris)


def test_record_ids_are_distinct_version_4_uuids():
    ids = [new_record_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    for record_id in ids[:100]:
        assert record_id.startswith("<urn:uuid:") and record_id.endswith(">")
        value = uuid.UUID(record_id[len("<urn:uuid:"):-1])
        assert value.version == 4 and value.variant == uuid.RFC_4122


def test_resource_records_carry_digests_warcio_agrees_with(tmp_path):
    # the factory now writes WARC-Block-Digest and WARC-Payload-Digest itself instead of letting warcio compute them
    factory = RecordFactory(redactor=Redactor(["s3cret-value"]))
    payloads = [b'{"id": 1}', b"", b'{"token": "s3cret-value"}' * 50]
    path = tmp_path / "r.warc.gz"
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for n, payload in enumerate(payloads):
            writer.write_record(factory.plain(uri=f"urn:x:{n}", record_type="resource", payload=payload,
                                              content_type="application/json"))
    with path.open("rb") as fh:
        records = list(ArchiveIterator(fh, check_digests="raise"))
        assert len(records) == len(payloads)
    for record in records:
        assert record.rec_headers.get_header("WARC-Block-Digest") == record.rec_headers.get_header(
            "WARC-Payload-Digest")


def test_quote_part_is_what_quote_and_quote_plus_give():
    import random
    from urllib.parse import quote, quote_plus

    from swath.harvesters.capture import quote_part

    rng = random.Random(35)
    texts = ["oai:x:1", "a b/c?d&e=f%+", "".join(map(chr, range(128))), "üñí/ç é", ""]
    texts += ["".join(chr(rng.randrange(0, 400)) for _ in range(rng.randrange(0, 16))) for _ in range(20_000)]
    for text in texts:
        assert quote_part(text) == quote(text, safe=""), text
        assert quote_part(text, plus=True) == quote_plus(text), text
