"""The dataset record every metadata backend produces: udata's Dataset/Resource fields plus harvest metadata."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(kw_only=True)
class Checksum:
    type: str  # md5, sha1, sha256, ...
    value: str


@dataclass(kw_only=True)
class Resource:
    title: str | None = None
    description: str | None = None
    url: str | None = None
    published: str | None = None  # ISO date/datetime as the source gave it
    last_modified: str | None = None
    format: str | None = None
    mime: str | None = None
    filesize: int | None = None
    checksum: Checksum | None = None
    type: str = "main"  # udata's resource type: main, api (a dcat:accessService), other (a dct:hasPart)
    extras: dict[str, object] = field(default_factory=dict)


@dataclass(kw_only=True)
class TemporalCoverage:
    start: str  # ISO date
    end: str | None = None  # None: open-ended


@dataclass(kw_only=True)
class Dataset:
    remote_id: str
    title: str | None = None
    description: str | None = None  # Markdown
    tags: list[str] = field(default_factory=list)
    frequency: str | None = None
    temporal_coverage: TemporalCoverage | None = None
    license: str | None = None
    created_at: str | None = None
    last_modified: str | None = None
    resources: list[Resource] = field(default_factory=list)
    extras: dict[str, object] = field(default_factory=dict)  # the platform's own fields, kept as JSON

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def add_tags(tags: list[str], values: list[str]) -> None:
    """Append normalised tags (trimmed, lower case), keeping the first occurrence's order."""
    for value in values:
        tag = " ".join(str(value).split()).lower()
        if tag and tag not in tags:
            tags.append(tag)


def guess_checksum_type(value: str) -> str | None:
    """CKAN's `hash` has no algorithm: guess it from the hex length."""
    return {32: "md5", 40: "sha1", 64: "sha256", 128: "sha512"}.get(len(value.strip()))


def title_from(url: str | None, fmt: str | None) -> str | None:
    """A resource title when the source gives none: the URL's last path segment, else the format."""
    if url:
        name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if name and "." in name:
            return name
    if fmt:
        return f"{fmt.upper()} resource"
    if url:
        return url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or url
    return None
