"""A fake Mastodon instance on 127.0.0.1, after the public API documentation (docs.joinmastodon.org):

- timelines (`/api/v1/timelines/tag/:tag`, `/api/v1/timelines/public`, `/api/v1/accounts/:id/statuses`) newest
  first, paged with `max_id` / `since_id` / `min_id` / `limit` (≤ 40) and `Link` headers (rel next/prev) on
  every non-empty page; the tag and public timelines leave boosts out, `local=true` keeps this instance's
  accounts; `/api/v1/accounts/lookup`, `/api/v1/accounts/:id` (a moved account has `moved`; a suspended one
  answers 410), `/api/v2/search` (statuses only with a token, offset paging), `/api/v1|v2/instance`;
- `X-RateLimit-Limit/Remaining/Reset` (ISO 8601) on every answer, 429 with the reset time, 503 pages
  (tests/fakes/social.py switches), 401 for a wrong token;
- edited posts (`edited_at`, content changed), deleted posts (gone from timelines), boosts (`reblog`), quotes;
- the streaming API as server-sent events (`event: update|status.update|delete`, `:thump` heartbeats) whose
  connections follow a script, so tests can drop a connection and make posts the stream never carried;
- a clock of its own: `publishing(every=)` posts at a steady rate whether or not anyone listens, as an
  instance does; `drop_streams()` ends the open stream connections; `subscribe_delay` is how long a new
  stream connection takes before it is subscribed (and its answer begins).
"""

from __future__ import annotations

import datetime as dt
import json
import queue
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlencode

from tests.fakes.httpserver import Request, Response
from tests.fakes.social import FakePlatform

TOKEN = "mstdn-token-Qm9vc3RlZCBieSBhIGZha2U-7f3a91"
EPOCH = dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC)
WORDS = ["archive", "library", "fediverse", "dataset", "history", "zine", "museum", "poetry"]


@dataclass
class Account:
    id: str
    username: str
    domain: str | None = None  # None: an account of this instance
    moved_to: Account | None = None
    suspended: bool = False

    @property
    def acct(self) -> str:
        return self.username if self.domain is None else f"{self.username}@{self.domain}"

    def json(self, host: str) -> dict:
        body = {"id": self.id, "username": self.username, "acct": self.acct,
                "display_name": f"{self.username.title()} \u2014 caf\u00e9", "locked": False, "bot": False,
                "url": f"https://{self.domain or host}/@{self.username}", "followers_count": len(self.username) * 7,
                "following_count": 3, "statuses_count": 0, "created_at": "2022-11-01T00:00:00.000Z",
                "note": "<p>Researcher</p>", "avatar": "", "header": "", "emojis": [], "fields": []}
        if self.moved_to is not None:
            body["moved"] = self.moved_to.json(host)
        return body


@dataclass
class Script:
    """What one stream connection does, in order: ("post", tag), ("edit", None), ("delete", None),
    ("missed", tag) (a post the stream never carries), ("drop", None) (end the response), ("break", None) (half
    an event, then the connection closes without ending the response), ("garbage", None) (an update whose data is
    not JSON), ("split_delete", None) (`event: delete`, then its `data:` line only once `split` is set: a
    WARC segment cut between the two), ("hold", None)."""

    steps: list[tuple[str, str | None]] = field(default_factory=list)


class FakeMastodon(FakePlatform):
    def __init__(self, *, seed: int = 11, statuses_per_tag: int = 95, rate_limit: int = 300,
                 rate_window: float = 300.0) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.host = "127.0.0.1"
        self.next_id = 111_000_000_000_000_000
        self.accounts = {a.username: a for a in (Account("1001", "alice"), Account("1002", "bob"),
                                                  Account("1003", "carol", domain="remote.example"))}
        self.accounts["olddave"] = Account("1004", "olddave", moved_to=self.accounts["bob"])
        self.accounts["gone"] = Account("1005", "gone", suspended=True)
        self.accounts["Gargron"] = Account("1006", "Gargron")  # `swath harvest example mastodon_account`
        self.statuses: list[dict] = []  # newest first
        self.deleted: set[str] = set()
        self.rate_limit, self.rate_window = rate_limit, rate_window  # requests per window, as Mastodon's 300/5 min
        self._window_end, self._used = 0.0, 0
        self.over_limit = 0  # 429s served for requests past the window's budget
        self.stream_scripts: list[Script] = []  # one per connection, in order; past the list: hold
        self.stream_connections = 0
        self.streaming_api: str | None = None  # where /api/v1/instance says the streaming server is (else here)
        self.loop_links = False  # a broken instance: the next link of a page names the page itself again
        self.events_written = 0
        self.streamed: list[str] = []  # ids of the `update` events written to stream connections
        self.split = threading.Event()  # lets a split_delete step send its data line
        self.subscribe_delay = 0.0  # seconds a stream connection waits before it is subscribed
        self._drops = 0  # drop_streams() calls: a connection opened before a later one ends
        self._lock_store = threading.RLock()
        self._listeners: list[tuple[str, queue.Queue]] = []
        for tag in ("libraries", "archives"):
            for _ in range(statuses_per_tag):
                self.post(tag)
        self.post("libraries", author="bob", reblog_of=self.statuses[3]["id"])  # a boost
        self.post("archives", author="Gargron")
        self.edit(self.tagged("libraries")[10]["id"])
        self.delete(self.tagged("libraries")[15]["id"])
        for path, route in (("/api/v1/instance/", self.instance), ("/api/v2/instance/", self.instance_v2),
                            ("/api/v1/accounts/lookup", self.lookup), ("/api/v2/search", self.search),
                            ("/api/v1/timelines/public", self.public)):
            self.add_route(path, route)
        for tag in ("libraries", "archives", "empty"):
            self.add_route(f"/api/v1/timelines/tag/{tag}", self.tag_timeline)
            for where in ("", "/local"):
                self.add_route(f"/api/v1/streaming/hashtag{where}", self.stream)
        for where in ("", "/local"):
            self.add_route(f"/api/v1/streaming/public{where}", self.stream)
        for account in self.accounts.values():
            self.add_route(f"/api/v1/accounts/{account.id}", self.account)
            self.add_route(f"/api/v1/accounts/{account.id}/statuses", self.account_statuses)

    # --- the store ---
    def post(self, tag: str, *, author: str | None = None, reblog_of: str | None = None, push: bool = True) -> dict:
        with self._lock_store:
            self.next_id += self.rng.randrange(1 << 16, 1 << 24)
            account = self.accounts[author or self.rng.choice(["alice", "bob", "carol"])]
            n = len(self.statuses)
            when = EPOCH + dt.timedelta(minutes=7 * n)
            sid = str(self.next_id)
            words = self.rng.sample(WORDS, 3)
            status = {
                "id": sid, "created_at": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "in_reply_to_id": None,
                "in_reply_to_account_id": None, "sensitive": n % 9 == 0, "spoiler_text": "cw: old" if n % 9 == 0
                else "", "visibility": "public", "language": "en", "uri": f"https://{self.host}/users/x/{sid}",
                "url": f"https://{account.domain or self.host}/@{account.username}/{sid}", "replies_count": n % 4,
                "reblogs_count": n % 5, "favourites_count": n % 7, "edited_at": None,
                "content": f"<p>On {words[0]} &amp; {words[1]}<br>and {words[2]} "
                           f"<a href=\"https://{self.host}/tags/{tag}\" class=\"mention hashtag\">"
                           f"#<span>{tag}</span></a>"
                           f" \U0001f4da</p>",
                "reblog": None, "account": account.json(self.host),
                "media_attachments": [{"id": f"m{sid}", "type": "image", "url": f"https://files.example/{sid}.png",
                                       "preview_url": f"https://files.example/{sid}_s.png", "description": "a shelf"}]
                if n % 3 == 0 else [],
                "mentions": [{"id": "1002", "username": "bob", "acct": "bob", "url": f"https://{self.host}/@bob"}]
                if n % 4 == 1 else [],
                "tags": [{"name": tag, "url": f"https://{self.host}/tags/{tag}"}], "emojis": [],
                "card": {"url": f"https://example.org/{words[0]}", "title": words[0]} if n % 5 == 2 else None,
                "poll": None,
            }
            if n % 6 == 5 and self.statuses:  # a reply to the post before
                status["in_reply_to_id"] = self.statuses[0]["id"]
                status["in_reply_to_account_id"] = self.statuses[0]["account"]["id"]
            if n % 8 == 7 and self.statuses:  # a quote (Mastodon 4.4)
                status["quote"] = {"state": "accepted", "quoted_status": dict(self.statuses[1], quote=None)}
            if reblog_of is not None:
                original = next(s for s in self.statuses if s["id"] == reblog_of)
                status.update(reblog=original, content="", tags=[], media_attachments=[], mentions=[])
            self.statuses.insert(0, status)
        if push:
            self._push(tag, "update", status)
        return status

    def edit(self, sid: str) -> dict:
        with self._lock_store:
            status = next(s for s in self.statuses if s["id"] == sid)
            status["content"] = status["content"].replace("<p>On", "<p>Edited: on")
            status["edited_at"] = (EPOCH + dt.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        self._push(self._tag(status), "status.update", status)
        return status

    def delete(self, sid: str) -> None:
        with self._lock_store:
            status = next(s for s in self.statuses if s["id"] == sid)
            self.statuses.remove(status)
            self.deleted.add(sid)
        self._push(self._tag(status), "delete", sid)

    @contextmanager
    def publishing(self, tag: str, *, every: float) -> Iterator[list[str]]:
        """Post to `tag` every `every` seconds on a thread of its own until the block ends; the list holds the
        ids posted, in order."""
        posted: list[str] = []
        done = threading.Event()

        def run() -> None:
            while not done.wait(every):
                posted.append(self.post(tag)["id"])

        thread = threading.Thread(target=run, name="fake-mastodon-publisher", daemon=True)
        thread.start()
        try:
            yield posted
        finally:
            done.set()
            thread.join()

    def drop_streams(self) -> None:
        """End every open stream connection (a restarting streaming server); events not yet sent are lost."""
        with self._lock_store:
            self._drops += 1

    @staticmethod
    def _tag(status: dict) -> str:
        return status["tags"][0]["name"] if status["tags"] else ""

    def tagged(self, tag: str) -> list[dict]:
        """The statuses a tag timeline lists, newest first (boosts are not in tag timelines)."""
        with self._lock_store:
            return [s for s in self.statuses if s["reblog"] is None and tag in [t["name"] for t in s["tags"]]]

    # --- HTTP plumbing ---
    def _rate(self) -> tuple[bool, dict[str, str]]:
        """Count a request against the window: (over the budget, the X-RateLimit-* headers to send)."""
        now = time.time()
        with self._lock_store:
            if now >= self._window_end:
                self._window_end, self._used = now + self.rate_window, 0
            self._used += 1
            over = self._used > self.rate_limit
            self.over_limit += over
            remaining, end = max(0, self.rate_limit - self._used), self._window_end
        reset = dt.datetime.fromtimestamp(end, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return over, {"X-RateLimit-Limit": str(self.rate_limit), "X-RateLimit-Remaining": str(remaining),
                      "X-RateLimit-Reset": reset}

    def _json(self, body: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        over, rate = self._rate()
        if over and status == 200:
            return Response(429, b'{"error": "Too many requests"}', rate)
        return Response(status, json.dumps(body, ensure_ascii=False).encode(), {**rate, **(headers or {})})

    def fault_response(self, status: int, req: Request) -> Response:
        if status == 401:
            return self._json({"error": "The access token is invalid"}, 401)
        if status == 429:
            reset = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.faults.reset_seconds)
            return self._json({"error": "Too many requests"}, 429, {
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": reset.isoformat(timespec="milliseconds").replace("+00:00", "Z")})
        return Response(status, b"<html><body><h1>We're sorry, but something went wrong</h1></body></html>",
                        {}, "text/html")

    def _authorized(self, req: Request) -> bool | None:
        """True with the right token, None without one, False with a wrong one."""
        auth = req.headers.get("Authorization")
        if auth is None:
            return None
        return auth == f"Bearer {TOKEN}"

    def _page(self, req: Request, statuses: list[dict]) -> Response:
        if self._authorized(req) is False:
            return self.fault_response(401, req)
        limit = min(int(req.arg("limit") or 20), 40)
        max_id, since_id, min_id = (int(req.arg(k) or 0) or None for k in ("max_id", "since_id", "min_id"))
        chosen = [s for s in statuses if (max_id is None or int(s["id"]) < max_id)
                  and (since_id is None or int(s["id"]) > since_id)]
        if min_id is not None:  # the page just above min_id, still newest first
            chosen = [s for s in chosen if int(s["id"]) > min_id][-limit:]
        page = chosen[:limit]
        headers = {}
        if page:
            base = {k: v[0] for k, v in req.query.items() if k not in ("max_id", "since_id", "min_id")}
            url = f"{self.url}{req.path}?"
            following = (req.arg("max_id") or page[-1]["id"]) if self.loop_links else page[-1]["id"]
            headers["Link"] = (f'<{url}{urlencode({**base, "max_id": following})}>; rel="next", '
                               f'<{url}{urlencode({**base, "min_id": page[0]["id"]})}>; rel="prev"')
        return self._json(page, headers=headers)

    @staticmethod
    def _local(req: Request, statuses: list[dict]) -> list[dict]:
        if req.arg("local") in ("true", "1"):
            return [s for s in statuses if "@" not in s["account"]["acct"]]
        return statuses

    # --- routes ---
    def instance(self, req: Request) -> Response:
        streaming = (self.streaming_api or self.url).replace("http://", "ws://")
        return self._json({"uri": self.host, "title": "Fake", "version": "4.3.0", "urls": {"streaming_api": streaming}})

    def instance_v2(self, req: Request) -> Response:
        feeds = {"local": "public", "remote": "public"}
        return self._json({"domain": self.host, "version": "4.3.0", "configuration": {
            "urls": {"streaming": self.url.replace("http://", "ws://")},
            "timelines_access": {"live_feeds": feeds, "hashtag_feeds": feeds, "trending_link_feeds": feeds}}})

    def tag_timeline(self, req: Request) -> Response:
        return self._page(req, self._local(req, self.tagged(req.path.rsplit("/", 1)[1])))

    def public(self, req: Request) -> Response:
        with self._lock_store:
            statuses = [s for s in self.statuses if s["reblog"] is None]
        return self._page(req, self._local(req, statuses))

    def lookup(self, req: Request) -> Response:
        acct = (req.arg("acct") or "").lstrip("@").removesuffix(f"@{self.host}")
        account = next((a for a in self.accounts.values() if a.acct == acct), None)
        if account is None:
            return self._json({"error": "Record not found"}, 404)
        return self._json(account.json(self.host))

    def _account(self, req: Request) -> Account | None:
        return next((a for a in self.accounts.values() if a.id == req.path.split("/")[4]), None)

    def account(self, req: Request) -> Response:
        account = self._account(req)
        return self._json(account.json(self.host)) if account else self._json({"error": "Record not found"}, 404)

    def account_statuses(self, req: Request) -> Response:
        account = self._account(req)
        if account is None:
            return self._json({"error": "Record not found"}, 404)
        if account.suspended:
            return self._json({"error": "Account is suspended"}, 410)
        with self._lock_store:
            statuses = [s for s in self.statuses if s["account"]["id"] == account.id]
        return self._page(req, statuses)

    def search(self, req: Request) -> Response:
        authorized = self._authorized(req)
        if authorized is False:
            return self.fault_response(401, req)
        if req.arg("offset") not in (None, "0") and not authorized:
            return self._json({"error": "Search queries pagination is not supported without authentication"},
                              401)
        words = (req.arg("q") or "").lower().split()
        min_id = int(req.arg("min_id") or 0)
        with self._lock_store:
            found = [s for s in self.statuses if authorized and s["reblog"] is None and int(s["id"]) > min_id
                     and all(w in s["content"].lower() for w in words)]
        offset, limit = int(req.arg("offset") or 0), min(int(req.arg("limit") or 20), 40)
        return self._json({"accounts": [], "hashtags": [], "statuses": found[offset:offset + limit]})

    # --- streaming ---
    def _push(self, tag: str, event: str, payload: object) -> None:
        for wanted, q in list(self._listeners):
            if wanted in ("*", tag):
                q.put((event, payload))

    def stream(self, req: Request) -> Response:
        if self._authorized(req) is False:
            return self.fault_response(401, req)
        if self.subscribe_delay:
            time.sleep(self.subscribe_delay)
        wanted = req.arg("tag") or "*"
        events: queue.Queue = queue.Queue()
        with self._lock_store:
            self._listeners.append((wanted, events))  # subscribed (and counted) before the answer begins
            number = self.stream_connections
            self.stream_connections += 1
            drops = self._drops
        script = self.stream_scripts[number] if number < len(self.stream_scripts) else Script([("hold", None)])

        def write(wfile) -> None:
            try:
                wfile.write_payload(b":)\n")
                for step, arg in script.steps:
                    if step == "post":
                        self.post(arg or wanted)
                    elif step == "missed":
                        self.post(arg or wanted, push=False)
                    elif step == "edit":
                        self.edit(self.tagged(wanted)[2]["id"])
                    elif step == "delete":
                        self.delete(self.tagged(wanted)[1]["id"])
                    self._drain(wfile, events)
                    if step == "split_delete":
                        sid = self.tagged(wanted)[0]["id"]
                        with self._lock_store:
                            self.statuses = [s for s in self.statuses if s["id"] != sid]
                            self.deleted.add(sid)
                        wfile.write_payload(b"event: delete\n")
                        self.split.wait(120)
                        wfile.write_payload(f"data: {sid}\n\n".encode())
                    if step == "garbage":
                        wfile.write_payload(b"event: update\ndata: <html>502 Bad Gateway</html>\n\n")
                    if step == "break":
                        wfile.write_payload(b'event: update\ndata: {"id": "1119')
                        return  # no last chunk: the client sees the response cut short
                    if step == "drop":
                        break
                    if step == "hold":
                        self._hold(wfile, events, drops)
                wfile.end()
            finally:
                self._listeners.remove((wanted, events))

        return Response(200, write, {"Cache-Control": "no-store"}, "text/event-stream; charset=utf-8")

    def _hold(self, wfile, events: queue.Queue, drops: int) -> None:
        """Send events as they come, a heartbeat every half second, until the fake closes or drops streams."""
        beat = time.monotonic()
        while not self.closed.is_set() and self._drops == drops:
            self._drain(wfile, events)
            if time.monotonic() - beat >= 0.5:
                wfile.write_payload(b":thump\n")
                beat = time.monotonic()
            self.closed.wait(0.01)

    def _drain(self, wfile, events: queue.Queue) -> None:
        while True:
            try:
                event, payload = events.get_nowait()
            except queue.Empty:
                return
            data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
            wfile.write_payload(f"event: {event}\ndata: {data}\n\n".encode())
            with self._lock_store:
                self.events_written += 1
                if event == "update":
                    self.streamed.append(payload["id"])
