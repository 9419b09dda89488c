"""Credentials found by their name or place rather than their value (`scrub`): userinfo in URLs, secret
parameters, JSON keys and headers; and the quick look (`names_in`) that tells a text holding none of those
names, so the redactor skips its patterns for it. Needs no secrets. Used by harvesters/redaction.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import unquote, unquote_plus

from swath.core.masking import PUBLIC_OAUTH, SECRET_PARAMS

REDACTED = "REDACTED"

_PUBLIC = "|".join(sorted(name.removeprefix("oauth_") for name in PUBLIC_OAUTH))
_NAMES = "|".join(sorted(SECRET_PARAMS, key=len, reverse=True)) + rf"|oauth_(?!(?:{_PUBLIC})\b)[a-z_]+"
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)((?:[^\s/?#@\"'<>]*@)+)")
_QUOTED = r"""(?:b(?=["']))?(?P<q>["'])?"""  # an optional opening quote (b'…': bytes printed by Python)
_VALUE = r"""(?P<v>(?(q)(?:(?!(?P=q))[^\r\n])*|[^\r\n]+))"""  # up to the closing quote, else the line's end
_AFTER_ENCODED = r"(?:(?<![\w.-])|(?<=%26)|(?<=%2526))"  # a name starts a parameter, encoded `&` included
_BY_NAME = [
    # "access_token": "…" (JSON) and 'password': '…' (a printed dict)
    re.compile(rf"""(?i)(?P<k>(["'])(?:{_NAMES})\2\s*:\s*(?P<q>["']))(?P<v>(?:\\.|(?!(?P=q))[^\\])*)(?=(?P=q))"""),
    # Authorization: Bearer …, 'Cookie': '…', X-Api-Key=… (the scheme word is kept)
    re.compile(rf"""(?i)(?P<k>(?<![\w-])(?:proxy-)?authorization["']?\s*[:=]\s*{_QUOTED}"""
               rf"""(?:(?:Bearer|Basic|OAuth|Digest|Token)\s+)?){_VALUE}"""),
    re.compile(rf"""(?i)(?P<k>(?<![\w-])(?:set-cookie|cookie|x-api-key|x-auth-token)["']?\s*[:=]\s*{_QUOTED}){_VALUE}"""),
    # Bearer/Basic credentials standing alone (not all lower-case: "Basic information" is prose)
    re.compile(r"(?P<k>(?<![\w-])(?:Bearer|Basic)\s+)(?P<v>(?=[\w.~+/-]*[A-Z0-9.~+/-])[\w.~+/-]{8,}=*)"),
    # name%3Dvalue inside a URL-encoded string (oauthlib's signature base string), once or twice encoded
    re.compile(rf"(?i)(?P<k>{_AFTER_ENCODED}(?:{_NAMES})%3D)(?P<v>(?:(?!%26)[^&\s\"',;<>])+)"),
    re.compile(rf"(?i)(?P<k>{_AFTER_ENCODED}(?:{_NAMES})%253D)(?P<v>(?:(?!%2526)[^&\s\"',;<>])+)"),
    # name=value and name="value" (query strings, form bodies, OAuth headers, keyword arguments)
    re.compile(rf"""(?i)(?P<k>(?<![\w.-])(?:{_NAMES})\s*=\s*{_QUOTED})"""
               rf"""(?P<v>(?(q)(?:(?!(?P=q))[^\r\n])*|[^&\s"',;<>)\]}}]+))"""),
]


# what each of _BY_NAME's patterns cannot match without: one of `needs` as written (a quote, `:` or `=`, a scheme
# word, an encoded `=`) and, if any, one of `words` in the lower-cased text (parts of its names made of letters
# (?i) matches in ASCII only: not i, k or s, which it also matches as İ, ı, K and ſ). A page's URL runs one
_NEEDS = [("\"", "'"), (":", "="), (":", "="), ("Bearer", "Basic"), ("%3",), ("%25",), ("=",)]
_WORDS: list[tuple[str, ...]] = [(), ("uthor",), ("coo", "x-ap", "x-aut"), (), (), (), ()]
_CHECKED = list(zip(_BY_NAME, _NEEDS, _WORDS, strict=True))
# every name _BY_NAME looks for holds one of these: a text without any skips its eight patterns. Searched in
# the casefolded text (8x faster than (?i)); casefold leaves two of the letters (?i) takes for i: İ -> i̇, ı
_ANY_NAME = re.compile("|".join(word.replace("i", "(?:i\u0307?|\u0131)") for word in (
    "key", "secret", "token", "passw", "sig", "oauth", "authoriz", "cookie", "bearer", "basic")))


# a %-escape that may decode to a letter: ASCII (0x41-0x7A) or the first byte of a non-ASCII character
_ESCAPED_LETTER = re.compile(r"%[4-7C-Fc-f]")


def names_in(text: str) -> bool:
    """Whether `text` may hold a name `scrub` or a secret parameter (`core.masking.is_secret_name`, which
    reads names URL-decoded) goes by: each holds one of `_ANY_NAME`'s words, in the text or in its decoding."""
    return bool(_ANY_NAME.search(text.casefold())) or (_ESCAPED_LETTER.search(text) is not None and bool(
        _ANY_NAME.search(unquote_plus(text).casefold())))


def scrub(text: str) -> str:
    """Credentials found by their name or place rather than their value: userinfo in URLs, secret
    parameters, JSON keys and headers. Needs no secrets, so it also covers values nobody registered."""
    if "@" in text:
        text = _USERINFO.sub(r"\1", text)
    if _ANY_NAME.search(text.casefold()):
        for pattern, needs, words in _CHECKED:
            if any(part in text for part in needs) and (not words or any(w in text.lower() for w in words)):
                text = pattern.sub(lambda m: m.group("k") + REDACTED, text)
    return text


def userinfo_in(text: str) -> Iterator[tuple[str, str]]:
    """(user, password) of every `scheme://user:password@` in a text, decoded."""
    for match in _USERINFO.finditer(text):
        user, _, password = match.group(2)[:-1].partition(":")
        yield unquote(user), unquote(password)
