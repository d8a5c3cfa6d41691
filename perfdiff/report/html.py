"""``--format html``: the markdown report as one self-contained HTML file.

Why render the markdown rather than write every section again: the HTML report must say what
the markdown report says, number for number; rendering the same text (CommonMark + tables, via
markdown-it-py, which rich already depends on) keeps one source of wording. Raw HTML in the
markdown is disabled, so a kernel name holding ``<script>`` is text, never markup (names are
also escaped for markdown by ``format.md_cell``).

What HTML adds: figures inline as SVG (no separate files, no network fetch: a
Content-Security-Policy forbids any), the detailed table holding every row, sortable by any
column and filterable by a few lines of vanilla JavaScript, and print styles.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from perfdiff.analysis.model import Comparison
from perfdiff.report.figure_links import FigureLink
from perfdiff.report.markdown import render_markdown

FIGURE_SCHEME = "perfdiff-figure:"


@dataclass(frozen=True)
class InlineFigure:
    """A figure for the HTML report: its key, its title (the finding) and its SVG text."""

    key: str
    title: str
    svg: str


_CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       margin: 0 auto; max-width: 1200px; padding: 1rem 1.5rem 3rem; color: #1d1d1d; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; border-bottom: 1px solid #ddd;
  padding-bottom: .2rem; margin-top: 2rem; } h3 { font-size: 1.05rem; }
code { font: 12px/1.3 ui-monospace, "DejaVu Sans Mono", monospace; background: #f4f4f4;
       padding: 0 .2em; border-radius: 3px; word-break: break-all; }
blockquote { margin: .6rem 0; padding: .3rem .8rem; border-left: 4px solid #e0a100;
             background: #fff8e5; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 12px; margin: .5rem 0; }
th, td { border: 1px solid #d8d8d8; padding: 2px 6px; vertical-align: top; }
th { background: #f2f2f2; position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #fafafa; }
#detail th { cursor: pointer; user-select: none; white-space: nowrap; }
#detail th[aria-sort="ascending"]::after { content: " \\25B2"; }
#detail th[aria-sort="descending"]::after { content: " \\25BC"; }
#detail-tools { margin: .5rem 0; }
#detail-filter { width: 28rem; max-width: 100%; padding: 3px 6px; font: inherit; }
figure.pd-figure { margin: 1rem 0; }
figure.pd-figure svg { max-width: 100%; height: auto; }
figure.pd-figure figcaption { font-size: 12px; color: #555; }
#contents { font-size: 12px; margin: .4rem 0; }
.pd-note { padding: .5rem .8rem; background: #eef4fb; border-left: 4px solid #1f6fb4; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  #detail-tools { display: none; }
  #detail tr[hidden] { display: table-row; }
  table { font-size: 7pt; } th { position: static; }
  .table-wrap { overflow: visible; }
  figure.pd-figure, table, blockquote { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
}
"""

# Sort by a column (numbers as numbers: "1,234.5", "+0.3 [..]", "<0.001"; "n/a" last in
# either direction) and filter rows by text. No library: it must work offline, from a file.
_JS = """
(function () {
  "use strict";
  var table = document.getElementById("detail");
  if (!table || !table.tBodies.length) { return; }
  var body = table.tBodies[0];
  var tools = document.createElement("div");
  tools.id = "detail-tools";
  var input = document.createElement("input");
  input.type = "search";
  input.id = "detail-filter";
  input.placeholder = "Filter rows: function, metric, device, verdict…";
  input.setAttribute("aria-label", "Filter the detailed table");
  var shown = document.createElement("span");
  tools.appendChild(input);
  tools.appendChild(document.createTextNode(" "));
  tools.appendChild(shown);
  table.parentNode.insertBefore(tools, table);
  function count() {
    var n = 0;
    Array.prototype.forEach.call(body.rows, function (r) { if (!r.hidden) { n += 1; } });
    shown.textContent = n + " of " + body.rows.length + " rows";
  }
  input.addEventListener("input", function () {
    var needle = input.value.toLowerCase();
    Array.prototype.forEach.call(body.rows, function (r) {
      r.hidden = needle !== "" && r.textContent.toLowerCase().indexOf(needle) < 0;
    });
    count();
  });
  function number(text) {
    var m = text.trim().replace(/,/g, "").replace(/^</, "").match(/^[+-]?(\\d+\\.?\\d*|\\.\\d+)/);
    return m ? parseFloat(m[0]) : null;
  }
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.tabIndex = 0;
    th.title = "Sort by this column";
    function sort() {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].textContent, y = b.cells[col].textContent;
        var nx = number(x), ny = number(y);
        if (nx === null && ny !== null) { return 1; }
        if (ny === null && nx !== null) { return -1; }
        var c = (nx !== null) ? nx - ny : x.localeCompare(y);
        return ascending ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
    });
  });
  // report.html#filter=TEXT opens the report filtered (a link to share)
  if (location.hash.indexOf("#filter=") === 0) {
    try { input.value = decodeURIComponent(location.hash.slice(8)); }
    catch (e) { input.value = location.hash.slice(8); }  // a stray "%": the text as typed
    input.dispatchEvent(new Event("input"));
  }
  count();
  table.setAttribute("data-ready", "true");
}());
"""

_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:")
_SVG_PROLOGUE = re.compile(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.DOTALL)
_PLACEHOLDER = re.compile(r"<p>\x00figure:([a-z-]+)\x00</p>")


def inline_svg(svg: str, prefix: str = "") -> str:
    """An SVG file's text fit to sit inside HTML: no XML prologue or DOCTYPE, and with a
    ``prefix``, every id (and every reference to one) made its own, since ids are unique
    per HTML document and each matplotlib SVG numbers its elements from 1."""
    svg = _SVG_PROLOGUE.sub("", svg, count=1)
    if not prefix:
        return svg
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', svg)
    svg = re.sub(r'\b((?:xlink:)?href)="#([^"]+)"', rf'\1="#{prefix}-\2"', svg)
    return re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", svg)


def _markdown_to_html(text: str) -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(_renderer: object, tokens: Sequence[object], idx: int, _options: object,
              _env: object) -> str:
        token = tokens[idx]
        src = str(token.attrGet("src") or "")  # type: ignore[attr-defined]
        if src.startswith(FIGURE_SCHEME):
            return f"\x00figure:{src[len(FIGURE_SCHEME):]}\x00"
        return ""  # the report links nothing else: nothing is fetched

    md.add_render_rule("image", image)
    return str(md.render(text))


def _figure_html(figure: InlineFigure) -> str:
    svg = inline_svg(figure.svg, prefix=f"f-{figure.key}")
    return (f'<figure class="pd-figure" id="figure-{figure.key}">{svg}'
            f"<figcaption>{html.escape(figure.title)}</figcaption></figure>")


def _mark_detail_table(body: str) -> str:
    """The detailed table gets id="detail" (sorting and filtering hook onto it)."""
    heading = body.find("<h3>Detailed comparison table</h3>")
    if heading < 0:
        return body
    start = body.find("<table>", heading)
    if start < 0:
        return body
    return body[:start] + '<table id="detail">' + body[start + len("<table>"):]


_H2 = re.compile(r"<h2>(?P<text>.*?)</h2>", re.DOTALL)


def section_id(text: str) -> str:
    """The anchor of a section heading: ``4. Kernel inventory changes`` -> ``kernel-inventory-
    changes`` (numbers dropped, so a link survives a renumbering)."""
    plain = html.unescape(re.sub(r"<[^>]+>", "", text)).lower()
    words = re.findall(r"[a-z0-9]+", plain)
    return "-".join(w for w in words if not w.isdigit()) or "section"


def _with_contents(body: str) -> str:
    """Each ``<h2>`` gets an id, and a one-line table of contents links them; it sits above
    the first section so that it costs the first screen one line."""
    entries: list[tuple[str, str]] = []

    def anchor(match: re.Match[str]) -> str:
        text = match.group("text")
        ident = section_id(text)
        if any(ident == seen for seen, _ in entries):
            ident = f"{ident}-{len(entries)}"
        entries.append((ident, text))
        return f'<h2 id="{ident}">{text}</h2>'

    body = _H2.sub(anchor, body)
    if not entries:
        return body
    links = " · ".join(f'<a href="#{ident}">{re.sub(r"<[^>]+>", "", text)}</a>'
                       for ident, text in entries)
    nav = f'<nav id="contents" aria-label="Contents">Contents: {links}</nav>\n'
    first = body.find(f'<h2 id="{entries[0][0]}">')
    return body[:first] + nav + body[first:]


def _mark_first_finding(body: str) -> str:
    """The headline's first finding gets id="first-finding" (the first screen must show it)."""
    start = body.find('<h2 id="headline">')
    if start < 0:
        return body
    item = body.find("<li>", body.find("<ol>", start))
    if item < 0 or body.find("<ol>", start) < 0:
        return body
    return body[:item] + '<li id="first-finding">' + body[item + len("<li>"):]


def _wrap_tables(body: str) -> str:
    body = re.sub(r"<table(?P<attrs>[^>]*)>", r'<div class="table-wrap"><table\g<attrs>>', body)
    return body.replace("</table>", "</table></div>")


def render_html(comparison: Comparison, figures: Sequence[InlineFigure] = (),
                note: str = "") -> str:
    """The report as one HTML document (every detailed-table row; figures inline).

    ``note`` (plain text) is shown at the top, e.g. why there are no figures.
    """
    by_key = {f.key: f for f in figures}
    links = {f.key: FigureLink(FIGURE_SCHEME + f.key, f.title) for f in figures}
    text = render_markdown(comparison, max_rows=None, figures=links)
    body = _markdown_to_html(text)
    body = _PLACEHOLDER.sub(
        lambda m: _figure_html(by_key[m.group(1)]) if m.group(1) in by_key else "", body)
    body = _wrap_tables(_mark_detail_table(body))
    body = _mark_first_finding(_with_contents(body))
    title = (f"perfdiff: {comparison.normal.label} vs {comparison.abnormal.label}")
    note_html = f'<p class="pd-note">{html.escape(note)}</p>\n' if note else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="perfdiff">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{_CSS}</style>\n</head>\n<body>\n{note_html}{body}"
        f"<script>{_JS}</script>\n</body>\n</html>\n"
    )
