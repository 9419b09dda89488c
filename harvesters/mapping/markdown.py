"""HTML descriptions turned into Markdown, as udata does for harvested dct:description."""

from __future__ import annotations

import re

from lxml import etree, html

_LOOKS_HTML = re.compile(r"<\s*(p|br|div|a|ul|ol|li|strong|em|b|i|h[1-6]|span|table|code|pre|blockquote)\b[^>]*>", re.I)
_BLOCKS = {"p", "div", "ul", "ol", "table", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "tr"}


def is_html(text: str) -> bool:
    return bool(_LOOKS_HTML.search(text))


def html_to_markdown(text: str) -> str:
    """Markdown for an HTML fragment; plain text comes back unchanged (trimmed)."""
    if not text or not is_html(text):
        return (text or "").strip()
    try:
        root = html.fragment_fromstring(text, create_parent="div")
    except (etree.ParserError, ValueError):
        return text.strip()
    out = _render(root, list_stack=[]).strip()
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", out))


def _render(el: etree._Element, *, list_stack: list[str]) -> str:
    tag = el.tag.lower() if isinstance(el.tag, str) else ""
    if tag in {"script", "style"}:
        return el.tail or ""
    inner_stack = list_stack + [tag] if tag in {"ul", "ol"} else list_stack
    body = (el.text or "") + "".join(_render(child, list_stack=inner_stack) for child in el)
    if tag in {"strong", "b"}:
        body = f"**{body.strip()}**" if body.strip() else ""
    elif tag in {"em", "i"}:
        body = f"*{body.strip()}*" if body.strip() else ""
    elif tag == "code":
        body = f"`{body}`"
    elif tag == "a" and el.get("href"):
        body = f"[{body.strip() or el.get('href')}]({el.get('href')})"
    elif tag == "br":
        body = "\n"
    elif tag == "li":
        marker = "1." if list_stack and list_stack[-1] == "ol" else "-"
        indent = "  " * max(len(list_stack) - 1, 0)
        body = f"\n{indent}{marker} {body.strip()}"
    elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
        body = f"\n\n{'#' * int(tag[1])} {body.strip()}\n\n"
    elif tag == "blockquote":
        body = "\n\n" + "\n".join(f"> {line}" for line in body.strip().splitlines()) + "\n\n"
    elif tag in _BLOCKS:
        body = f"\n\n{body.strip()}\n\n" if tag != "ul" and tag != "ol" else f"\n{body}\n\n"
    return body + (el.tail or "")
