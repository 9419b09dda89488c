"""Small controlled vocabularies: licenses and update frequencies, matched the way udata guesses them."""

from __future__ import annotations

import re

# id -> the URLs and names a source may use for it (compared after _norm).
LICENSES: dict[str, tuple[str, ...]] = {
    "cc-by": ("creativecommons.org/licenses/by/", "cc-by", "cc by", "creative commons attribution",
              "cc-by-4.0", "cc-by 4.0"),
    "cc-by-sa": ("creativecommons.org/licenses/by-sa/", "cc-by-sa", "cc by-sa", "cc-by-sa-4.0",
                 "creative commons attribution share-alike"),
    "cc-zero": ("creativecommons.org/publicdomain/zero/", "cc0", "cc-zero", "cc0-1.0", "cc zero"),
    "odc-odbl": ("opendatacommons.org/licenses/odbl", "odbl", "odc-odbl", "open database license"),
    "odc-by": ("opendatacommons.org/licenses/by", "odc-by", "open data commons attribution"),
    "odc-pddl": ("opendatacommons.org/licenses/pddl", "pddl", "odc-pddl", "public domain dedication and license"),
    "lov2": ("etalab.gouv.fr/licence-ouverte-open-licence", "etalab-2.0", "lov2", "licence ouverte v2.0",
             "licence ouverte / open licence version 2.0", "licence ouverte 2.0"),
    "fr-lo": ("etalab.gouv.fr/wp-content/uploads/2014/05/licence-ouverte-open-licence.pdf", "fr-lo",
              "licence ouverte", "licence ouverte / open licence", "open licence"),
    "ogl-uk-3.0": ("nationalarchives.gov.uk/doc/open-government-licence", "ogl-uk-3.0", "ogl",
                   "open government licence"),
    "dl-de-by-2.0": ("govdata.de/dl-de/by-2-0", "dl-de-by-2.0", "dl-de/by-2-0"),
}


def _norm(text: str) -> str:
    text = text.strip().lower()
    text = re.sub(r"^https?://(www\.)?", "", text)
    return " ".join(text.split())


def guess_license(candidates: list[str]) -> str | None:
    """The first candidate (in the order given) that names a known license; None when none does."""
    for raw in candidates:
        text = _norm(raw)
        if not text:
            continue
        for license_id, forms in LICENSES.items():
            for form in forms:
                if "/" in form and "." in form.split("/", 1)[0]:  # a URL: itself or below it (by/ is not by-sa/)
                    stem = form.rstrip("/")
                    if text.rstrip("/") == stem or text.startswith(stem + "/"):
                        return license_id
                elif text == form:
                    return license_id
    return None


# Local names of http://purl.org/cld/freq/ and the EU frequency authority table, lower case.
FREQUENCIES: dict[str, str] = {
    "continuous": "continuous", "cont": "continuous", "update_cont": "continuous",
    "hourly": "hourly", "daily": "daily", "weekly": "weekly", "biweekly": "biweekly",
    "semimonthly": "semimonthly", "bimonthly": "bimonthly", "monthly": "monthly",
    "quarterly": "quarterly", "semiannual": "semiannual", "annual": "annual", "annually": "annual",
    "biennial": "biennial", "triennial": "triennial", "irregular": "irregular", "irreg": "irregular",
    "never": "punctual", "punctual": "punctual", "other": "unknown", "unknown": "unknown",
    "threetimesaweek": "threeTimesAWeek", "threetimesayear": "threeTimesAYear",
    "semiweekly": "semiweekly", "fourtimesayear": "quarterly", "twiceayear": "semiannual",
}


def guess_frequency(value: str | None) -> str | None:
    """udata's frequency name for a cld/EU frequency URI or a bare word; None when unknown."""
    if not value:
        return None
    local = re.split(r"[/#]", value.strip().rstrip("/"))[-1]
    key = re.sub(r"[\s_-]", "", local.lower())
    return FREQUENCIES.get(key) or FREQUENCIES.get(local.lower())
