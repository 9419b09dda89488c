"""The tree reads as a clone has it: no merge-conflict markers in any tracked text file, and no link in the
docs, the README or the brief that leaves the repository, names a machine path or points at a missing file.

A link that works only on the machine it was written on (a folder beside the checkout, an absolute path) reads
as a reference to something a reader has and does not; a committed conflict shows two versions of a line.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", ROOT / "DEVELOPERS-BRIEF.md", *(ROOT / "docs").glob("*.md")])
# built from parts so that this file holds no marker line of its own
CONFLICT = re.compile("^(" + "|".join(re.escape(c * 7) for c in "<>|") + ")( |$)", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
# [text](target "title") and reference definitions `[name]: target`
INLINE = re.compile(r"\]\(\s*<?([^)>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HTML = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# the workplace this suite was written on keeps its specs and fixtures under /work; a clone has no such folder
MACHINE_PATH = re.compile(r"(?<![\w.~-])/work/")


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in names.decode("utf-8").split("\0") if name]


def conflict_lines(path: Path) -> list[int]:
    try:
        text = path.read_bytes().decode("utf-8")
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return []  # binary (or listed but absent in a sparse tree): no lines to read
    return [text.count("\n", 0, m.start()) + 1 for m in CONFLICT.finditer(text)]


def prose(text: str) -> str:
    """The text without code blocks and code spans: a path shown as code is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def link_targets(text: str) -> list[str]:
    body = prose(text)
    return [m.group(1) for pattern in (INLINE, REFERENCE, HTML) for m in pattern.finditer(body)]


def broken_link(doc: Path, target: str) -> str | None:
    """Why `target`, linked from `doc`, fails a clone; None when it is fine."""
    if SCHEME.match(target) or target.startswith("#"):
        return None  # a web address, mailto:, or an anchor in the same page
    if target.startswith("/"):
        return "an absolute path (a machine's, not the repository's)"
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    resolved = (doc.parent / path).resolve()
    if not resolved.is_relative_to(ROOT):
        return "leaves the repository"
    if not resolved.exists():
        return "points to a missing file"
    return None


def test_no_tracked_file_holds_a_merge_conflict_marker():
    files = tracked_text_files()
    assert ROOT / "README.md" in files  # the listing is the repository's, not an empty answer
    found = [f"{path.relative_to(ROOT)}:{line}" for path in files for line in conflict_lines(path)]
    assert found == [], "merge-conflict markers committed:\n" + "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_the_docs_stays_in_the_repository_and_finds_its_file(doc):
    text = doc.read_text("utf-8")
    bad = [f"{target}: {why}" for target in link_targets(text) if (why := broken_link(doc, target))]
    bad += [f"line {text.count(chr(10), 0, m.start()) + 1}: a machine path ({m.group()}...)"
            for m in MACHINE_PATH.finditer(text)]
    assert bad == [], f"{doc.relative_to(ROOT)}:\n" + "\n".join(bad)


def test_the_checks_catch_what_they_are_for(tmp_path):
    marker = "<" * 7 + " HEAD\nmine\n" + "=" * 7 + "\ntheirs\n" + ">" * 7 + " other\n"
    (tmp_path / "conflicted.md").write_text("intro\n" + marker)
    assert conflict_lines(tmp_path / "conflicted.md") == [2, 6]
    doc = ROOT / "docs" / "any.md"
    text = ("[spec](../../outside/spec.txt) [gone](missing.md) [ok](../README.md#top) [web](https://example.org)"
            " `[code](../../nowhere)`\n[ref]: /srv/style.md\n")
    assert [(t, broken_link(doc, t)) for t in link_targets(text)] == [
        ("../../outside/spec.txt", "leaves the repository"), ("missing.md", "points to a missing file"),
        ("../README.md#top", None), ("https://example.org", None),
        ("/srv/style.md", "an absolute path (a machine's, not the repository's)")]
    machine = "/" + "work"  # spelled in parts so the tree itself names no machine path
    assert MACHINE_PATH.search(f"read {machine}/shared/STYLE.md") and not MACHINE_PATH.search("a/network/b")
