"""Tumblr API v2 over the engine's recorded requests session: a blog's posts, paged by offset."""

from __future__ import annotations

from swath.harvesters.base import Harvester
from swath.harvesters.errors import BadResponse
from swath.harvesters.pages import listing
from swath.harvesters.social import credential
from swath.harvesters.values import as_number, json_body
from swath.messages import codes
from swath.messages.model import Seed
from swath.platforms.tumblr.declaration import PLATFORM

PAGE = 20  # the most /posts returns at once


def blog_host(name: str) -> str:
    """Tumblr names blogs by host; a bare name is a tumblr.com blog."""
    name = name.strip().lower().removeprefix("https://").removeprefix("http://").strip("/")
    return name if "." in name else f"{name}.tumblr.com"


def _post_id(post: object, seed: Seed) -> int:
    """A post's numeric id (id_string, else id); BadResponse for a post without one."""
    number = as_number(post.get("id_string") or post.get("id")) if isinstance(post, dict) else None
    if number is None:
        raise BadResponse("Tumblr sent a post without a numeric id", seed_id=seed.id)
    return number


class TumblrHarvester(Harvester, declaration=PLATFORM):

    def blog_posts(self) -> None:
        (api_key,) = credential(self.harvest.start.credentials, "api_key")
        incremental = bool(self.harvest.start.options.get("incremental"))
        for seed in self.harvest.start.seeds:
            if self.harvest.stopping:
                return
            name = seed.uid or seed.token
            if not name or not isinstance(name, str):
                self.harvest.warning(codes.TOKEN_NOT_FOUND, "seed names no blog", seed.id)
                continue
            host = blog_host(name)
            key = f"tumblr.{host}.last_post_id"
            last = self.harvest.state.get(key) if incremental else None
            # where an interrupted run of this harvest got to: the next offset, and the newest post so far
            offset, newest = self.harvest.resume_point(f"seed:{seed.id}", (0, None))
            # offset paging against the server's total_posts: a page of posts served already ends it
            with listing(self.harvest, what=f"Tumblr blog {host}", seed_id=seed.id) as guard:
                while offset is not None and not self.harvest.stopping:
                    guard.cursor(offset)
                    posts, offset = self.page(seed, host, api_key, offset)
                    ids = [_post_id(post, seed) for post in posts]
                    guard.items(ids)
                    fresh = 0
                    for post_id in ids:
                        if last and post_id <= int(last):
                            offset = None  # posts come newest first: the rest were harvested before
                            break
                        newest = max(newest or 0, post_id)
                        fresh += 1
                    self.harvest.checkpoint(f"seed:{seed.id}", (offset, newest), posts=fresh)
            if incremental and newest and offset is None and not guard.looped:
                self.harvest.state.set(key, str(newest))

    def page(self, seed: Seed, host: str, api_key: str, offset: int) -> tuple[list[dict], int | None]:
        """One page of a blog's posts, newest first, and the offset of the next (None after the last)."""
        url = f"{PLATFORM.api_root(self.harvest.config)}/v2/blog/{host}/posts"
        params: dict[str, str | int] = {"api_key": api_key, "offset": offset, "limit": PAGE}
        resp = self.harvest.http.get(url, params=params)
        if resp.status_code == 404:
            self.harvest.warning(codes.TOKEN_NOT_FOUND, f"Tumblr blog {host} was not found", seed.id)
            return [], None
        answer = json_body(resp, what=f"Tumblr's answer for {host}", seed_id=seed.id)
        try:
            body = answer["response"]
            posts, total = body["posts"], int(body["total_posts"])
        except (ValueError, KeyError, TypeError, OverflowError):
            posts = total = None
        if not isinstance(posts, list) or not isinstance(total, int):
            raise BadResponse(f"Tumblr answered {resp.status_code} for {host} without posts", seed_id=seed.id)
        offset += len(posts)
        return posts, (None if not posts or offset >= total else offset)
