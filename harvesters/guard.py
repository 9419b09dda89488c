"""The transport policy every harvest session follows: credentials go only to the harvest's own origins,
redirects stay in http(s) and end, cookies go back only to the origin that set them.

- `credential_origins(start, config)`: the origins (scheme, host, port) that may receive credentials: the
  platform's configured API root and every seed token (or token field) that is an http(s) URL.
- `OriginGuard.check(request)`: called by the adapters (harvesters/http.py) for every request, redirect
  hops included, after the request is complete (auth re-signed, cookies attached): a request that carries
  a credential (an auth header, a secret-named parameter with a value, a value the redactor knows) to any
  other origin is refused before a byte is sent.
- `guard_session(session, guard)`: the Session-level part the adapter cannot see: each redirect hop's
  target (scheme, loop, hop count), the cookie policy and the environment it takes (no ~/.netrc). See
  docs/harvesting.md "Transport policy".
"""

from __future__ import annotations

import http.cookiejar
import urllib.request
from collections.abc import Callable, Iterable
from http.cookiejar import Cookie, DefaultCookiePolicy
from urllib.parse import parse_qsl, urljoin, urlsplit

import requests
from requests.cookies import MockRequest, RequestsCookieJar

from swath.core.config import Config
from swath.harvesters.errors import CredentialOriginRefused, RedirectRefused
from swath.harvesters.redaction import SECRET_PARAMS, Redactor
from swath.harvesters.session_env import settle_environment
from swath.messages.model import HarvestStart

Origin = tuple[str, str, int]
MAX_REDIRECTS = 10  # hops of one request; requests' own limit (30) raises an error twarc retries for hours
# headers whose presence makes a request credentialed (Cookie is not one: cookies are pinned instead)
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "x-auth-token"})
_CHAIN = "_swath_chain"  # attribute of a PreparedRequest: the URLs of its redirect chain so far
_ORIGIN_ATTR = "swath-origin"  # a cookie's non-standard attribute: the scheme of the origin that set it


def origin_of(url: str) -> Origin:
    """(scheme, host, port) of a URL, the default port filled in, user:password@ ignored."""
    split = urlsplit(url)
    scheme = split.scheme.lower()
    try:
        port = split.port
    except ValueError:
        port = None
    return scheme, (split.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def _urls(token: object) -> Iterable[str]:
    values = token.values() if isinstance(token, dict) else [token]
    return (v.strip() for v in values if isinstance(v, str) and v.strip().lower().startswith(("http://", "https://")))


def credential_origins(start: HarvestStart, config: Config) -> frozenset[Origin]:
    """The origins this harvest's credentials may go to: its platform's API root and its seeds' URLs."""
    from swath.core import discovery  # loaded already by the registry lookup that started this harvest

    urls = [url for seed in start.seeds for url in _urls(seed.token)]
    platform = discovery.owner(start.type, lambda p: p.harvest_methods)
    if platform is not None and platform.api_root(config):
        urls.append(platform.api_root(config))
    return frozenset(origin_of(url) for url in urls)


class OriginGuard:
    """Refuses a credentialed request to an origin that is not one of the harvest's own."""

    def __init__(self, *, origins: frozenset[Origin], secret_in: Callable[[str], bool]) -> None:
        self.origins = origins
        self.secret_in = secret_in  # does a text hold a secret of the harvest (those learnt during it too)?
        self.redactor = Redactor()  # for messages: strips parameters named as secrets and user:password@

    def credential_in(self, request: requests.PreparedRequest) -> str | None:
        """What in the request is a credential (for the message; never the value), or None."""
        for name, value in request.headers.items():
            text_name = header_text(name)
            if text_name.lower() in CREDENTIAL_HEADERS and value:
                return f"an {text_name} header"
        query = urlsplit(request.url or "").query
        for name, value in parse_qsl(query, keep_blank_values=True):
            if value and (name.lower() in SECRET_PARAMS or name.lower().startswith("oauth_")):
                return f"the parameter {name}"
        body = request.body if isinstance(request.body, (str, bytes)) else b""
        # Cookie is left out: cookies are pinned to their origin instead
        headers = [header_text(v) for k, v in request.headers.items() if header_text(k).lower() != "cookie"]
        texts = [request.url or "", *headers, header_text(body)]
        if any(self.secret_in(text) for text in texts):
            return "a credential of the harvest"
        return None

    def check(self, request: requests.PreparedRequest) -> None:
        url = request.url or ""
        if origin_of(url) in self.origins:
            return
        what = self.credential_in(request)
        if what is None:
            return
        target = bare_url(url)
        chain = getattr(request, _CHAIN, None)
        if chain:
            raise RedirectRefused(f"redirect from {bare_url(chain[-2])} to {target} refused: the request "
                                  f"would carry {what} to an origin that is not the harvest's own")
        raise CredentialOriginRefused(f"request to {target} refused: it would carry {what} to an origin that "
                                      f"is not the harvest's own (its API root or seed URLs)")


def header_text(value: str | bytes) -> str:
    """A header name or value as text: some auth libraries (requests_oauthlib) set them as bytes."""
    return value.decode("latin-1") if isinstance(value, bytes) else value


class PinnedCookiePolicy(DefaultCookiePolicy):
    """Every cookie goes back only to the origin (scheme, host, port) that set it: the stdlib policy
    ignores ports and lets a host's cookies reach its subdomains. The port is stamped on the cookie
    itself, so even a jar without this policy (requests merges cookies into fresh jars) keeps it."""

    def __init__(self) -> None:
        super().__init__(strict_ns_domain=DefaultCookiePolicy.DomainStrictNonDomain)

    def set_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        if not super().set_ok(cookie, request):
            return False
        pin(cookie, request)
        return True

    def return_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        scheme = cookie.get_nonstandard_attr(_ORIGIN_ATTR)
        if scheme is not None and scheme != urlsplit(request.get_full_url()).scheme.lower():
            return False
        return super().return_ok(cookie, request)


def pin(cookie: Cookie, request: urllib.request.Request | MockRequest) -> None:
    """Make `cookie` host-only, for the request's port and scheme (a Domain attribute is dropped)."""
    # the stdlib's own helpers, so the host and port match what DefaultCookiePolicy compares them with
    host = http.cookiejar.eff_request_host(request)[1]  # type: ignore[attr-defined]
    cookie.domain, cookie.domain_specified, cookie.domain_initial_dot = host, False, False
    cookie.port, cookie.port_specified = http.cookiejar.request_port(request), True  # type: ignore[attr-defined]
    cookie.set_nonstandard_attr(_ORIGIN_ATTR, urlsplit(request.get_full_url()).scheme.lower())


def guard_session(session: requests.Session, *, max_redirects: int = MAX_REDIRECTS) -> requests.Session:
    """Install the Session-level policy on `session` (ours, or a client library's): cookies pinned,
    redirect targets checked. Instance-level overrides, because requests follows redirects in
    Session.resolve_redirects, above the adapter, and library sessions (twarc's OAuth1Session) are
    built by the library; the checks raise RedirectRefused, not a RequestException twarc would retry.
    The environment's proxies and CA bundle are read once, ~/.netrc never (harvesters/session_env.py)."""
    settle_environment(session)
    session.cookies.set_policy(PinnedCookiePolicy())
    session.max_redirects = max_redirects + 1  # ours refuses first, with a code
    klass = type(session)

    def prepare_request(request: requests.Request) -> requests.PreparedRequest:
        prepared = klass.prepare_request(session, request)
        jar = getattr(prepared, "_cookies", None)
        explicit = any(name.lower() == "cookie" for name in (request.headers or {}))
        if isinstance(jar, RequestsCookieJar) and not explicit:
            _pin_given(jar, prepared)  # cookies handed to this call are for this request's origin
            jar.set_policy(PinnedCookiePolicy())  # the redirect hops' copies of the jar keep it
            prepared.headers.pop("Cookie", None)
            prepared.prepare_cookies(jar)
        return prepared

    def get_redirect_target(response: requests.Response) -> str | None:
        target = klass.get_redirect_target(session, response)
        if target:
            _check_hop(response, target, max_redirects)
        return target

    def rebuild_auth(prepared: requests.PreparedRequest, response: requests.Response) -> None:
        klass.rebuild_auth(session, prepared, response)  # OAuth1Session re-signs here; the adapter checks it
        previous = response.request
        chain = getattr(previous, _CHAIN, None) or [previous.url or ""]
        setattr(prepared, _CHAIN, [*chain, prepared.url or ""])

    session.prepare_request = prepare_request  # type: ignore[method-assign]
    session.get_redirect_target = get_redirect_target  # type: ignore[method-assign, assignment]
    session.rebuild_auth = rebuild_auth  # type: ignore[method-assign, assignment]
    return session


def _check_hop(response: requests.Response, target: str, max_redirects: int) -> None:
    previous = response.request
    chain = getattr(previous, _CHAIN, None) or [previous.url or ""]
    url = urljoin(response.url or chain[-1], target)
    where = f"{bare_url(chain[-1])} answered {response.status_code}"
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        raise RedirectRefused(f"{where} with a redirect to a {urlsplit(url).scheme or 'relative'}: URL; only "
                              f"http(s) is followed", status=response.status_code)
    if url in chain:
        raise RedirectRefused(f"{where} with a redirect back to {bare_url(url)}: a loop", status=response.status_code)
    if len(chain) > max_redirects:
        raise RedirectRefused(f"{where} with a redirect after {max_redirects} already followed",
                              status=response.status_code)


def bare_url(url: str) -> str:
    """The URL without its query and fragment (for messages: a query may hold a credential)."""
    split = urlsplit(url)
    return f"{split.scheme}://{split.netloc.rpartition('@')[2]}{split.path}"


def _pin_given(jar: RequestsCookieJar, prepared: requests.PreparedRequest) -> None:
    given = [cookie for cookie in jar if not cookie.domain]
    if not given:
        return
    request = MockRequest(prepared)
    jar.clear(domain="")
    for cookie in given:
        pin(cookie, request)
        jar.set_cookie(cookie)
