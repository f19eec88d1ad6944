"""Walk every dashboard page in Chromium, as a newcomer does after importing the shipped bundle.

Shared by the browser test (tests/test_dashboard_walk.py: screenshots to an ignored folder, the
checks asserted) and docs/screenshots/capture.py (the README's copies refreshed). One place
knows the pages, how to tell a page has finished drawing, and what is checked on each:

- no exception box (``stException``);
- no raw ``None`` in the page's text;
- no horizontal scroll: the page's ``scrollWidth`` is at most its ``clientWidth`` (the
  document and Streamlit's own scrolling main section), asserted at 1024 px;
- the HTML report at A4 print width (794 px at 96 dpi, print media): no horizontal scroll.

Bundle run ids in a fresh database: 1 mlp, 2 pointwise_chain, 3 graph_breaks, 4 varying_seq
(sweep), 5-7 mlp repeats, 8 bert_base.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from acceptance.dashboard_health import NotHealthy, free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "data" / "h200_bundle.json"
CHROMIUM = os.environ.get("COMPILELAB_CHROMIUM") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
WIDTHS = (1024, 1440)
A4_PX = 794  # 210 mm at 96 dpi
# (name, path and query, plotly charts the page draws)
PAGES: list[tuple[str, str, int]] = [
    ("runs", "runs?selected=1,2", 0),
    ("new_run", "new", 0),
    ("compare_mlp", "compare?runs=1", 8),
    ("compare_mlp_pointwise", "compare?runs=1,2", 8),
    ("compare_graph_breaks", "compare?runs=3", 8),
    ("compare_sweep_and_bert", "compare?runs=4,8", 10),
    ("sweep_varying_seq", "sweep?runs=4", 3),
    ("review_repeat_mlp", "review?tag=repeat-mlp", 1),
]
REPORT_RUNS = (1, 2)
_OVERFLOW_JS = """() => [document.scrollingElement,
  ...document.querySelectorAll('[data-testid=stMain], [data-testid=stAppViewContainer]')]
  .filter(Boolean).map(e => ({scroll: e.scrollWidth, client: e.clientWidth}))"""


@contextlib.contextmanager
def dashboard(tmp: Path | None = None) -> Iterator[tuple[str, str]]:
    """(base URL, database URL) of a headless dashboard on a fresh SQLite file holding the
    shipped bundle, no worker (a newcomer's first look)."""
    sys.path.insert(0, str(ROOT))
    import engine.spec  # noqa: F401  (installs the validator bundle imports check specs with)
    from storage import import_bundle, open_database

    tmp = tmp or Path(tempfile.mkdtemp(prefix="compilelab-walk-"))
    url = f"sqlite:///{tmp / 'lab.db'}"
    db = open_database(url)
    import_bundle(db, BUNDLE.read_text())
    db.dispose()
    port = free_port()
    log = tmp / "streamlit.log"
    env = {**os.environ, "COMPILELAB_DB": url, "PYTHONPATH": str(ROOT)}
    env.pop("COMPILELAB_PLUGIN_DIR", None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"),
             "--server.headless", "true", "--server.port", str(port),
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, output=lambda: log.read_text(errors="replace"))
        yield base, url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def wait_drawn(page: Any, charts: int, timeout_ms: int = 60_000) -> None:
    """Until the script has finished and ``charts`` plotly plots have drawn their SVG."""
    page.locator("[data-testid=stApp]").wait_for(timeout=timeout_ms)
    if charts:
        page.locator(".js-plotly-plot .main-svg").nth(charts - 1).wait_for(timeout=timeout_ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stSkeleton]') && document.querySelector("
        "'[data-testid=stApp]')?.dataset.testScriptState === 'notRunning'", timeout=timeout_ms)
    page.wait_for_timeout(1200)  # plotly's transitions and the data grid's canvas


def full_height(page: Any) -> None:
    """Streamlit scrolls inside its main section, not the document, so a full-page screenshot
    shows one viewport: grow the viewport to the content's height instead."""
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll("
        "'[data-testid=stMain], [data-testid=stAppViewContainer], section.main')]"
        ".map(e => e.scrollHeight), document.body.scrollHeight)")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": int(height) + 40})
    page.wait_for_timeout(1200)  # charts re-layout to the new size


def problems(page: Any, check_overflow: bool) -> list[str]:
    """What is wrong on the page now: exception boxes, raw None, horizontal scroll."""
    found = []
    errors = page.locator("[data-testid=stException]").all_inner_texts()
    if errors:
        found.append(f"exception: {errors[:2]}")
    text = page.locator("[data-testid=stApp]").inner_text()
    if any(word.strip(".,:;()") == "None" for word in text.split()):
        line = next(x for x in text.splitlines() if "None" in x)
        found.append(f"raw None in the page: {line[:120]!r}")
    if check_overflow:
        for box in page.evaluate(_OVERFLOW_JS):
            if box["scroll"] > box["client"] + 1:
                found.append(f"horizontal scroll: scrollWidth {box['scroll']} > clientWidth "
                             f"{box['client']}")
    return found


def visit(browser: Any, base: str, path: str, charts: int, width: int,
          shot: Path | None = None) -> list[str]:
    """Open one page at ``width`` px, wait until drawn, screenshot, return its problems."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    try:
        page.goto(f"{base}/{path}")
        wait_drawn(page, charts)
        found = problems(page, check_overflow=width <= 1024)
        if shot is not None:
            full_height(page)
            page.screenshot(path=str(shot), full_page=True)
        return found
    finally:
        page.close()


def report_html(db_url: str, run_ids: tuple[int, ...] = REPORT_RUNS) -> str:
    """The HTML report exactly as the compare page's download builds it."""
    from dashboard import charts, report, safe
    from dashboard.verdict import verdict_for_run
    from storage import open_database, queries

    db = open_database(db_url)
    try:
        d = safe.plotly_names(queries.load_runs(db, list(run_ids)))
    finally:
        db.dispose()
    figures = charts.compare_figures(d)
    verdicts = [verdict_for_run(d["variants"], rid) for rid in run_ids]
    return report.build_report(d["runs"], d["variants"], figures, verdicts,
                               graph_breaks=d["graph_breaks"], recompiles=d["recompiles"],
                               title="Compile Lab: runs " + ", ".join(f"#{i}" for i in run_ids))


def visit_report(browser: Any, html_path: Path, shot: Path | None = None) -> list[str]:
    """The report at A4 print width, print media: its problems (and a screenshot)."""
    page = browser.new_page(viewport={"width": A4_PX, "height": 1123})
    try:
        page.emulate_media(media="print")
        page.goto(html_path.as_uri())
        page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        found = []
        box = page.evaluate("() => ({scroll: document.documentElement.scrollWidth, "
                            "client: document.documentElement.clientWidth})")
        if box["scroll"] > box["client"] + 1:
            found.append(f"report scrolls sideways at A4: {box}")
        body = page.locator("body").inner_text()
        if any(w.strip(".,:;()") == "None" for w in body.split()):
            found.append("raw None in the report")
        if shot is not None:
            page.screenshot(path=str(shot), full_page=True)
        return found
    finally:
        page.close()


__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "PAGES", "WIDTHS", "NotHealthy", "dashboard",
           "report_html", "visit", "visit_report"]
