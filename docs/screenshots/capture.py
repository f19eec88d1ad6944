"""Refresh the screenshots of docs/screenshots/README.md from data/h200_bundle.json.

    .venv/bin/python docs/screenshots/capture.py [--chromium /usr/bin/chromium] [--out DIR]

Walks the same pages as tests/test_dashboard_walk.py (acceptance/dashboard_walk.py: a fresh SQLite
file with the bundle imported, a headless dashboard, Chromium), and saves full-page PNGs of the
pages listed below at 1440 px and at 1024 px, plus the HTML report at A4 width. It prints
what the walk's checks found on each page. Tests never write here: they save to the ignored
``artifacts/screenshots/``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from acceptance import dashboard_walk as walk  # noqa: E402

# (file name stem, page name in walk.PAGES); the README's tour_*.png are taken apart
README = [("compare_h200_mlp", "compare_mlp"), ("compare_h200_mlp_pointwise",
                                                 "compare_mlp_pointwise"),
          ("sweep_h200_varying_seq", "sweep_varying_seq"), ("runs_h200", "runs"),
          ("new_run", "new_run")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chromium", default=walk.CHROMIUM)
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    os.environ["COMPILELAB_CHROMIUM"] = args.chromium

    from playwright.sync_api import sync_playwright

    pages = {name: (path, charts) for name, path, charts in walk.PAGES}
    with walk.dashboard() as (base, db_url), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=walk.CHROMIUM_ARGS)
        for stem, name in README:
            path, charts = pages[name]
            for width, suffix in ((1440, ""), (1024, "_1024")):
                out = args.out / f"{stem}{suffix}.png"
                found = walk.visit(browser, base, path, charts, width, out)
                print(f"{out.name}: {out.stat().st_size / 1024:.0f} KiB, "
                      f"{'; '.join(found) or 'no problems'}")
        html = Path(tempfile.mkdtemp(prefix="compilelab-report-")) / "report.html"
        html.write_text(walk.report_html(db_url), encoding="utf-8")
        found = walk.visit_report(browser, html, args.out / "report_a4.png")
        print(f"report_a4.png: {'; '.join(found) or 'no problems'}")
        browser.close()


if __name__ == "__main__":
    main()
