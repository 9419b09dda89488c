"""The atproto SDK side of the Bluesky harvester: a logged-in (or anonymous) client on swath's recording path,
and one call that runs an XRPC query and says in swath's terms why it was refused.

Kept apart from platforms/bluesky/harvester.py because importing atproto's models takes seconds, and listing the
platforms (`swath harvest types`, `swath worker --list`) imports every declaration: this module is imported
only when a Bluesky REST harvest runs.
"""

from __future__ import annotations

from typing import Any

import requests
from atproto_client import Client, models
from atproto_client.exceptions import (
    AtProtocolError,
    ModelError,
    RateLimitExceededError,
    RequestErrorBase,
    UnauthorizedError,
)
from atproto_client.models.base import ParamsModelBase
from atproto_client.request import Request

from swath.harvesters.base import Harvest
from swath.harvesters.errors import BadResponse, HarvestError, RateLimited, Unauthorized
from swath.harvesters.httpx_bridge import RecordedTransport
from swath.harvesters.retry import RetryPolicy
from swath.harvesters.social import mount_recording
from swath.messages import codes

AUTH_PATHS = ("/com.atproto.server.createSession", "/com.atproto.server.refreshSession")
SESSION_TOKENS = ("accessJwt", "refreshJwt")
# the SDK's models check the parameters before anything is sent
PARAMS: dict[str, type[ParamsModelBase]] = {
    "app.bsky.actor.getProfile": models.AppBskyActorGetProfile.Params,
    "app.bsky.feed.getAuthorFeed": models.AppBskyFeedGetAuthorFeed.Params,
    "app.bsky.feed.searchPosts": models.AppBskyFeedSearchPosts.Params,
    "app.bsky.feed.getFeed": models.AppBskyFeedGetFeed.Params,
}


class XrpcRefused(HarvestError):
    code = codes.BAD_REQUEST  # Bluesky answered a query with an XRPC error (4xx); `error` is its name

    def __init__(self, message: str, *, error: str, seed_id: str | None = None) -> None:
        super().__init__(message, seed_id=seed_id)
        self.error = error


class _Client(Client):
    """atproto's Client staying on the configured API root after login: the session's DID document may
    name another host (the account's PDS), and credentials go only to the harvest's own origins."""

    def _update_pds_endpoint(self, pds_endpoint: str) -> None:
        pass


class Xrpc:
    """One harvest's atproto client (see the module docstring)."""

    def __init__(self, harvest: Harvest, *, api_root: str) -> None:
        session = requests.Session()
        mount_recording(session, adapter=harvest.recording_adapter([]), default="", base="")
        config = harvest.config
        # login and refresh are retried like any request (5xx, connection errors, a 503's Retry-After), but a
        # 429 is not waited for: Bluesky limits logins per account and day, and asking again counts against it
        login_retry = RetryPolicy(retries=config.http_retries, backoff=config.http_backoff, max_rate_limits=0)
        transport = RecordedTransport(recorded=session, unrecorded=harvest.unrecorded_session,
                                      add_secret=harvest.add_secret, timeout=config.http_timeout,
                                      auth_paths=AUTH_PATHS, secret_fields=SESSION_TOKENS, login_retry=login_retry,
                                      sleep=harvest.sleep)
        self.client = _Client(base_url=api_root, request=Request(transport=transport))
        creds = harvest.start.credentials
        if creds.get("identifier") or creds.get("app_password"):
            self._login(str(creds.get("identifier") or ""), str(creds.get("app_password") or ""))

    def _login(self, identifier: str, password: str) -> None:
        """App-password login; the SDK refreshes the session itself (refreshSession) before it expires."""
        try:
            self.client.login(identifier, password, fetch_bsky_profile=False)
        except ValueError:
            raise Unauthorized("Bluesky login needs both identifier and app_password") from None
        except UnauthorizedError:
            raise Unauthorized("Bluesky refused the identifier/app_password (createSession)") from None
        except RateLimitExceededError as exc:  # logins have their own, tight limits; not waited for (see above)
            reset = exc.response.headers.get("ratelimit-reset") if exc.response is not None else None
            raise RateLimited(f"Bluesky rate-limits logins for this account; try again after "
                              f"{reset or 'the limit resets'} (epoch seconds)") from None
        except RequestErrorBase as exc:
            raise Unauthorized(f"Bluesky login failed: {_problem(exc)}") from None

    def query(self, nsid: str, *, what: str, seed_id: str, **params: object) -> dict[str, Any]:
        """The JSON object the query answered; XrpcRefused for an XRPC error, BadResponse for a body that
        is not one. Engine errors (Unauthorized, RateLimited, HarvestStopped...) pass through the SDK."""
        try:
            model = PARAMS[nsid](**{k: v for k, v in params.items() if v is not None})
            content = self.client.invoke_query(nsid, params=model).content
        except ModelError as exc:
            raise BadResponse(f"Bluesky sent {what} atproto could not read: {exc}", seed_id=seed_id) from None
        except RequestErrorBase as exc:
            name = str(getattr(exc.response.content if exc.response is not None else None, "error", "") or "")
            raise XrpcRefused(f"Bluesky refused {what}: {_problem(exc)}", error=name, seed_id=seed_id) from None
        except AtProtocolError as exc:
            raise BadResponse(f"Bluesky {what}: {type(exc).__name__}", seed_id=seed_id) from None
        if not isinstance(content, dict):
            raise BadResponse(f"Bluesky sent {what} that is not a JSON object", seed_id=seed_id)
        return content


def _problem(exc: RequestErrorBase) -> str:
    """Bluesky's own words for a refused request (XRPC error and message), without URL or credentials."""
    if exc.response is None:
        return type(exc).__name__
    content = exc.response.content
    name, message = getattr(content, "error", ""), getattr(content, "message", "")
    return f"{exc.response.status_code} {name or ''}: {message or ''}".strip(": ")
