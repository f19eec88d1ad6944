"""A newcomer imports the shipped bundle in Chromium (issue 40, items 1 and 2): the imported
runs are listed on the Runs page at once, without a reload (the date filter kept today's span
and said "4 of 40 runs"), and "Open the imported runs" lands on a page that says how many runs
it holds and starts with a chart (it built 36 verdict cards before the first one)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from test_dashboard_browser import (
    BUNDLE,
    CHROMIUM,
    CHROMIUM_ARGS,
    PLOTS,
    WAIT_MS,
    _no_exceptions,
    _settled,
    serving,
)
from test_dashboard_data import ENVIRONMENT, mlp_results, spec

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def today_only(tmp_path_factory):
    """A dashboard whose database holds one run made today."""
    if not CHROMIUM or not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (set COMPILELAB_CHROMIUM or install chromium)")
    pytest.importorskip("playwright.sync_api")
    from storage import open_database, queue, results

    tmp = tmp_path_factory.mktemp("import-walk")
    url = f"sqlite:///{tmp / 'lab.db'}"
    db = open_database(url)
    run_id = queue.enqueue_run(db, spec("mlp"))
    queue.claim_run(db, run_id, "w")
    for r in mlp_results():
        results.save_variant_result(db, run_id, r)
    queue.finish_run(db, run_id, "done", environment=ENVIRONMENT)
    db.dispose()
    env = {**os.environ, "COMPILELAB_DB": url, "PYTHONPATH": str(ROOT),
           "COMPILELAB_STATE_DIR": str(tmp / "state")}
    env.pop("COMPILELAB_PLUGIN_DIR", None)
    with serving(env) as base:
        yield base


def test_import_the_shipped_bundle_then_open_the_imported_runs(today_only):
    from playwright.sync_api import sync_playwright

    total = 36 + 1
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1200})
        page.goto(f"{today_only}/runs")
        page.get_by_text("1 of 1 runs").wait_for(timeout=WAIT_MS)
        page.get_by_text("Import runs from a JSON bundle").click()
        page.locator("[data-testid=stFileUploaderDropzone]").wait_for(timeout=WAIT_MS)
        page.locator("input[type=file]").set_input_files(str(BUNDLE))
        page.get_by_text(BUNDLE.name).wait_for(timeout=WAIT_MS)
        _settled(page)
        page.get_by_role("button", name=re.compile("Import bundle")).click()
        page.get_by_text(re.compile(r"Imported 36 run\(s\)")).wait_for(timeout=60_000)
        _settled(page)
        assert page.get_by_text(f"{total} of {total} runs").count() == 1, \
            page.locator("[data-testid=stCaptionContainer]").all_inner_texts()
        _no_exceptions(page)

        page.get_by_role("link", name="Open the imported runs").click()
        page.wait_for_url(re.compile(r"/compare\?runs="), timeout=WAIT_MS)
        page.get_by_text(re.compile(r"^36 runs: mlp ×")).wait_for(timeout=WAIT_MS)
        page.locator(f"{PLOTS} .main-svg").first.wait_for(timeout=60_000)
        _settled(page)
        _no_exceptions(page)
        # the first section under the title is a chart, the verdicts come after it
        headers = page.locator("h2").all_inner_texts()
        assert headers[:2] == ["Speedup and break-even", "Verdict"], headers
        chart_y = page.locator(PLOTS).first.bounding_box()["y"]
        verdict_y = page.locator("h2", has_text="Verdict").bounding_box()["y"]
        assert chart_y < verdict_y
        browser.close()
