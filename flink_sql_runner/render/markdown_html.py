"""The Markdown this package renders (a plan's, render/markdown.py; its previews',
render/preview.py) as HTML for the page, with Python-Markdown: GitHub's tables and fenced code
blocks (`tables`, `fenced_code`).

No HTML written in the Markdown reaches the page but the few constructs the renderers write
themselves, whole lines of their own: the comment that marks a plan (`MARKER`), and the
`<details><summary>...</summary>` and `</details>` that fold a section away (the summary's text
escaped again). Any other tag, comment or entity-looking text is shown as text, and no link or
image is made: the renderers write none, so a `[...](javascript:...)` that got into the text is
text too. Code blocks keep their language as a class (`language-diff`; the lineage diagram's is
`language-mermaid`, drawn or left as code by the page).
"""

from __future__ import annotations

import html
import re
from typing import Any

import markdown
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString

from flink_sql_runner.render.markdown import MARKER

#: The class of the lineage diagram's code block in the HTML (a fenced `mermaid` block).
MERMAID_CLASS = "language-mermaid"
#: A section folded away, as the renderers write it: its summary is escaped Markdown text.
_DETAILS = re.compile(r"<details><summary>(.*)</summary>")
#: A backslash escape of Markdown: the sign it escapes.
_ESCAPE = re.compile(r"\\(.)")
#: Signs the renderers escape in text (render/markdown.py's `text`) that Python-Markdown does not
#: take as escapable by default.
_MORE_ESCAPED = ("<", "~", "&", "|")
#: The inline patterns that make HTML, links or images of Markdown text.
_NO_INLINE = (
    "html",
    "reference",
    "link",
    "image_link",
    "image_reference",
    "short_reference",
    "short_image_ref",
    "autolink",
    "automail",
)


class _OwnHtml(Preprocessor):
    """Python-Markdown's raw HTML blocks, for the lines the renderers write alone: each is put
    aside as HTML; every other line stays Markdown (its HTML shown as text)."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        for line in lines:
            own = _own_html(line)
            if own is None:
                out.append(line)
            else:
                out += ["", self.md.htmlStash.store(own), ""]
        return out


class _CellPipes(Treeprocessor):
    """A `|` escaped in a table cell is a `|`, in its code spans too, as GitHub reads it (the
    renderers escape it there so that the cell is not split)."""

    def run(self, root: Any) -> None:
        for cell in (*root.iter("td"), *root.iter("th")):
            for found in cell.iter("code"):
                if found.text and "\\|" in found.text:
                    found.text = AtomicString(found.text.replace("\\|", "|"))


def _own_html(line: str) -> str | None:
    if line == MARKER or line == "</details>":
        return line
    found = _DETAILS.fullmatch(line)
    if found is None:
        return None
    # Text, whether the renderer escaped it for Markdown or as HTML: as it reads, escaped again.
    summary = html.escape(html.unescape(_ESCAPE.sub(r"\1", found.group(1))), quote=False)
    return f"<details><summary>{summary}</summary>"


def _converter() -> Any:
    md = markdown.Markdown(extensions=["tables", "fenced_code"], output_format="html")
    md.preprocessors.deregister("html_block")
    md.preprocessors.register(_OwnHtml(md), "own_html", 20)
    md.treeprocessors.register(_CellPipes(md), "cell_pipes", 15)
    for name in _NO_INLINE:
        md.inlinePatterns.deregister(name)
    md.ESCAPED_CHARS.extend(c for c in _MORE_ESCAPED if c not in md.ESCAPED_CHARS)
    return md


def markdown_html(text: str) -> str:
    """`text`, Markdown as this package renders it, as HTML: raw HTML escaped but for the
    renderers' own lines (the module's docstring)."""
    return str(_converter().convert(text))
