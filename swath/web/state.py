"""What every request of the web application shares: the configuration, the store, the requester, the
templates and the cookie policy (`request.app.state.web`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from jinja2 import Environment

from swath.core.config import Config
from swath.core.jsontypes import JSONObject
from swath.messages.bodies import NoteBody
from swath.requester import Requester
from swath.store import Store
from swath.store.stats_cache import StatsCache
from swath.web import kept_forms
from swath.web.kept import Kept
from swath.web.slots import Slots
from swath.web.templating import environment


class PreviewOutcome(TypedDict, total=False):
    """What the preview page shows of the dry run's last harvest.status (the status has more keys)."""

    status: str
    stats: dict[str, dict[str, int]]
    infos: list[NoteBody]
    warnings: list[NoteBody]
    errors: list[NoteBody]


class PreviewResult(TypedDict):
    """A preview's result, kept for its page (Post/Redirect/Get)."""

    user: str
    source: str
    outcome: PreviewOutcome
    items: list[JSONObject]  # the dry_run_item infos' items


@dataclass(kw_only=True)
class Web:
    config: Config
    store: Store
    requester: Requester
    # Secure cookies: True/False, or None to follow the request (https, or X-Forwarded-Proto from a proxy)
    secure_cookies: bool | None = None
    management_url: str | None = None
    templates: Environment = field(default_factory=environment)
    previews: Slots = field(init=False)  # the preview pool (routes_preview.py): none waits, a full pool is 429
    # a preview's result until its page is shown (and reloaded): 200 at most, for 30 minutes
    preview_results: Kept[PreviewResult] = field(default_factory=lambda: Kept(size=200, seconds=30 * 60))
    kept_forms: Kept[kept_forms.KeptForm] = field(default_factory=kept_forms.store)  # forms sent after a session ended
    stats: StatsCache = field(default_factory=StatsCache)  # collections' statistics while unchanged

    def __post_init__(self) -> None:
        self.previews = Slots(size=self.config.web_preview_slots, wait=0.0, queue=0, what="previews")
