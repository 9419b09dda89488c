"""The redactor on its own: which spellings of a secret it finds, what it finds by name, short values,
same-length masks of recorded responses and the log filter on handlers (harvesters/redaction.py)."""

from __future__ import annotations

import base64
import gzip
import io
import logging
from urllib.parse import quote, quote_plus

from swath.core.encodings import decode_bounded
from swath.harvesters.redaction import (
    REDACTED,
    Redactor,
    SecretLogFilter,
    harvest_redactor,
    scrub,
)
from swath.messages.model import HarvestStart

SECRET = "Zk9/q+w=Rt5u"


def test_every_spelling_of_a_secret_is_redacted():
    redactor = Redactor([SECRET])
    twice = quote(quote(SECRET, safe=""), safe="")  # oauthlib's base string: %253D
    b64 = base64.b64encode(SECRET.encode()).decode()
    inside = base64.b64encode(f"someone:{SECRET}".encode()).decode()  # Basic auth of an unknown user
    spellings = [SECRET, quote(SECRET, safe=""), quote_plus(SECRET), twice, b64, b64.rstrip("="),
                 base64.urlsafe_b64encode(SECRET.encode()).decode(), SECRET.replace("/", "\\/")]
    text = redactor.text(" | ".join([*spellings, inside]))
    assert all(s not in text for s in spellings), text
    assert inside not in text and text.count(REDACTED) == len(spellings) + 1
    assert "%253D" in twice and twice not in redactor.text(f"sbs=key%3D{twice}%26x")


def test_short_values_go_as_whole_tokens_only():
    redactor = Redactor(["ab", "7"])
    assert redactor.text("ab tab abc (ab) a-ab-b 7 17 7th") == f"{REDACTED} tab abc ({REDACTED}) a-{REDACTED}-b " \
                                                                f"{REDACTED} 17 7th"
    assert redactor.url("https://h/?page=7&sort=ab") == f"https://h/?page={REDACTED}&sort={REDACTED}"
    assert redactor.headers([("X-Id", "ab")]) == [("X-Id", REDACTED)]
    assert redactor.mask(b'{"n": 7, "s": "ab"}') == (b'{"n": 7, "s": "ab"}', 0)  # bodies: 4+ characters only


def test_credentials_found_by_name_whatever_their_value():
    nested = "ConnectionError: HTTPSConnectionPool(host='x'): Max retries with url: /v1?q=1&api_key=unknownvalue"
    assert scrub(nested).endswith(f"api_key={REDACTED}")
    assert scrub('{"access_token": "abc\\"def", "id": 1}') == f'{{"access_token": "{REDACTED}", "id": 1}}'
    assert scrub("{'password': 'hunter2'}") == f"{{'password': '{REDACTED}'}}"
    assert scrub("Authorization: Bearer AAAA1234zzzz") == f"Authorization: Bearer {REDACTED}"
    assert scrub("sent Basic dXNlcjpwYXNz to it") == f"sent Basic {REDACTED} to it"
    assert scrub("Basic information") == "Basic information"
    assert scrub('OAuth oauth_consumer_key="ck", oauth_signature="s%3D"') == \
        f'OAuth oauth_consumer_key="{REDACTED}", oauth_signature="{REDACTED}"'
    base = "POST&u&oauth_consumer_key%3Dck%26oauth_token%3Dtk%26page%3D2"
    assert scrub(base) == f"POST&u&oauth_consumer_key%3D{REDACTED}%26oauth_token%3D{REDACTED}%26page%3D2"
    assert scrub("see https://me:pw@host.example/x and ftp://a@b/c") == "see https://host.example/x and ftp://b/c"
    diagnosis = "oauth_problem=signature_invalid&oauth_version=1.0"  # says how, not who: kept
    assert scrub(diagnosis) == diagnosis


def start_of(harvest_type: str, credentials: dict, *tokens: str) -> HarvestStart:
    return HarvestStart.from_dict({
        "id": "h1", "type": harvest_type, "path": "p", "options": {}, "collection_set": {"id": "a"},
        "collection": {"id": "b"}, "credentials": credentials,
        "seeds": [{"id": f"s{n}", "token": token} for n, token in enumerate(tokens)]})


def test_only_what_authenticates_is_a_secret_not_a_login_name():
    # CKAN declares no login names: every credential is a secret; a URL's user is one only without a password
    start = start_of("ckan", {"username": "archivist", "password": "pa55word"},
                     "https://reader:s%2Fecret@portal.example/api", "https://t0kenOnly@other.example/api")
    redactor = harvest_redactor(start, max_decoded=1 << 20)
    for secret in ("archivist", "pa55word", "s/ecret", "t0kenOnly", base64.b64encode(b"reader:s/ecret").decode(),
                   base64.b64encode(b"archivist:pa55word").decode()):
        assert secret not in redactor.text(f"x {secret} y"), secret
    assert redactor.text("x reader y") == "x reader y"  # a user name: public
    # Bluesky declares its `identifier` a login name (a handle): never masked, the app password always
    handle, password = "alice.example.com", "abcd-efgh-ijkl-mnop"
    bluesky = harvest_redactor(start_of("bluesky_author_feed", {"identifier": handle, "app_password": password},
                                        handle),
                               max_decoded=1 << 20)
    body = f'{{"handle": "{handle}", "echo": "{password}"}}'.encode()
    assert bluesky.mask(body) == (body.replace(password.encode(), b"*" * len(password)), 1)
    assert bluesky.url(f"https://bsky.example/xrpc/x?actor={handle}").endswith(f"actor={handle}")
    assert base64.b64encode(f"{handle}:{password}".encode()).decode() not in bluesky.text(
        "Basic " + base64.b64encode(f"{handle}:{password}".encode()).decode())


def test_recorded_response_keeps_its_length_and_its_urls():
    redactor = Redactor([SECRET])
    body = f'{{"echo": "{SECRET}", "again": "{quote(SECRET, safe="")}"}}'.encode()
    headers, stored, count = redactor.response(
        [("Location", f"/next?api_key={SECRET}&page=2"), ("Link", '<https://h/p?key=zz&p=3>; rel="next"'),
         ("Refresh", "5; url=https://h/?access_token=t0k"), ("Set-Cookie", "sid=abc123; Path=/")], body)
    assert dict(headers) == {"Location": f"/next?api_key={REDACTED}&page=2",
                             "Link": f'<https://h/p?key={REDACTED}&p=3>; rel="next"',
                             "Refresh": f"5; url=https://h/?access_token={REDACTED}",
                             "Set-Cookie": f"sid={REDACTED}; Path=/"}
    assert count == 2 and len(stored) == len(body) and SECRET.encode() not in stored
    assert stored.replace(b"*", b"") == body.replace(SECRET.encode(), b"").replace(quote(SECRET, safe="").encode(), b"")


def test_a_compressed_body_holding_a_secret_is_stored_decoded_and_a_bomb_is_not_opened():
    redactor = Redactor([SECRET], max_decoded=1 << 20)
    plain = f"echo {SECRET}".encode()
    headers, stored, count = redactor.response([("Content-Encoding", "gzip"), ("Content-Length", "40")],
                                               gzip.compress(plain))
    assert (stored, count) == (b"echo " + b"*" * len(SECRET), 1)
    assert dict(headers) == {"X-Archive-Orig-Content-Encoding": "gzip", "X-Archive-Orig-Content-Length": "40"}
    clean = gzip.compress(b"nothing to hide")
    assert redactor.response([("Content-Encoding", "gzip")], clean) == ([("Content-Encoding", "gzip")], clean, 0)
    bomb = gzip.compress(b"\0" * (4 << 20) + SECRET.encode())  # 4 MiB decoded, over the limit
    assert decode_bounded(bomb, "gzip", limit=1 << 20) is None
    assert redactor.response([("Content-Encoding", "gzip")], bomb)[1] == bomb


def test_the_log_filter_on_a_handler_covers_child_loggers_and_tracebacks():
    redactor, log_filter, out = Redactor([SECRET]), SecretLogFilter(), io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(log_filter)
    log_filter.add(redactor)
    logger = logging.getLogger("flickrapi.auth.OAuthFlickrInterface")  # a child of a library's logger
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.error("    %s", f"oauth_consumer_key={SECRET}&other=1")
        try:
            raise RuntimeError(f"failed with key {SECRET}")
        except RuntimeError:
            logger.exception("request failed")
        log_filter.remove(redactor)
        logger.error("api_key=%s", SECRET)  # no harvest running: still redacted by name
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    text = out.getvalue()
    assert SECRET not in text and quote(SECRET, safe="") not in text
    assert "oauth_consumer_key=REDACTED" in text and "failed with key REDACTED" in text
    assert "Traceback" in text


def test_passwd_parameters_are_scrubbed_by_name():
    # the quick name check before the by-name patterns lacked "passwd", so those patterns never ran on it
    assert scrub("login with passwd=hunter22 failed") == f"login with passwd={REDACTED} failed"
    assert scrub("https://h.example/x?PASSWD=hunter22") == f"https://h.example/x?PASSWD={REDACTED}"


def test_a_text_redacted_before_a_secret_was_learnt_is_redacted_again_after():
    redactor = Redactor([SECRET])
    value = "session Qm9vb2tsZXRz"
    assert redactor.text(value) == value
    redactor.add("Qm9vb2tsZXRz")
    assert redactor.text(value) == f"session {REDACTED}"


def test_urls_without_parameters_or_userinfo_are_kept_byte_for_byte():
    redactor = Redactor([SECRET])
    for url in ("https://h.example/a/b?", "https://h.example/a#", f"https://h.example/{SECRET}/x"):
        expected = url.replace(SECRET, REDACTED)
        assert redactor.url(url) == expected
    assert redactor.url(f"https://u:{SECRET}@h.example/a?key=1&q=2") == f"https://h.example/a?key={REDACTED}&q=2"


def test_every_secret_parameter_name_holds_a_word_the_quick_checks_look_for():
    # Redactor.url and Redactor.fields skip their work when a text holds none of _ANY_NAME's words: every
    # name a parameter is redacted by must hold one, or the skip would keep a credential
    from swath.core.masking import SECRET_PARAMS, is_secret_name
    from swath.harvesters.scrub import _ANY_NAME

    names = [*SECRET_PARAMS, "token", "oauth_token", "sslpassword", "db_secret", "X_PASSWD", "\u212aey"]
    assert all(is_secret_name(name) for name in names)
    assert all(_ANY_NAME.search(name.casefold()) for name in names), [n for n in names if not _ANY_NAME.search(n)]


def test_record_fields_are_redacted_as_each_field_alone_would_be():
    redactor = Redactor([SECRET])
    cases = [
        {"WARC-Swath-Remote-Id": "oai:x:1", "WARC-Swath-Item-URI": "https://r.example/oai?verb=GetRecord&id=oai%3Ax%3A1"},
        {"WARC-Swath-Item-URI": "https://r.example/x?k%65y=abc&page=2"},  # a secret name spelt URL-encoded
        {"WARC-Swath-Item-URI": "https://r.example/x?api_key=abc"},
        {"WARC-Swath-Item-URI": "https://user:pw@r.example/x"},
        {"WARC-Swath-Remote-Id": f"id-{quote(SECRET, safe='')}"},
        {"WARC-Swath-Remote-Id": "Bearer abcdefgh12345"},
        {"WARC-Swath-Note": "password=hunter22"},
    ]
    for fields in cases:
        expected = {name: redactor.url(value) if name.endswith("-URI") else redactor.text(value)
                    for name, value in fields.items()}
        assert redactor.fields(dict(fields)) == expected, fields
    assert redactor.fields(cases[0]) == cases[0]  # nothing to redact: kept as given
    assert "abc" not in redactor.fields(cases[1])["WARC-Swath-Item-URI"]
    assert redactor.url("https://r.example/x?k%65y=abc") == f"https://r.example/x?k%65y={REDACTED}"


def test_scrub_runs_a_pattern_only_where_it_can_match_and_gives_what_running_all_of_them_gives(swath_seed):
    """`scrub` skips each by-name pattern for a text without what that pattern cannot match without (a quote, `:`
    or `=`, part of its names: harvesters/scrub.py `_CHECKED`); on texts made of the names, their case variants
    (İ, ı, K, ſ: what (?i) also takes for i, k and s), quotes, separators and encodings it gives what running
    all seven gives."""
    import random

    from swath.harvesters.scrub import _ANY_NAME, _BY_NAME, _USERINFO

    def every_pattern(text: str) -> str:
        if "@" in text:
            text = _USERINFO.sub(r"\1", text)
        if _ANY_NAME.search(text.casefold()):
            for pattern in _BY_NAME:
                text = pattern.sub(lambda m: m.group("k") + REDACTED, text)
        return text

    pieces = ['"', "'", ":", "=", " ", "&", "%3D", "%3d", "%253D", "%26", "Bearer ", "Basic ", "bearer ",
              "authorization", "AUTHORIZATION", "AuThOrİzation", "Authorızation", "Proxy-Authorization", "api_key",
              "access_token", "password", "Cookie", "COOKIE", "cooKie", "set-cookie", "x-api-key", "X-API-KEY",
              "x-api-Key", "X-Auth-Token", "oauth_token", "oauth_signature", "ſecret", "token", "abcdefgh1234",
              "ABCDEFGH12", "İ", "ı", "\n", "{", "}", "b'", "http://u:p@h/", "@", "é", "/", "?", ",", ";"]
    rng = random.Random(swath_seed)
    changed = 0
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        assert scrub(text) == every_pattern(text), text
        changed += scrub(text) != text
    assert changed > 1000  # the texts did hold credentials to scrub
