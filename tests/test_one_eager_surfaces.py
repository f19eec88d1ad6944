"""One eager on every surface, and each shown speedup equal to the shown eager over the shown
compiled figure (issue 36).

A run is built the way the runner builds it: simulated measuring processes whose eager moves
from process to process (a launch-bound eager following the host), statistics from
``engine.analysis.variant_stats.add_stats`` over the whole run, stored through ``storage``.  Then every
surface that shows eager, compiled and speedup is read back: ``show --json``, ``show``'s table,
the dashboard's variants table and its CSV, the HTML report, the verdict's sentences and
``recommend``.  Rounding: each surface's own (show prints 4 decimals of ms and 2 of the
speedup), so the check is to the precision shown.
"""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest

from engine.analysis import recommend
from engine.analysis import show as report
from engine.analysis.variant_stats import add_stats
from engine.analysis.verdict import decide
from storage import enqueue_run, finish_run, open_database, save_variant_result
from storage.queries import load_runs

BLOCK = 10


def _process(rng: np.random.Generator, eager_ms: float, speedup: float) -> dict:
    host = rng.normal(0.0, 0.15)  # this process's host state: moves eager and compiled alike
    eager = eager_ms * np.exp(host + rng.normal(0, 0.02, 3 * BLOCK))
    compiled = eager_ms / speedup * np.exp(host + rng.normal(0, 0.02, 3 * BLOCK))
    return {"samples_ms": compiled.tolist(), "eager_samples_ms": eager.tolist(), "block": BLOCK,
            "pipelined_ms": (compiled[::BLOCK] * 0.9).tolist(),
            "eager_pipelined_ms": (eager[::BLOCK] * 0.9).tolist()}


def _result(variant: str, procs: list[dict], first_s: float) -> dict:
    return {"variant": variant, "status": "ok", "processes": procs, "timer": "cuda_event",
            "first_call_cold_s": first_s, "first_call_warm_s": first_s / 3,
            "warmup_ms": [first_s * 1000, 1.0, 1.0],
            "samples_ms": [x for p in procs for x in p["samples_ms"]],
            "eager_samples_ms": [x for p in procs for x in p["eager_samples_ms"]],
            "pipelined_ms": [x for p in procs for x in p["pipelined_ms"]],
            "eager_pipelined_ms": [x for p in procs for x in p["eager_pipelined_ms"]],
            "correct": True, "stop_reason": "interval excludes 1.0", "final_at": 1.0}


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    rng = np.random.default_rng(36)
    eager_proc = _process(rng, 5.0, 1.0)
    eager_proc["samples_ms"] = eager_proc["eager_samples_ms"]
    eager_proc["pipelined_ms"] = eager_proc["eager_pipelined_ms"]
    raw = {"eager": _result("eager", [eager_proc], 0.006),
           "default": _result("default", [_process(rng, 5.0, 1.5) for _ in range(4)], 15.0),
           "reduce-overhead": _result("reduce-overhead",
                                      [_process(rng, 5.0, 4.0) for _ in range(4)], 16.0)}
    db = open_database(f"sqlite:///{tmp_path_factory.mktemp('eager') / 'one.db'}")
    run_id = enqueue_run(db, {"model": "mlp", "dims": {"batch": 32, "hidden": 1024},
                              "device": "cpu", "variants": list(raw)})
    for r in raw.values():
        save_variant_result(db, run_id, add_stats(dict(r), raw, eager_first_call_ms=6.0))
    finish_run(db, run_id, "done")
    return db, run_id


def _consistent(eager_ms: float, compiled_ms: float, speedup: float, rel: float) -> bool:
    return abs(eager_ms / compiled_ms / speedup - 1) <= rel


def test_show_json_one_eager_and_exact_ratio(stored):
    db, run_id = stored
    rows = report.run_json(db, run_id)["variants"]
    eager = rows[0]["median_ms"]
    assert {r["eager_median_ms"] for r in rows} == {eager}
    for r in rows:
        assert r["speedup"] == pytest.approx(r["eager_median_ms"] / r["median_ms"], rel=1e-12)
    # the eager inside the speedup is not any one process's: it differs from each variant's
    # own paired eager, which is kept beside it
    assert rows[1]["paired_eager_median_ms"] != pytest.approx(eager, rel=1e-6)


def test_show_table_ratio_to_the_precision_shown(stored):
    db, run_id = stored
    text = report.format_run(db, run_id)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if "median ms/call" in line and "eager ms" in line)
    columns = re.split(r"\s{2,}", lines[head].strip())  # the table is split to fit 120 columns
    at = {name: columns.index(name) for name in ("median ms/call", "eager ms", "speedup (95% CI)")}
    eager_shown = set()
    for line in lines[head + 2: head + 5]:
        cells = re.split(r"\s{2,}", line.strip())
        median, eager = float(cells[at["median ms/call"]]), float(cells[at["eager ms"]])
        eager_shown.add(eager)
        m = re.match(r"([\d.]+)x", cells[at["speedup (95% CI)"]])
        if m:
            assert _consistent(eager, median, float(m.group(1)), 0.006), line
    assert len(eager_shown) == 1
    assert "speedup = eager ms / median ms on every row" in text


def test_dashboard_table_csv_and_report(stored):
    from dashboard import report as html_report
    from dashboard import safe, tables

    db, run_id = stored
    frames = load_runs(db, [run_id])
    vt = tables.variants_table(frames["variants"], frames["runs"])
    assert vt["eager_median_ms"].nunique() == 1
    for _, r in vt.iterrows():
        assert _consistent(r["eager_median_ms"], r["median_ms"], r["speedup_x"], 1e-9)
    rows = list(csv.DictReader(io.StringIO(safe.csv(vt))))
    for r in rows:
        assert _consistent(float(r["eager_median_ms"]), float(r["median_ms"]),
                           float(r["speedup_x"]), 1e-6)
    verdicts = [decide(frames["variants"].to_dict("records"), run_id)]
    html = html_report.build_report(frames["runs"], frames["variants"], [], verdicts)
    eager = vt["eager_median_ms"].iloc[0]
    assert f"{eager:.4g}" in html


def test_verdict_and_recommend_name_the_same_eager(stored):
    db, run_id = stored
    rows = report.run_json(db, run_id)["variants"]
    latency = decide(rows, run_id).latency
    m = re.search(r"([\d.]+) ms per call vs ([\d.]+) ms eager \(([\d.]+)×", latency)
    assert m, latency
    compiled, eager, speedup = map(float, m.groups())
    assert eager == pytest.approx(rows[0]["median_ms"], rel=0.006)
    assert _consistent(eager, compiled, speedup, 0.01)
    assert recommend.paired_eager_ms(rows) == pytest.approx(rows[0]["median_ms"])
