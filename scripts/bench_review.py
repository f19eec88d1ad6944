"""How long the Review page's judging and the baseline section take with many runs in one tag.

Fills a temporary SQLite database with ``--runs`` runs of one config tagged ``nightly`` (the
shipped H200 run, fabricated as in tests/review_support.py, imported through storage.bundle in
chunks) plus ``--configs`` configs, then times, uncached (what the page pays once per
``REVIEW_TTL_S``): ``load_window`` + ``review`` (the page), each figure and the HTML export, and
``against_baseline`` of the newest run with the tag pinned.  Prints one line per step::

    python scripts/bench_review.py --runs 2000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:<34s} {time.perf_counter() - t0:7.2f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--configs", type=int, default=10, help="models (configs) to spread over")
    ap.add_argument("--full-series", action="store_true",
                    help="keep each run's sample series whole (as measured), not cut to 20")
    ap.add_argument("--db", type=Path, help="SQLite file: filled when new, reused when it exists")
    args = ap.parse_args()

    import review_support
    from review_support import import_runs, make_run

    if args.full_series:
        review_support.SERIES = ()  # what the template cuts short

    from dashboard import charts_review, report_review, review_tables
    from engine.analysis.review import against_baseline, load_window, review
    from storage import open_database
    from storage.selection import pin_tag, tagged_runs

    path = args.db or Path(tempfile.mkdtemp()) / "bench.db"
    fresh = not path.exists()
    db = open_database(f"sqlite:///{path}")
    runs = [] if not fresh else [make_run(f"2026-{1 + i // 280 % 12:02d}-{1 + i // 10 % 28:02d}", ["nightly"],
                     factor=1.0 + (i % 7) / 50, model=f"m{i % args.configs}")
            for i in range(args.runs)]
    for i, run in enumerate(runs):  # distinct created_at: distinct runs
        run["created_at"] = run["created_at"].replace("09:00:00", f"{i // 3600 % 24:02d}:"
                                                      f"{i // 60 % 60:02d}:{i % 60:02d}")
    ids: list[int] = []
    if fresh:
        timed(f"import {args.runs} runs", lambda: ids.extend(
            x for k in range(0, len(runs), 500) for x in import_runs(db, runs[k:k + 500])))
    else:
        ids = [h.run_id for h in tagged_runs(db, "nightly")]
    got = timed("load_window (newest 400)", lambda: load_window(db, "nightly", None, None))
    r = timed("review (judge)", lambda: review(got[0], "nightly", truncated=got[1]))
    figs = timed("trend figures (30)", lambda: [charts_review.trend_figure(t)
                                                for t in r.trends[:30]])
    timed("changes table", lambda: review_tables.changes_table(r, lambda a, b: "x"))
    timed("HTML export", lambda: report_review.build_review_report(r, figs, lambda a, b: "x"))
    pin_tag(db, "nightly")
    timed("against_baseline (tag pinned)", lambda: against_baseline(db, ids[-1]))


if __name__ == "__main__":
    main()
