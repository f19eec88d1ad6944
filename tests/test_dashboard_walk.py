"""Every page in Chromium at 1024 and 1440 px with the shipped H200 bundle imported, as a
newcomer meets the dashboard: no exception, no raw ``None``, no horizontal scroll at 1024 px,
and the HTML report without horizontal scroll at A4 print width (acceptance/dashboard_walk.py).

Screenshots go to ``artifacts/screenshots/`` (ignored by git; ``$COMPILELAB_SCREENSHOTS``
overrides it): the test never writes into tracked files. ``docs/screenshots/capture.py``
refreshes the README's copies from the same walk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance import dashboard_walk as walk

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def shots() -> Path:
    import os

    path = Path(os.environ.get("COMPILELAB_SCREENSHOTS") or ROOT / "artifacts" / "screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not Path(walk.CHROMIUM).exists():
        pytest.skip(f"no Chromium at {walk.CHROMIUM} (apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api")
    try:
        with walk.dashboard(tmp_path_factory.mktemp("walk")) as started:
            yield started
    except walk.NotHealthy as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def browser(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=walk.CHROMIUM, args=walk.CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.mark.parametrize("width", walk.WIDTHS)
@pytest.mark.parametrize(("name", "path", "charts"), walk.PAGES, ids=[p[0] for p in walk.PAGES])
def test_page(served, browser, shots, name, path, charts, width):
    base, _ = served
    found = walk.visit(browser, base, path, charts, width, shots / f"{name}_{width}.png")
    assert not found, f"{path} at {width} px: {found}"


def test_report_prints_on_a4_without_horizontal_scroll(served, browser, shots, tmp_path):
    _, db_url = served
    html = tmp_path / "report.html"
    html.write_text(walk.report_html(db_url), encoding="utf-8")
    assert "<script src=" not in html.read_text()  # self-contained
    found = walk.visit_report(browser, html, shots / "report_a4.png")
    assert not found, found
