"""Multilingual literals: which one a field takes, and every language kept beside it.

The preference (docs/metadata-harvesting.md): the wanted language (a tag equal to it or below it, `en` takes
`en-GB`), else a literal without a language tag, else the first by language tag in alphabetical order (rdflib
keeps no file order, so "first in the file" would not be stable).
"""

from __future__ import annotations

DEFAULT_LANGUAGE = "en"

Tagged = tuple[str | None, str]  # (lower-case language tag or None, text)


def _is(tag: str | None, want: str) -> bool:
    return tag is not None and (tag == want or tag.startswith(want + "-"))


def choose(values: list[Tagged], want: str = DEFAULT_LANGUAGE) -> str | None:
    """The one text a single-valued field takes."""
    if not values:
        return None
    want = want.lower()
    for tag, text in values:
        if _is(tag, want):
            return text
    for tag, text in values:
        if tag is None:
            return text
    return min(values, key=lambda v: (v[0] or "", v[1]))[1]


def choose_all(values: list[Tagged], want: str = DEFAULT_LANGUAGE) -> list[str]:
    """A list field (keywords): the wanted language's plus the untagged ones; every value when none is in
    the wanted language (a catalog in one other language keeps all its keywords, as udata does)."""
    want = want.lower()
    if not any(_is(tag, want) for tag, _ in values):
        return [text for _, text in values]
    return [text for tag, text in values if tag is None or _is(tag, want)]


def translations(values: list[Tagged]) -> dict[str, str]:
    """Every language tag -> its text (the first by text when a language repeats); untagged ones left out."""
    out: dict[str, str] = {}
    for tag, text in sorted(values, key=lambda v: (v[0] or "", v[1])):
        if tag is not None:
            out.setdefault(tag, text)
    return out if len(out) > 1 else {}


def translations_all(values: list[Tagged]) -> dict[str, list[str]]:
    """Every language tag -> its texts, for list fields; empty unless two languages or more."""
    out: dict[str, list[str]] = {}
    for tag, text in values:
        if tag is not None:
            out.setdefault(tag, []).append(text)
    return out if len(out) > 1 else {}
