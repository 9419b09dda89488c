"""What every request of the web application shares: the configuration, the store, the requester, the
templates and the cookie policy (`request.app.state.web`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jinja2 import Environment

from swath.core.config import Config
from swath.requester import Requester
from swath.store import Store
from swath.web.templating import environment


@dataclass(kw_only=True)
class Web:
    config: Config
    store: Store
    requester: Requester
    # Secure cookies: True/False, or None to follow the request (https, or X-Forwarded-Proto from a proxy)
    secure_cookies: bool | None = None
    management_url: str | None = None
    templates: Environment = field(default_factory=environment)
