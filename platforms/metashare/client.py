"""The client side of the META-SHARE Harvesting Protocol v1.0 over any requests.Session, and the sync that uses it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import requests

from swath.core.paths import PathOutsideDataRoot
from swath.harvesters.errors import HarvestError
from swath.harvesters.redaction import Redactor
from swath.messages import codes
from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.protocol import (
    INVENTORY_JSON,
    LR_ENTRIES,
    METADATA_XML,
    STORAGE_GLOBAL_JSON,
    SYNC_PROTOCOL,
    StorageGlobal,
    check_metadata_xml,
    is_checksum,
    is_storage_id,
    lr_checksum,
)
from swath.platforms.metashare.safezip import read_zip
from swath.platforms.metashare.storage import REMOTE, LRStorage, StorageLocal, md5_hex

DEFAULT_MAX_ZIP_BYTES = 64 * 1024 * 1024  # inflated size of one inventory or LR ZIP


@dataclass(frozen=True)
class LRFiles:
    metadata_xml: bytes
    storage_json: bytes


@dataclass(frozen=True)
class Outcome:
    """What happened to one LR: result is added, updated, unchanged, deleted or rejected (then code/message say why)."""

    identifier: str
    result: str
    code: str | None = None
    message: str | None = None


class MetashareClient:
    """One node at `base_url`; `session` does the HTTP (the harvest engine's recording session, or a plain one)."""

    def __init__(
        self,
        *,
        session: requests.Session,
        base_url: str,
        timeout: float = 60.0,
        max_zip_bytes: int = DEFAULT_MAX_ZIP_BYTES,
        login_session: requests.Session | None = None,
    ) -> None:
        self.session = session
        # Login may run on its own session (whose exchanges the caller records redacted); its cookies
        # are copied to `session` once logged in.
        self.login_session = login_session or session
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_zip_bytes = max_zip_bytes

    def login(self, username: str, password: str) -> None:
        """GET /login/ for the csrftoken cookie, then POST the form; raises MetashareError(unauthorized)."""
        url = f"{self.base_url}/login/"
        http = self.login_session
        first = http.get(url, timeout=self.timeout)
        self._refuse_auth_failure(first, "GET /login/")
        token = http.cookies.get("csrftoken")
        if first.status_code != 200 or not token:
            raise MetashareError(f"GET /login/ answered {first.status_code} without a csrftoken cookie",
                                 code=codes.UNAUTHORIZED)
        form = {
            "username": username,
            "password": password,
            "this_is_the_login_form": "1",
            "csrfmiddlewaretoken": token,
        }
        reply = http.post(url, data=form, headers={"Referer": url}, timeout=self.timeout)
        self._refuse_auth_failure(reply, "POST /login/")
        if reply.status_code != 200 or not http.cookies.get("sessionid") or "Logout" not in reply.text:
            raise MetashareError(
                f"POST /login/ answered {reply.status_code} without a sessionid cookie and Logout",
                code=codes.UNAUTHORIZED
            )
        if http is not self.session:
            self.session.cookies.update(http.cookies)

    def inventory(self) -> dict[str, str]:
        """{storage id: checksum} from GET /sync/?sync_protocol=1.0, as the node sent it (sync checks each entry)."""
        reply = self.session.get(f"{self.base_url}/sync/", params={"sync_protocol": SYNC_PROTOCOL},
                                 timeout=self.timeout)
        self._refuse_auth_failure(reply, "GET /sync/")
        if reply.status_code == 501:  # this protocol's "wrong version"; the engine answers it without retrying
            raise MetashareError(_unsupported(), code=codes.SYNC_PROTOCOL_UNSUPPORTED)
        self._require_ok(reply, "GET /sync/")
        if reply.headers.get("Sync-Protocol") != SYNC_PROTOCOL:
            raise MetashareError(
                f"the inventory came with Sync-Protocol {reply.headers.get('Sync-Protocol')!r}, not {SYNC_PROTOCOL!r}",
                code=codes.SYNC_PROTOCOL_UNSUPPORTED,
            )
        files = read_zip(reply.content, expected=(INVENTORY_JSON,), max_bytes=self.max_zip_bytes, what="inventory ZIP")
        try:
            body = json.loads(files[INVENTORY_JSON].decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise MetashareError(f"{INVENTORY_JSON} is not UTF-8 JSON: {exc}", code=codes.BAD_RESPONSE) from None
        except RecursionError:  # an inventory is one flat object; nesting this deep is hostile
            raise MetashareError(f"{INVENTORY_JSON} is nested too deeply to be an inventory (a flat "
                                 "{storage id: checksum} object)", code=codes.BAD_RESPONSE) from None
        if not isinstance(body, dict):
            raise MetashareError(f"{INVENTORY_JSON} is a {type(body).__name__}, not an object", code=codes.BAD_RESPONSE)
        return body

    def fetch(self, identifier: str) -> LRFiles:
        """GET /sync/<id>/metadata/ and unpack metadata.xml then storage-global.json."""
        if not is_storage_id(identifier):  # it becomes part of a URL and of a path
            raise MetashareError(f"not an LR storage id: {identifier!r}", code=codes.BAD_INVENTORY_ENTRY)
        reply = self.session.get(f"{self.base_url}/sync/{identifier}/metadata/", timeout=self.timeout)
        self._refuse_auth_failure(reply, f"GET /sync/{identifier}/metadata/")
        self._require_ok(reply, f"GET /sync/{identifier}/metadata/")
        files = read_zip(reply.content, expected=LR_ENTRIES, max_bytes=self.max_zip_bytes, what=f"LR {identifier} ZIP")
        return LRFiles(metadata_xml=files[METADATA_XML], storage_json=files[STORAGE_GLOBAL_JSON])

    @staticmethod
    def _refuse_auth_failure(reply: requests.Response, what: str) -> None:
        if reply.status_code in (401, 403):
            raise MetashareError(f"{what} answered {reply.status_code}: the node refused our login",
                                 code=codes.UNAUTHORIZED)

    @staticmethod
    def _require_ok(reply: requests.Response, what: str) -> None:
        if reply.status_code != 200:
            code = codes.REMOTE_ERROR if reply.status_code >= 500 else codes.BAD_RESPONSE
            raise MetashareError(f"{what} answered {reply.status_code}", code=code)


def _unsupported() -> str:
    return f"the node does not speak sync_protocol {SYNC_PROTOCOL} (501 on /sync/)"


def node_identity(base_url: str) -> str:
    """The node's base URL without user:password@: what LR copies record as their owner (stored on disk)."""
    return Redactor().url(base_url)


def check_lr(identifier: str, files: LRFiles, expected_checksum: str) -> None:
    """Refuse an LR whose checksum differs from the inventory's or whose files are malformed."""
    actual = lr_checksum(files.metadata_xml, files.storage_json)
    if actual != expected_checksum:
        raise MetashareError(
            f"LR {identifier}: MD5 of {METADATA_XML} + {STORAGE_GLOBAL_JSON} is {actual}, "
            f"the inventory says {expected_checksum}",
            code=codes.CHECKSUM_MISMATCH,
        )
    storage = StorageGlobal.from_json(files.storage_json)
    if storage.identifier != identifier:
        raise MetashareError(f"LR {identifier}: {STORAGE_GLOBAL_JSON} names {storage.identifier}",
                             code=codes.INVALID_LR)
    check_metadata_xml(files.metadata_xml, what=f"LR {identifier}")


def sync(client: MetashareClient, storage: LRStorage) -> Iterator[Outcome]:
    """The protocol's steps 2-5 after login: one Outcome per LR, deletions last.

    Deletions happen only if the caller consumes the whole iterator, so a stopped sync never deletes.
    An LR the node lists but we rejected keeps its old local copy.
    """
    source = node_identity(client.base_url)
    inventory = client.inventory()
    local, from_source, others = storage.checksums_from(source)
    for identifier in sorted(inventory):
        checksum = inventory[identifier]
        if not is_storage_id(identifier) or not is_checksum(checksum):
            yield Outcome(
                str(identifier)[:80], "rejected", codes.BAD_INVENTORY_ENTRY,
                f"inventory entry {str(identifier)[:80]!r}: {str(checksum)[:80]!r} is not a storage id and an MD5",
            )
            continue
        if identifier in others:  # an LR belongs to the node it came from: never overwritten by another
            owner = others[identifier] or "this node (a master copy)"
            yield Outcome(identifier, "rejected", codes.LR_OTHER_NODE,
                          f"LR {identifier}: already held from {owner}; {source} may not replace it")
            continue
        if local.get(identifier) == checksum:
            yield Outcome(identifier, "unchanged")
            continue
        try:
            files = client.fetch(identifier)
            check_lr(identifier, files, checksum)
        except MetashareError as exc:
            if exc.code == codes.UNAUTHORIZED:
                raise  # the session is gone: no later LR will fare better
            yield Outcome(identifier, "rejected", exc.code, exc.message)
            continue
        except HarvestError as exc:  # the engine's session: retries exhausted, too large, refused
            if exc.code == codes.UNAUTHORIZED:
                raise
            yield Outcome(identifier, "rejected", exc.code, f"LR {identifier}: {exc.message}")
            continue
        except requests.RequestException as exc:
            yield Outcome(identifier, "rejected", codes.REMOTE_ERROR, f"LR {identifier}: {type(exc).__name__}: {exc}")
            continue
        copy = StorageLocal(copy_status=REMOTE, source_node=source, metadata_md5=md5_hex(files.metadata_xml))
        try:
            storage.put(identifier=identifier, metadata_xml=files.metadata_xml, storage_json=files.storage_json,
                        local=copy)
        except PathOutsideDataRoot as exc:
            yield Outcome(identifier, "rejected", exc.code, exc.message)
            continue
        yield Outcome(identifier, "updated" if identifier in local else "added")
    for identifier in sorted(from_source - set(inventory)):
        storage.delete(identifier)
        yield Outcome(identifier, "deleted")
