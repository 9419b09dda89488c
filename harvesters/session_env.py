"""What a harvest session takes from the environment: proxies (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY) and a CA
bundle (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE), read once when the session is set up; never ~/.netrc.

requests, left to itself (`Session.trust_env`), adds the login of any ~/.netrc entry naming a request's host
as an Authorization header: credentials the harvest's own rules (harvesters/guard.py) never chose, sent
without a word. It also stats ~/.netrc and rescans the environment for every request, a good part of a
fetching thread's time in a fast OAI-PMH listing. `settle_environment(session)` turns `trust_env` off and
hands each request the proxies and CA bundle the environment named when the session was built.

`CaPathOnce`, the base of the engine's adapters (harvesters/http.py): requests asks `os.path.isdir` of a
`verify` path (REQUESTS_CA_BUNDLE's) for every request, http:// ones included: 18% of the fetching thread's
wall time in `bench/bench_harvest.py`. It asks once per path.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import requests
from requests.adapters import HTTPAdapter
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


@functools.lru_cache(maxsize=16)
def _is_ca_dir(path: str) -> bool:
    return os.path.isdir(path)


class CaPathOnce(HTTPAdapter):
    """An HTTPAdapter judging a `verify` path a CA file or directory once per path, not once per request."""

    def build_connection_pool_key_attributes(self, request: requests.PreparedRequest, verify: bool | str,
                                             cert: str | tuple[str, str] | None = None,
                                             ) -> tuple[dict[str, Any], dict[str, Any]]:
        if not isinstance(verify, str):
            return super().build_connection_pool_key_attributes(request, verify, cert)
        # requests' own attributes for a verified connection, with the path as it would have put it
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, True, cert)
        pool_kwargs["ca_cert_dir" if _is_ca_dir(verify) else "ca_certs"] = verify
        return host_params, pool_kwargs
