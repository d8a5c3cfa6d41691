"""``--format html``: one self-contained file saying what the markdown report says.

Checked here without a browser: escaping, no reference that a browser would fetch, every
detailed-table row, figures inline. tests/report/test_html_browser.py opens it in Chromium.
"""

from __future__ import annotations

import re
from dataclasses import replace

from perfdiff.report.figure_links import FigureLink
from perfdiff.report.html import InlineFigure, inline_svg, render_html, section_id
from perfdiff.report.markdown import render_markdown
from tests import report_factories as rf

EVIL = "evil<script>alert(1)</script>|`tick`_x_ & *star*"
SVG = ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'
       '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x">\n'
       '<svg xmlns="http://www.w3.org/2000/svg"><text>forest</text></svg>')


def _evil_comparison():  # type: ignore[no-untyped-def]
    rows = tuple(replace(r, function=EVIL) if r.function == "gemm_kernel" else r
                 for r in rf.comparison().rows)
    return rf.comparison(rows=rows, findings=(rf.finding(EVIL),),
                         normal=replace(rf.comparison().normal, label="<b>base</b>"))


def test_user_text_is_never_markup() -> None:
    page = render_html(_evil_comparison())
    assert "<script>alert" not in page
    assert "<b>base</b>" not in page
    assert "evil&lt;script&gt;alert(…)&lt;/script&gt;|`tick`_x_ &amp; *star*" in page
    assert page.count("<script>") == 1  # ours


def test_nothing_is_fetched() -> None:
    page = render_html(rf.comparison(), [InlineFigure("what-changed", "t", SVG)])
    assert "default-src 'none'" in page  # the page's own policy forbids any fetch
    assert not re.search(r"""\b(src|href)\s*=\s*["'](?!data:|#)""", page)
    assert "<img" not in page and "@import" not in page and "url(" not in page


def test_figures_are_inline_where_the_markdown_links_them() -> None:
    page = render_html(rf.comparison(), [InlineFigure("what-changed", "Finding <1>", SVG),
                                         InlineFigure("inventory", "Inventory", SVG)])
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    forest = page.index('id="figure-what-changed"')
    assert page.index("Key Findings") < forest < page.index("Recommendation")
    assert page.index("4. Kernel inventory") < page.index('id="figure-inventory"')
    assert "<figcaption>Finding &lt;1&gt;</figcaption>" in page


def test_detail_table_holds_every_row_and_is_marked_for_sorting() -> None:
    many = tuple(rf.row(f"kernel_{i}", verdict="no change") for i in range(45))
    comparison = rf.comparison(rows=many)
    page = render_html(comparison)
    assert page.count('<table id="detail">') == 1
    detail = page[page.index('<table id="detail">'):]
    detail = detail[:detail.index("</table>")]
    assert detail.count("<tr>") == 45 + 1  # header + every row (markdown shows 30)
    assert "more rows not shown" not in page


def test_without_figures_a_note_says_why() -> None:
    page = render_html(rf.comparison(), note="No figures: they need matplotlib.")
    assert '<p class="pd-note">No figures: they need matplotlib.</p>' in page
    assert "<svg" not in page


def test_html_has_the_markdown_reports_sections() -> None:
    page = render_html(rf.comparison())
    for line in render_markdown(rf.comparison()).splitlines():
        if line.startswith("## "):
            assert f'<h2 id="{section_id(line[3:])}">{line[3:]}</h2>' in page
            assert f'href="#{section_id(line[3:])}"' in page  # the table of contents


def test_inline_svg_drops_the_prologue_only() -> None:
    assert inline_svg(SVG).startswith("<svg ")


def test_ids_are_unique_across_inline_figures() -> None:
    svg = ('<svg><defs><path id="m1"/><clipPath id="p1"/></defs><g id="axes_1" '
           'clip-path="url(#p1)"><use xlink:href="#m1"/></g></svg>')
    page = render_html(rf.comparison(), [InlineFigure("what-changed", "a", svg),
                                         InlineFigure("inventory", "b", svg)])
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert 'clip-path="url(#f-inventory-p1)"' in page
    assert 'xlink:href="#f-what-changed-m1"' in page


def test_markdown_links_each_figure_where_it_belongs() -> None:
    comparison = rf.comparison(devices=(
        *rf.comparison().devices, replace(rf.comparison().devices[0], device="GPU 1")))
    keys = ("where-it-ran", "cycles", "what-changed", "why", "inventory")
    links = {k: FigureLink(f"../figs dir/{k}.png", f"{k} [finding] <x>") for k in keys}
    text = render_markdown(comparison, figures=links)
    plain = render_markdown(comparison)
    images = [line for line in text.splitlines() if line.startswith("![")]
    assert len(images) == 5
    assert images[0] == r"![where-it-ran \[finding\] \<x\>](../figs%20dir/where-it-ran.png)"
    sections = ["## 1.", "## 2.", "### Key Findings", "### Key Findings", "## 4."]
    order = [text.index(f"figs%20dir/{k}.png") for k in keys]
    assert order == sorted(order)
    for key, heading in zip(keys, sections, strict=True):
        assert text.index(heading) < text.index(f"{key}.png")
    assert text.index("why.png") < text.index("**Recommendation")
    # the figures add image lines and blank lines, nothing else
    without = re.sub(r"!\[[^\n]*\)\n\n?", "", text)
    assert re.sub(r"\n+", "\n", without) == re.sub(r"\n+", "\n", plain)
