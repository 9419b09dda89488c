"""A fake Bluesky on 127.0.0.1: the XRPC API (an entryway/AppView) and a Jetstream WebSocket.

XRPC, shaped after the public lexicons: com.atproto.server.createSession/refreshSession (app-password login,
JWTs whose `exp` atproto reads; the first access token is near expiry, so the SDK refreshes it),
app.bsky.actor.getProfile (a renamed account, a taken-down one, unknown actors), app.bsky.feed.getAuthorFeed
(posts and reposts, with `reason`), app.bsky.feed.searchPosts (sort=latest, since/until on the post's
indexedAt, inclusive since), app.bsky.feed.getFeed (a feed generator's posts); opaque cursors, `ratelimit-*`
headers on every answer and 429s whose `ratelimit-reset` is an epoch second. `delete()` and `edit()` change a
post between runs as the network does (gone from listings; a new cid and text under the same uri).

Jetstream: `ws://.../subscribe?wantedCollections=&wantedDids=&cursor=` sends the events at or after the
cursor (an inclusive replay), then live ones as `emit()` adds them; `drop_after` closes a connection after
that many events and `drop_connections()` the open ones, so clients must reconnect with their cursor; `frames`
holds what each connection sent. Every post and event is generated from a seed, so tests count what the fake
served.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

from tests.fakes.httpserver import Request, Response
from tests.fakes.social import FakePlatform

IDENTIFIER = "swath-tests.bsky.social"
APP_PASSWORD = "abcd-efgh-ijkl-mnop"  # the shape of a Bluesky app password
EPOCH = dt.datetime(2026, 3, 2, 8, 0, tzinfo=dt.UTC)
WORDS = ["archive", "libraries", "research", "data", "campus", "books", "music", "science", "bluesky", "web"]
POST = "app.bsky.feed.post"


def _jwt(payload: dict) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'typ': 'at+jwt', 'alg': 'ES256K'})}.{part(payload)}.c2lnbmF0dXJlLW5vdC1jaGVja2Vk"


def _bearer(req: Request) -> str:
    """The Bearer token of a request (header names are case-insensitive; httpx sends them lower-case)."""
    value = next((v for k, v in req.headers.items() if k.lower() == "authorization"), "")
    return value.removeprefix("Bearer ")


def _iso(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _profile(did: str, handle: str, name: str) -> dict:
    return {"did": did, "handle": handle, "displayName": name, "avatar": f"https://cdn.bsky.app/img/avatar/{did}",
            "labels": [], "createdAt": "2023-05-01T00:00:00.000Z", "description": f"{name} on Bluesky"}


@dataclass
class World:
    """Accounts and posts (newest first, as listings serve them); `feeds` maps a generator URI to post uris."""

    profiles: dict[str, dict] = field(default_factory=dict)  # did -> profile view
    handles: dict[str, str] = field(default_factory=dict)  # current handle -> did
    taken_down: set[str] = field(default_factory=set)  # handles of accounts under takedown
    posts: list[dict] = field(default_factory=list)  # post views
    reposts: list[dict] = field(default_factory=list)  # {"by": did, "post": uri, "uri": ..., "indexedAt": ...}
    feeds: dict[str, list[str]] = field(default_factory=dict)

    def post(self, uri: str) -> dict:
        return next(p for p in self.posts if p["uri"] == uri)


def build_world(seed: int = 7, n_posts: int = 230) -> World:
    rng = random.Random(seed)
    world = World()
    for did, handle, name in (("did:plc:alice0000000000000000001", "alice.example.com", "Alice"),
                              ("did:plc:bob000000000000000000002", "bob.bsky.social", "Bob"),
                              ("did:plc:carol0000000000000000003", "carol-new.bsky.social", "Carol")):
        world.profiles[did] = _profile(did, handle, name)
        world.handles[handle] = did
    world.taken_down.add("spam.bsky.social")
    dids = list(world.profiles)
    for n in range(n_posts):
        did = dids[n % 3]
        when = EPOCH + dt.timedelta(minutes=7 * n, seconds=rng.randrange(60))
        text = " ".join(rng.choice(WORDS) for _ in range(6))
        record: dict = {"$type": POST, "text": f"{text} #tag{n % 4} @bob.bsky.social https://example.org/{n}",
                        "createdAt": _iso(when), "langs": [rng.choice(["en", "de", "fr"])]}
        start = len(text.encode()) + 1
        record["facets"] = [
            {"index": {"byteStart": start, "byteEnd": start + 5}, "features": [
                {"$type": "app.bsky.richtext.facet#tag", "tag": f"tag{n % 4}"}]},
            {"index": {"byteStart": start + 6, "byteEnd": start + 22}, "features": [
                {"$type": "app.bsky.richtext.facet#mention", "did": dids[1]}]},
            {"index": {"byteStart": start + 23, "byteEnd": start + 23 + len(f"https://example.org/{n}")},
             "features": [{"$type": "app.bsky.richtext.facet#link", "uri": f"https://example.org/{n}"}]}]
        uri = f"at://{did}/{POST}/3k{n:011d}"
        view: dict = {"uri": uri, "cid": f"bafyrei{n:040d}", "author": world.profiles[did], "record": record,
                      "replyCount": rng.randrange(5), "repostCount": rng.randrange(9), "likeCount": rng.randrange(40),
                      "quoteCount": rng.randrange(3), "indexedAt": _iso(when + dt.timedelta(seconds=1)), "labels": []}
        if n % 5 == 1 and world.posts:  # a reply to the post before
            parent = world.posts[0]
            record["reply"] = {"root": {"uri": parent["uri"], "cid": parent["cid"]},
                               "parent": {"uri": parent["uri"], "cid": parent["cid"]}}
        if n % 7 == 2:
            view["embed"] = {"$type": "app.bsky.embed.images#view", "images": [
                {"thumb": f"https://cdn.bsky.app/img/feed_thumbnail/{n}.jpg",
                 "fullsize": f"https://cdn.bsky.app/img/feed_fullsize/{n}.jpg", "alt": "a picture"}]}
        elif n % 7 == 4 and world.posts:  # a quote post
            quoted = world.posts[-1]
            record["embed"] = {"$type": "app.bsky.embed.record", "record": {"uri": quoted["uri"], "cid": quoted["cid"]}}
            view["embed"] = {"$type": "app.bsky.embed.record#view", "record": {
                "$type": "app.bsky.embed.record#viewRecord", "uri": quoted["uri"], "cid": quoted["cid"]}}
        if n % 11 == 3:
            view["labels"] = [{"src": did, "uri": uri, "val": "nudity", "cts": _iso(when)}]
        world.posts.insert(0, view)
    for n, post in enumerate(world.posts[5::9]):  # alice reposts some of the others' posts
        if post["author"]["did"] != dids[0]:
            when = dt.datetime.fromisoformat(post["indexedAt"].replace("Z", "+00:00")) + dt.timedelta(minutes=3)
            world.reposts.append({"by": dids[0], "post": post["uri"], "indexedAt": _iso(when),
                                  "uri": f"at://{dids[0]}/app.bsky.feed.repost/3r{n:011d}"})
    world.feeds["at://did:plc:bob000000000000000000002/app.bsky.feed.generator/science"] = [
        p["uri"] for p in world.posts if "science" in p["record"]["text"]]
    return world


class FakeBluesky(FakePlatform):
    """The XRPC API; `require_auth` answers reads without a valid access token with 401; `identifier` is the
    handle that logs in (with APP_PASSWORD): one of the world's authors, or an account of its own."""

    def __init__(self, world: World | None = None, *, page_size: int = 25, require_auth: bool = False,
                 identifier: str = IDENTIFIER) -> None:
        super().__init__()
        self.world = world or build_world()
        self.page_size = page_size
        self.require_auth = require_auth
        self.identifier = identifier
        self.tokens: dict[str, str] = {}  # token -> "access"/"refresh"
        self.issued: list[str] = []  # every token handed out (tests look for them in WARCs and statuses)
        self._serial = 0
        xrpc = "/xrpc/"
        self.add_route(xrpc + "com.atproto.server.createSession", self._create_session, "POST")
        self.add_route(xrpc + "com.atproto.server.refreshSession", self._refresh_session, "POST")
        for name, fn in (("app.bsky.actor.getProfile", self._get_profile),
                         ("app.bsky.feed.getAuthorFeed", self._author_feed),
                         ("app.bsky.feed.searchPosts", self._search),
                         ("app.bsky.feed.getFeed", self._feed)):
            self.add_route(xrpc + name, self._authorised(fn), "GET")

    # --- answers ---
    def _json(self, value: dict, status: int = 200) -> Response:
        reset = int(time.time()) + 300
        return Response(status, json.dumps(value).encode(), headers={
            "ratelimit-limit": "3000", "ratelimit-remaining": "2999", "ratelimit-reset": str(reset),
            "ratelimit-policy": "3000;w=300"})

    def _error(self, status: int, error: str, message: str) -> Response:
        return self._json({"error": error, "message": message}, status)

    def fault_response(self, status: int, req: Request) -> Response:
        if status == 429:
            resp = self._error(429, "RateLimitExceeded", "Rate Limit Exceeded")
            resp.headers.update({"ratelimit-remaining": "0",
                                 "ratelimit-reset": str(int(time.time()) + self.faults.reset_seconds)})
            return resp
        if status == 401:
            return self._error(401, "AuthenticationRequired", "Authentication Required")
        return self._error(status, "InternalServerError", "Internal Server Error")

    # --- sessions ---
    def _issue(self, *, fresh: bool) -> dict:
        self._serial += 1
        now = int(time.time())
        # the first access token expires within atproto's 15-minute margin: the SDK refreshes before using it
        access = _jwt({"scope": "com.atproto.appPass", "sub": "did:plc:swath", "iat": now,
                       "exp": now + (7200 if not fresh else 600), "n": self._serial})
        refresh = _jwt({"scope": "com.atproto.refresh", "sub": "did:plc:swath", "iat": now,
                        "exp": now + 86400 * 60, "jti": f"refresh-{self._serial}"})
        self.tokens.update({access: "access", refresh: "refresh"})
        self.issued += [access, refresh]
        return {"accessJwt": access, "refreshJwt": refresh, "handle": self.identifier, "did": "did:plc:swath",
                "active": True, "didDoc": {"id": "did:plc:swath", "service": [{
                    "id": "#atproto_pds", "type": "AtprotoPersonalDataServer",
                    "serviceEndpoint": "https://elsewhere.host.bsky.network"}]}}

    def _create_session(self, req: Request) -> Response:
        body = json.loads(req.body or b"{}")
        if body.get("identifier") != self.identifier or body.get("password") != APP_PASSWORD:
            return self._error(401, "AuthenticationRequired", "Invalid identifier or password")
        return self._json(self._issue(fresh=True))

    def _refresh_session(self, req: Request) -> Response:
        token = _bearer(req)
        if self.tokens.get(token) != "refresh":
            return self._error(400, "ExpiredToken", "Token has expired")
        del self.tokens[token]
        return self._json(self._issue(fresh=False))

    def _authorised(self, fn):
        def route(req: Request) -> Response:
            token = _bearer(req)
            if self.require_auth and self.tokens.get(token) != "access":
                return self._error(401, "AuthMissing", "Authentication Required")
            return fn(req)

        return route

    # --- reads ---
    def _actor_did(self, actor: str) -> str | None:
        return actor if actor in self.world.profiles else self.world.handles.get(actor)

    def _get_profile(self, req: Request) -> Response:
        actor = req.arg("actor") or ""
        if actor in self.world.taken_down:
            return self._error(400, "AccountTakedown", "Account has been suspended")
        did = self._actor_did(actor)
        if did is None:
            return self._error(400, "InvalidRequest", "Profile not found")
        return self._json(self.world.profiles[did])

    def _page(self, req: Request, entries: list[dict], field: str) -> Response:
        try:
            limit = min(int(req.arg("limit") or 50), 100)
        except ValueError:
            return self._error(400, "InvalidRequest", "limit must be an integer")
        start = int(req.arg("cursor") or 0)
        size = min(limit, self.page_size)
        page: dict = {field: entries[start:start + size]}
        if start + size < len(entries):
            page["cursor"] = str(start + size)
        return self._json(page)

    def author_entries(self, did: str) -> list[dict]:
        """getAuthorFeed's entries for `did`: own posts and reposts, newest first."""
        world = self.world
        own = [(p["indexedAt"], {"post": p}) for p in world.posts if p["author"]["did"] == did]
        for repost in world.reposts:
            if repost["by"] == did and any(p["uri"] == repost["post"] for p in world.posts):
                reason = {"$type": "app.bsky.feed.defs#reasonRepost", "by": world.profiles[did],
                          "uri": repost["uri"], "indexedAt": repost["indexedAt"]}
                own.append((repost["indexedAt"], {"post": world.post(repost["post"]), "reason": reason}))
        return [entry for _, entry in sorted(own, key=lambda pair: pair[0], reverse=True)]

    def _author_feed(self, req: Request) -> Response:
        did = self._actor_did(req.arg("actor") or "")
        if did is None:
            return self._error(400, "InvalidRequest", "Profile not found")
        return self._page(req, self.author_entries(did), "feed")

    def search_hits(self, q: str, since: str | None = None, until: str | None = None) -> list[dict]:
        def when(value: str) -> dt.datetime:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))

        return [p for p in self.world.posts if q.lower() in p["record"]["text"].lower()
                and (since is None or when(p["indexedAt"]) >= when(since))
                and (until is None or when(p["indexedAt"]) < when(until))]

    def _search(self, req: Request) -> Response:
        q = req.arg("q")
        if not q:
            return self._error(400, "InvalidRequest", 'Error: Params must have the property "q"')
        return self._page(req, self.search_hits(q, req.arg("since"), req.arg("until")), "posts")

    def _feed(self, req: Request) -> Response:
        uris = self.world.feeds.get(req.arg("feed") or "")
        if uris is None:
            return self._error(400, "UnknownFeed", "Unknown feed")
        live = {p["uri"]: p for p in self.world.posts}
        return self._page(req, [{"post": live[u]} for u in uris if u in live], "feed")

    # --- changes between runs ---
    def delete(self, uri: str) -> None:
        self.world.posts = [p for p in self.world.posts if p["uri"] != uri]

    def edit(self, uri: str, text: str) -> dict:
        post = self.world.post(uri)
        post["record"] = {**post["record"], "text": text}
        post["cid"] = "bafyreiedited" + post["cid"][-28:]
        return post

    def add_posts(self, n: int, *, did: str, words: str = "archive news") -> list[dict]:
        """New posts, newer than any other (the head of every listing)."""
        with self._lock:  # a publishing thread may call this while pages are answered: replace, never mutate
            posts = list(self.world.posts)
            newest = dt.datetime.fromisoformat(posts[0]["indexedAt"].replace("Z", "+00:00"))
            added = []
            for i in range(n):
                when = newest + dt.timedelta(minutes=i + 1)
                uri = f"at://{did}/{POST}/3n{len(posts):011d}"
                added.append({"uri": uri, "cid": f"bafyreinew{len(posts):037d}",
                              "author": self.world.profiles[did], "indexedAt": _iso(when), "labels": [],
                              "record": {"$type": POST, "text": f"{words} {i}", "createdAt": _iso(when)},
                              "replyCount": 0, "repostCount": 0, "likeCount": 0, "quoteCount": 0})
                posts.insert(0, added[-1])
            self.world.posts = posts
        return added


class FakeJetstream:
    """Jetstream's /subscribe over a real WebSocket server (see the module docstring)."""

    def __init__(self, *, drop_after: int = 0, drops: int = 0) -> None:
        self.events: list = []  # event dicts, and raw frames (str/bytes) from raw()
        self.drop_after = drop_after  # close a connection after sending this many events...
        self.drops = drops  # ...this many times
        self.sent: list[int] = []  # time_us of every event sent, replays included
        self.connections: list[dict[str, list[str]]] = []  # the query of each connection
        self.frames: list[list[str | bytes]] = []  # the frames sent on each connection, in order
        self._dropped = 0  # drop_connections() calls: a connection opened before a later one ends
        self._changed = threading.Condition()
        self._closed = False
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._time = int(EPOCH.timestamp() * 1_000_000)

    @property
    def url(self) -> str:
        host, port = self._server.socket.getsockname()[:2]
        return f"ws://{host}:{port}"

    def emit(self, n: int, *, did: str = "did:plc:alice0000000000000000001", collection: str = POST,
             operation: str = "create", pad: int = 0, at: int | None = None) -> list[dict]:
        """`n` new events (`pad` more characters of text each), sent to every connection that wants them; `at`
        dates them at that time_us (a clock gone wrong) without moving the fake's own clock."""
        added = []
        with self._changed:
            for _ in range(n):
                self._time += random.randrange(1, 5000) if at is None else 0
                serial = len(self.events)
                commit: dict = {"rev": f"rev{serial}", "operation": operation, "collection": collection,
                                "rkey": f"3j{serial:011d}"}
                if operation != "delete":
                    commit["cid"] = f"bafyreij{serial:040d}"
                    commit["record"] = {"$type": collection, "text": f"live post {serial} #jet" + " x" * (pad // 2),
                                        "createdAt": _iso(dt.datetime.fromtimestamp(self._time / 1e6, dt.UTC)),
                                        "langs": ["en"]}
                added.append({"did": did, "time_us": self._time if at is None else at, "kind": "commit",
                              "commit": commit})
                self.events.append(added[-1])
            self._changed.notify_all()
        return added

    def raw(self, *frames: str | bytes) -> None:
        """Frames that are not events (text that is not JSON, binary), sent between the events."""
        with self._changed:
            self.events += frames
            self._changed.notify_all()

    def delete(self, events: list[dict]) -> list[dict]:
        """Delete events for earlier creates (same DID, collection and rkey), as the network emits them."""
        added = []
        with self._changed:
            for created in events:
                self._time += random.randrange(1, 5000)
                commit = {key: created["commit"][key] for key in ("collection", "rkey")}
                added.append({"did": created["did"], "time_us": self._time, "kind": "commit",
                              "commit": {**commit, "rev": f"rev{len(self.events)}", "operation": "delete"}})
                self.events.append(added[-1])
            self._changed.notify_all()
        return added

    def drop_connections(self) -> None:
        """Close every open connection (a restarting Jetstream); clients reconnect from their cursor."""
        with self._changed:
            self._dropped += 1
            self._changed.notify_all()

    def _wanted(self, event: dict, query: dict[str, list[str]]) -> bool:
        collections, dids = query.get("wantedCollections", []), query.get("wantedDids", [])
        commit = event.get("commit") or {}
        return (not collections or commit.get("collection") in collections) and (not dids or event["did"] in dids)

    def _handle(self, ws: ServerConnection) -> None:
        assert ws.request is not None
        query = parse_qs(urlsplit(ws.request.path).query)
        frames: list[str | bytes] = []
        with self._changed:
            self.connections.append(query)
            self.frames.append(frames)
            dropped = self._dropped
        cursor = int(query.get("cursor", ["0"])[0])
        sent_here, index = 0, 0
        try:
            while True:
                with self._changed:
                    while index >= len(self.events) and not self._closed and self._dropped == dropped:
                        self._changed.wait(0.5)
                    if self._closed:
                        return
                    if self._dropped != dropped:
                        ws.close(1011, "upstream restarting")
                        return
                    batch, index = self.events[index:], len(self.events)
                for event in batch:
                    if not isinstance(event, dict):  # a raw frame (hostile tests): sent as it is, once
                        ws.send(event)
                        frames.append(event)
                        continue
                    if event["time_us"] < cursor or not self._wanted(event, query):
                        continue
                    frames.append(json.dumps(event))
                    ws.send(frames[-1])
                    self.sent.append(event["time_us"])
                    sent_here += 1
                    if self.drop_after and self.drops and sent_here >= self.drop_after:
                        self.drops -= 1
                        ws.close(1011, "upstream restarting")
                        return
        except ConnectionClosed:
            return

    def __enter__(self) -> FakeJetstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._server.shutdown()
