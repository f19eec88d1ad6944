"""Re-take the README screenshots from data/h200_bundle.json.

    .venv/bin/python docs/screenshots/capture.py [--chromium /usr/bin/chromium]

Imports the bundle into a fresh SQLite file, starts ``streamlit run dashboard/app.py`` headless
on a free port against it, and saves full-page PNGs (1400 px wide) next to this file once every
plotly chart on the page has drawn. Run ids are those of the fresh database: 1-4 are the bundle's
runs in order (mlp, pointwise_chain, graph_breaks, varying_seq sweep).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
# (file name, path and query, plotly charts expected on the page)
SHOTS = [
    ("compare_h200_mlp.png", "compare?runs=1", 8),
    ("compare_h200_mlp_pointwise.png", "compare?runs=1,2", 8),
    ("sweep_h200_varying_seq.png", "sweep?runs=4", 3),
    ("runs_h200.png", "runs?selected=1,2", 0),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(base: str, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("streamlit exited before it was healthy")
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit("streamlit did not become healthy")


def wait_drawn(page, charts: int, timeout_ms: int = 60_000) -> None:
    """Until the script has finished and ``charts`` plotly plots have drawn their SVG."""
    page.locator("[data-testid=stApp]").wait_for(timeout=timeout_ms)
    if charts:
        page.locator(".js-plotly-plot .main-svg").nth(charts - 1).wait_for(timeout=timeout_ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stStatusWidget] button')"
        " && !document.querySelector('[data-testid=stSkeleton]')", timeout=timeout_ms)
    page.wait_for_timeout(1500)  # plotly's transitions and the data grid's canvas


def full_height(page) -> None:
    """Streamlit scrolls inside its main section, not the document, so a full-page screenshot
    shows one viewport: grow the viewport to the content's height instead."""
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll("
        "'[data-testid=stMain], [data-testid=stAppViewContainer], section.main')]"
        ".map(e => e.scrollHeight), document.body.scrollHeight)")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": int(height) + 40})
    page.wait_for_timeout(1500)  # charts re-layout to the new size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chromium", default=os.environ.get("COMPILELAB_CHROMIUM",
                                                         "/usr/bin/chromium"))
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from storage import import_bundle, open_database

    tmp = Path(tempfile.mkdtemp(prefix="compilelab-shots-"))
    url = f"sqlite:///{tmp / 'lab.db'}"
    db = open_database(url)
    print("imported runs", import_bundle(db, (ROOT / "data" / "h200_bundle.json").read_text()))
    db.dispose()

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"),
         "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env={**os.environ, "COMPILELAB_DB": url}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(base, proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            for name, path, charts in SHOTS:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{base}/{path}")
                wait_drawn(page, charts)
                full_height(page)
                errors = page.locator("[data-testid=stException]").count()
                page.screenshot(path=str(args.out / name), full_page=True)
                size = (args.out / name).stat().st_size
                print(f"{name}: {charts} charts, {errors} exceptions, {size / 1024:.0f} KiB")
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
