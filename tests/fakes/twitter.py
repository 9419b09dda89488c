"""A fake Twitter API v2 on 127.0.0.1, shaped like the real one as twarc's Twarc2 sees it.

Recent and full-archive search paged by next_token, users lookup by username or id (with a renamed,
a suspended, a protected and unknown users), user timelines paged by pagination_token, `includes`
expansions, filtered-stream rules, and sample/filtered streams of newline-delimited JSON with keep-alive
blank lines that drop the connection once; `publish_live()` adds a tweet on the fake's own clock, written to the
streams open at that moment only (no backfill: a tweet published while none is open is never streamed), and
`drop_streams()` ends the open ones (their last chunk sent). Every tweet is generated from a seed, so tests count what
the fake serves instead of typing numbers in.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import queue
import random
import threading
import time
from dataclasses import dataclass, field

from tests.fakes.httpserver import Request, Response
from tests.fakes.social import FakePlatform

BEARER_TOKEN = "AAAAAAAAAAAAAAAAAAAAAFakeBearerTokenForSwathTests0123456789"
CONSUMER_KEY = "EHde7ksBGgflbP5nUalEfhaeo"
CONSUMER_SECRET = "ZtUpemtBkf2maqFiy52D5dihFPAiLebuMOmqN0jeQtXeAlen"
ACCESS_TOKEN = "481186914-c2yZjgbk13np0Z5MWEFQKSQNFBXd8T9r4k90YkJl"
ACCESS_TOKEN_SECRET = "jK9QOmn5Vbbmfg2ANT6KgfmKRqV8ThXVQ1G6qQg8BCejvp"

# tweets start three days ago (midnight UTC), inside recent search's seven-day window
EPOCH = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=3)
WORDS = ["gwu", "gelman", "libraries", "archive", "data", "research", "campus", "books", "lecture", "music"]
NOT_FOUND = "https://api.twitter.com/2/problems/resource-not-found"


def _user(uid: str, username: str, name: str, *, protected: bool = False) -> dict:
    return {
        "id": uid,
        "username": username,
        "name": name,
        "created_at": "2009-01-05T15:20:00.000Z",
        "description": f"The official account of {name}.",
        "location": "Washington, DC",
        "url": "",
        "profile_image_url": f"https://pbs.twimg.com/profile_images/{uid}/photo_normal.jpg",
        "protected": protected,
        "verified": False,
        "public_metrics": {"followers_count": 1200, "following_count": 300, "tweet_count": 0, "listed_count": 4},
    }


@dataclass
class World:
    """The accounts and tweets the fake knows. Tweets are newest first, as the API returns them."""

    users: dict[str, dict] = field(default_factory=dict)  # id -> user
    suspended: dict[str, str] = field(default_factory=dict)  # id -> username
    tweets: list[dict] = field(default_factory=list)
    live: list[dict] = field(default_factory=list)  # tweets the streams deliver
    renamed: dict[str, str] = field(default_factory=dict)  # old username -> id

    def by_username(self, name: str) -> dict | None:
        return next((u for u in self.users.values() if u["username"].lower() == name.lower()), None)

    def tweet(self, tid: str) -> dict | None:
        return next((t for t in self.tweets + self.live if t["id"] == tid), None)


def build_world(*, tweets: int = 60, live: int = 12, seed: int = 7) -> World:
    world = World()
    for user in (
        _user("17455195", "gwu", "George Washington University"),
        _user("1480000000000000001", "GelmanLibrary", "Gelman Library"),
        _user("2244994945", "TwitterDev", "Twitter Dev"),
        _user("1500000000000000003", "private_acct", "Private Person", protected=True),
    ):
        world.users[user["id"]] = user
    world.suspended["1500000000000000004"] = "suspended_acct"
    world.renamed["gelman"] = "1480000000000000001"
    authors = ["17455195", "1480000000000000001", "2244994945", "1500000000000000003"]
    rng = random.Random(seed)
    all_tweets: list[dict] = []
    for i in range(tweets + live):
        all_tweets.append(_make_tweet(i, authors[i % len(authors)], rng, all_tweets))
    for t in all_tweets:
        world.users[t["author_id"]]["public_metrics"]["tweet_count"] += 1
    world.tweets = list(reversed(all_tweets[:tweets]))
    world.live = all_tweets[tweets:]  # oldest first: the order a stream delivers them
    return world


def _make_tweet(i: int, author: str, rng: random.Random, earlier: list[dict]) -> dict:
    created = EPOCH + dt.timedelta(minutes=7 * i)
    tid = str((int(created.timestamp() * 1000) - 1288834974657) << 22 | i)  # a real snowflake layout
    words = rng.sample(WORDS, 3)
    tweet = {
        "id": tid,
        "text": f"Post {i}: #{words[0]} {' '.join(words[1:])} \u2014 caf\u00e9 \U0001f4da",
        "author_id": author,
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "conversation_id": tid,
        "lang": "en" if i % 5 else "fr",
        "edit_history_tweet_ids": [tid],
        "public_metrics": {"retweet_count": i % 5, "reply_count": i % 3, "like_count": i * 2, "quote_count": 0},
        "entities": {"hashtags": [{"start": len(f"Post {i}: "), "end": len(f"Post {i}: #{words[0]}"),
                                   "tag": words[0]}]},
    }
    if i % 7 == 6:  # every seventh tweet quotes an earlier one, so `includes.tweets` is exercised
        tweet["referenced_tweets"] = [{"type": "quoted", "id": earlier[i - 3]["id"]}]
    return tweet


def matches(query: str, tweet: dict) -> bool:
    """Every space-separated term holds: `lang:xx` is the tweet's language, `#tag` one of its hashtags,
    any other term occurs in the text (case-insensitive). Enough of Twitter's query language for tests."""
    text = tweet["text"].lower()
    tags = {h["tag"].lower() for h in tweet.get("entities", {}).get("hashtags", [])}
    for term in query.lower().split():
        if term.startswith("lang:"):
            ok = tweet["lang"] == term[5:]
        elif term.startswith("#"):
            ok = term[1:] in tags
        else:
            ok = term in text
        if not ok:
            return False
    return True


class FakeTwitter(FakePlatform):
    def __init__(self, *, world: World | None = None, page_size: int = 10, drop_after: int = 4) -> None:
        super().__init__()
        self.world = world or build_world()
        self.page_size = page_size  # the fake's cap on max_results, so paging happens with few tweets
        self.drop_after = drop_after  # the first stream connection drops after this many tweets
        self.rules: dict[str, dict] = {}
        self.stream_connections = 0
        self.stream_done = threading.Event()  # every live tweet was written to some stream
        self.streamed: list[str] = []  # ids of the tweets publish_live() added, as written to a stream
        self._listeners: list[queue.Queue] = []  # the open streams' queues of tweets publish_live() added
        self._drops = 0  # drop_streams() calls: a stream opened before a later one ends
        self._next_rule = 1580000000000000000
        self._delivered = 0
        self._history = list(reversed(self.world.tweets)) + self.world.live  # oldest first, as built
        self._rng = random.Random(len(self._history))
        for path, fn in {
            "/2/tweets/search/recent": self.search,
            "/2/tweets/search/all": self.search,
            "/2/users/by": self.users_by_username,
            "/2/users": self.users_by_id,
            "/2/tweets/sample/stream": self.sample_stream,
            "/2/tweets/search/stream": self.filter_stream,
            "/2/tweets/search/stream/rules": self.stream_rules,
        }.items():
            self.add_route(path, fn)
        self.add_route("/oauth2/token", self.oauth2_token, method="POST")
        for uid in list(self.world.users) + list(self.world.suspended):
            self.add_route(f"/2/users/{uid}/tweets", self.timeline)

    # --- responses -------------------------------------------------------------------------------------
    def _json(self, body: dict, status: int = 200) -> Response:
        headers = {"x-rate-limit-limit": "450", "x-rate-limit-remaining": "449",
                   "x-rate-limit-reset": str(int(time.time()) + 900)}
        return Response(status, json.dumps(body).encode(), headers)

    def fault_response(self, status: int, req: Request) -> Response:
        if status == 401:
            return Response(401, b'{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}')
        if status == 429:
            reset = int(time.time()) + self.faults.reset_seconds
            headers = {"x-rate-limit-limit": "450", "x-rate-limit-remaining": "0", "x-rate-limit-reset": str(reset)}
            return Response(429, b'{"title":"Too Many Requests","detail":"Too Many Requests","type":"about:blank",'
                                 b'"status":429}', headers)
        return Response(status, b'{"title":"Service Unavailable","type":"about:blank","status":503}')

    def authorized(self, req: Request) -> bool:
        auth = req.headers.get("Authorization", "")
        return auth == f"Bearer {BEARER_TOKEN}" or (
            auth.startswith("OAuth ") and f'oauth_consumer_key="{CONSUMER_KEY}"' in auth
        )

    def _page(self, req: Request, tweets: list[dict], token_param: str) -> Response:
        if not self.authorized(req):
            return self.fault_response(401, req)
        since_id, until_id = req.arg("since_id"), req.arg("until_id")
        start, end = req.arg("start_time"), req.arg("end_time")
        selected = [
            t for t in tweets
            if (not since_id or int(t["id"]) > int(since_id)) and (not until_id or int(t["id"]) < int(until_id))
            and (not start or t["created_at"] >= _norm(start)) and (not end or t["created_at"] < _norm(end))
        ]
        below = _decode_token(req.arg(token_param))
        if below is None:
            return self._json({"title": "Invalid Request", "type": "https://api.twitter.com/2/problems/invalid-request",
                               "detail": "One or more parameters to your request was invalid."}, 400)
        if below:  # the page after one ending at that tweet: tweets published since do not shift it
            selected = [t for t in selected if int(t["id"]) < below]
        size = min(int(req.arg("max_results") or 10), self.page_size)
        page = selected[:size]
        if not page:
            return self._json({"meta": {"result_count": 0}})
        meta = {"newest_id": page[0]["id"], "oldest_id": page[-1]["id"], "result_count": len(page)}
        if size < len(selected):
            meta["next_token"] = _encode_token(int(page[-1]["id"]))
        return self._json({"data": page, "includes": self.includes(page), "meta": meta})

    def includes(self, tweets: list[dict]) -> dict:
        referenced = [self.world.tweet(r["id"]) for t in tweets for r in t.get("referenced_tweets", [])]
        referenced = [r for r in referenced if r]
        author_ids = dict.fromkeys(t["author_id"] for t in tweets + referenced)
        out = {"users": [self.world.users[a] for a in author_ids]}
        if referenced:
            out["tweets"] = referenced
        return out

    # --- routes ----------------------------------------------------------------------------------------
    def search(self, req: Request) -> Response:
        query = req.arg("query") or ""
        if query.count("(") != query.count(")"):
            return self._json({"errors": [{"parameters": {"query": [query]},
                                           "message": "There were errors processing your request: "
                                                      "missing closing parenthesis"}],
                               "title": "Invalid Request", "detail": "One or more parameters to your request was "
                               "invalid.", "type": "https://api.twitter.com/2/problems/invalid-request"}, 400)
        return self._page(req, [t for t in self.world.tweets if matches(query, t)], "next_token")

    def timeline(self, req: Request) -> Response:
        uid = req.path.split("/")[3]
        user = self.world.users.get(uid)
        if uid in self.world.suspended or (user and user["protected"]):
            title, detail, kind = (
                ("Forbidden", f"User has been suspended: [{uid}].", NOT_FOUND) if uid in self.world.suspended
                else ("Authorization Error", f"Sorry, you are not authorized to see the user with id: [{uid}].",
                      "https://api.twitter.com/2/problems/not-authorized-for-resource"))
            return self._json({"errors": [{"resource_id": uid, "parameter": "id", "resource_type": "user",
                                           "title": title, "value": uid, "detail": detail, "type": kind}]})
        return self._page(req, [t for t in self.world.tweets if t["author_id"] == uid], "pagination_token")

    def users_by_username(self, req: Request) -> Response:
        names = (req.arg("usernames") or "").split(",")
        return self._lookup(req, "usernames", names, self.world.by_username)

    def users_by_id(self, req: Request) -> Response:
        ids = (req.arg("ids") or "").split(",")
        return self._lookup(req, "ids", ids, self.world.users.get)

    def _lookup(self, req: Request, parameter: str, values: list[str], find) -> Response:
        if not self.authorized(req):
            return self.fault_response(401, req)
        data, errors = [], []
        suspended_names = {name.lower(): uid for uid, name in self.world.suspended.items()}
        for value in values:
            user = find(value)
            if user:
                data.append(user)
                continue
            if value in self.world.suspended or value.lower() in suspended_names:
                title, detail = "Forbidden", f"User has been suspended: [{value}]."
            else:
                title, detail = "Not Found Error", f"Could not find user with {parameter}: [{value}]."
            errors.append({"value": value, "detail": detail, "title": title, "resource_type": "user",
                           "parameter": parameter, "resource_id": value, "type": NOT_FOUND})
        body: dict = {}
        if data:
            body["data"] = data
        if errors:
            body["errors"] = errors
        return self._json(body)

    def oauth2_token(self, req: Request) -> Response:
        expected = base64.b64encode(f"{CONSUMER_KEY}:{CONSUMER_SECRET}".encode()).decode()
        if req.headers.get("Authorization") != f"Basic {expected}":
            return self._json({"errors": [{"code": 99, "message": "Unable to verify your credentials"}]}, 403)
        return self._json({"token_type": "bearer", "access_token": BEARER_TOKEN})

    def stream_rules(self, req: Request) -> Response:
        if not self.authorized(req):
            return self.fault_response(401, req)
        sent = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        if req.method == "GET":
            rules = list(self.rules.values())
            return self._json({**({"data": rules} if rules else {}),
                               "meta": {"sent": sent, "result_count": len(rules)}})
        body = json.loads(req.body)
        if "add" in body:
            created = []
            for rule in body["add"]:
                self._next_rule += 1
                created.append({"value": rule["value"], "tag": rule.get("tag", ""), "id": str(self._next_rule)})
                self.rules[created[-1]["id"]] = created[-1]
            summary = {"created": len(created), "not_created": 0, "valid": len(created), "invalid": 0}
            return self._json({"data": created, "meta": {"sent": sent, "summary": summary}}, 201)
        ids = body.get("delete", {}).get("ids", [])
        deleted = [i for i in ids if self.rules.pop(str(i), None)]
        summary = {"deleted": len(deleted), "not_deleted": len(ids) - len(deleted)}
        return self._json({"meta": {"sent": sent, "summary": summary}})

    def sample_stream(self, req: Request) -> Response:
        return self._stream(req, filtered=False)

    def filter_stream(self, req: Request) -> Response:
        return self._stream(req, filtered=True)

    def _matching_rules(self, tweet: dict) -> list[dict]:
        return [{"id": r["id"], "tag": r["tag"]} for r in self.rules.values() if matches(r["value"], tweet)]

    def _stream(self, req: Request, *, filtered: bool) -> Response:
        if not self.authorized(req):
            return self.fault_response(401, req)
        published: queue.Queue = queue.Queue()
        with self._lock:
            self.stream_connections += 1
            first = self.stream_connections == 1
            self._listeners.append(published)  # subscribed before the answer begins
            drops = self._drops

        def line_of(tweet: dict) -> bytes | None:
            line = {"data": tweet, "includes": {"users": [self.world.users[tweet["author_id"]]]}}
            if filtered:
                line["matching_rules"] = self._matching_rules(tweet)
                if not line["matching_rules"]:
                    return None  # the filtered stream only delivers tweets matching a rule
            return json.dumps(line).encode() + b"\r\n"

        def write(out) -> None:
            try:
                out.write_payload(b"\r\n")  # keep-alive before the first tweet, as Twitter does
                sent_here = 0
                while self._delivered < len(self.world.live) and not self.closed.is_set():
                    line = line_of(self.world.live[self._delivered])
                    self._delivered += 1
                    if line is None:
                        continue
                    out.write_payload(line)
                    sent_here += 1
                    if sent_here % 2 == 0:
                        out.write_payload(b"\r\n")
                    if first and sent_here == self.drop_after:
                        return  # drop: close without the terminating chunk
                self.stream_done.set()
                while not self.closed.wait(0.05):  # published tweets and keep-alives until the client hangs up
                    if self._drops != drops:
                        out.end()
                        return
                    self._drain(out, published, line_of)
                    out.write_payload(b"\r\n")
            finally:
                with self._lock:
                    self._listeners.remove(published)

        return Response(200, write, {"x-rate-limit-limit": "50", "x-rate-limit-remaining": "49"})

    def _drain(self, out, published: queue.Queue, line_of) -> None:
        while True:
            try:
                tweet = published.get_nowait()
            except queue.Empty:
                return
            line = line_of(tweet)
            if line is not None:
                out.write_payload(line)
                with self._lock:
                    self.streamed.append(tweet["id"])

    def publish_live(self) -> dict:
        """A new tweet (as `publish`), written to the streams open now."""
        tweet = self.publish()
        with self._lock:
            for listener in self._listeners:
                listener.put(tweet)
        return tweet

    def drop_streams(self) -> None:
        """End every open stream (its last chunk sent): tweets published until the client reconnects are lost."""
        with self._lock:
            self._drops += 1

    def publish(self) -> dict:
        """A new tweet, newer than every other (the head of every listing), as the network adds them while a
        harvest pages; the list is replaced, not changed in place, so a page being answered is not disturbed."""
        with self._lock:
            authors = [u for u in self.world.users if not self.world.users[u]["protected"]]
            tweet = _make_tweet(len(self._history), authors[len(self._history) % len(authors)], self._rng,
                                self._history)
            self._history.append(tweet)
            self.world.users[tweet["author_id"]]["public_metrics"]["tweet_count"] += 1
            self.world.tweets = [tweet, *self.world.tweets]
        return tweet

    def expected_stream_tweets(self, *, filtered: bool) -> list[dict]:
        """The live tweets a stream delivers (filtered: those matching a current rule)."""
        if not filtered:
            return list(self.world.live)
        return [t for t in self.world.live if self._matching_rules(t)]


def _norm(ts: str) -> str:
    """Twitter accepts RFC 3339 with or without milliseconds; compare in the form tweets carry."""
    parsed = dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(dt.UTC)
    return parsed.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _encode_token(oldest_id: int) -> str:
    """An opaque next_token naming the last tweet of a page, as Twitter's are stable while tweets arrive."""
    return base64.b32encode(f"below:{oldest_id}".encode()).decode().rstrip("=").lower()


def _decode_token(token: str | None) -> int | None:
    """0 for no token (the first page), the tweet id a token names, or None for one this fake never gave."""
    if not token:
        return 0
    try:
        text = base64.b32decode(token.upper() + "=" * (-len(token) % 8)).decode()
        return int(text.removeprefix("below:")) if text.startswith("below:") else None
    except ValueError:
        return None
