"""Mastodon through Mastodon.py on the recording adapter: hashtag, account, public and search timelines paged
by `max_id` from the `Link` headers (incremental runs ask with `since_id` and fetch only what is new), and
live streams (stream.py). Retries, rate-limit waits (X-RateLimit-Reset), WARC writing
and state commits are the engine's; instances and tokens are client.py's."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import cached_property, partial
from typing import Any

from swath.harvesters.base import Harvester
from swath.harvesters.errors import BadResponse, DeadlineExceeded, HarvestError, RemoteError
from swath.harvesters.pages import listing
from swath.harvesters.retry import MAX_RATE_WAIT
from swath.harvesters.values import as_text
from swath.messages import codes
from swath.platforms.mastodon.client import (
    Clients,
    Refused,
    Target,
    call,
    hashtag,
    host_of,
    id_order,
    newer,
    target,
)
from swath.platforms.mastodon.declaration import PLATFORM

PAGE = 40  # the most a Mastodon timeline page holds


class MastodonHarvester(Harvester, declaration=PLATFORM):

    @cached_property
    def clients(self) -> Clients:
        return Clients(self.harvest, api_root=PLATFORM.api_root(self.harvest.config))

    def option(self, name: str) -> Any:
        return self.harvest.start.options.get(name)

    def targets(self, field: str) -> Iterator[Target]:
        """Each seed's instance and value; a seed giving neither is an error for that seed."""
        api_root = PLATFORM.api_root(self.harvest.config)
        for seed in self.harvest.start.seeds:
            token = seed.token or (seed.uid if field == "account" else None)  # an account seed may give only its id
            found = target(self.harvest, api_root, seed.id, token, field)
            if found is None:
                self.harvest.error(codes.BAD_REQUEST, f"seed has no {field} (or its instance is not an http(s) "
                                                      "URL)", seed.id)
                continue
            yield found

    # --- the harvest types ---
    def hashtag(self) -> None:
        for t in self.targets("hashtag"):
            tag = hashtag(t.value)
            if tag is None:
                self.harvest.error(codes.BAD_REQUEST, f"{t.value!r} is not a hashtag (letters, digits, _)", t.seed_id)
                continue
            self.per_seed(t, f"#{tag} on {t.instance}", lambda c, tag=tag, **kw: c.timeline_hashtag(
                tag, local=bool(self.option("local")), only_media=bool(self.option("only_media")), **kw),
                key=f"mastodon.{host_of(t.instance)}.tag.{tag.lower()}")

    def public(self) -> None:
        seeds = list(self.targets("instance")) if self.harvest.start.seeds else \
            [Target(None, PLATFORM.api_root(self.harvest.config).rstrip("/"), PLATFORM.api_root(self.harvest.config))]
        local = bool(self.option("local"))
        for t in seeds:
            if not t.value.startswith(("http://", "https://")):  # the token is the instance itself
                self.harvest.error(codes.BAD_REQUEST, f"{t.value!r} is not an instance URL (https://...)", t.seed_id)
                continue
            t = Target(t.seed_id, t.value.rstrip("/"), "public")
            self.per_seed(t, f"the {'local' if local else 'public'} timeline of {t.instance}",
                          lambda c, local=local, **kw: c.timeline_public(
                              local=local, only_media=bool(self.option("only_media")), **kw),
                          key=f"mastodon.{host_of(t.instance)}.{'local' if local else 'public'}")

    def account(self) -> None:
        uids = {seed.id: seed.uid for seed in self.harvest.start.seeds}
        for t in self.targets("account"):
            self.guarded(t, partial(self._account, t, as_text(uids.get(t.seed_id or ""))))

    def _account(self, t: Target, uid: str | None) -> None:
        client = self.clients.client(t.instance)
        what = f"account {t.value} on {t.instance}"
        found = call(client.account, uid, what=what) if uid else \
            call(client.account_lookup, t.value.lstrip("@").split("@")[0], what=what)
        account_id = as_text(found.get("id") if isinstance(found, dict) else None)
        if account_id is None:
            raise BadResponse(f"{what}: the instance gave no account id", seed_id=t.seed_id)
        self.harvest.count("accounts")
        if uid is None and t.seed_id is not None:
            self.harvest.uid_found(t.seed_id, account_id)
        acct = found.get("acct")
        if uid is not None and t.seed_id is not None and isinstance(acct, str) and acct and \
                acct.lower() != t.value.lstrip("@").split("@")[0].lower():  # renamed, or a uid seed's name learnt
            self.harvest.token_update(t.seed_id, f"@{acct}")
        moved = found.get("moved")
        if isinstance(moved, dict) and isinstance(moved.get("acct"), str) and t.seed_id is not None:
            acct = moved["acct"] if "@" in moved["acct"] else f"{moved['acct']}@{host_of(t.instance)}"
            self.harvest.warning(codes.ACCOUNT_MOVED, f"{t.value} moved to @{acct}; its posts here are still "
                                                      "harvested", t.seed_id)
            self.harvest.token_update(t.seed_id, f"@{acct}")
        self.pages(t, what, lambda c, **kw: c.account_statuses(
            account_id, only_media=bool(self.option("only_media")), **kw),
            key=f"mastodon.{host_of(t.instance)}.account.{account_id}")

    def search(self) -> None:
        for t in self.targets("query"):
            self.guarded(t, partial(self._search, t))

    def _search(self, t: Target) -> None:
        client = self.clients.client(t.instance)
        if not self.clients.has_token(t.instance):
            self.harvest.warning(codes.SEARCH_UNAVAILABLE, f"searching posts on {t.instance} without an access "
                                                           "token: most instances then find none", t.seed_id)
        key = f"mastodon.{host_of(t.instance)}.search.{t.value}"
        since = self.harvest.state.get(key) if self.option("incremental") else None
        offset, newest, done = self.harvest.resume_point(f"seed:{t.seed_id}", (0, None, False))
        limit, counted = self.option("limit"), 0
        what = f"search {t.value!r} on {t.instance}"
        with listing(self.harvest, what=what, seed_id=t.seed_id) as guard:
            while not done and not self.harvest.stopping:
                guard.cursor(offset)
                self.pace(client, t)
                found = call(client.search_v2, t.value, result_type="statuses", offset=offset or None,
                             min_id=since, limit=PAGE, what=what)
                ids = self.status_ids(found.get("statuses") if isinstance(found, dict) else None, t)
                if len(ids) < PAGE and guard.all_seen(ids):
                    ids = []  # the end: posts published since the last page pushed ones served already onto it
                fresh = self.take(ids, limit, counted)
                guard.items(ids)
                counted += fresh
                newest = newer(newest, max(ids, key=id_order) if ids else None)
                offset += len(ids)
                done = not ids or bool(limit and counted >= limit)
                self.harvest.checkpoint(f"seed:{t.seed_id}", (offset, newest, done), posts=fresh)
        if done and newest and not guard.looped and self.option("incremental"):
            self.harvest.state.set(key, newest)

    # --- paging ---
    def per_seed(self, t: Target, what: str, fetch: Callable[..., Any], *, key: str) -> None:
        self.guarded(t, lambda: self.pages(t, what, fetch, key=key))

    def guarded(self, t: Target, run: Callable[[], None]) -> None:
        """One seed's work; what the instance refuses or a dead instance ends this seed only."""
        if self.harvest.stopping:
            return
        try:
            run()
        except Refused as exc:
            code = {404: codes.TOKEN_NOT_FOUND, 410: codes.ACCOUNT_GONE}.get(exc.status or 0, codes.BAD_REQUEST)
            note = self.harvest.warning if code != codes.BAD_REQUEST else self.harvest.error
            note(code, exc.message, t.seed_id)
        except (RemoteError, DeadlineExceeded) as exc:
            self.harvest.error(codes.INSTANCE_UNREACHABLE, f"{t.instance}: {exc.message}", t.seed_id)
        except HarvestError as exc:
            self.harvest.error(exc.code, exc.message, t.seed_id)

    def pages(self, t: Target, what: str, fetch: Callable[..., Any], *, key: str) -> None:
        """Page a timeline newest first: `max_id` from each page's Link header, `since_id` the newest post of
        the last run when incremental (kept on every page, so only new posts are fetched); checkpointed per
        page, so a resumed harvest goes on from its last complete page."""
        since = self.harvest.state.get(key) if self.option("incremental") else None
        cursor, newest, done = self.harvest.resume_point(f"seed:{t.seed_id}", (None, None, False))
        newest, done = self.listing(t, what, fetch, since=since, cursor=cursor, newest=newest, done=done,
                                    progress=lambda c, n, d, fresh: self.harvest.checkpoint(
                                        f"seed:{t.seed_id}", (c, n, d), posts=fresh))
        if done and newest and self.option("incremental"):
            self.harvest.state.set(key, newest)

    def listing(self, t: Target, what: str, fetch: Callable[..., Any], *, since: str | None, cursor: str | None,
                newest: str | None, done: bool, progress: Callable[[str | None, str | None, bool, int], None],
                limit: int | None = None) -> tuple[str | None, bool]:
        """(newest id seen, whether the listing reached its end); `progress(cursor, newest, done, fresh)`
        after each page."""
        client = self.clients.client(t.instance)
        limit = limit if limit is not None else self.option("limit")
        counted = 0
        with listing(self.harvest, what=what, seed_id=t.seed_id) as guard:
            while not done and not self.harvest.stopping:
                if cursor is not None:
                    guard.cursor(cursor)
                self.pace(client, t)
                page = call(fetch, client, max_id=cursor, since_id=since, limit=PAGE, what=what)
                ids = self.status_ids(page, t)
                fresh = self.take(ids, limit, counted)
                guard.items(ids)
                counted += fresh
                newest = newer(newest, max(ids, key=id_order) if ids else None)
                following = getattr(page, "_pagination_next", None)
                cursor = as_text(following.get("max_id")) if isinstance(following, dict) else None
                done = not ids or cursor is None or bool(limit and counted >= limit)
                progress(cursor, newest, done, fresh)
        return newest, done and not guard.looped

    def pace(self, client: Any, t: Target) -> None:
        """The instance said no request is left in its window (X-RateLimit-Remaining 0): wait for its
        X-RateLimit-Reset (as Mastodon.py read it, against the answer's Date) rather than earn a 429."""
        remaining, reset = getattr(client, "ratelimit_remaining", None), getattr(client, "ratelimit_reset", None)
        if remaining != 0 or not isinstance(reset, (int, float)):
            return
        wait = reset - time.time() + 1.0  # a second more, as the engine waits after a 429
        if 0 < wait <= MAX_RATE_WAIT:
            self.harvest.count("rate_limit_waits")
            self.harvest.sleep(wait)

    @staticmethod
    def take(ids: list[str], limit: int | None, counted: int) -> int:
        return len(ids) if not limit else max(0, min(len(ids), int(limit) - counted))

    @staticmethod
    def status_ids(page: object, t: Target) -> list[str]:
        """The ids of a page of statuses; BadResponse for a page that is not a list of statuses with ids."""
        if not isinstance(page, list):
            raise BadResponse(f"{t.instance} sent a page that is not a list of posts", seed_id=t.seed_id)
        ids = [as_text(s.get("id")) if isinstance(s, dict) else None for s in page]
        if None in ids:
            raise BadResponse(f"{t.instance} sent a post without an id", seed_id=t.seed_id)
        return [i for i in ids if i is not None]

    # --- streams ---
    def stream(self) -> None:
        from swath.platforms.mastodon.stream import run_stream

        run_stream(self)
