"""Notification e-mail: a web member who chose it is told when a harvest fails, a stream stops or an export is
ready (docs/web.md "Notifications").

The monitor calls `mails_for` in the transaction that records a status, with the status the row had before,
so a redelivered or late status (which changes nothing) mails nobody; it sends them with `Mailer.send` after
the commit. Only enabled members of the group owning the collection or export are mailed. A mail names the
collection, the run and what to do; notes are masked (core/masking.py), never a credential. A send that fails
is one log line with the code `mail_failed` and the monitor goes on recording.
"""

from __future__ import annotations

import logging
import re
import smtplib
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from urllib.parse import unquote, urlsplit

from sqlalchemy.orm import Session

from swath.core.config import Config
from swath.core.hosts import is_loopback
from swath.core.masking import mask_text, mask_url
from swath.core.weburl import web_link
from swath.harvesters.registry import UnknownHarvestType, lookup
from swath.messages import codes
from swath.store import notify_repo
from swath.store.models import FAILURE, SUCCESS, Export, Job, Source
from swath.store.notify_models import EXPORT_READY, HARVEST_FAILED, STREAM_STOPPED
from swath.store.web_models import CollectionSet, ExportRequest

log = logging.getLogger(__name__)
SMTP_TIMEOUT = 20.0  # seconds one SMTP exchange may take: the monitor records nothing meanwhile
MAX_NOTES = 5  # errors quoted in a mail; the run's page has them all
FINAL = (SUCCESS, FAILURE)


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    body: str


def status_before(s: Session, kind: str, record_id: str) -> str | None:
    """The status recorded for a harvest or export before this message (None: first seen)."""
    row: Job | Export | None = s.get(Job, record_id) if kind == "harvest_status" else s.get(Export, record_id)
    return row.status if row is not None else None


def mails_for(s: Session, kind: str, row: Job | Export, before: str | None, *, web_url: str) -> list[Mail]:
    """The mails a status just recorded on `row` calls for (none unless it reached a final status now), their
    links at `web_url` (SWATH_WEB_URL)."""
    if row.status == before or row.status not in FINAL:
        return []
    if isinstance(row, Job):
        return _harvest_mails(s, row, web_url)
    return _export_mails(s, row, web_url) if row.status == SUCCESS else []


def _is_stream(harvest_type: str) -> bool:
    try:
        return lookup(harvest_type).stream
    except UnknownHarvestType:
        return False


def _owner(s: Session, set_id: str | None) -> CollectionSet | None:
    return s.get(CollectionSet, set_id) if set_id else None


def _harvest_mails(s: Session, job: Job, web_url: str) -> list[Mail]:
    kinds = {HARVEST_FAILED} if job.status == FAILURE else set()
    if _is_stream(job.harvest_type):
        kinds.add(STREAM_STOPPED)
    source = s.get(Source, job.source_id) if job.source_id else None
    owner = _owner(s, source.collection_set_id if source else None)
    if not kinds or source is None or owner is None:
        return []  # a harvest launched outside the store (no collection) belongs to no group
    what = "failed" if job.status == FAILURE else "stopped"
    noun = "stream harvest" if STREAM_STOPPED in kinds else "harvest"
    subject = f"swath: {noun} of {_one_line(source.name)} {what}"
    todo = ("Open the run's page, read its errors and fix what they name (a credential on the collection's page, "
            "a seed, the options); then start the harvest again with \"Harvest now\" on the collection's page."
            if job.status == FAILURE else
            "If nobody meant to stop it, start it again with \"Harvest now\" on the collection's page; the run's "
            "page says how it ended.")
    body = "\n".join([
        f"The {noun} of the collection \"{source.name}\" (collection set \"{owner.name}\") {what}.",
        "",
        f"Run: {job.id}",
        f"Status: {job.status}; started {job.date_started or '-'}, ended {job.date_ended or '-'}",
        f"Items: {_counts(job.stats)}",
        *_notes(job.errors),
        "",
        f"What to do: {todo}",
        f"In swath's web app: the run is at {web_link(web_url, f'/runs/{job.id}')},",
        f"the collection at {web_link(web_url, f'/collections/{source.id}')}.",
        *_footer(web_url),
    ])
    return [Mail(to=to, subject=subject, body=body) for to in notify_repo.recipients(s, owner.group_id, kinds)]


def _export_mails(s: Session, export: Export, web_url: str) -> list[Mail]:
    asked = s.get(ExportRequest, export.id)
    owner = _owner(s, asked.collection_set_id if asked else None)
    if asked is None or owner is None:
        return []  # an export made with the CLI has no group to tell
    source = s.get(Source, asked.source_id) if asked.source_id else None
    name = source.name if source else owner.name
    subject = f"swath: export of {_one_line(name)} is ready"
    body = "\n".join([
        f"The export of \"{name}\" (collection set \"{owner.name}\"), asked for by {asked.user_name}, is ready.",
        "",
        f"Export: {export.id} ({export.export_type or '-'}, {export.format or '-'})",
        f"Finished: {export.date_ended or '-'}",
        *_notes(export.warnings, heading="Warnings"),
        "",
        "What to do: download its files from the export's page in swath's web app,",
        web_link(web_url, f"/exports/{export.id}"),
        *_footer(web_url),
    ])
    return [Mail(to=to, subject=subject, body=body)
            for to in notify_repo.recipients(s, owner.group_id, {EXPORT_READY})]


def _counts(stats: Mapping[str, object]) -> str:
    totals: dict[str, int] = {}
    for day in (stats or {}).values():  # {day: {label: n}}
        for label, n in (day.items() if isinstance(day, dict) else ()):
            if isinstance(n, int):
                totals[label] = totals.get(label, 0) + n
    return ", ".join(f"{n} {label}" for label, n in sorted(totals.items())) or "none"


def _notes(notes: Iterable[Mapping[str, object]], *, heading: str = "Errors") -> list[str]:
    listed = list(notes or ())
    if not listed:
        return []
    lines = ["", f"{heading}:"]
    for note in listed[:MAX_NOTES]:
        seed = f" (seed {note['seed_id']})" if note.get("seed_id") else ""
        lines.append(f"  - [{note.get('code', '?')}]{seed} {mask_text(str(note.get('message', '')))[:300]}")
    if len(listed) > MAX_NOTES:
        lines.append(f"  ... and {len(listed) - MAX_NOTES} more on the run's page")
    return lines


def _footer(web_url: str) -> list[str]:
    return ["", "--", "You get this e-mail because you chose it in swath's web app: Your account > Notifications "
            f"({web_link(web_url, '/account/notifications')}), where you can turn it off."]


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()[:120]  # a header never carries a line break


class Mailer:
    """Sends mails over SWATH_SMTP_URL; every failure is logged (code mail_failed, URL masked) and swallowed."""

    def __init__(self, config: Config) -> None:
        self.url = config.smtp_url
        self.sender = config.mail_from or f"swath@{config.host}"
        self.web_url = config.web_url  # the base of the links in the mails

    def send(self, mails: list[Mail]) -> int:
        """The number of mails the server accepted."""
        if not mails:
            return 0
        if not self.url:
            log.warning("[%s] %d notification e-mail(s) not sent: SWATH_SMTP_URL is not set", codes.MAIL_FAILED,
                        len(mails))
            return 0
        sent = 0
        try:
            with self._connect() as smtp:
                for mail in mails:
                    try:
                        smtp.send_message(self._message(mail))
                        sent += 1
                    except smtplib.SMTPRecipientsRefused as exc:  # one address refused: the others still go
                        self._failed(f"to {mail.to}", exc)
        except (OSError, ValueError, smtplib.SMTPException) as exc:
            self._failed(f"{len(mails) - sent} of {len(mails)}", exc)
        return sent

    def _connect(self) -> smtplib.SMTP:
        parts = urlsplit(self.url)
        secure = parts.scheme.lower() == "smtps"
        host, port = parts.hostname or "localhost", parts.port or (465 if secure else 25)
        context = ssl.create_default_context()
        smtp = (smtplib.SMTP_SSL(host, port, timeout=SMTP_TIMEOUT, context=context) if secure
                else smtplib.SMTP(host, port, timeout=SMTP_TIMEOUT))
        try:
            smtp.ehlo()
            encrypted = secure
            if not secure and smtp.has_extn("starttls"):
                smtp.starttls(context=context)
                smtp.ehlo()
                encrypted = True
            if parts.username and not encrypted and not is_loopback(host):
                raise smtplib.SMTPException(f"{host} offers no STARTTLS: the SMTP password is not sent unencrypted "
                                            "over the network; use smtps:// or a server that offers STARTTLS")
            if parts.username:
                smtp.login(unquote(parts.username), unquote(parts.password or ""))
        except BaseException:
            smtp.close()
            raise
        return smtp

    def _message(self, mail: Mail) -> EmailMessage:
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = self.sender, mail.to, mail.subject
        message["Date"], message["Message-ID"] = formatdate(usegmt=True), make_msgid(domain="swath")
        message.set_content(mail.body)
        return message

    def _failed(self, which: str, exc: BaseException) -> None:
        password = unquote(urlsplit(self.url).password or "")
        why = mask_text(f"{type(exc).__name__}: {exc}", [password])
        log.warning("[%s] notification e-mail not sent (%s) via %s: %s", codes.MAIL_FAILED, which,
                    mask_url(self.url), why[:500])
