"""The HTML report in a real browser: headless Chromium opens it, with no console message.

Why Chromium from the distribution and its command line (no webdriver, no new dependency):
``--enable-logging=stderr --v=0`` prints every console message (errors, CSP violations, failed
fetches) as a ``CONSOLE`` line; a page that is quiet there ran its script and fetched nothing.
A deliberate error page checks that the detector itself sees errors. The screenshot is saved
(``PERFDIFF_SCREENSHOT=path`` keeps a copy, e.g. for the docs). Skipped, with the reason
printed, where no Chromium is installed (scripts/test.sh installs Debian's when it can).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Runner

REPO = Path(__file__).resolve().parents[2]
GPT = (REPO / "fixtures" / "gpt-infer-normal.json.gz",
       REPO / "fixtures" / "gpt-infer-contended.json.gz")
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0")
CONSOLE = re.compile(r":CONSOLE[:(]")


def _browser() -> str:
    found = os.environ.get("PERFDIFF_CHROMIUM") or next(
        (path for name in NAMES if (path := shutil.which(name))), None)
    if not found:
        pytest.skip("no Chromium found (apt-get install chromium, or set PERFDIFF_CHROMIUM)")
    return found


def _open(page: Path, tmp: Path, *args: str,
          fragment: str = "") -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run(
        [_browser(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri() + fragment],
        capture_output=True, text=True, timeout=120, check=False)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if CONSOLE.search(line)]


def test_the_console_check_sees_errors(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><title>x</title><script>console.error('deliberate');"
                    "missing();</script>", encoding="utf-8")
    shot = tmp_path / "bad.png"
    done = _open(page, tmp_path, f"--screenshot={shot}")
    lines = console_lines(done.stderr)
    assert any("deliberate" in line for line in lines), done.stderr
    assert any("missing is not defined" in line for line in lines), done.stderr


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gpt-infer pair's HTML report, written by the command users run."""
    if not all(p.exists() for p in GPT):
        pytest.skip("gpt-infer fixtures not found")
    out = tmp_path_factory.mktemp("html") / "report.html"
    from perfdiff.cli.app import main

    argv = ["perfdiff", "compare", str(GPT[0]), str(GPT[1]), "--format", "html", "-o", str(out)]
    with pytest.MonkeyPatch.context() as mp:
        import sys

        mp.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as exited:
            main()
    assert exited.value.code in (0, None)
    return out


def test_report_renders_without_console_messages(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    done = _open(report, tmp_path, "--window-size=1280,2400", f"--screenshot={shot}")
    assert console_lines(done.stderr) == [], "\n".join(console_lines(done.stderr))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("PERFDIFF_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
    print(f"screenshot: {shot}")


def test_the_detail_table_filters_in_the_browser(report: Path, tmp_path: Path) -> None:
    bad = _open(report, tmp_path, "--dump-dom", fragment="#filter=%E0%A4%A")  # malformed
    assert console_lines(bad.stderr) == []
    done = _open(report, tmp_path, "--dump-dom", fragment="#filter=nvjet_sm90")
    assert console_lines(done.stderr) == []
    dom = done.stdout
    assert 'id="detail" data-ready="true"' in dom
    shown = re.search(r"(\d+) of (\d+) rows", dom)
    assert shown, "the filter's row count is missing: the script did not run"
    assert 0 < int(shown.group(1)) < int(shown.group(2))


def test_without_matplotlib_html_has_tables_and_a_note(
        run_cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    if not all(p.exists() for p in GPT):
        pytest.skip("gpt-infer fixtures not found")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "plain.html"
    code, _, err = run_cli("compare", str(GPT[0]), str(GPT[1]), "--format", "html", "-o",
                           str(out))
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    assert "pip install &#x27;perfdiff[plots]&#x27;" in page and "<svg" not in page
    done = _open(out, tmp_path, f"--screenshot={tmp_path / 'plain.png'}")
    assert console_lines(done.stderr) == []


def test_report_prints_to_pdf(report: Path, tmp_path: Path) -> None:
    """Print styles apply (the filter box hidden, every row shown): the browser prints it."""
    pdf = tmp_path / "report.pdf"
    done = _open(report, tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}")
    assert console_lines(done.stderr) == []
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-" and len(data) > 50_000
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 3  # several pages


def test_the_detail_table_sorts_in_the_browser(report: Path, tmp_path: Path) -> None:
    """A copy of the report clicks "q-value" once (ascending), then twice on "Suspicion Score"
    (descending); the dumped DOM must list the rows in those orders, "n/a" last."""
    clicks = ("<script>(function () { var h = document.querySelectorAll('#detail th');"
              "var at = function (t) { return Array.prototype.filter.call(h, function (x) {"
              " return x.textContent.trim() === t; })[0]; };"
              "at('q-value').click(); window.qOrder = Array.prototype.map.call("
              "document.querySelectorAll('#detail tbody tr'), function (r) {"
              " return r.cells[17].textContent; }).join('|');"
              "at('Suspicion Score').click(); at('Suspicion Score').click();"
              "document.body.setAttribute('data-q-order', window.qOrder); }());</script>")
    page = tmp_path / "clicked.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", clicks + "</body>"),
                    encoding="utf-8")
    done = _open(page, tmp_path, "--dump-dom")
    assert console_lines(done.stderr) == []
    dom = done.stdout
    q_order = re.search(r'data-q-order="([^"]*)"', dom)
    assert q_order, "the click script did not run"
    q = html.unescape(q_order.group(1)).split("|")
    numbers = [float(v.lstrip("<")) for v in q if v != "n/a"]  # "<0.001" ties with 0.001
    assert numbers == sorted(numbers) and numbers, q[:5]
    assert all(v == "n/a" for v in q[len(numbers):])  # n/a last
    body = dom[dom.index('<table id="detail"'):]
    body = body[body.index("<tbody>"):body.index("</tbody>")]
    scores = [float(m.replace(",", "")) for m in re.findall(
        r"<tr[^>]*>(?:\s*<td[^>]*>[^<]*</td>){3}\s*<td[^>]*>([^<]*)</td>", body)]
    assert len(scores) > 100 and scores == sorted(scores, reverse=True)


GPT2 = (REPO / "fixtures" / "gpt2" / "gpt2-generate-eager.json.gz",
        REPO / "fixtures" / "gpt2" / "gpt2-generate-sdpa.json.gz")
# Measures, after load, where the first finding sits in the viewport and where the fragment's
# target landed; written onto <body> so that --dump-dom shows it (the report allows inline
# scripts; nothing is fetched).
_PROBE = """<script>
window.addEventListener('load', function () { setTimeout(function () {
  var b = document.body, f = document.getElementById('first-finding').getBoundingClientRect();
  b.setAttribute('data-first-top', String(Math.round(f.top)));
  b.setAttribute('data-first-bottom', String(Math.round(f.bottom)));
  b.setAttribute('data-view-height', String(window.innerHeight));
  var id = decodeURIComponent(location.hash.slice(1));
  if (id) {
    b.setAttribute('data-target-top',
                   String(Math.round(document.getElementById(id).getBoundingClientRect().top)));
    b.setAttribute('data-scroll', String(Math.round(window.scrollY)));
  }
}, 100); });
</script>"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gpt2 eager-vs-SDPA HTML report (written by the command users run), with _PROBE."""
    if not all(p.exists() for p in GPT2):
        pytest.skip("gpt2 fixtures not found")
    folder = tmp_path_factory.mktemp("layout")
    out = folder / "report.html"
    from perfdiff.cli.app import main

    argv = ["perfdiff", "compare", str(GPT2[0]), str(GPT2[1]), "--format", "html", "-o",
            str(out)]
    with pytest.MonkeyPatch.context() as mp:
        import sys

        mp.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as exited:
            main()
    assert exited.value.code in (0, None)
    page = out.read_text(encoding="utf-8")
    probed = folder / "probed.html"
    probed.write_text(page.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    return probed


def _body_numbers(dom: str) -> dict[str, int]:
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:500]
    return {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(-?\d+)"', body.group(1))}


def test_the_first_finding_is_on_the_first_screen_at_1400x900(probed: Path,
                                                               tmp_path: Path) -> None:
    shot = tmp_path / "first-screen.png"
    taken = _open(probed, tmp_path, "--window-size=1400,900", f"--screenshot={shot}")
    assert console_lines(taken.stderr) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    done = _open(probed, tmp_path, "--window-size=1400,900", "--virtual-time-budget=3000",
                 "--dump-dom")
    assert console_lines(done.stderr) == [], "\n".join(console_lines(done.stderr))
    at = _body_numbers(done.stdout)
    assert 0 < at["first-top"] < at["first-bottom"] <= at["view-height"], at
    assert "[replaced] GEMM + softmax → attention" in html.unescape(done.stdout)


def test_contents_links_land_on_their_sections(probed: Path, tmp_path: Path) -> None:
    page = probed.read_text(encoding="utf-8")
    nav = re.search(r'<nav id="contents"[^>]*>(.*?)</nav>', page, re.DOTALL)
    assert nav, "no table of contents"
    targets = re.findall(r'href="#([^"]+)"', nav.group(1))
    assert "headline" in targets and "kernel-inventory-changes" in targets
    for target in targets:
        assert f'<h2 id="{target}">' in page
    # a section far down the page: the browser scrolls it to the top of the viewport
    done = _open(probed, tmp_path, "--window-size=1400,900", "--virtual-time-budget=3000",
                 "--dump-dom", fragment="#kernel-inventory-changes")
    at = _body_numbers(done.stdout)
    assert at["scroll"] > 0 and abs(at["target-top"]) <= 2, at
