"""Twitter API v2 through twarc's Twarc2: recent and full-archive search, user timelines, and the
filtered and sample streams. Retries, rate limits, WARC writing and state commits are the engine's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import Any

import requests
from twarc import Twarc2

from swath.harvesters.base import Harvester
from swath.harvesters.errors import BadResponse, RemoteError, Unauthorized
from swath.harvesters.pages import PageGuard, listing
from swath.harvesters.social import credential, mount_recording
from swath.harvesters.values import as_number, as_text, kind_of
from swath.messages import codes
from swath.messages.model import Seed, parse_datetime
from swath.platforms.twitter.declaration import PLATFORM

APP_AUTH_TYPES = frozenset({"twitter_academic_search", "twitter_filter_stream", "twitter_sample"})


class _Twarc(Twarc2):
    """Twarc2 whose every session goes through our adapters (twarc builds a new session on each reconnect),
    and whose every paged request passes the listing's PageGuard first: twarc follows `next_token` by
    itself, and skips pages without data, so only here is every token seen before it is requested."""

    def __init__(self, *, mount: Callable[[requests.Session], None], **credentials: str) -> None:
        self._mount = mount
        self.guard: PageGuard | None = None  # the listing being paged (set by TwitterHarvester._pages)
        super().__init__(metadata=False, **credentials)

    def connect(self) -> None:
        super().connect()
        self._mount(self.client)

    def get(self, *args: Any, **kwargs: Any) -> requests.Response:
        params = kwargs.get("params") or {}
        token = params.get("next_token") or params.get("pagination_token")
        if token is not None and self.guard is not None:
            self.guard.cursor(str(token))  # a token requested already would page for ever
        response: requests.Response = super().get(*args, **kwargs)
        return response


class TwitterHarvester(Harvester, declaration=PLATFORM):

    @property
    def incremental(self) -> bool:
        return bool(self.harvest.start.options.get("incremental"))

    @cached_property
    def twarc(self) -> Twarc2:
        auth = self._auth(self.harvest.start.credentials)
        adapter = self.harvest.recording_adapter([auth.get("bearer_token", "")])  # an obtained token too
        base = PLATFORM.api_root(self.harvest.config)

        def mount(session: requests.Session) -> None:
            mount_recording(session, adapter=adapter, default=PLATFORM.api_url, base=base)

        return _Twarc(mount=mount, **auth)

    def _auth(self, creds: dict[str, Any]) -> dict[str, str]:
        """Bearer token if given; user auth (OAuth 1.0a) if all four keys are given and the endpoint
        allows it; otherwise an app token obtained with the consumer key/secret."""
        if creds.get("bearer_token"):
            return {"bearer_token": str(creds["bearer_token"])}
        key, secret = credential(creds, "consumer_key", "consumer_secret")
        if creds.get("access_token") and creds.get("access_token_secret") and \
                self.harvest.start.type not in APP_AUTH_TYPES:
            return {"consumer_key": key, "consumer_secret": secret, "access_token": str(creds["access_token"]),
                    "access_token_secret": str(creds["access_token_secret"])}
        return {"bearer_token": self._app_token(key, secret)}

    def _app_token(self, key: str, secret: str) -> str:
        """Exchange the consumer key/secret for an app bearer token. Not recorded: it is auth, not content,
        and its response body is a credential; the engine's unrecorded session still limits it."""
        url = f"{PLATFORM.api_root(self.harvest.config)}/oauth2/token"
        try:
            with self.harvest.unrecorded_session() as session:
                resp = session.post(url, auth=(key, secret), data={"grant_type": "client_credentials"},
                                    timeout=self.harvest.config.http_timeout)
        except requests.RequestException as exc:
            raise RemoteError(f"could not reach {url}: {type(exc).__name__}") from None
        if resp.status_code in (401, 403):
            raise Unauthorized(f"{url} refused the consumer key/secret ({resp.status_code})")
        try:
            token = resp.json()["access_token"]
        except (ValueError, KeyError, TypeError):
            raise BadResponse(f"{url} answered {resp.status_code} without an access_token") from None
        if not isinstance(token, str) or not token:
            raise BadResponse(f"{url} answered {resp.status_code} without a usable access_token")
        self.harvest.add_secret(token)  # redacted from statuses and logs like the configured credentials
        return token

    def _seed_tokens(self, name: str) -> Iterator[tuple[Seed, dict[str, Any], str]]:
        """Each seed with its token as a dict (a plain string token is the `name` field) and that field;
        a seed without it is an error for that seed."""
        for seed in self.harvest.start.seeds:
            token = seed.token if isinstance(seed.token, dict) else {name: seed.token}
            value = token.get(name)
            if not value or not isinstance(value, str):
                self.harvest.error(codes.BAD_REQUEST, f"seed has no {name}", seed.id)
                continue
            yield seed, token, value

    # --- search ---
    def search_recent(self) -> None:
        self._search(self.twarc.search_recent)

    def search_all(self) -> None:
        self._search(self.twarc.search_all)

    def _search(self, endpoint: Callable[..., Iterator[dict[str, Any]]]) -> None:
        for seed, token, query in self._seed_tokens("query"):
            key = f"twitter.search.{query}.since_id"
            since_id = self.harvest.state.get(key) if self.incremental else None
            start_time, end_time = parse_datetime(token.get("start_time")), parse_datetime(token.get("end_time"))
            if since_id:  # the API refuses since_id together with start/end_time; since_id wins
                start_time = end_time = None
            pages = endpoint(query, since_id=since_id, start_time=start_time, end_time=end_time, max_results=100)
            newest = self._pages(pages, seed, limit=token.get("limit"))
            if self.incremental and newest:
                self.harvest.state.set(key, newest)

    def _pages(self, pages: Iterable[dict[str, Any]], seed: Seed, *, limit: int | None = None) -> str | None:
        """Count the tweets of each page (up to `limit`); returns the newest tweet id seen (None when the
        listing ended on a pagination loop: it is incomplete, so no high-water mark)."""
        newest, counted = None, 0
        with listing(self.harvest, what=f"Twitter listing of seed {seed.id}", seed_id=seed.id) as guard:
            self.twarc.guard = guard
            try:
                for page in pages:
                    ids = _tweet_ids(page, seed)
                    take = len(ids) if not limit else min(len(ids), int(limit) - counted)
                    counted += take
                    self.harvest.count("tweets", take)
                    if ids and (newest is None or max(ids) > newest):
                        newest = max(ids)
                    if (limit and counted >= int(limit)) or self.harvest.stopping:
                        break
            except requests.HTTPError as exc:  # 401/403/429/5xx are the engine's; other 4xx end this seed
                self.harvest.error(codes.BAD_REQUEST, f"Twitter refused the request: {_problem(exc)}", seed.id)
            finally:
                self.twarc.guard = None
        return str(newest) if newest is not None and not guard.looped else None

    # --- user timelines ---
    def user_timeline(self) -> None:
        seeds = self.harvest.start.seeds
        try:
            users = {**self._lookup([s for s in seeds if s.uid], usernames=False),
                     **self._lookup([s for s in seeds if not s.uid and s.token], usernames=True)}
        except requests.HTTPError as exc:  # e.g. 400 for a malformed screen name in the batch
            self.harvest.error(codes.BAD_REQUEST, f"Twitter refused the user lookup: {_problem(exc)}")
            return
        for seed in seeds:
            user = users.get(seed.id)
            if user is None or self.harvest.stopping:
                continue
            key = f"twitter.timeline.{user['id']}.since_id"  # a text id: _lookup made it one
            since_id = self.harvest.state.get(key) if self.incremental else None
            newest = self._pages(self.twarc.timeline(user["id"], since_id=since_id, max_results=100), seed)
            if self.incremental and newest:
                self.harvest.state.set(key, newest)

    def _lookup(self, seeds: list[Seed], *, usernames: bool) -> dict[str, dict[str, Any]]:
        """Look seeds' users up in batches; report uids, renames and unusable accounts. Seed id -> user."""
        if not seeds:
            return {}
        wanted = {str(s.token if usernames else s.uid).lower(): s for s in seeds}
        found: dict[str, dict[str, Any]] = {}
        problems: dict[str, dict[str, Any]] = {}
        for page in self.twarc.user_lookup(list(wanted), usernames=usernames):
            for entry in _dicts(page, "data"):
                name = as_text(entry.get("username") if usernames else entry.get("id"))
                if name is not None:
                    found[name.lower()] = entry
            for err in _dicts(page, "errors"):
                problems[str(err.get("value", err.get("resource_id", ""))).lower()] = err
        usable = {}
        for value, seed in wanted.items():
            user = found.get(value)
            if user is None:
                err = problems.get(value, {})
                suspended = str(err.get("detail", "")).startswith("User has been suspended")
                code = codes.TOKEN_SUSPENDED if suspended else codes.TOKEN_NOT_FOUND
                why = "is suspended" if suspended else "was not found"
                self.harvest.warning(code, f"Twitter user {value} {why}", seed.id)
                continue
            number = as_number(user.get("id"))
            if number is None:  # never a uid in the status, nor a timeline to page
                self.harvest.error(codes.BAD_RESPONSE, f"Twitter gave user {value} {kind_of(user.get('id'))} "
                                                       "as its id, not a number", seed.id)
                continue
            user = {**user, "id": str(number)}
            self.harvest.count("users")
            name = as_text(user.get("username"))  # a name that is not text is not reported
            if usernames:
                self.harvest.uid_found(seed.id, user["id"])
            elif name is not None and str(seed.token or "") != name:  # renamed, or a uid seed's name learnt
                self.harvest.token_update(seed.id, name)
            if user.get("protected"):
                self.harvest.warning(codes.TOKEN_UNAUTHORIZED,
                                     f"Twitter user {user['username']} is protected", seed.id)
                continue
            usable[seed.id] = user
        return usable

    # --- streams ---
    def filter_stream(self) -> None:
        self._sync_rules()
        self._stream(self.twarc.stream)

    def sample(self) -> None:
        self._stream(self.twarc.sample)

    def _stream(self, connect: Callable[..., Iterator[dict[str, Any]]]) -> None:
        # No stop event for twarc: on harvest.stop the engine ends the stream after the lines already
        # recorded (so each is counted) and refuses twarc's reconnect with HarvestStopped, a normal end.
        try:
            for item in connect(record_keepalive=False):
                if isinstance(item, dict) and "data" in item:
                    self.harvest.count("tweets")
        except Exception:
            if not self.harvest.stopping:  # HarvestStopped, or a line cut mid-way by the stop
                raise

    def _sync_rules(self) -> None:
        """Make the account's stream rules exactly this harvest's seeds: remove others, add missing ones."""
        wanted: dict[tuple[str, str], Seed] = {}
        for seed, token, rule in self._seed_tokens("rule"):
            wanted[(rule, str(token.get("tag") or rule))] = seed
        current = self.twarc.get_stream_rules().get("data", [])
        stale = [r["id"] for r in current if (r["value"], r.get("tag", "")) not in wanted]
        if stale:
            self.twarc.delete_stream_rule_ids(stale)
        present = {(r["value"], r.get("tag", "")) for r in current}
        missing = [{"value": value, "tag": tag} for value, tag in wanted if (value, tag) not in present]
        if not missing:
            return
        try:
            answer = self.twarc.add_stream_rules(missing)
        except requests.HTTPError as exc:
            self.harvest.error(codes.BAD_REQUEST, f"Twitter refused the stream rules: {_problem(exc)}")
            return
        for err in answer.get("errors", []):
            refused = next((s for (value, _), s in wanted.items() if value == err.get("value")), None)
            self.harvest.warning(codes.BAD_REQUEST, f"stream rule refused: {err.get('title', 'invalid rule')}",
                                 refused.id if refused else None)


def _dicts(page: object, field: str) -> list[dict[str, Any]]:
    """The objects of a page's `data`/`errors` list; anything else in it is skipped."""
    values = page.get(field) if isinstance(page, dict) else None
    return [v for v in values if isinstance(v, dict)] if isinstance(values, list) else []


def _tweet_ids(page: object, seed: Seed) -> list[int]:
    """The ids of a page's tweets; BadResponse for a page that is not a list of tweets with numeric ids."""
    tweets = page.get("data", []) if isinstance(page, dict) else None
    if not isinstance(tweets, list):
        raise BadResponse("Twitter sent a page whose data is not a list of tweets", seed_id=seed.id)
    ids = [as_number(t.get("id")) if isinstance(t, dict) else None for t in tweets]
    if None in ids:
        raise BadResponse("Twitter sent a tweet without a numeric id", seed_id=seed.id)
    return [i for i in ids if i is not None]


def _problem(exc: requests.HTTPError) -> str:
    """The API's own words for a refused request (v2 problem JSON), without the URL or credentials."""
    resp = exc.response
    if resp is None:
        return "error"
    try:
        body = resp.json()
        return f"{resp.status_code} {body.get('title', '')}: {body.get('detail', '')}".strip(": ")
    except (ValueError, AttributeError):
        return str(getattr(resp, "status_code", "error"))
