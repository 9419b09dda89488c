"""Build a large, realistic Twitter v2 input: search pages of 100 tweets (with includes) in gzip WARCs
as swath harvests write them, and the same pages as JSONL (one API response per line, like twarc2
writes) for tools that read files.

    .venv/bin/python bench/gen_tweets.py --tweets 200000 --out /tmp/swath-bench/200k

A share of tweets is harvested twice (a later page repeats them with new metrics) so dedupe has
work to do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import random
from pathlib import Path

import orjson
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WORDS = ("the a archive data research social media harvest library collection twitter export warc "
         "climate election vote music science open public health city news sport art history "
         "über café naïve 東京 データ مرحبا 😀 🎉").split()
URL = ("https://api.twitter.com/2/tweets/search/recent?query=bench&max_results=100&expansions=author_id"
       "%2Creferenced_tweets.id%2Centities.mentions.username&tweet.fields=created_at%2Cpublic_metrics")


def user(rng: random.Random, uid: int) -> dict:
    return {
        "id": str(uid), "username": f"user_{uid}", "name": f"User {uid} {rng.choice(WORDS)}",
        "created_at": f"2012-05-0{rng.randint(1, 9)}T10:00:00.000Z",
        "description": " ".join(rng.choices(WORDS, k=12)) + "\nsecond line #" + rng.choice(WORDS),
        "location": rng.choice(["Washington, DC", "Kiel", "東京", ""]), "protected": False, "verified": False,
        "profile_image_url": f"https://pbs.twimg.com/profile_images/{uid}/photo_normal.jpg",
        "public_metrics": {"followers_count": rng.randint(0, 10**6), "following_count": rng.randint(0, 5000),
                           "tweet_count": rng.randint(0, 10**5), "listed_count": rng.randint(0, 900)},
        "entities": {"url": {"urls": [{"start": 0, "end": 23, "url": "https://t.co/abc",
                                       "expanded_url": f"https://example.org/{uid}", "display_url": "example.org"}]},
                     "description": {"hashtags": [{"start": 3, "end": 9, "tag": rng.choice(WORDS)}]}},
    }


def tweet(rng: random.Random, tid: int, author: int, when: dt.datetime, ref: str | None) -> dict:
    words = rng.choices(WORDS, k=rng.randint(8, 30))
    tags = rng.sample(WORDS[:20], k=rng.randint(0, 3))
    text = " ".join(words) + "".join(f" #{t}" for t in tags)
    t = {
        "id": str(tid), "text": text, "author_id": str(author), "conversation_id": str(tid),
        "created_at": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "lang": rng.choice(["en", "de", "ja", "ar"]),
        "source": "Twitter Web App", "possibly_sensitive": False, "reply_settings": "everyone",
        "edit_history_tweet_ids": [str(tid)],
        "edit_controls": {"edits_remaining": 5, "is_edit_eligible": True,
                          "editable_until": (when + dt.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z")},
        "public_metrics": {"retweet_count": rng.randint(0, 500), "reply_count": rng.randint(0, 50),
                           "like_count": rng.randint(0, 2000), "quote_count": rng.randint(0, 20),
                           "impression_count": rng.randint(0, 10**5)},
        "entities": {
            "hashtags": [{"start": 0, "end": len(x) + 1, "tag": x} for x in tags],
            "mentions": [{"start": 0, "end": 9, "username": f"user_{rng.randint(1, 5000)}",
                          "id": str(rng.randint(1, 5000))}] if rng.random() < 0.4 else [],
            "urls": [{"start": 10, "end": 33, "url": "https://t.co/xyz", "expanded_url": f"https://example.com/{tid}",
                      "display_url": "example.com/…"}] if rng.random() < 0.3 else [],
            "annotations": [{"start": 4, "end": 10, "probability": 0.7, "type": "Place",
                             "normalized_text": "Kiel"}] if rng.random() < 0.2 else [],
        },
        "context_annotations": [{"domain": {"id": "10", "name": "Person", "description": "Named people"},
                                 "entity": {"id": "799022225751871488", "name": "Someone"}}],
    }
    t["entities"] = {k: v for k, v in t["entities"].items() if v}
    if ref:
        t["referenced_tweets"] = [{"type": ref, "id": str(tid - 7)}]
    return t


def generate(*, tweets: int, out: Path, seed: int = 5, duplicate_share: float = 0.05,
             warc_pages: int = 200) -> dict:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    users = [user(rng, uid) for uid in range(1, 5001)]
    start = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
    harvested = start + dt.timedelta(days=30)
    all_tweets: list[dict] = []
    for n in range(tweets):
        ref = rng.choices([None, "retweeted", "quoted", "replied_to"], weights=[70, 15, 5, 10])[0]
        all_tweets.append(tweet(rng, 10**18 + n, rng.randint(1, 5000), start + dt.timedelta(seconds=n * 7),
                                ref if n > 10 else None))
    # Repeat a share of tweets in later pages, with changed metrics: the latest copy must win.
    repeats = [dict(t, public_metrics=dict(t["public_metrics"], like_count=t["public_metrics"]["like_count"] + 1))
               for t in rng.sample(all_tweets, int(tweets * duplicate_share))]
    stream = all_tweets + repeats
    pages = [stream[i:i + 100] for i in range(0, len(stream), 100)]
    by_id = {t["id"]: t for t in all_tweets}
    jsonl = open(out / "tweets.jsonl", "wb")
    warc_count = 0
    for w in range(0, len(pages), warc_pages):
        path = out / f"bench-{w // warc_pages:05d}.warc.gz"
        with open(path, "wb") as fh:
            writer = WARCWriter(fh, gzip=True)
            for p, page in enumerate(pages[w:w + warc_pages]):
                authors = {t["author_id"] for t in page}
                refs = [by_id[r["id"]] for t in page for r in t.get("referenced_tweets", []) if r["id"] in by_id]
                authors |= {t["author_id"] for t in refs}
                body = orjson.dumps({
                    "data": page,
                    "includes": {"users": [users[int(a) - 1] for a in sorted(authors)], "tweets": refs},
                    "meta": {"result_count": len(page), "newest_id": page[0]["id"], "oldest_id": page[-1]["id"]},
                })
                when = harvested + dt.timedelta(seconds=(w + p) * 2)
                http = StatusAndHeaders("200 OK", [("Content-Type", "application/json; charset=utf-8"),
                                                   ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
                rec = writer.create_warc_record(URL, "response", payload=io.BytesIO(body), http_headers=http,
                                                warc_headers_dict={"WARC-Date": when.strftime("%Y-%m-%dT%H:%M:%SZ")})
                writer.write_record(rec)
                jsonl.write(body + b"\n")
        warc_count += 1
    jsonl.close()
    return {"tweets": tweets, "items_in_warcs": len(stream), "unique": tweets, "warcs": warc_count, "out": str(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tweets", type=int, default=200_000)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    print(orjson.dumps(generate(tweets=args.tweets, out=args.out, seed=args.seed)).decode())


if __name__ == "__main__":
    main()
