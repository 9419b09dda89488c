"""Configuration from environment variables, read once in main() and passed down."""

from __future__ import annotations

import dataclasses
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from swath.core.masking import mask_url
from swath.core.weburl import DEFAULT_WEB_URL, parse_web_url

DEFAULT_AMQP_URL = "amqp://guest:guest@localhost:5672/%2F"
DEFAULT_EXCHANGE = "sfm_exchange"
_API_URL_ENV = re.compile(r"^SWATH_([A-Z][A-Z0-9_]*)_API_URL$")


def default_data_root(env: Mapping[str, str]) -> Path:
    """Where data lives when SWATH_DATA_ROOT is unset: the user's XDG data directory, never the current
    directory (a second archive would appear wherever a command was run)."""
    xdg = env.get("XDG_DATA_HOME") or ""
    base = Path(xdg) if Path(xdg).is_absolute() else Path(env.get("HOME") or Path.home()) / ".local" / "share"
    return base / "swath"


def data_root_from(env: Mapping[str, str]) -> Path:
    """SWATH_DATA_ROOT (a relative one taken against the current directory, once, here) or the default."""
    raw = env.get("SWATH_DATA_ROOT")
    return Path(raw).absolute() if raw else default_data_root(env)


def api_url_env(platform: str) -> str:
    """The variable that moves a platform's API root: SWATH_TWITTER_API_URL for `twitter`."""
    return f"SWATH_{platform.upper()}_API_URL"

_Number = TypeVar("_Number", int, float)


def _number(env: Mapping[str, str], name: str, default: _Number, cast: type[_Number]) -> _Number:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return cast(raw)
    except ValueError:
        kind = "an integer" if cast is int else "a number"
        raise SystemExit(f"{name} must be {kind}, got {raw!r}") from None


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    return _number(env, name, default, int)


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    return _number(env, name, default, float)


def _url(env: Mapping[str, str], name: str, default: str) -> str:
    raw = (env.get(name) or default).rstrip("/")
    if not raw.startswith(("http://", "https://")):
        raise SystemExit(f"{name} must be an http(s) URL, got {mask_url(raw)!r}")  # its password never printed
    return raw


@dataclass(frozen=True, kw_only=True)
class Config:
    """Every setting swath reads; see docs/configuration.md."""

    amqp_url: str = DEFAULT_AMQP_URL
    exchange: str = DEFAULT_EXCHANGE
    dead_letter_exchange: str = "swath_dead_letter"
    dead_letter_queue: str = "swath_dead_letter"
    # Durable queue bound to every status and warc_created key, so none is lost before the monitor runs;
    # empty to leave status routing to your own requester (e.g. an SFM UI queue).
    status_queue: str = "swath_monitor"
    queue_prefix: str = ""
    data_root: Path = field(default_factory=lambda: default_data_root(os.environ))
    confirm_window: int = 256
    # deliveries of one message before its work queue dead-letters it (reason delivery_limit); 0: no limit
    delivery_limit: int = 20
    heartbeat: int = 60
    reconnect_max_delay: float = 30.0
    warc_max_bytes: int = 100 * 1024 * 1024
    warc_max_seconds: float = 300.0
    status_interval: float = 30.0
    http_timeout: float = 60.0
    http_retries: int = 5
    http_backoff: float = 0.5  # first retry delay (s); doubles per retry, capped at 60
    http_deadline: float = 300.0  # seconds one HTTP exchange may take in all (a server dripping bytes is cut)
    max_response_bytes: int = 100 * 1024 * 1024
    # a harvest process's GIL switch interval (s; 0: Python's own 0.005): the fetching thread and the WARC
    # writer hand the GIL back and forth, and at 5 ms each hand-off stalls the other for a whole interval
    switch_interval: float = 0.0005
    stream_max_line_bytes: int = 32 * 1024 * 1024  # a longer stream line ends the stream (line_too_long)
    # processes an export reads WARCs with; 0: by input size (1 under 8 MB, else one per CPU, at most 8)
    export_workers: int = 0
    # a harvest or export does not start, and a running harvest stops cleanly, below this many free bytes
    min_free_bytes: int = 256 * 1024 * 1024
    host: str = field(default_factory=socket.gethostname)
    db_url: str = ""
    # notification e-mail (swath/notify.py): smtp:// (STARTTLS when offered) or smtps://, user:password@ optional;
    # empty: no mail is sent. repr=False: a Config printed in a traceback shows no SMTP password
    smtp_url: str = field(default="", repr=False)
    mail_from: str = ""
    # platform -> API root, from SWATH_<PLATFORM>_API_URL (compatible services, tests); a platform not named
    # here talks to the root its declaration gives (swath.core.platforms.Platform.api_root)
    api_urls: Mapping[str, str] = field(default_factory=dict)
    # the D-Bus session bus the xesam_pmh crawler joins (the standard variable, not a SWATH_ one)
    dbus_session_bus_address: str = ""
    # Fernet key(s) for credential values kept in the store (comma-separated, newest first), or a file holding
    # them (refused when group/world-readable); repr=False: a Config printed in a traceback shows no key
    secret_key: str = field(default="", repr=False)
    secret_key_file: str = ""
    # the web application's limits (docs/security.md "The web application"): request bodies by route, in bytes
    web_login_max_bytes: int = 16 * 1024
    web_form_max_bytes: int = 512 * 1024
    web_hash_slots: int = 0  # argon2 hashes at once; 0: from cores and memory (swath/web/auth.py)
    web_hash_wait: float = 10.0  # seconds a login waits for a hashing slot before 429 web_busy
    web_preview_seconds: float = 60.0  # a preview's page answers within this; its run is cut by then
    web_preview_slots: int = 2  # previews at once in one web process; more get 429 web_busy
    # SWATH_WEB_URL: the public address of `swath web` (core/weburl.py), every absolute link's base
    web_url: str = DEFAULT_WEB_URL
    # days a deleted collection's WARCs and exports are kept before `swath harvest purge --expired` (or the
    # scheduler) removes them; 0: at the next such run
    purge_after_days: int = 30
    # SWATH_DASHBOARD_TOKEN: what `swath dashboard`'s page and /api/status ask for (Bearer, or Basic's password)
    dashboard_token: str = field(default="", repr=False)
    # --- an SFM site as it is (issue 33): its two volumes, SFM as the requester, some platforms only ---
    # where harvest / export `path`s must lie (SWATH_HARVEST_ROOT, SWATH_EXPORT_ROOT); None: the data root
    harvest_root: Path | None = None
    export_root: Path | None = None
    # SWATH_REQUESTER: who publishes the starts and reads the statuses, `swath` or `sfm` (sfm-ui)
    requester: str = "swath"
    # SWATH_PLATFORMS: the platforms and types workers serve (a platform or a type name each); empty: all
    platforms: tuple[str, ...] = ()
    # SWATH_SFM_API_URL: sfm-ui's root; exports then take their WARC list from its /api/v1/warcs/
    sfm_api_url: str = ""

    # --- object storage (issue 36; core/objects.py, docs/configuration.md "Object storage") ---
    # SWATH_STORAGE_URL: s3://bucket[/prefix] keeps WARCs in S3-compatible storage; empty: the data root's folders
    storage_url: str = ""
    storage_endpoint: str = ""  # the S3 API's http(s) root (SeaweedFS, Ceph RGW, MinIO); empty: AWS S3
    # repr=False: a Config printed in a traceback shows no storage credential
    storage_access_key_id: str = field(default="", repr=False)
    storage_secret_access_key: str = field(default="", repr=False)
    storage_region: str = ""
    # an optional replica every WARC is copied to and checked in (SWATH_STORAGE_REPLICA_*: the same five)
    storage_replica_url: str = ""
    storage_replica_endpoint: str = ""
    storage_replica_access_key_id: str = field(default="", repr=False)
    storage_replica_secret_access_key: str = field(default="", repr=False)
    storage_replica_region: str = ""
    # --- end of issue 36's block ---

    @property
    def harvest_base(self) -> Path:
        """The root every harvest `path` must lie in (and WARCs are read from)."""
        return self.harvest_root or self.data_root

    @property
    def export_base(self) -> Path:
        """The root every export `path` must lie in."""
        return self.export_root or self.data_root
    # --- end of issue 33's block ---

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        env = os.environ if env is None else env
        data_root = data_root_from(env)
        return cls(
            **_site_settings(env),
            amqp_url=env.get("SWATH_AMQP_URL") or DEFAULT_AMQP_URL,
            exchange=env.get("SWATH_EXCHANGE") or DEFAULT_EXCHANGE,
            dead_letter_exchange=env.get("SWATH_DEAD_LETTER_EXCHANGE") or "swath_dead_letter",
            dead_letter_queue=env.get("SWATH_DEAD_LETTER_QUEUE") or "swath_dead_letter",
            status_queue=env.get("SWATH_STATUS_QUEUE", default_status_queue(env)),
            queue_prefix=env.get("SWATH_QUEUE_PREFIX") or "",
            data_root=data_root,
            confirm_window=_int(env, "SWATH_CONFIRM_WINDOW", 256),
            delivery_limit=max(0, _int(env, "SWATH_DELIVERY_LIMIT", 20)),
            heartbeat=_int(env, "SWATH_HEARTBEAT", 60),
            reconnect_max_delay=_float(env, "SWATH_RECONNECT_MAX_DELAY", 30.0),
            warc_max_bytes=_int(env, "SWATH_WARC_MAX_BYTES", 100 * 1024 * 1024),
            warc_max_seconds=_float(env, "SWATH_WARC_MAX_SECONDS", 300.0),
            status_interval=_float(env, "SWATH_STATUS_INTERVAL", 30.0),
            http_timeout=_float(env, "SWATH_HTTP_TIMEOUT", 60.0),
            http_retries=_int(env, "SWATH_HTTP_RETRIES", 5),
            http_backoff=_float(env, "SWATH_HTTP_BACKOFF", 0.5),
            http_deadline=_float(env, "SWATH_HTTP_DEADLINE", 300.0),
            max_response_bytes=_int(env, "SWATH_MAX_RESPONSE_BYTES", 100 * 1024 * 1024),
            switch_interval=max(0.0, _float(env, "SWATH_SWITCH_INTERVAL", 0.0005)),
            stream_max_line_bytes=_int(env, "SWATH_STREAM_MAX_LINE_BYTES", 32 * 1024 * 1024),
            export_workers=max(0, _int(env, "SWATH_EXPORT_WORKERS", 0)),
            min_free_bytes=max(0, _int(env, "SWATH_MIN_FREE_BYTES", 256 * 1024 * 1024)),
            host=env.get("SWATH_HOST") or socket.gethostname(),
            db_url=env.get("SWATH_DB_URL") or f"sqlite:///{data_root / 'swath.sqlite'}",
            smtp_url=_smtp_url(env),
            mail_from=env.get("SWATH_MAIL_FROM") or "",
            api_urls=_api_urls(env),
            dbus_session_bus_address=env.get("DBUS_SESSION_BUS_ADDRESS") or "",
            secret_key=env.get("SWATH_SECRET_KEY") or "",
            secret_key_file=env.get("SWATH_SECRET_KEY_FILE") or "",
            web_login_max_bytes=max(1024, _int(env, "SWATH_WEB_LOGIN_MAX_BYTES", 16 * 1024)),
            web_form_max_bytes=max(1024, _int(env, "SWATH_WEB_FORM_MAX_BYTES", 512 * 1024)),
            web_hash_slots=max(0, _int(env, "SWATH_WEB_HASH_SLOTS", 0)),
            web_hash_wait=max(0.0, _float(env, "SWATH_WEB_HASH_WAIT", 10.0)),
            web_preview_seconds=max(1.0, _float(env, "SWATH_WEB_PREVIEW_SECONDS", 60.0)),
            web_preview_slots=max(1, _int(env, "SWATH_WEB_PREVIEW_SLOTS", 2)),
            web_url=parse_web_url(env.get("SWATH_WEB_URL") or ""),
            purge_after_days=max(0, _int(env, "SWATH_PURGE_AFTER_DAYS", 30)),
            dashboard_token=env.get("SWATH_DASHBOARD_TOKEN") or "",
            **_storage_settings(env, "SWATH_STORAGE", "storage"),
            **_storage_settings(env, "SWATH_STORAGE_REPLICA", "storage_replica"),
        )

    def with_api_url(self, platform: str, url: str) -> Config:
        """This configuration with one platform's API root moved (as SWATH_<PLATFORM>_API_URL would)."""
        return dataclasses.replace(self, api_urls={**self.api_urls, platform: url.rstrip("/")})


def _storage_settings(env: Mapping[str, str], variable: str, name: str) -> dict[str, Any]:
    """The five settings of one object store (SWATH_STORAGE_URL, _ENDPOINT, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY,
    _REGION, or the same under SWATH_STORAGE_REPLICA_) as Config fields; a malformed URL stops the start."""
    url = (env.get(f"{variable}_URL") or "").strip().rstrip("/")
    if url and not re.fullmatch(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?", url):
        raise SystemExit(f"{variable}_URL must be s3://bucket[/prefix] (a bucket name: a-z, 0-9, '.', '-'), "
                         f"got {mask_url(url)!r}")
    endpoint = _url(env, f"{variable}_ENDPOINT", "") if env.get(f"{variable}_ENDPOINT") else ""
    return {f"{name}_url": url, f"{name}_endpoint": endpoint,
            f"{name}_access_key_id": env.get(f"{variable}_ACCESS_KEY_ID") or "",
            f"{name}_secret_access_key": env.get(f"{variable}_SECRET_ACCESS_KEY") or "",
            f"{name}_region": env.get(f"{variable}_REGION") or ""}


def _api_urls(env: Mapping[str, str]) -> dict[str, str]:
    """Every SWATH_<PLATFORM>_API_URL that is set; the platforms are not known down here, only the pattern."""
    found = {}
    for name in sorted(env):
        match = _API_URL_ENV.match(name)
        if match and env[name]:
            found[match.group(1).lower()] = _url(env, name, "")
    return found


def _smtp_url(env: Mapping[str, str]) -> str:
    """SWATH_SMTP_URL, refused at start-up unless smtp:// or smtps:// (the message names the scheme, not the URL)."""
    raw = (env.get("SWATH_SMTP_URL") or "").strip()
    if raw and not raw.lower().startswith(("smtp://", "smtps://")):
        raise SystemExit(f"SWATH_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://..., got a "
                         f"{raw.partition(':')[0]!r} URL")
    return raw


# --- an SFM site as it is (issue 33) ---
REQUESTERS = ("swath", "sfm")
# sfm-docker's volumes (SFM_COLLECTION_SET_DATA_DIR, SFM_EXPORT_DATA_DIR), the roots SWATH_REQUESTER=sfm defaults to
SFM_HARVEST_ROOT = Path("/sfm-collection-set-data")
SFM_EXPORT_ROOT = Path("/sfm-export-data")


def requester_from(env: Mapping[str, str]) -> str:
    raw = (env.get("SWATH_REQUESTER") or "swath").strip().lower()
    if raw not in REQUESTERS:
        raise SystemExit(f"SWATH_REQUESTER must be one of {', '.join(REQUESTERS)}, got {raw!r}")
    return raw


def default_status_queue(env: Mapping[str, str]) -> str:
    """swath's monitor queue, none for SFM (sfm-ui binds its own sfm_ui queue; a copy nobody reads would pile up)."""
    return "" if requester_from(env) == "sfm" else "swath_monitor"


def _root(env: Mapping[str, str], name: str, sfm_default: Path, requester: str) -> Path | None:
    raw = env.get(name)
    if raw:
        return Path(raw).absolute()
    return sfm_default if requester == "sfm" else None


def _site_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """The fields of issue 33's block, from SWATH_HARVEST_ROOT, SWATH_EXPORT_ROOT, SWATH_REQUESTER,
    SWATH_PLATFORMS and SWATH_SFM_API_URL."""
    requester = requester_from(env)
    return {
        "harvest_root": _root(env, "SWATH_HARVEST_ROOT", SFM_HARVEST_ROOT, requester),
        "export_root": _root(env, "SWATH_EXPORT_ROOT", SFM_EXPORT_ROOT, requester),
        "requester": requester,
        "platforms": tuple(p for p in (part.strip() for part in (env.get("SWATH_PLATFORMS") or "").split(",")) if p),
        "sfm_api_url": _url(env, "SWATH_SFM_API_URL", "") if env.get("SWATH_SFM_API_URL") else "",
    }
