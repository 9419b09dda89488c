"""Small controlled vocabularies: licenses and update frequencies, matched the way udata guesses them."""

from __future__ import annotations

import functools
import re
import unicodedata

# id -> the URLs and names a source may use for it (compared after _norm).
LICENSES: dict[str, tuple[str, ...]] = {
    "cc-by": ("creativecommons.org/licenses/by/", "cc-by", "cc by", "creative commons attribution",
              "cc-by-4.0", "cc-by 4.0", "publications.europa.eu/resource/authority/licence/cc_by_4_0"),
    "cc-by-sa": ("creativecommons.org/licenses/by-sa/", "cc-by-sa", "cc by-sa", "cc-by-sa-4.0",
                 "creative commons attribution share-alike",
                 "publications.europa.eu/resource/authority/licence/cc_bysa_4_0"),
    "cc-zero": ("creativecommons.org/publicdomain/zero/", "cc0", "cc-zero", "cc0-1.0", "cc zero",
                "publications.europa.eu/resource/authority/licence/cc0"),
    "odc-odbl": ("opendatacommons.org/licenses/odbl", "odbl", "odc-odbl", "open database license",
                 "publications.europa.eu/resource/authority/licence/odc_odbl"),
    "odc-by": ("opendatacommons.org/licenses/by", "odc-by", "open data commons attribution",
               "publications.europa.eu/resource/authority/licence/odc_by"),
    "odc-pddl": ("opendatacommons.org/licenses/pddl", "pddl", "odc-pddl", "public domain dedication and license",
                 "publications.europa.eu/resource/authority/licence/odc_pddl"),
    # Etalab's Licence Ouverte 2.0: udata's `lov2`, SPDX `etalab-2.0`
    "lov2": ("etalab.gouv.fr/licence-ouverte-open-licence", "etalab-2.0", "lov2", "licence ouverte v2.0",
             "licence ouverte / open licence version 2.0", "licence ouverte 2.0", "licence ouverte version 2.0",
             "open licence version 2.0", "open licence 2.0", "licence ouverte / open licence v2.0",
             "etalab.gouv.fr/wp-content/uploads/2017/04/etalab-licence-ouverte-v2.0.pdf",
             "spdx.org/licenses/etalab-2.0", "spdx.org/licenses/etalab-2.0.html",
             "publications.europa.eu/resource/authority/licence/etalab_2_0"),
    "fr-lo": ("etalab.gouv.fr/wp-content/uploads/2014/05/licence-ouverte-open-licence.pdf", "fr-lo",
              "licence ouverte", "licence ouverte / open licence", "open licence", "licence ouverte version 1.0",
              "licence ouverte v1.0", "licence ouverte 1.0", "licence ouverte / open licence version 1.0"),
    "ogl-uk-3.0": ("nationalarchives.gov.uk/doc/open-government-licence", "ogl-uk-3.0", "ogl",
                   "open government licence"),
    "dl-de-by-2.0": ("govdata.de/dl-de/by-2-0", "dl-de-by-2.0", "dl-de/by-2-0"),
}
_URL_IN_TEXT = re.compile(r"https?://\S+")

def _norm(text: str) -> str:
    text = text.strip().lower()
    text = re.sub(r"^https?://(www\.)?", "", text)
    return " ".join(text.split())


def guess_license(candidates: list[str]) -> str | None:
    """The first candidate (in the order given) that names a known license; None when none does.
    A candidate is tried whole, then each URL inside it ("Licence Ouverte version 2.0  https://...pdf")."""
    for raw in candidates:
        for text in [_norm(raw), *(_norm(url) for url in _URL_IN_TEXT.findall(raw or ""))]:
            found = _license_of(text) if text else None
            if found:
                return found
    return None


@functools.lru_cache(maxsize=4096)  # every form is tried per text; a repository repeats a few rights texts
def _license_of(text: str) -> str | None:
    for license_id, forms in LICENSES.items():
        for form in forms:
            if "/" in form and "." in form.split("/", 1)[0]:  # a URL: itself or below it (by/ is not by-sa/)
                stem = form.rstrip("/")
                if text.rstrip("/") == stem or text.startswith(stem + "/"):
                    return license_id
            elif text == form:
                return license_id
    return None


# EU high-value-dataset categories (Regulation 2023/138) -> udata's French label (its derived theme tag)
HVD_CATEGORIES: dict[str, str] = {
    "http://data.europa.eu/bna/c_164e0bf5": "Météorologiques",
    "http://data.europa.eu/bna/c_a9135398": "Entreprises et propriété d'entreprises",
    "http://data.europa.eu/bna/c_ac64a52d": "Géospatiales",
    "http://data.europa.eu/bna/c_b79e35eb": "Mobilité",
    "http://data.europa.eu/bna/c_dd313021": "Observation de la terre et environnement",
    "http://data.europa.eu/bna/c_e1da4e07": "Statistiques",
}
HVD_TAG = "hvd"
# INSPIRE "limitations on public access" (Directive 2007/2/EC art. 13(1)(a)-(h)): the dataset is not open
INSPIRE_LIMITATIONS = "http://inspire.ec.europa.eu/metadata-codelist/LimitationsOnPublicAccess/INSPIRE_Directive_Article13_1"


def slug_tag(text: str) -> str:
    """udata's tag slug: accents dropped, lower case, runs of other characters as one '-'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def inspire_restricted(values: list[str]) -> bool:
    """An INSPIRE art. 13(1) limitation among the access rights/rights: udata marks the dataset restricted."""
    return any(v.strip().startswith(INSPIRE_LIMITATIONS) and v.strip()[len(INSPIRE_LIMITATIONS):] in
               {"a", "b", "c", "d", "e", "f", "g", "h"} for v in values)


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
