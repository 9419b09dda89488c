"""Harvest type metashare_sync: sync the LRs of one or more META-SHARE nodes into the collection's LR storage.

Seeds: each token is a node's base URL (http or https). Credentials: `username` and `password`.
The LR storage is `<harvest path>/lr-storage`; see docs/metashare.md.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlsplit

import requests

from swath.harvesters.base import Harvester
from swath.harvesters.errors import HarvestError
from swath.harvesters.redaction import Redactor
from swath.messages import codes
from swath.messages.model import Seed
from swath.platforms.metashare.client import MetashareClient, sync
from swath.platforms.metashare.declaration import PLATFORM
from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.storage import LRStorage

LR_STORAGE_DIR = "lr-storage"
RESULTS = ("added", "updated", "deleted", "unchanged", "rejected")


class MetashareHarvester(Harvester, declaration=PLATFORM):

    def sync(self) -> None:
        harvest = self.harvest
        username = harvest.start.credentials.get("username")
        password = harvest.start.credentials.get("password")
        if not username or not password:
            harvest.error(codes.BAD_REQUEST, "metashare_sync needs credentials `username` and `password`")
            return
        if not harvest.start.seeds:
            harvest.error(codes.BAD_REQUEST, "metashare_sync needs a seed whose token is a node's base URL")
            return
        for label in RESULTS:  # every label present, zero included, so a status reads the same each time
            harvest.count(label, 0)
        root = harvest.directory / LR_STORAGE_DIR
        if root.is_symlink():  # planted: writing LRs through it could land anywhere
            harvest.error(codes.PATH_OUTSIDE_DATA_ROOT, f"{str(root)!r} is a symlink; the LR storage must be a "
                          "real folder of the collection, so nothing was synced")
            return
        storage = LRStorage(root=root)
        for seed in harvest.start.seeds:
            if harvest.stopping:
                return
            self._sync_node(seed, storage, str(username), str(password))

    def _sync_node(self, seed: Seed, storage: LRStorage, username: str, password: str) -> None:
        harvest = self.harvest
        base_url = str(seed.token or "").rstrip("/")
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).netloc:
            harvest.error(codes.BAD_REQUEST, f"seed token {base_url!r} is not an http(s) base URL", seed.id)
            return
        harvest.http.cookies.clear()  # one node's session is no use on the next
        with harvest.unrecorded_session() as login_session:  # guarded (origins, size, deadline), not recorded
            login_session.hooks["response"].append(
                lambda reply, *a, **kw: self._record_login(reply, username, password))
            client = MetashareClient(
                session=harvest.http,
                login_session=login_session,
                base_url=base_url,
                timeout=harvest.config.http_timeout,
                max_zip_bytes=harvest.config.max_response_bytes,
            )
            try:
                client.login(username, password)
                for outcome in sync(client, storage):
                    harvest.count(outcome.result)
                    if outcome.result == "rejected":
                        harvest.warning(outcome.code or codes.ITEM_FAILED, outcome.message or "", seed.id)
                    if harvest.stopping:
                        return  # leaving the iterator unfinished skips deletions, which need the whole inventory
            except (MetashareError, HarvestError) as exc:
                harvest.error(exc.code, exc.message, seed.id)
            except requests.RequestException as exc:  # only the login session is not the engine's
                harvest.error(codes.REMOTE_ERROR, f"{base_url}/login/: {type(exc).__name__}: {exc}", seed.id)

    def _record_login(self, reply: requests.Response, username: str, password: str) -> None:
        """Record a login exchange as a metadata record, with the password and every cookie value redacted, and
        the user name kept out of the request (the answer keeps it: a login name is no secret, docs/security.md).

        The engine records responses byte for byte, Set-Cookie included, so login does not go through it.
        """
        cookies = [*reply.cookies.values(), *_request_cookie_values(reply.request)]
        redactor, sent = Redactor([password, *cookies]), Redactor([password, username, *cookies])
        request = reply.request
        body = request.body.encode() if isinstance(request.body, str) else request.body if isinstance(
            request.body, bytes) else b""
        sent_headers = [(k, _text(v)) for k, v in request.headers.items()]
        exchange = {
            "request": {
                "method": request.method,
                "url": sent.url(request.url or ""),
                "headers": sent.headers(sent_headers),
                "body": sent.body(body, _text(request.headers.get("Content-Type", ""))).decode("utf-8", "replace"),
            },
            "response": {
                "status": reply.status_code,
                "headers": redactor.headers(reply.raw.headers.items()),
                "body": redactor.text(reply.text),
            },
        }
        self.harvest.write_record(
            # a URI of its own: this JSON describes the login, it is not the archived answer of that URL
            uri="urn:swath:metashare:login:" + quote(sent.url(request.url or ""), safe=""),
            record_type="metadata",
            payload=json.dumps(exchange, ensure_ascii=False).encode("utf-8"),
            content_type="application/json",
            headers={"WARC-Swath-Note": "META-SHARE login exchange, credentials and cookies redacted"},
        )


def _text(value: str | bytes) -> str:
    """A header value as text (requests allows bytes)."""
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _request_cookie_values(request: requests.PreparedRequest) -> list[str]:
    header = _text(request.headers.get("Cookie", ""))
    return [part.partition("=")[2].strip() for part in header.split(";") if "=" in part]
