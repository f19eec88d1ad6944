"""The dashboard in a real browser: a headless ``streamlit run`` server (polled on
/_stcore/health) driven by Playwright in the system Chromium, against a seeded SQLite file.

Catches what AppTest cannot: URL routing of permalinks on a freshly started server, the plotly
charts actually drawn, deferred downloads, file upload.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from test_dashboard_data import ENVIRONMENT, bert_results, mlp_results, spec

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("COMPILELAB_CHROMIUM") or shutil.which("chromium") or shutil.which(
    "chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not CHROMIUM or not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (set COMPILELAB_CHROMIUM or install chromium)")
    pytest.importorskip("playwright.sync_api")
    from storage import queue, results
    from storage.db import open_database

    url = f"sqlite:///{tmp_path_factory.mktemp('browser') / 'lab.db'}"
    db = open_database(url)
    ids = []
    for run_spec, res in [(spec("bert_base", dims={"batch": 8, "seq": 128}), bert_results()),
                          (spec("mlp"), mlp_results())]:
        run_id = queue.enqueue_run(db, run_spec, tags=["browser"])
        queue.claim_run(db, run_id, "test-worker")
        for r in res:
            results.save_variant_result(db, run_id, r)
        queue.finish_run(db, run_id, "done", environment=ENVIRONMENT)
        ids.append(run_id)
    db.engine.dispose()

    port = _free_port()
    env = {**os.environ, "COMPILELAB_DB": url, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"),
         "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"streamlit did not come up:\n{proc.stdout.read().decode()[-3000:]}")
        time.sleep(0.3)
    yield base, ids, url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _page(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 3000})
    page.goto(url)
    return page


def _no_exceptions(page) -> None:
    assert page.locator("[data-testid=stException]").count() == 0, page.locator(
        "[data-testid=stException]").all_inner_texts()
    assert page.get_by_text("Page not found").count() == 0


def test_permalink_as_first_request_draws_the_comparison(server, browser):
    """First request on a fresh server is a permalink (regression: a pages/ folder made
    Streamlit run the page file without app.py and fail)."""
    base, (bert, mlp), _ = server
    page = _page(browser, f"{base}/compare?runs={bert},{mlp}")
    page.get_by_role("button", name="Download HTML report").wait_for(timeout=30_000)
    page.locator(".js-plotly-plot").nth(7).wait_for(timeout=30_000)
    _no_exceptions(page)
    assert page.locator(".js-plotly-plot").count() == 8
    assert page.get_by_text(re.compile("Latency:.*Ship reduce-overhead")).count() == 1
    assert page.get_by_text(re.compile("compiled is slower than eager here")).count() == 1

    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="Download HTML report").click()
    html = Path(download.value.path()).read_text()
    assert html.count('class="plotly-graph-div"') == 8
    assert "Ship reduce-overhead" in html
    page.close()


def test_runs_permalink_restores_filters_and_selection(server, browser):
    base, (bert, mlp), _ = server
    page = _page(browser, f"{base}/runs?model=mlp&selected={mlp}")
    button = page.get_by_role("button", name="Compare 1 run(s)")
    button.wait_for(timeout=30_000)
    _no_exceptions(page)
    assert page.get_by_text("1 of 2 runs").count() == 1
    button.click()
    page.wait_for_url(re.compile(rf"/compare\?runs={mlp}$"), timeout=30_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    _no_exceptions(page)
    page.close()


def test_import_bundle_upload(server, browser, tmp_path):
    base, (bert, _), url = server
    from storage import bundle
    from storage.db import open_database

    db = open_database(url)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(bundle.export_bundle(db, [bert]), default=str))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something else"}))
    db.engine.dispose()

    page = _page(browser, f"{base}/runs")
    page.get_by_text("Import runs from a JSON bundle").click()
    for path, expected in [(bad, "Bundle rejected"), (good, r"Imported 1 run\(s\)")]:
        page.locator("input[type=file]").set_input_files(str(path))
        page.get_by_text(path.name).wait_for(timeout=30_000)  # upload done, page rerun
        page.get_by_role("button", name=re.compile("Import bundle")).click()
        page.get_by_text(re.compile(expected)).wait_for(timeout=30_000)
    _no_exceptions(page)
    page.close()

