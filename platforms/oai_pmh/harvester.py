"""OAI-PMH 2.0: Identify, then ListRecords following resumptionToken; incremental by `from`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from swath.harvesters.backends import Backend, BackendHarvester, Item, Page
from swath.harvesters.capture import quote_part
from swath.harvesters.mapping.dataset import Dataset
from swath.harvesters.mapping.errors import OAIError
from swath.harvesters.pages import PageGuard
from swath.messages import codes
from swath.platforms.oai_pmh import mapping
from swath.platforms.oai_pmh.declaration import PLATFORM

DAY, SECONDS = "YYYY-MM-DD", "YYYY-MM-DDThh:mm:ssZ"


def format_datestamp(value: str, granularity: str) -> str:
    """A UTC datestamp at the repository's granularity (day granularity re-harvests that day: safe)."""
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    parsed = (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    return parsed.strftime("%Y-%m-%d") if granularity != SECONDS else parsed.strftime("%Y-%m-%dT%H:%M:%SZ")




class OAIPMHBackend(Backend):
    """Options: metadataPrefix (default oai_dc), set, from (overrides the incremental date), incremental."""

    name = PLATFORM.name
    display_name = PLATFORM.title

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        options = self.source.options
        self.prefix = str(options.get("metadataPrefix") or "oai_dc")
        self.set_spec = options.get("set")
        self.identify: dict[str, str | None] = {}
        self._next_from: str | None = None
        self._get_record = f"{self.source.public_url}?" + urlencode(
            {"verb": "GetRecord", "metadataPrefix": self.prefix, "identifier": ""})

    def request(self, verb: str, **params: str) -> bytes:
        return self.fetch(self.source.url, params={"verb": verb, **params}, accept="text/xml").content

    def list_metadata_formats(self) -> list[dict[str, str | None]]:
        return mapping.parse_metadata_formats(self.request("ListMetadataFormats"))

    def list_sets(self) -> Iterator[dict[str, str | None]]:
        sets, token = mapping.parse_sets(self.request("ListSets"))
        guard = PageGuard(what="ListSets", seed_id=self.source.id)
        while True:
            yield from sets
            if not token:
                return
            guard.cursor(token)  # a resumptionToken repeated would list for ever
            sets, token = mapping.parse_sets(self.request("ListSets", resumptionToken=token))

    def _from_date(self, granularity: str) -> str | None:
        options = self.source.options
        if options.get("from"):
            self.full_listing = False
            return format_datestamp(str(options["from"]), granularity)
        if options.get("incremental", True) is False:
            return None
        last = self.state.get(self.state_key(f"from:{self.prefix}:{self.set_spec or ''}"))
        if last:
            self.full_listing = False  # only changes are listed: absent records are not deletions
            return format_datestamp(last, granularity)
        return None

    def list_items(self) -> Iterator[Item | Page]:
        self.identify = mapping.parse_identify(self.request("Identify"))
        granularity = self.identify.get("granularity") or DAY
        params, page_no = self._first_params(granularity), 0
        if isinstance(self.resume, dict):  # an interrupted harvest: on from its last complete page
            params, page_no = dict(self.resume["params"]), self.resume["page"]
            self._next_from = self.resume["next_from"]
        self._note_deletions()
        guard = PageGuard(what="ListRecords", seed_id=self.source.id)
        while True:
            page_no += 1
            page = self._list_records(params)
            if page_no == 1:
                # Next harvest starts where this one's first answer was dated (the server's clock).
                self._next_from = page.response_date or self.identify.get("responseDate")
            for n, record in enumerate(page.records, 1):
                yield self._item(record, page_no, n)
            if not page.token:
                return
            guard.cursor(page.token)  # a resumptionToken repeated would list for ever
            params = {"resumptionToken": page.token}
            yield Page({"params": params, "page": page_no, "next_from": self._next_from})

    def _first_params(self, granularity: str) -> dict[str, str]:
        params = {"metadataPrefix": self.prefix}
        if self.set_spec:
            params["set"] = str(self.set_spec)
        since = self._from_date(granularity)
        if since:
            params["from"] = since
        return params

    def _list_records(self, params: dict[str, str]) -> mapping.Page:
        try:
            return mapping.parse_list_records(self.request("ListRecords", **params))
        except OAIError as exc:
            if exc.oai_code != "badResumptionToken" or not isinstance(self.resume, dict) or \
                    params != self.resume["params"]:
                raise
        # the interrupted run's token expired: list again from the start (its items may be counted twice)
        self.resume = None
        self.note("warning", codes.LISTING_RESTARTED, "the interrupted listing's resumptionToken has expired: "
                  "listed again from the start (items listed before the interruption are counted twice)")
        return mapping.parse_list_records(self.request("ListRecords", **self._first_params(
            self.identify.get("granularity") or DAY)))

    def _note_deletions(self) -> None:
        """OAI-PMH reports deletions only where Identify's deletedRecord is persistent or transient."""
        policy = (self.identify.get("deletedRecord") or "").lower()
        if not self.full_listing and policy == "no":
            self.note("info", codes.DELETIONS_UNSEEN, "the repository keeps no deleted records (deletedRecord=no): "
                      "an incremental harvest cannot see deletions; harvest with incremental: false to find them")

    def _item(self, record: mapping.OAIRecord, page_no: int, n: int) -> Item:
        if not record.identifier:
            return Item(remote_id=f"(page {page_no}, record {n})", error="record header has no identifier",
                        anonymous=True)
        quoted = quote_part(record.identifier)  # also the item record's URI; quote_part(plus=True) writes " " as +
        uri = self._get_record + quoted.replace("%20", "+")  # what urlencode gives, the fixed part once
        if record.deleted:
            return Item(remote_id=record.identifier, uri=uri, deleted=True, quoted_id=quoted)
        if record.metadata is None:
            return Item(remote_id=record.identifier, uri=uri, error="record has no metadata", quoted_id=quoted)
        return Item(remote_id=record.identifier, uri=uri, data=record, quoted_id=quoted)

    def process(self, item: Item) -> Dataset | None:
        return mapping.map_record(item.data, self.prefix)

    def commit(self) -> None:
        if self._next_from:
            self.state.set(self.state_key(f"from:{self.prefix}:{self.set_spec or ''}"), self._next_from)


class OAIPMHHarvester(BackendHarvester, declaration=PLATFORM):
    backend = OAIPMHBackend
