"""Bluesky through the atproto SDK: an actor's posts, post search, a custom feed, and the Jetstream firehose.

atproto's client speaks httpx; its transport is swath's recording path (harvesters/httpx_bridge.py), so
every XRPC exchange is in the WARC with the retries, limits and origin guard of any harvest request. An
app-password login (credentials `identifier` + `app_password`) goes unrecorded and is retried like any
request, and its session tokens join the harvest's secrets (platforms/bluesky/xrpc.py, imported only when
such a harvest runs); the identifier, a handle, is public and never masked. The Jetstream type is in
platforms/bluesky/jetstream.py. See docs/bluesky.md.
"""

from __future__ import annotations

import datetime as dt
from functools import cached_property
from typing import TYPE_CHECKING, Any

from swath.harvesters.base import Harvester
from swath.harvesters.errors import BadResponse
from swath.harvesters.pages import listing
from swath.harvesters.values import as_text
from swath.messages import codes
from swath.messages.model import Seed
from swath.platforms.bluesky.declaration import PLATFORM

if TYPE_CHECKING:
    from swath.platforms.bluesky.xrpc import Xrpc

PAGE_SIZE = 100  # the largest page the feed and search endpoints serve
# XRPC error names that say the account is gone or held, not that the request was wrong
_SUSPENDED = frozenset({"AccountTakedown", "AccountDeactivated", "AccountSuspended", "BlockedActor"})
_NOT_FOUND = frozenset({"NotFound", "UnknownFeed", "ActorNotFound"})


class BlueskyHarvester(Harvester, declaration=PLATFORM):

    @property
    def incremental(self) -> bool:
        return bool(self.harvest.start.options.get("incremental"))

    @cached_property
    def xrpc(self) -> Xrpc:
        from swath.platforms.bluesky.xrpc import Xrpc  # atproto's models take seconds to import

        return Xrpc(self.harvest, api_root=PLATFORM.api_root(self.harvest.config))

    def _query(self, nsid: str, seed: Seed, what: str, **params: object) -> dict[str, Any] | None:
        """The JSON object a query answered; None (and a note for the seed) when Bluesky refused it."""
        from swath.platforms.bluesky.xrpc import XrpcRefused

        try:
            return self.xrpc.query(nsid, what=what, seed_id=seed.id, **params)
        except XrpcRefused as exc:
            if exc.error in _SUSPENDED:
                self.harvest.warning(codes.TOKEN_SUSPENDED, str(exc), seed.id)
            elif exc.error in _NOT_FOUND or "not found" in str(exc).lower():
                self.harvest.warning(codes.TOKEN_NOT_FOUND, str(exc), seed.id)
            else:
                self.harvest.error(codes.BAD_REQUEST, str(exc), seed.id)
            return None

    # --- paged listings ---
    def _pages(self, seed: Seed, *, nsid: str, field: str, params: dict[str, object], key: str,
               chronological: bool = True) -> None:
        """Page a listing by its cursor, counting the posts newer than the last run's mark (incremental),
        and move the mark on when the listing ended cleanly. Each page is a checkpoint: a resumed run of
        this harvest goes on from the next cursor with the counts so far."""
        mark = _time(self.harvest.state.get(key)) if self.incremental else None
        point = f"seed:{seed.id}"
        cursor, newest_text, finished = self.harvest.resume_point(point, (None, None, False))
        newest = _time(newest_text)
        with listing(self.harvest, what=f"Bluesky {nsid} of seed {seed.id}", seed_id=seed.id) as guard:
            while not finished and not self.harvest.stopping:
                if cursor is not None:
                    guard.cursor(cursor)
                page = self._query(nsid, seed, f"{nsid} page", **params, cursor=cursor)
                if page is None:
                    return
                entries = page.get(field)
                if not isinstance(entries, list):
                    raise BadResponse(f"Bluesky sent a {nsid} page without a {field} list", seed_id=seed.id)
                keyed = [(_entry_key(e), _sort_time(e)) for e in entries]
                if any(k is None for k, _ in keyed):
                    raise BadResponse(f"Bluesky sent a {nsid} entry without a post uri", seed_id=seed.id)
                guard.items(k for k, _ in keyed)
                fresh = [t for _, t in keyed if mark is None or (t is not None and t > mark)]
                times = [t for _, t in keyed if t is not None]
                if times and (newest is None or max(times) > newest):
                    newest = max(times)
                cursor = as_text(page.get("cursor"))
                done = len(fresh) < len(entries) if chronological else not fresh
                finished = not cursor or not entries or (mark is not None and done)
                self.harvest.checkpoint(point, [cursor, _text(newest), finished], posts=len(fresh))
        if self.incremental and finished and newest is not None and not guard.looped and \
                (mark is None or newest > mark):
            self.harvest.state.set(key, _text(newest))

    # --- harvest types ---
    def author_feed(self) -> None:
        for seed in self.harvest.start.seeds:
            if self.harvest.stopping:
                break
            did = self.harvest.resume_point(f"actor:{seed.id}") or self._actor(seed)  # known if resumed
            if did is None:
                continue
            self._pages(seed, nsid="app.bsky.feed.getAuthorFeed", field="feed", key=f"bluesky.author.{did}.newest",
                        params={"actor": did, "limit": PAGE_SIZE})

    def _actor(self, seed: Seed) -> str | None:
        """The seed's account DID (by uid, else by its handle or DID token); reports the DID learnt as the
        seed's uid and a changed handle as a token update."""
        actor = str(seed.uid or seed.token or "").strip()
        if not actor:
            self.harvest.error(codes.BAD_REQUEST, "seed has no handle or DID", seed.id)
            return None
        profile = self._query("app.bsky.actor.getProfile", seed, f"profile of {actor}", actor=actor)
        if profile is None:
            return None
        did, handle = as_text(profile.get("did")), as_text(profile.get("handle"))
        if not did or not did.startswith("did:"):
            raise BadResponse(f"Bluesky sent the profile of {actor} without a DID", seed_id=seed.id)
        self.harvest.checkpoint(f"actor:{seed.id}", did, users=1)
        if seed.uid != did:
            self.harvest.uid_found(seed.id, did)
        if handle and handle != "handle.invalid" and not str(seed.token or "").startswith("did:") \
                and handle != seed.token:
            self.harvest.token_update(seed.id, handle)  # the account changed its handle
        return did

    def search(self) -> None:
        defaults = self.harvest.start.options
        for seed in self.harvest.start.seeds:
            if self.harvest.stopping:
                break
            token = seed.token if isinstance(seed.token, dict) else {"query": seed.token}
            query = token.get("query")
            if not query or not isinstance(query, str):
                self.harvest.error(codes.BAD_REQUEST, "seed has no query", seed.id)
                continue
            key = f"bluesky.search.{query}.newest"
            since = token.get("since") or defaults.get("since")
            mark = self.harvest.state.get(key) if self.incremental else None
            since = mark or since  # incremental: from the newest post of the last run (inclusive: not counted)
            until = token.get("until") or defaults.get("until")
            self._pages(seed, nsid="app.bsky.feed.searchPosts", field="posts", key=key,
                        params={"q": query, "sort": "latest", "since": since, "until": until, "limit": PAGE_SIZE})

    def feed(self) -> None:
        for seed in self.harvest.start.seeds:
            if self.harvest.stopping:
                break
            uri = str(seed.token or "")
            if not uri.startswith("at://") or "/app.bsky.feed.generator/" not in uri:
                self.harvest.error(codes.BAD_REQUEST, "seed is not a feed generator's at:// URI", seed.id)
                continue
            # a feed's order is the generator's own: a page without anything new ends an incremental run
            self._pages(seed, nsid="app.bsky.feed.getFeed", field="feed", key=f"bluesky.feed.{uri}.newest",
                        chronological=False,
                        params={"feed": uri, "limit": PAGE_SIZE})

    def jetstream(self) -> None:
        from swath.platforms.bluesky.jetstream import run_jetstream  # the WebSocket side, only for this type

        run_jetstream(self.harvest)


def _entry_key(entry: object) -> str | None:
    """What identifies a listing entry: the post's uri, a repost's own uri (or post + reposter)."""
    post = entry.get("post", entry) if isinstance(entry, dict) else None
    uri = as_text(post.get("uri")) if isinstance(post, dict) else None
    reason = entry.get("reason") if isinstance(entry, dict) else None
    if uri and isinstance(reason, dict) and "Repost" in str(reason.get("$type", "")):
        by = reason.get("by")
        return as_text(reason.get("uri")) or f"{uri}#repost:{as_text(by.get('did')) if isinstance(by, dict) else ''}"
    return uri


def _sort_time(entry: object) -> dt.datetime | None:
    """When an entry joined its listing: a repost's time, else the post's indexedAt."""
    if not isinstance(entry, dict):
        return None
    reason, post = entry.get("reason"), entry.get("post", entry)
    for value in ((reason or {}).get("indexedAt") if isinstance(reason, dict) else None,
                  post.get("indexedAt") if isinstance(post, dict) else None):
        parsed = _time(value)
        if parsed is not None:
            return parsed
    return None


def _text(when: dt.datetime | None) -> str | None:
    """A time as Bluesky writes them (UTC, microseconds, Z): the incremental marks and checkpoints."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if when is not None else None


def _time(value: object) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:  # an odd date from the API is no date
        return None
    if parsed is not None and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed

