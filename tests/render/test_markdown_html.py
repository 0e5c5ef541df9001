"""The package's Markdown as HTML for the page (render/markdown_html.py): tables and fenced code
as GitHub shows them; no HTML of the Markdown's text reaches the page but the lines the
renderers write themselves, and no link or image is made."""

from __future__ import annotations

import re

import pytest

from flink_sql_runner.render.markdown import MARKER, code, text
from flink_sql_runner.render.markdown_html import MERMAID_CLASS, markdown_html

ATTACKS = (
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<a href='javascript:alert(1)'>x</a>",
    "<!-- a comment -->",
    "<details open><summary>mine</summary>",
    "</details>",
    "[click](javascript:alert(1))",
    "![img](http://example.com/x.png)",
    "<http://example.com>",
    "<b>bold</b>",
)


def test_a_table_is_a_table_with_its_escapes_undone() -> None:
    markdown = "\n".join([
        "| field | old -> new | kind |",
        "|---|---|---|",
        f"| {code('sql')} | {code('a | b')} -> {code('`x`')} | {text('a <b> | *c* & _d_')} |",
    ])  # fmt: skip
    assert markdown_html(markdown) == "\n".join([
        "<table>",
        "<thead>",
        "<tr>",
        "<th>field</th>",
        "<th>old -&gt; new</th>",
        "<th>kind</th>",
        "</tr>",
        "</thead>",
        "<tbody>",
        "<tr>",
        "<td><code>sql</code></td>",
        "<td><code>a | b</code> -&gt; <code>`x`</code></td>",
        "<td>a &lt;b&gt; | *c* &amp; _d_</td>",
        "</tr>",
        "</tbody>",
        "</table>",
    ])  # fmt: skip


def test_a_diff_is_a_code_block_of_its_language_with_its_text_escaped() -> None:
    markdown = "`sql`:\n\n````diff\n SELECT a\n-FROM <t>\n+FROM ```u``` & v\n````\n"
    assert markdown_html(markdown) == (
        "<p><code>sql</code>:</p>\n"
        '<pre><code class="language-diff"> SELECT a\n'
        "-FROM &lt;t&gt;\n"
        "+FROM ```u``` &amp; v\n"
        "</code></pre>"
    )


def test_the_lineage_diagram_is_code_the_page_finds_by_its_class() -> None:
    shown = markdown_html('```mermaid\nflowchart LR\n  job1["a&lt;b"]\n```\n')
    assert shown == (
        f'<pre><code class="{MERMAID_CLASS}">flowchart LR\n'
        "  job1[&quot;a&amp;lt;b&quot;]\n</code></pre>"
    )


def test_the_renderers_own_lines_are_html_and_a_summary_only_text() -> None:
    markdown = "\n".join([
        MARKER,
        "### flink-sql-runner plan: 1 job",
        "",
        f"<details><summary>{text('2 jobs <b>x</b> & y_z')}</summary>",
        "",
        "| a |",
        "|---|",
        "| b |",
        "",
        "</details>",
        "",
        "<details><summary>Preview of a: 1 &lt;img src=x onerror=1&gt;</summary>",
        "",
        "</details>",
    ])  # fmt: skip
    shown = markdown_html(markdown)
    assert shown.startswith(MARKER + "\n<h3>flink-sql-runner plan: 1 job</h3>\n")
    assert "<details><summary>2 jobs &lt;b&gt;x&lt;/b&gt; &amp; y_z</summary>\n<table>" in shown
    assert "<details><summary>Preview of a: 1 &lt;img src=x onerror=1&gt;</summary>" in shown
    assert shown.count("</details>") == 2 and "<img" not in shown


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("where", ["paragraph", "cell", "heading", "item", "line"])
def test_html_links_and_images_in_the_markdown_are_shown_as_text(attack: str, where: str) -> None:
    markdown = {
        "paragraph": f"Before {attack} after.",
        "cell": f"| a | b |\n|---|---|\n| {attack} | x |",
        "heading": f"#### {attack}",
        "item": f"1. {attack}",
        "line": attack,
    }[where]
    shown = markdown_html(markdown)
    if where == "line" and attack == "</details>":
        assert shown == "</details>", "a line the renderers write: closes what they opened"
        return
    for tag in ("<script", "<img", "<a ", "<a>", "<!--", "<b>", "<details", "</details>"):
        assert tag not in shown, shown
    assert not re.search(r"<[a-z0-9]+[^>]*\b(href|src|on[a-z]+)=", shown), shown
    assert attack.replace("<", "&lt;").replace(">", "&gt;") in shown.replace("&quot;", '"')
