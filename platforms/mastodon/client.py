"""Mastodon.py on the recording adapter: one client per instance, the instance and access token a seed names,
and Mastodon.py's errors turned back into the engine's.

A seed names its instance: a dict token's `instance` (an http(s) URL), the host of an `@user@host` address,
else the platform's API root (SWATH_MASTODON_API_URL, https://mastodon.social by default). An instance's
access token is the credential `access_token@<host>` (or `access_token` for the API root's instance); it is
sent only to an origin the engine's guard allows (the API root and seed URLs), otherwise it is left unused
with a `credential_unused` warning and the instance is read without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests

from swath.harvesters.base import Harvest
from swath.harvesters.errors import BadResponse, HarvestError, HarvestStopped, RemoteError
from swath.harvesters.guard import credential_origins, origin_of
from swath.harvesters.social import mount_recording
from swath.messages import codes

_T = TypeVar("_T")
USER_AGENT = "swath (Mastodon.py)"


class Refused(HarvestError):
    """The instance answered a 4xx the engine hands back (404, 410, 422...): this seed's problem."""

    code = codes.BAD_REQUEST


@dataclass(frozen=True)
class Target:
    """What one seed asks of one instance: `value` is the hashtag, account, query or timeline."""

    seed_id: str | None
    instance: str  # base URL, no trailing slash
    value: str


def id_order(value: str) -> tuple[int, str]:
    """Ids sort as numbers (Mastodon's snowflakes) and fixed-width flake ids (Pleroma) alike."""
    return len(value), value


def newer(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return a or b
    return max(a, b, key=id_order)


def hashtag(value: str) -> str | None:
    """A hashtag without its `#`; None unless it is word characters only (as Mastodon's are), since Mastodon.py
    puts it into the URL as it is."""
    tag = value.strip().lstrip("#")
    return tag if re.fullmatch(r"\w+", tag) else None


def host_of(url: str) -> str:
    return (urlsplit(url).netloc.rpartition("@")[2]).lower()


def target(harvest: Harvest, api_root: str, seed_id: str | None, token: Any, field: str) -> Target | None:
    """The seed's instance and `field` value (a dict token's field, or the string token itself); None when the
    token gives neither. `@user@host` names the host's instance (the API root's when it is the same host)."""
    if isinstance(token, dict):
        value, instance = token.get(field), token.get("instance")
    else:
        value, instance = token, None
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    if isinstance(instance, str) and instance.strip():
        base = instance.strip().rstrip("/")
        if urlsplit(base).scheme not in ("http", "https"):
            return None
        return Target(seed_id, base, value)
    if field == "account" and value.lstrip("@").count("@") == 1:
        user, host = value.lstrip("@").split("@")
        if host.lower() != host_of(api_root):
            return Target(seed_id, f"https://{host.lower()}", f"@{user}@{host.lower()}")
    return Target(seed_id, api_root.rstrip("/"), value)


class Clients:
    """One Mastodon.py client per instance, all on one recorded session."""

    def __init__(self, harvest: Harvest, *, api_root: str) -> None:
        self.harvest = harvest
        self.api_root = api_root.rstrip("/")
        self._clients: dict[str, Any] = {}
        self._allowed = credential_origins(harvest.start, harvest.config)
        self._session: requests.Session | None = None

    def session(self) -> requests.Session:
        if self._session is None:
            tokens = [str(v) for k, v in self.harvest.start.credentials.items() if k.startswith("access_token") and v]
            adapter = self.harvest.recording_adapter(tokens)
            self._session = requests.Session()
            # no API root to move: Mastodon.py is given each instance's URL itself
            mount_recording(self._session, adapter=adapter, default="", base="")
        return self._session

    def token_for(self, instance: str) -> str | None:
        creds = self.harvest.start.credentials
        host = host_of(instance)
        token = creds.get(f"access_token@{host}") or (creds.get("access_token") if host == host_of(self.api_root)
                                                      else None)
        if not token:
            return None
        if origin_of(instance) not in self._allowed:  # the guard would refuse it: say why, read without it
            self.harvest.warning(codes.CREDENTIAL_UNUSED, f"the access token for {host} is not sent: name the "
                                 f"instance as a URL in the seed ({{\"instance\": \"https://{host}\"}})")
            return None
        return str(token)

    def client(self, instance: str) -> Any:
        """The Mastodon.py client of `instance` (imported here: listing platforms need not load it)."""
        if instance not in self._clients:
            from mastodon import Mastodon

            self._clients[instance] = Mastodon(
                api_base_url=instance, access_token=self.token_for(instance), session=self.session(),
                ratelimit_method="throw",  # 429 waits are the engine's (reset headers, stop-aware sleeps)
                # a version stated, not detected: Mastodon.py's detection asks the instance endpoint again and
                # again (unbounded recursion) where it is missing; search paging needs one of at least 2.8
                mastodon_version="4.0.0", version_check_mode="created",
                request_timeout=self.harvest.config.http_timeout, user_agent=USER_AGENT)
        return self._clients[instance]

    def has_token(self, instance: str) -> bool:
        return getattr(self.client(instance), "access_token", None) is not None


def call(fn: Callable[..., _T], *args: Any, what: str, **kwargs: Any) -> _T:
    """Call Mastodon.py: its wrapping of every session error (MastodonNetworkError) is undone, so the engine's
    own errors and HarvestStopped arrive as raised; 4xx answers become Refused with the instance's words."""
    from mastodon.errors import MastodonAPIError, MastodonError, MastodonNetworkError

    try:
        return fn(*args, **kwargs)
    except MastodonNetworkError as exc:
        cause = exc.__context__
        if isinstance(cause, (HarvestError, HarvestStopped)):
            raise cause from None
        raise RemoteError(f"{what}: {type(cause or exc).__name__}") from None
    except MastodonAPIError as exc:
        status = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else None
        words = exc.args[3] if len(exc.args) > 3 and isinstance(exc.args[3], str) else ""
        if status is None:  # a 2xx whose body is not JSON
            raise BadResponse(f"{what}: the answer is not JSON") from None
        if status >= 500:
            raise RemoteError(f"{what}: the instance answered {status}", status=status) from None
        raise Refused(f"{what}: the instance answered {status} {words[:200]}".rstrip(), status=status) from None
    except MastodonError as exc:  # a body Mastodon.py could not read, a rate-limit it was told to throw
        raise RemoteError(f"{what}: {type(exc).__name__}") from None
