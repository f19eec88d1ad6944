"""The dashboard in a real browser: a headless ``streamlit run`` server (polled on
/_stcore/health) and a real engine worker (``python -m engine worker``, on the CPU), driven by
Playwright in the system Chromium, against a SQLite file seeded with the H200 bundle
(data/h200_bundle.json: four runs measured on an NVIDIA H200).

Catches what AppTest cannot: URL routing of permalinks on a freshly started server, the plotly
charts actually drawn, a run queued from the form and measured by the worker with live progress,
deferred downloads, file upload.

Screenshots of each step go to ``$COMPILELAB_SCREENSHOTS`` when set, else to pytest's tmp dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.dashboard_health import NotHealthy, free_port, wait_healthy

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "data" / "h200_bundle.json"
CHROMIUM = os.environ.get("COMPILELAB_CHROMIUM") or shutil.which("chromium") or shutil.which(
    "chromium-browser")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
PLOTS = ".js-plotly-plot"
WAIT_MS = 30_000


_free_port = free_port  # the name the other browser tests import


def _kill_and_read(proc: subprocess.Popen) -> str:
    proc.kill()
    return proc.stdout.read().decode(errors="replace")


@contextlib.contextmanager
def serving(env: dict[str, str]) -> Iterator[str]:
    """The dashboard on a free port with ``env``, healthy before its base URL is yielded,
    stopped after (each browser test's server)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"),
         "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(base, proc, output=lambda: _kill_and_read(proc))
        except NotHealthy as e:
            pytest.fail(str(e))
        yield base
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen, group: bool = False) -> None:
    """SIGTERM (the worker re-queues its run and ends its child), then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    if group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait(timeout=5)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    where = os.environ.get("COMPILELAB_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(base URL, ids of the four imported H200 runs, database URL); a worker serves the queue."""
    if not CHROMIUM or not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (set COMPILELAB_CHROMIUM or install chromium)")
    pytest.importorskip("playwright.sync_api")
    from storage import import_bundle
    from storage.db import open_database

    tmp = tmp_path_factory.mktemp("browser")
    url = f"sqlite:///{tmp / 'lab.db'}"
    db = open_database(url)
    ids = import_bundle(db, BUNDLE.read_text())
    db.engine.dispose()

    env = {**os.environ, "COMPILELAB_DB": url, "PYTHONPATH": str(ROOT)}
    env.pop("COMPILELAB_PLUGIN_DIR", None)
    # The worker imports torch meanwhile the server starts; its own process group, so that
    # teardown reaches the variant child it may be running.
    worker_log = open(tmp / "worker.log", "wb")  # noqa: SIM115 - closed at teardown
    worker = subprocess.Popen(
        [sys.executable, "-m", "engine", "worker", "--db", url, "--poll", "0.2"],
        cwd=ROOT, env=env, stdout=worker_log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        with serving(env) as base:
            yield base, ids, url
    finally:
        _stop(worker, group=True)
        worker_log.close()
        if os.environ.get("COMPILELAB_SCREENSHOTS"):  # keep the worker's log beside them
            shutil.copy(tmp / "worker.log", Path(os.environ["COMPILELAB_SCREENSHOTS"]))


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _page(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 3000})
    page.goto(url)
    return page


def _settled(page) -> None:
    """Until the rerun that the last action asked for has finished. Streamlit marks its state
    on the app element for e2e tests; the rerun starts within ~50 ms of the action."""
    page.wait_for_timeout(250)
    page.locator("[data-testid=stApp][data-test-script-state=notRunning]").wait_for(
        timeout=WAIT_MS)


def _charts_drawn(page, n: int) -> None:
    """Until ``n`` plotly charts have drawn their SVG, and no more appear."""
    if n:
        page.locator(f"{PLOTS} .main-svg").nth(n - 1).wait_for(timeout=WAIT_MS)
    _settled(page)
    assert page.locator(PLOTS).count() == n, _chart_titles(page)


def _chart_titles(page) -> list[str]:
    return [t.strip() for t in page.locator(f"{PLOTS} .gtitle").all_text_contents()]


def _no_exceptions(page) -> None:
    assert page.locator("[data-testid=stException]").count() == 0, page.locator(
        "[data-testid=stException]").all_inner_texts()
    assert page.get_by_text("Page not found").count() == 0


def _shot(page, shots: Path, name: str) -> None:
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


def _select(page, label: str, option: str) -> None:
    from playwright.sync_api import expect

    _settled(page)  # a rerun re-rendering the box would close its list under the click
    box = page.get_by_role("combobox", name=label, exact=True)
    box.click()
    page.get_by_role("option", name=option, exact=True).click()
    expect(box).to_have_value(option)
    _settled(page)


def _number(page, label: str, value) -> None:
    field = page.get_by_label(label, exact=True)
    field.fill(str(value))
    field.press("Enter")
    _settled(page)


def _runs_total(page) -> int:
    caption = page.get_by_text(re.compile(r"^\d+\+? of (the newest )?[\d,]+ runs")).inner_text()
    return int(re.search(r"of (?:the newest )?([\d,]+) runs", caption).group(1).replace(",", ""))


def test_permalink_as_first_request_draws_the_comparison(server, browser, shots):
    """First request on a fresh server is a permalink (regression: a pages/ folder made
    Streamlit run the page file without app.py and fail). H200 MLP (4 modes, every compiled
    mode slower than eager) next to the pointwise chain (default 2.2x faster)."""
    base, (mlp, pointwise, *_), _ = server
    page = _page(browser, f"{base}/compare?runs={mlp},{pointwise}")
    page.get_by_role("button", name="Download HTML report").wait_for(timeout=WAIT_MS)
    # 12: with compile phases and the lost-time account (issue 14) and two Pareto charts (17)
    _charts_drawn(page, 12)
    _no_exceptions(page)
    _shot(page, shots, "h200-compare-mlp-pointwise")
    assert page.get_by_text(re.compile(r"Run #\d+ · mlp .* · cuda · NVIDIA H200")).count() == 1
    assert page.get_by_text(re.compile(r"pointwise_chain .* · NVIDIA H200")).count() >= 1
    assert page.get_by_text(re.compile("compiled is slower than eager here")).count() == 1
    assert page.get_by_text(re.compile(r"Latency:.*Ship default — 0\.0928 ms per call")).count() == 1
    titles = _chart_titles(page)
    assert "Speedup over eager per variant (×, 95% CI)" in titles
    assert "Peak memory per variant (MiB)" in titles

    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="Download HTML report").click()
    html = Path(download.value.path()).read_text()
    assert html.count('class="plotly-graph-div"') == 13  # the report's sections, forensics included
    assert "NVIDIA H200" in html
    # each run against its baseline, as the run page judges it (none pinned in a fresh import)
    assert html.count("Against its baseline") == 2 and "No baseline run for this config" in html
    page.close()


def test_sweep_view_of_the_h200_varying_seq_run(server, browser, shots):
    base, ids, _ = server
    sweep = ids[3]
    page = _page(browser, f"{base}/sweep?runs={sweep}")
    _charts_drawn(page, 3)
    _no_exceptions(page)
    _shot(page, shots, "h200-sweep")
    assert _chart_titles(page) == ["Sweep: steady-state latency vs seq (ms)",
                                   "Sweep: speedup over eager at each seq value (×)",
                                   "Sweep: first call at each seq value (ms, log scale)"]
    assert page.locator(f"{PLOTS} .legendtext", has_text="recompiled at this value").count() == 2
    assert page.locator(f"{PLOTS} .legendtext",
                        has_text="eager, paired in default's process").count() == 1
    page.close()


def test_runs_permalink_restores_filters_and_selection(server, browser):
    base, (mlp, *_), _ = server
    page = _page(browser, f"{base}/runs?model=mlp&selected={mlp}")
    button = page.get_by_role("button", name="Compare 1 run(s)")
    button.wait_for(timeout=WAIT_MS)
    _no_exceptions(page)
    assert page.get_by_text(re.compile(r"^\d+ of \d+ runs")).count() == 1
    button.click()
    page.wait_for_url(re.compile(rf"/compare\?runs={mlp}$"), timeout=WAIT_MS)
    _charts_drawn(page, 12)
    _no_exceptions(page)
    page.close()


def test_import_bundle_upload(server, browser, tmp_path):
    base, ids, url = server
    from storage import bundle
    from storage.db import open_database

    db = open_database(url)
    good = tmp_path / "good.json"
    payload = bundle.export_bundle(db, [ids[2]])
    same = tmp_path / "same.json"  # runs already here are not imported twice
    same.write_text(json.dumps(payload, default=str))
    payload["runs"][0]["created_at"] = "2020-01-02T03:04:05.000006+00:00"  # another run
    good.write_text(json.dumps(payload, default=str))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something else"}))
    db.engine.dispose()

    page = _page(browser, f"{base}/runs")
    for path, expected in [(bad, "Bundle rejected"), (same, "already in this database"),
                           (good, r"Imported 1 run\(s\)")]:
        # An import reruns the whole page (so that it leaves "No runs yet" and lists the new
        # runs); open the expander again if that closed it.
        page.get_by_text("Import runs from a JSON bundle").wait_for(timeout=WAIT_MS)
        _settled(page)
        dropzone = page.locator("[data-testid=stFileUploaderDropzone]")
        if not dropzone.is_visible():
            page.get_by_text("Import runs from a JSON bundle").click()
            dropzone.wait_for(timeout=WAIT_MS)
        page.locator("input[type=file]").set_input_files(str(path))
        page.get_by_text(path.name).wait_for(timeout=WAIT_MS)  # upload done, page rerun
        _settled(page)
        page.get_by_role("button", name=re.compile("Import bundle")).click()
        page.get_by_text(re.compile(expected)).wait_for(timeout=WAIT_MS)
    _no_exceptions(page)
    page.close()


def test_new_run_measured_by_the_worker_then_compare_share_export_import(
        server, browser, shots, tmp_path):
    """The whole loop a user goes through: queue a tiny CPU run from the form, watch the live
    progress while the real worker measures it, open its comparison, reload its permalink in
    a new page, export it as a bundle and import that bundle back as a new run."""
    base, _, _ = server
    page = _page(browser, f"{base}/new?model=mlp")
    page.get_by_role("button", name="Queue run").wait_for(timeout=WAIT_MS)
    _no_exceptions(page)
    # The form offers what the connected worker registered (this CPU host), never the H200 of
    # the imported runs. The worker registers once its hardware probe is done: reload until then.
    deadline = time.monotonic() + 90
    while page.get_by_text(re.compile(r"^Connected: .*CPU only")).count() == 0:
        assert time.monotonic() < deadline, "the worker never registered"
        page.wait_for_timeout(1000)
        page.reload()
        page.get_by_role("button", name="Queue run").wait_for(timeout=WAIT_MS)
        _settled(page)
    assert page.get_by_text("NVIDIA H200").count() == 0
    _number(page, "batch", 4)
    _number(page, "hidden", 64)
    _select(page, "Device", "cpu")
    page.get_by_text("Compile options").click()
    _settled(page)
    _select(page, "Backend", "eager")  # plumbing, no inductor compile (seconds, not minutes)
    page.get_by_text("Measurement budget").click()
    _settled(page)
    for label, value in [("Warm-up calls", 3), ("Minimum samples", 5), ("Pipelined calls K", 2),
                         ("Minimum time (s)", 0), ("Maximum time (s)", 0.2)]:
        _number(page, label, value)
    page.get_by_text("Profiler pass (kernels per call)").click()
    _settled(page)
    page.get_by_text("Warm-cache compile (2nd process)").click()
    _settled(page)
    page.get_by_label("Tags (comma-separated)").fill("browser-e2e")
    page.get_by_label("Tags (comma-separated)").press("Enter")
    _settled(page)
    _no_exceptions(page)
    _shot(page, shots, "e2e-1-new-run-form")

    started = time.monotonic()
    page.get_by_role("button", name="Queue run").click()
    page.wait_for_url(re.compile(r"watch=\d+"), timeout=WAIT_MS)
    run_id = int(re.search(r"watch=(\d+)", page.url).group(1))

    # Live progress: the bar moves through the worker's phases while the child measures
    # (the fragment refreshes every second).
    progress = page.get_by_text(re.compile(r"· \d+% of the run"))
    progress.first.wait_for(timeout=WAIT_MS)
    seen: dict[str, int] = {}  # phase -> highest percentage shown with it
    done_link = page.get_by_role("link", name=f"Open run #{run_id}")
    while done_link.count() == 0 and time.monotonic() - started < 60:
        for text in progress.all_inner_texts():
            # "<variant> · <phase>[ · about N s left | at least N s left: ...] · P% of the run"
            m = re.search(r"([\w][\w -]*?)(?: · (?:about|at least) [^·]+)? · (\d+)% of the run",
                          text)
            if m:
                if m.group(1) != "queued" and not any(p != "queued" for p in seen):
                    _shot(page, shots, "e2e-2-progress")  # the first phase of the worker's
                seen[m.group(1)] = max(seen.get(m.group(1), 0), int(m.group(2)))
        page.wait_for_timeout(200)
    done_link.wait_for(timeout=5_000)
    running = {p: pct for p, pct in seen.items() if p != "queued"}
    # "running": claimed by the worker, before its child has reported a phase (a poll can land
    # in that gap).
    assert running and set(running) <= {"running", "building", "compiling", "warm-up",
                                        "measuring", "profiling", "warm-cache compile", "saving",
                                        "waiting to compile", "waiting to time",  # gates
                                        "done"}, seen
    assert max(running.values()) > 0, seen
    assert page.get_by_text(re.compile(rf"Run #{run_id} · mlp \(batch=4, hidden=64\) .*"
                                       r"— done")).count() == 1
    _shot(page, shots, "e2e-3-done")

    # Its comparison: CPU, no profiler pass, so memory/kernels/device-busy say why they are
    # empty instead of drawing blank axes.
    done_link.click()
    page.wait_for_url(re.compile(rf"/compare\?runs={run_id}$"), timeout=WAIT_MS)
    page.get_by_role("button", name="Download HTML report").wait_for(timeout=WAIT_MS)
    _charts_drawn(page, 7)  # with compile phases and the lost-time account (issue 14)
    _no_exceptions(page)
    titles = _chart_titles(page)
    assert "Speedup over eager per variant (×, 95% CI)" in titles
    assert "Break-even: cumulative time vs number of calls (s)" in titles
    assert page.get_by_text("Peak memory is measured on CUDA devices only.").count() == 1
    assert page.get_by_text(re.compile("No device busy times")).count() == 1
    assert page.get_by_text(re.compile(rf"Run #{run_id} · mlp .* · float32 · cpu$")).count() == 1
    _shot(page, shots, "e2e-4-compare")

    # Permalink: the same URL in a new page draws the same charts.
    again = _page(browser, page.url)
    again.get_by_role("button", name="Download HTML report").wait_for(timeout=WAIT_MS)
    _charts_drawn(again, 7)
    _no_exceptions(again)
    assert _chart_titles(again) == titles
    _shot(again, shots, "e2e-5-permalink")
    again.close()

    # Export the run as a bundle...
    with page.expect_download(timeout=WAIT_MS) as download:
        page.get_by_role("button", name="Export 1 run(s) as JSON bundle").click()
    assert download.value.suggested_filename == f"compilelab-runs-{run_id}.json"
    exported = tmp_path / "run.json"  # short: the uploader shortens long names with an ellipsis
    download.value.save_as(exported)
    payload = json.loads(exported.read_text())
    assert payload["format"] == "compilelab-bundle"
    # Imported here as it is, it is recognised as the same run; as another machine's copy of
    # it (another created_at), it is imported.
    payload["runs"][0]["created_at"] = "2020-01-02T03:04:05.000006+00:00"
    exported.write_text(json.dumps(payload))
    assert [(r["model"], r["device"], r["status"]) for r in payload["runs"]] == [
        ("mlp", "cpu", "done")]
    assert [v["variant"] for v in payload["runs"][0]["variants"]] == ["eager", "default"]
    assert payload["runs"][0]["tags"] == ["browser-e2e"]
    page.close()

    # ... and import it back: a new run appears, with the same figures.
    page = _page(browser, f"{base}/runs")
    page.get_by_text("Import runs from a JSON bundle").wait_for(timeout=WAIT_MS)
    before = _runs_total(page)
    page.get_by_text("Import runs from a JSON bundle").click()
    page.locator("input[type=file]").set_input_files(str(exported))
    page.get_by_text(exported.name).wait_for(timeout=WAIT_MS)
    _settled(page)
    page.get_by_role("button", name=re.compile("Import bundle")).click()
    imported = page.get_by_text(re.compile(r"Imported 1 run\(s\): #\d+"))
    imported.wait_for(timeout=WAIT_MS)
    new_id = int(re.search(r"#(\d+)", imported.inner_text()).group(1))
    assert new_id != run_id
    _shot(page, shots, "e2e-6-imported")
    page.get_by_role("link", name="Open the imported runs").click()
    page.wait_for_url(re.compile(rf"/compare\?runs={new_id}$"), timeout=WAIT_MS)
    _charts_drawn(page, 7)
    _no_exceptions(page)
    assert _chart_titles(page) == titles
    assert page.get_by_text(re.compile(rf"Run #{new_id} · mlp \(batch=4, hidden=64\)")).count() >= 1
    page.goto(f"{base}/runs")
    page.get_by_text("Import runs from a JSON bundle").wait_for(timeout=WAIT_MS)
    assert _runs_total(page) == before + 1
    page.close()
