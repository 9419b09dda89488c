"""branches.xml: `<branches><branch xpath="..."/></branches>`, XPaths relative to `/amf/text`.

Branches are evaluated on the record with namespaces removed, so `file/url` means what it says
whether or not the record uses the AMF namespace. A branch may select elements (their text) or
strings (attributes, `text()`); only absolute http(s) URLs become objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from lxml import etree

from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.safexml import parse_xml

PREFIX = "/amf/text/"
_PROBE = etree.fromstring(b"<amf><text/></amf>")


class BadBranches(ValueError):
    """A branches file that cannot be used; `problems` lists every one, with line numbers."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Branches:
    xpaths: tuple[str, ...]

    def urls(self, record: bytes) -> list[str]:
        """Object URLs of the record's text noun, in branch then document order, each once; raises
        BadDocument for a record the safe parser refuses."""
        root = strip_namespaces(parse_xml(record))
        found: list[str] = []
        for xpath in self.xpaths:
            result = root.getroottree().xpath(PREFIX + xpath)
            for item in result if isinstance(result, list) else [result]:
                text = (item.text or "") if isinstance(item, etree._Element) else str(item)
                url = text.strip()
                if urlsplit(url).scheme in ("http", "https") and url not in found:
                    found.append(url)
        return found


def strip_namespaces(root: etree._Element) -> etree._Element:
    for el in root.iter():
        if isinstance(el.tag, str):
            el.tag = etree.QName(el).localname
        for name in [n for n in el.attrib if n.startswith("{")]:
            el.attrib[etree.QName(name).localname] = el.attrib.pop(name)
    etree.cleanup_namespaces(root)
    return root


def load_branches(path: Path) -> Branches:
    """Parse and check a branches file; raises BadBranches with every problem found."""
    try:
        root = parse_xml(path.read_bytes())
    except OSError as exc:
        raise BadBranches([f"{path}: {exc}"]) from None
    except MetadataError as exc:
        raise BadBranches([f"{path}: {exc.message}"]) from None
    if root.tag != "branches":
        raise BadBranches([f"{path}:{root.sourceline}: the root element is <{root.tag}>, not <branches>"])
    problems, xpaths = [], []
    for el in root:
        if not isinstance(el.tag, str):
            continue
        where = f"{path}:{el.sourceline}"
        xpath = (el.get("xpath") or "").strip()
        if el.tag != "branch":
            problems.append(f"{where}: <{el.tag}> is not <branch>")
        elif not xpath:
            problems.append(f"{where}: <branch> without an xpath attribute")
        elif xpath.startswith("/"):
            problems.append(f"{where}: {xpath!r} is absolute; branches are relative to /amf/text")
        else:
            try:
                etree.XPath(PREFIX + xpath)(_PROBE)  # evaluation also catches unknown functions
                xpaths.append(xpath)
            except (etree.XPathSyntaxError, etree.XPathEvalError) as exc:
                problems.append(f"{where}: {xpath!r} is not a valid XPath: {exc}")
    if problems:
        raise BadBranches(problems)
    if not xpaths:
        raise BadBranches([f"{path}: no <branch> elements"])
    return Branches(tuple(xpaths))
