"""`swath demo`: the whole pipeline on this machine with no broker and no internet.

A local HTTP server replays recorded Tumblr API v2 responses (swath/demo_data/), the real Tumblr harvester
harvests the blog into a WARC, and the real exporter turns that WARC into a CSV file. The messages are the
very SFM messages a requester would publish; only SWATH_TUMBLR_API_URL points at the replay.
"""

from __future__ import annotations

import dataclasses
import io
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast
from urllib.parse import parse_qs, urlsplit

from swath.core.config import Config
from swath.core.jsontypes import JSON, JSONObject

if TYPE_CHECKING:
    from swath.harvesters.embedded import Sent

DEMO_BLOG = "swath-demo"
DEMO_COLLECTION = "demo-collection"
DEMO_API_KEY = "demo-api-key-not-a-secret"


class _RecordedBlog(TypedDict):
    blog: JSONObject
    posts: list[JSON]


def _recorded_blog() -> _RecordedBlog:
    recorded = resources.files("swath").joinpath("demo_data/tumblr_swath-demo.json").read_text("utf-8")
    return cast(_RecordedBlog, json.loads(recorded))


class ReplayServer:
    """Serves /v2/blog/<host>/posts?offset=&limit= from the recorded posts, as Tumblr does."""

    def __init__(self) -> None:
        recorded = _recorded_blog()
        blog, posts = recorded["blog"], recorded["posts"]
        host = f"{DEMO_BLOG}.tumblr.com"

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                if url.path != f"/v2/blog/{host}/posts":
                    status, body = 404, {"meta": {"status": 404, "msg": "Not Found"}, "response": []}
                else:
                    offset = int(query.get("offset", ["0"])[0])
                    limit = min(int(query.get("limit", ["20"])[0]), 20)
                    status = 200
                    body = {"meta": {"status": 200, "msg": "OK"},
                            "response": {"blog": blog, "posts": posts[offset:offset + limit],
                                         "total_posts": len(posts)}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.posts = posts
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        assert isinstance(host, str)  # typeshed allows bytes; a bound AF_INET socket names its host in str
        return f"http://{host}:{port}"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def harvest_message(run_id: str) -> JSONObject:
    return {
        "id": f"demo-harvest-{run_id}",
        "type": "tumblr_blog_posts",
        "path": f"collections/demo-set/{DEMO_COLLECTION}",
        "seeds": [{"id": "demo-seed-1", "uid": DEMO_BLOG}],
        "options": {"incremental": False},
        "credentials": {"api_key": DEMO_API_KEY},
        "collection_set": {"id": "demo-set"},
        "collection": {"id": DEMO_COLLECTION},
    }


def export_message(run_id: str, fmt: str) -> JSONObject:
    return {
        "id": f"demo-export-{run_id}",
        "type": "tumblr_blog_posts",
        "collection": {"id": DEMO_COLLECTION},
        "path": export_path(run_id),
        "format": fmt,
        "dedupe": True,
        "segment_size": None,
    }


def export_path(run_id: str) -> str:
    return f"exports/demo-export-{run_id}"


@dataclasses.dataclass
class DemoResult:
    harvest: list[Sent]  # every message each step published
    export: list[Sent]
    served_posts: int
    export_dir: Path


def run_demo(config: Config, *, fmt: str = "csv", progress: Callable[[str], None] | None = None) -> DemoResult:
    """Harvest the replayed blog and export it; returns every message each step published."""
    from swath.core.jobs import JobContext
    from swath.exporters.base import run_export
    from swath.harvesters.embedded import print_publish
    from swath.harvesters.run import run_harvest

    run_id = time.strftime("%Y%m%dT%H%M%S")
    config.data_root.mkdir(parents=True, exist_ok=True)
    with ReplayServer() as server:
        harvest_config = config.with_api_url("tumblr", server.url)
        harvested: list[Sent] = []
        ctx = JobContext(config=harvest_config, publish=print_publish(io.StringIO(), harvested),
                         service="Tumblr Harvester", progress=progress or (lambda text: None))
        run_harvest(harvest_message(run_id), routing_key="harvest.start.tumblr.tumblr_blog_posts", ctx=ctx)
    exported: list[Sent] = []
    ctx = JobContext(config=config, publish=print_publish(io.StringIO(), exported), service="swath Exporter",
                     progress=progress or (lambda text: None))
    message = export_message(run_id, fmt)
    run_export(message, routing_key="export.start.tumblr.tumblr_blog_posts", ctx=ctx)
    return DemoResult(harvest=harvested, export=exported, served_posts=len(server.posts),
                      export_dir=config.data_root / export_path(run_id))
