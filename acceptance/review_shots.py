"""Screenshots of the Review page and of a run's baseline section, served from the shipped
bundle (plus any other bundles, e.g. the CI gate's output) in a temporary SQLite database.

    python acceptance/review_shots.py --out /work/shots --bundle /path/to/ci/bundle.json \\
        --pin-tag ci-baseline

Pins ``--pin-tag`` (every config: its latest run with that tag) so the run pages show a
baseline, then captures, at 1440 px: the Review page of every suite/tag given with ``--review``
(default: the CI suite and the shipped repeat-mlp runs), the run page of each ``--run`` (default:
the newest imported run) scrolled to its baseline section, and the review's HTML export at A4.
Prints each page's problems (exceptions, raw None, horizontal scroll) as the walk does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acceptance.dashboard_walk import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    dashboard,
    full_height,
    problems,
    visit_report,
    wait_drawn,
)


def _prepare(db_url: str, bundles: list[Path], pin_tag: str | None) -> list[int]:
    import engine.spec  # noqa: F401  (installs the validator bundle imports check specs with)
    from storage import import_bundle, open_database
    from storage.selection import pin_tag as pin

    db = open_database(db_url)
    try:
        ids: list[int] = []
        for path in bundles:
            ids += import_bundle(db, path.read_text())
        if pin_tag:
            pin(db, pin_tag)
        return ids
    finally:
        db.dispose()


def review_html(db_url: str, tag: str) -> str:
    """The review's HTML export exactly as the page builds it (relative compare links)."""
    from dashboard import charts_review, report_review
    from engine.analysis.review import load_window, review
    from storage import open_database

    db = open_database(db_url)
    try:
        r = review(load_window(db, tag, None, None)[0], tag)
    finally:
        db.dispose()
    return report_review.build_review_report(
        r, [charts_review.trend_figure(t) for t in r.trends],
        lambda a, b: f"/compare?runs={a},{b}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--bundle", type=Path, action="append", default=[])
    p.add_argument("--pin-tag", default=None)
    p.add_argument("--review", action="append", default=None,
                   help="query of a review page, e.g. suite=ci-small (repeatable)")
    p.add_argument("--run", type=int, action="append", default=None)
    p.add_argument("--width", type=int, default=1440)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    reviews = args.review or ["suite=ci-small", "tag=repeat-mlp"]
    found_any = False
    with dashboard() as (base, db_url), sync_playwright() as pw:
        ids = _prepare(db_url, args.bundle, args.pin_tag)
        runs = args.run or ids[-1:] or [1]
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        shots = [(f"review_{q.replace('=', '_').replace(':', '_')}", f"review?{q}", 1, None)
                 for q in reviews]
        shots += [(f"run_{r}_baseline", f"compare?runs={r}", 1, "#against-its-baseline")
                  for r in runs]
        for name, path, charts, anchor in shots:
            page = browser.new_page(viewport={"width": args.width, "height": 1000})
            page.goto(f"{base}/{path}")
            wait_drawn(page, charts)
            found = problems(page, check_overflow=False)
            shot = args.out / f"{name}.png"
            full_height(page)
            if anchor:  # the section itself, not the whole (long) run page
                top = page.locator("[data-testid=stHeading]",
                                   has_text="Against its baseline").first.bounding_box()
                end = page.locator("[data-testid=stHeading]",
                                   has_text="Speedup and break-even").first.bounding_box()
                if top and end:
                    page.screenshot(path=str(shot), clip={
                        "x": 0, "y": top["y"] - 20, "width": args.width,
                        "height": end["y"] - top["y"]})
                else:
                    page.screenshot(path=str(shot), full_page=True)
            else:
                page.screenshot(path=str(shot), full_page=True)
            page.close()
            print(f"{shot}: {'; '.join(found) or 'no problems'}")
            found_any |= bool(found)
        tag = reviews[0].split("=", 1)
        html = review_html(db_url, ("suite:" if tag[0] == "suite" else "") + tag[1])
        html_path = args.out / "review_report.html"
        html_path.write_text(html)
        found = visit_report(browser, html_path, args.out / "review_report.png")
        print(f"{args.out / 'review_report.png'}: {'; '.join(found) or 'no problems'}")
        browser.close()
    return 1 if found_any or found else 0


if __name__ == "__main__":
    raise SystemExit(main())
