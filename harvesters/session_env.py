"""What a harvest session takes from the environment: proxies (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY) and a CA
bundle (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE), read once when the session is set up; never ~/.netrc.

requests, left to itself (`Session.trust_env`), adds the login of any ~/.netrc entry naming a request's host
as an Authorization header: credentials the harvest's own rules (harvesters/guard.py) never chose, sent
without a word. It also stats ~/.netrc and rescans the environment for every request, a good part of a
fetching thread's time in a fast OAI-PMH listing. `settle_environment(session)` turns `trust_env` off and
hands each request the proxies and CA bundle the environment named when the session was built.
"""

from __future__ import annotations

import os
from typing import Any

import requests
from requests.utils import getproxies, should_bypass_proxies


class Environment:
    """The proxy and CA settings of the environment, as requests' `trust_env` would read them."""

    def __init__(self) -> None:
        self.proxies = {scheme: url for scheme, url in getproxies().items() if scheme != "no"}
        self.no_proxy = os.environ.get("no_proxy") or os.environ.get("NO_PROXY")
        self.ca_bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")

    def proxies_for(self, url: str | None) -> dict[str, str]:
        """The proxies for `url`: none when NO_PROXY names its host (requests' own matching)."""
        if not self.proxies or not url or should_bypass_proxies(url, no_proxy=self.no_proxy):
            return {}
        return dict(self.proxies)


def settle_environment(session: requests.Session) -> requests.Session:
    """Stop `session` reading ~/.netrc and the environment per request; give it the environment's proxies
    (a caller's own win) and CA bundle (unless the caller chose `verify`) as requests would have."""
    env = Environment()
    session.trust_env = False
    klass = type(session)

    def merge_environment_settings(url: str, proxies: Any, stream: Any, verify: Any,
                                   cert: Any) -> dict[str, Any]:
        proxies = {**env.proxies_for(url), **(proxies or {})}
        if env.ca_bundle and (verify is True or verify is None):
            verify = env.ca_bundle
        merged: dict[str, Any] = klass.merge_environment_settings(session, url, proxies, stream, verify, cert)
        return merged

    def rebuild_proxies(prepared: requests.PreparedRequest, proxies: Any) -> dict[str, str]:
        # a redirect's proxies are chosen again for its target: NO_PROXY may name the new host
        rebuilt: dict[str, str] = klass.rebuild_proxies(session, prepared, env.proxies_for(prepared.url))
        return rebuilt

    session.merge_environment_settings = merge_environment_settings  # type: ignore[method-assign]
    session.rebuild_proxies = rebuild_proxies  # type: ignore[method-assign, assignment]
    return session
