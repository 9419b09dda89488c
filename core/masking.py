"""What swath shows of a URL, a text or a structure: the one masking every view uses.

`swath config`, `swath broker dead-letters`, the dashboard's /api/status and the harvest's redaction of request
URLs all go through here: a URL keeps its user name but loses its password (`user:***@host`) and the values of
secret-named query parameters (`?password=***`). See docs/security.md "What is shown".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import overload
from urllib.parse import unquote_plus, urlsplit, urlunsplit

MASK = "***"
# query/form parameters whose value is a credential whatever it is (and any name starting with oauth_)
SECRET_PARAMS = frozenset({
    "access_token", "access_token_secret", "api_key", "api_secret", "api_sig", "apikey", "app_key", "app_secret",
    "auth_token", "bearer_token", "client_secret", "consumer_key", "consumer_secret", "id_token", "key",
    "passwd", "password", "private_token", "refresh_token", "secret", "session_token",
})
# OAuth parameters that say how, not who: kept readable (oauth_problem is the server's diagnosis)
PUBLIC_OAUTH = frozenset({"oauth_problem", "oauth_signature_method", "oauth_timestamp", "oauth_version"})
_SECRET_WORDS = ("password", "passwd", "secret")  # sslpassword, db_secret...: a secret by any prefix
# shown URLs also lose a bare `token` (a seed's own field named token is its subject, not a credential)
_SHOWN_PARAMS = SECRET_PARAMS | {"token"}
# a URL inside free text (a log line, an error message): up to a space, a quote or a bracket
_URL_IN_TEXT = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s\"'<>`]+")


@functools.lru_cache(maxsize=1024)  # a listing sends the same few parameter names on every item's URL
def is_secret_name(name: str) -> bool:
    """Whether a parameter or field of this name holds a credential, whatever its value."""
    plain = name.lower()
    return (plain in _SHOWN_PARAMS or (plain.startswith("oauth_") and plain not in PUBLIC_OAUTH)
            or any(word in plain for word in _SECRET_WORDS))


def secret_params_out(encoded: str, marker: str = MASK) -> str:
    """`a=b&c=d` with the values of secret-named parameters replaced by `marker`, every other byte as it was."""
    if "=" not in encoded:
        return encoded
    parts = []
    for part in encoded.split("&"):
        name, sep, _ = part.partition("=")
        if sep and is_secret_name(unquote_plus(name)):
            part = f"{name}={marker}"
        parts.append(part)
    return "&".join(parts)


def without_userinfo(url: str) -> str:
    """The URL without `user:password@` (requests sends those as Basic auth): the form to store."""
    split = urlsplit(url)
    return urlunsplit(split._replace(netloc=split.netloc.rpartition("@")[2])) if "@" in split.netloc else url


def mask_url(url: str) -> str:
    """The URL (each of a comma-separated list, as SWATH_AMQP_URL may be) as it may be shown: the password of its
    user part (a user part without a password: all of it) and the values of secret-named query (and fragment)
    parameters replaced by ***; every other byte kept."""
    if "," in url:
        return ",".join(mask_url(part) for part in url.split(","))
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL after all (a bad port, an unclosed [): shown by name only
        return mask_text_secrets(url)
    head, hash_, fragment = url.partition("#")  # rebuilt by hand: urlunsplit drops the // of sqlite:////x
    head, ask, query = head.partition("?")
    if "@" in parts.netloc:  # user:password@ keeps its user; a lone user part is often a token itself
        user, _, host = parts.netloc.rpartition("@")
        shown = f"{user.partition(':')[0]}:{MASK}" if password is not None else MASK
        head = head.replace(parts.netloc, f"{shown}@{host}", 1)
    return f"{head}{ask}{secret_params_out(query)}{hash_}{secret_params_out(fragment)}"


def mask_text_secrets(text: str) -> str:
    """`name=value` pairs with a secret name in a text that is no URL (a DSN, a form body)."""
    return re.sub(r"(?i)(?<![\w.-])([\w.-]+)=([^&\s\"',;]+)",
                  lambda m: f"{m.group(1)}={MASK}" if is_secret_name(m.group(1)) else m.group(0), text)


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Free text as it may be shown: each known secret value replaced (longest first), every URL masked."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _URL_IN_TEXT.sub(lambda m: mask_url(m.group(0)), text) if "://" in text else text


def _secret_field(key: str) -> bool:
    """A field holding a credential by its name (a seed's `token` or an option's `key` are not)."""
    return any(word in key.lower() for word in _SECRET_WORDS)


@overload
def masked(value: dict[str, object], secrets: Iterable[str] = (), *, key: None = None) -> dict[str, object]: ...
@overload
def masked(value: object, secrets: Iterable[str] = (), *, key: str | None = None) -> object: ...
def masked(value: object, secrets: Iterable[str] = (), *, key: str | None = None) -> object:
    """A JSON-like structure as it may be shown: a secret-named field's value and every value of a `credentials`
    object become ***, strings go through mask_text (known secrets, URLs)."""
    secrets = list(secrets)
    if key is not None and value not in (None, "") and (key == "credentials" or _secret_field(key)):
        return {name: MASK for name in value} if isinstance(value, dict) else MASK
    if isinstance(value, dict):
        return {k: masked(v, secrets, key=k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v, secrets) for v in value]
    return mask_text(value, secrets) if isinstance(value, str) else value
