"""How fast the dashboard builds its two busiest pages on a 10 000-run history.

    .venv/bin/python acceptance/bench_dashboard.py [--runs 10000] [--repeat 5] [--db PATH]

1. Fills a SQLite database (a temporary one, or --db topped up to --runs) with stored runs:
   the four H200 runs of data/h200_bundle.json imported again and again through
   ``storage.import_bundle`` (the bulk path storage offers; no SQL here), each copy moved six
   hours back in time so the history spans months and "newest first" means something.
2. Times, server side (no browser), the first and the median of ``--repeat`` builds of
   - the runs page: ``list_runs`` as the page and the sidebar ask for it (and again with a
     model filter), the run table, the worker state read from it;
   - a 4-run compare (the newest MLP, pointwise chain, graph-break and varying_seq sweep
     runs): the run picker's list, ``load_runs``, every chart builder, every table, a verdict
     per run, and each figure's JSON (what ``st.plotly_chart`` sends to the browser);
3. and the same two pages rendered whole through Streamlit's ``AppTest`` (script run, element
   tree, figure serialisation; no browser), with the dashboard's data cache cleared first.

Prints the figures in milliseconds and exits 1 when a page takes 1 s or more.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUNDLE = ROOT / "data" / "h200_bundle.json"
BUDGET_MS = 1000.0
CHUNK = 500  # runs per import_bundle call (one transaction each)


def _shift(value: str | None, by: dt.timedelta) -> str | None:
    return None if value is None else (dt.datetime.fromisoformat(value) - by).isoformat()


def fill(db, n_runs: int) -> None:
    """``n_runs`` runs copied from the H200 bundle, in chunks of CHUNK runs."""
    import engine.spec  # noqa: F401  (installs the validator bundle imports check specs with)
    from storage import import_bundle

    template = json.loads(BUNDLE.read_text())
    runs = template["runs"]
    copies = -(-n_runs // len(runs))
    made = 0
    batch: list[dict] = []
    # Oldest copy first, so the ids grow with time as in a real history.
    for k in reversed(range(copies)):
        by = dt.timedelta(hours=6 * k)
        for r in runs:
            if made >= n_runs:
                break
            c = copy.deepcopy(r)
            for key in ("created_at", "started_at", "finished_at"):
                c[key] = _shift(c[key], by)
            batch.append(c)
            made += 1
            if len(batch) == CHUNK or made == n_runs:
                import_bundle(db, {**template, "runs": batch})
                batch = []


def compare_ids(db) -> list[int]:
    """The newest mlp, pointwise_chain, graph_breaks and varying_seq (sweep) runs."""
    from storage import list_runs

    recent = list_runs(db, limit=50)
    wanted = ["mlp", "pointwise_chain", "graph_breaks", "varying_seq"]
    return [int(recent.loc[recent["model"] == m, "run_id"].iloc[0]) for m in wanted]


def median_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(first call, median of the next ``repeat``) in ms."""
    t0 = time.perf_counter()
    fn()
    first = (time.perf_counter() - t0) * 1000
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return first, statistics.median(times)


def sidebar(db) -> None:
    """What the sidebar's queue line reads (dashboard.data.current_queue_state)."""
    from dashboard.hardware import queue_state
    from storage import workers

    queue_state(workers.queue_summary(db), workers.live_workers(db))


def runs_page(db, model: str | None = None) -> int:
    """What views/runs.py (and the sidebar) compute: the history, the filtered list when a
    filter is set, the table, the worker state."""
    from dashboard import data, tables
    from storage import queries

    sidebar(db)
    everything = queries.list_runs(db, limit=data.RUNS_PAGE_LIMIT)
    shown = (queries.list_runs(db, model=model, limit=data.RUNS_PAGE_LIMIT) if model
             else everything)
    return len(tables.runs_table(shown))


def compare_page(db, ids: list[int]) -> int:
    """What views/compare.py (and the sidebar) compute for these runs, plus each figure's
    JSON (what st.plotly_chart sends)."""
    from dashboard import charts, charts_latency, charts_sweep, tables
    from dashboard.verdict import verdict_for_run
    from storage import queries

    sidebar(db)
    queries.list_runs(db, limit=500)  # the run picker's labels
    d = queries.load_runs(db, ids)
    figures = [f for _, f in charts.compare_figures(d)]
    figures.append(charts_latency.latency_distribution(d["samples"], log_y=True))
    if not d["sweep_points"].empty:
        figures += [charts_sweep.sweep_latency(d["sweep_points"], "seq"),
                    charts_sweep.sweep_first_call(d["sweep_points"], "seq")]
    for rid in ids:
        verdict_for_run(d["variants"], rid).as_markdown()
    tables.variants_table(d["variants"], d["runs"]).to_csv(index=False)
    tables.graph_breaks_table(d["graph_breaks"])
    tables.recompiles_table(d["recompiles"])
    tables.cudagraph_skips_table(d["variants"])
    tables.compile_phases_table(d["variants"])
    for f in figures:
        f.to_json()
    return len(figures)


def apptest(page: str, params: dict[str, str], repeat: int) -> tuple[float, float, int]:
    """Whole page through AppTest: (first run ms, median rerun ms, plotly charts). The
    dashboard's data cache is cleared before every timed run: it lives 2-3 s, so a page
    opened later pays the full build."""
    import streamlit as st
    from streamlit import logger
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=120)
    at.run()  # st.navigation registers the pages
    logger.set_log_level("error")  # AppTest loaded Streamlit's config, log level included
    at.switch_page(f"views/{page}.py")
    for k, v in params.items():
        at.query_params[k] = v
    st.cache_data.clear()
    t0 = time.perf_counter()
    at.run()
    first = (time.perf_counter() - t0) * 1000
    if at.exception:
        raise SystemExit(f"{page}: {[e.value for e in at.exception]}")
    times = []
    for _ in range(repeat):
        st.cache_data.clear()
        t0 = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t0) * 1000)
    return first, statistics.median(times), len(at.get("plotly_chart"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--db", type=Path, help="SQLite file to fill (default: a temporary one)")
    ap.add_argument("--no-apptest", action="store_true", help="server-side timings only")
    args = ap.parse_args()

    # st.cache outside a server warns "No runtime found" at import and on every call.
    os.environ.setdefault("STREAMLIT_LOGGER_LEVEL", "error")
    # Imported before timing: the first page build should not pay for module imports.
    import streamlit.testing.v1  # noqa: F401
    from streamlit import logger

    logger.set_log_level("error")

    import dashboard.charts  # noqa: F401
    import dashboard.charts_sweep  # noqa: F401
    import dashboard.data  # noqa: F401
    import dashboard.tables  # noqa: F401
    import dashboard.verdict  # noqa: F401
    from storage import list_runs, open_database

    path = args.db or Path(tempfile.mkdtemp(prefix="compilelab-bench-")) / "bench.db"
    url = f"sqlite:///{path}"
    os.environ["COMPILELAB_DB"] = url
    db = open_database(url)
    t0 = time.perf_counter()
    have = len(list_runs(db))
    if have < args.runs:  # --db may name a database filled by an earlier run
        fill(db, args.runs - have)
    total = len(list_runs(db))
    print(f"database: {path} ({total:,} runs, {path.stat().st_size / 2**20:.0f} MiB), "
          f"ready in {time.perf_counter() - t0:.1f} s")
    ids = compare_ids(db)

    rows = []
    first, med = median_ms(lambda: runs_page(db), args.repeat)
    rows.append(("runs page, server side", first, med, f"{runs_page(db):,} table rows"))
    first, med = median_ms(lambda: runs_page(db, model="mlp"), args.repeat)
    rows.append(("runs page, model filter", first, med,
                 f"{runs_page(db, model='mlp'):,} table rows"))
    first, med = median_ms(lambda: compare_page(db, ids), args.repeat)
    rows.append(("4-run compare, server side", first, med,
                 f"{compare_page(db, ids)} figures, runs {ids}"))
    if not args.no_apptest:
        first, med, n = apptest("runs", {}, args.repeat)
        rows.append(("runs page, AppTest", first, med, f"{n} charts"))
        first, med, n = apptest("compare", {"runs": ",".join(map(str, ids))},
                                args.repeat)
        rows.append(("4-run compare, AppTest", first, med, f"{n} charts"))

    print(f"\n{'page':<30} {'first ms':>9} {'median ms':>10}  note")
    worst = 0.0
    for name, first, med, note in rows:
        print(f"{name:<30} {first:>9.0f} {med:>10.0f}  {note}")
        worst = max(worst, first, med)
    verdict = "within" if worst < BUDGET_MS else "OVER"
    print(f"\nslowest {worst:.0f} ms: {verdict} the {BUDGET_MS:.0f} ms budget")
    db.dispose()
    if worst >= BUDGET_MS:
        sys.exit(1)


if __name__ == "__main__":
    main()
