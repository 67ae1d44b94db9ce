"""The README and docs/ hold together: every relative link and image in README.md and docs/*.md resolves to a file (and
`file.md#anchor` to one of its headings, as GitHub makes their anchors); the README stays a door of at most 100 lines
(issue 76: what it is, the two commands, what they produce, how to read a range of places, where to read on) with a
picture of the report's first screen; every document in docs/ is linked from the README and at most 200 lines; every
Make target is documented."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 100
DOC_MAX_LINES = 200  # a document read in one sitting; the README is the door to them, not their yardstick


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def parse(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file; a repeated heading gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    tokens = parse(path)
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type != "heading_open":
            continue
        text = "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
        base = anchor = slug(text)
        n = 0
        while anchor in found:
            n += 1
            anchor = f"{base}-{n}"
        found.add(anchor)
    return found


def targets(path: Path) -> list[str]:
    """Every link's and image's target in a Markdown file, in order."""
    out = []
    for token in parse(path):
        for child in token.children or []:
            if child.type == "link_open":
                out.append(str(child.attrs["href"]))
            elif child.type == "image":
                out.append(str(child.attrs["src"]))
    return out


def broken_links(path: Path) -> list[str]:
    """The relative links of a Markdown file that lead nowhere: a missing file, or a heading anchor it lacks."""
    broken = []
    for target in targets(path):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # http(s), mailto: not this repository's to check
        file = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not file.exists():
            broken.append(f"{path.name}: {target} (no such file)")
        elif parts.fragment and file.suffix == ".md" and unquote(parts.fragment) not in anchors(file):
            broken.append(f"{path.name}: {target} (no heading with that anchor in {file.name})")
    return broken


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def layout_problems(root: Path) -> list[str]:
    """What breaks the README-and-docs layout: a long README, a document not linked from it or too long."""
    readme = root / "README.md"
    lines = line_count(readme)
    problems = [f"README.md has {lines} lines, more than {README_MAX_LINES}"] if lines > README_MAX_LINES else []
    linked = {(readme.parent / urlsplit(t).path).resolve() for t in targets(readme) if not urlsplit(t).scheme}
    for doc in sorted((root / "docs").glob("*.md")):
        if doc.resolve() not in linked:
            problems.append(f"docs/{doc.name} is not linked from README.md")
        if line_count(doc) > DOC_MAX_LINES:
            problems.append(f"docs/{doc.name} has {line_count(doc)} lines, more than {DOC_MAX_LINES}")
    return problems


def documents(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def test_every_relative_link_and_image_resolves() -> None:
    broken = [b for doc in documents(ROOT) for b in broken_links(doc)]
    assert broken == []


def test_readme_is_short_and_links_every_document_each_short() -> None:
    assert layout_problems(ROOT) == []
    assert line_count(ROOT / "README.md") <= 100


def test_readme_opens_on_a_picture_of_the_matrix() -> None:
    """The door shows what the project answers: the report's matrix, a PNG in docs/images, before the commands."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    images = [t for t in targets(ROOT / "README.md") if t.endswith(".png")]
    assert images and images[0] == "docs/images/report-matrix.png"
    assert (ROOT / images[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert text.index(images[0]) < text.index("## The two commands") < text.index("## Read on")


def test_every_make_target_is_documented() -> None:
    """Each target of the Makefile (a pattern target by its stem, `make test-`) is named in the README or docs/."""
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in documents(ROOT))
    names = re.findall(r"^([a-z][\w%-]*)\s*:(?!=)", (ROOT / "Makefile").read_text(), flags=re.M)
    missing = []
    for name in sorted(set(names)):
        if "%" in name:
            found = f"make {name.split('%')[0]}" in text
        else:
            found = re.search(rf"(make |`){re.escape(name)}\b(?!-)", text) is not None
        if not found:
            missing.append(name)
    assert missing == [], f"Make targets named nowhere in README.md or docs/ (docs/commands.md lists them): {missing}"


def test_github_anchor_slugs() -> None:
    assert slug("Two builds in one sitting: `make versus`") == "two-builds-in-one-sitting-make-versus"
    assert slug("results.json") == "resultsjson"
    assert slug("Several hosts: server, load generator and upstream on separate machines") == (
        "several-hosts-server-load-generator-and-upstream-on-separate-machines"
    )


def test_the_checks_catch_a_broken_link_a_missing_anchor_and_a_stray_or_long_document(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Heading one\n[back](../README.md#title)\n")
    (tmp_path / "docs" / "stray.md").write_text("# Stray\n" + "line\n" * DOC_MAX_LINES)
    (tmp_path / "README.md").write_text(
        "# Title\n\n[a](docs/a.md#heading-one) [gone](docs/gone.md) ![pic](docs/images/x.png)\n"
        "[no anchor](docs/a.md#heading-two) [web](https://example.org/x.md)\n\nTwo lines more, so that a.md is shorter.\n"
    )
    assert broken_links(tmp_path / "README.md") == [
        "README.md: docs/gone.md (no such file)",
        "README.md: docs/images/x.png (no such file)",
        "README.md: docs/a.md#heading-two (no heading with that anchor in a.md)",
    ]
    assert broken_links(tmp_path / "docs" / "a.md") == []
    assert layout_problems(tmp_path) == [
        "docs/stray.md is not linked from README.md",
        f"docs/stray.md has {DOC_MAX_LINES + 1} lines, more than {DOC_MAX_LINES}",
    ]
