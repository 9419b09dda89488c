"""A fake Tumblr API v2 on 127.0.0.1: /v2/blog/<host>/posts paged by offset (at most 20 a page, newest
first), Tumblr's meta/response envelope, 404 for unknown blogs, 401 for a wrong api_key. Posts are
generated from a seed."""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from dataclasses import dataclass, field

from tests.fakes.httpserver import Request, Response
from tests.fakes.social import FakePlatform

API_KEY = "fuiKNFp9vQFvjLNvx4sUwti4Yb5yGutBN4Xh10LXZhhRKjWlV4"
EPOCH = dt.datetime(2024, 1, 2, 8, 30, tzinfo=dt.UTC)
WORDS = ["archive", "zine", "poetry", "library", "photo", "quote", "music", "history"]


@dataclass
class Blog:
    name: str
    host: str
    posts: list[dict] = field(default_factory=list)  # newest first


def build_blogs(*, counts: dict[str, int] | None = None, seed: int = 5) -> dict[str, Blog]:
    counts = counts or {"gwulibraries.tumblr.com": 47, "archive.example.org": 9}
    rng = random.Random(seed)
    blogs: dict[str, Blog] = {}
    next_id = 735000000000000000
    for host, n in counts.items():
        blog = Blog(host.split(".")[0], host)
        for i in range(n):
            next_id += rng.randrange(10**6, 10**9)
            blog.posts.insert(0, _post(blog, next_id, EPOCH + dt.timedelta(hours=9 * i), rng))
        blogs[host] = blog
    return blogs


def _post(blog: Blog, pid: int, when: dt.datetime, rng: random.Random) -> dict:
    tags = rng.sample(WORDS, 2)
    slug = "-".join(tags)
    return {
        "type": "text", "blog_name": blog.name, "id": pid, "id_string": str(pid),
        "post_url": f"https://{blog.host}/post/{pid}/{slug}", "slug": slug,
        "date": when.strftime("%Y-%m-%d %H:%M:%S GMT"), "timestamp": int(when.timestamp()),
        "state": "published", "format": "html", "reblog_key": f"{rng.getrandbits(32):08x}", "tags": tags,
        "short_url": f"https://tmblr.co/Z{rng.getrandbits(48):012x}", "summary": f"On {tags[0]} and {tags[1]}",
        "should_open_in_legacy": True, "note_count": rng.randrange(0, 40), "title": f"On {tags[0]}",
        "body": f"<p>Notes on {tags[0]} and {tags[1]} \u2014 caf\u00e9 \U0001f4da</p>",
    }


class FakeTumblr(FakePlatform):
    def __init__(self, *, blogs: dict[str, Blog] | None = None, missing: tuple[str, ...] = ("gone.tumblr.com",),
                 page_delay: float = 0.0) -> None:
        super().__init__()
        self.blogs = blogs or build_blogs()
        self.page_delay = page_delay  # a pause per page, so the chaos tests' kills land mid-harvest
        for host in list(self.blogs) + list(missing):
            self.add_route(f"/v2/blog/{host}/posts", self.posts)

    def fault_response(self, status: int, req: Request) -> Response:
        if status == 401:
            return self._envelope(401, "Unauthorized", [], [{"title": "Unauthorized", "code": 1016,
                                                            "detail": "Unable to authorize"}])
        if status == 429:
            reset = str(self.faults.reset_seconds)
            headers = {"X-Ratelimit-Perhour-Limit": "1000", "X-Ratelimit-Perhour-Remaining": "0",
                       "X-Ratelimit-Perhour-Reset": reset, "Retry-After": reset}
            return self._envelope(429, "Limit Exceeded", [], None, headers)
        return Response(status, b"<html><body>Service temporarily unavailable</body></html>", {}, "text/html")

    def _envelope(self, status: int, msg: str, response: object, errors: list | None,
                  headers: dict[str, str] | None = None) -> Response:
        body = {"meta": {"status": status, "msg": msg}, "response": response}
        if errors is not None:
            body["errors"] = errors
        return Response(status, json.dumps(body).encode(), headers or {})

    def posts(self, req: Request) -> Response:
        time.sleep(self.page_delay)
        if req.arg("api_key") != API_KEY:
            return self.fault_response(401, req)
        host = req.path.split("/")[3]
        blog = self.blogs.get(host)
        if blog is None:
            return self._envelope(404, "Not Found", [], [{"title": "Not Found", "code": 0,
                                                          "detail": "Blog not found."}])
        offset = int(req.arg("offset") or 0)
        limit = min(int(req.arg("limit") or 20), 20)
        page = blog.posts[offset:offset + limit]
        updated = blog.posts[0]["timestamp"] if blog.posts else 0
        response = {
            "blog": {"name": blog.name, "title": blog.name.title(), "url": f"https://{blog.host}/",
                     "uuid": f"t:{blog.name}", "updated": updated, "posts": len(blog.posts),
                     "description": "", "ask": False},
            "posts": page,
            "total_posts": len(blog.posts),
        }
        if offset + limit < len(blog.posts):
            nxt = {"offset": str(offset + limit), "limit": str(limit)}
            response["_links"] = {"next": {"method": "GET", "query_params": nxt,
                                           "href": f"/v2/blog/{host}/posts?offset={offset + limit}&limit={limit}"}}
        return self._envelope(200, "OK", response, None)

    def publish(self, host: str) -> dict:
        """A new post on that blog, newer than every other (the head of its listing), as bloggers post while a
        harvest pages; the list is replaced, not changed in place, so a page being answered is not disturbed."""
        blog = self.blogs[host]
        with self._lock:
            rng = random.Random(len(blog.posts))
            newest = blog.posts[0] if blog.posts else None
            pid = (newest["id"] if newest else 735000000000000000) + rng.randrange(10**6, 10**9)
            when = dt.datetime.fromtimestamp(newest["timestamp"], dt.UTC) + dt.timedelta(minutes=5) if newest \
                else EPOCH
            post = _post(blog, pid, when, rng)
            blog.posts = [post, *blog.posts]
        return post

    def expected_posts(self, host: str) -> list[dict]:
        return list(self.blogs[host].posts)
