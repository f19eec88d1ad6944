"""The Runs page (issue 40, items 1, 7, 8): imported runs are listed at once, every run whose
own verdict distrusts its figures says so beside its speedup (the same tests as the verdict's
cautions, read from a few values per variant in the database), and columns are as wide as
their content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from test_dashboard_app import app, no_exceptions, seed_done, texts
from test_dashboard_data import bert_results, mlp_results, spec

from dashboard import people, tables
from engine.analysis.verdict import distrust
from storage import import_bundle_result, queue
from storage.records import load_run
from storage.trust import trust_rows

BUNDLE = json.loads((Path(__file__).resolve().parents[1] / "data" / "h200_bundle.json")
                    .read_text())


@pytest.fixture
def db(app_db):
    return app_db


def _distrusted(results_: list[dict], *, noisy=False, busy=None, disagree=False,
                probes=None, provisional=False, eager_drift=1.0) -> list[dict]:
    out = json.loads(json.dumps(results_))
    for r in out:
        if r["variant"] == "eager" or r["status"] != "ok":
            continue
        # eager_drift != 1: a run measured before one eager per run (each compiled variant
        # kept the eager of its own processes)
        r["stats"]["eager_median_ms"] *= eager_drift
        r["stats"]["noisy"] = noisy
        r["host_other_busy_cores"] = busy
        r["stats"]["processes_disagree"] = disagree
        r["stats"]["provisional"] = provisional
        r["processes"] = [{"host_probe": {"module_call_us": us}} for us in (probes or [])]
    return out


CASES = [
    ("quiet", {}, []),
    ("noisy", {"noisy": True}, ["noisy"]),
    ("busy", {"busy": 3.5}, ["busy host"]),
    ("speed", {"probes": [1.0, 1.1, 1.6]}, ["host speed moved"]),
    ("steady", {"probes": [1.0, 1.1, 1.2]}, []),
    ("disagree", {"disagree": True}, ["processes disagree"]),
    ("provisional", {"provisional": True}, ["provisional"]),
    ("eager per variant", {"eager_drift": 1.3}, ["eager per variant"]),
    ("one eager, rounded", {"eager_drift": 1.005}, []),
    ("all", {"noisy": True, "busy": 2.0, "disagree": True, "probes": [1, 2], "provisional": True,
             "eager_drift": 0.8},
     ["provisional", "noisy", "busy host", "host speed moved", "processes disagree",
      "eager per variant"]),
]


def test_the_shipped_bundle_flags_match_its_verdicts(db):
    ids = import_bundle_result(db, BUNDLE).new_ids
    slim = trust_rows(db, ids)
    for rid in ids:
        assert distrust(slim[rid]) == distrust(load_run(db, rid)["variants"]), rid


def test_runs_page_shows_cautions_beside_the_speedup(db):
    quiet = seed_done(db, spec("bert_base", dims={"batch": 8, "seq": 128}), bert_results())
    noisy = seed_done(db, spec("mlp"), _distrusted(mlp_results(), noisy=True, busy=2.5))
    pending = queue.enqueue_run(db, spec("mlp"))
    at = app("runs")
    no_exceptions(at)
    table = at.dataframe[0].value.set_index("run_id")
    assert list(table.columns).index("cautions") == list(table.columns).index("best_speedup") + 1
    assert table.loc[noisy, "cautions"] == "noisy · busy host"
    assert table.loc[quiet, "cautions"] == "none"
    assert table.loc[pending, "cautions"] == tables.DASH  # no results yet


def test_distrusted_speedups_are_marked_and_columns_fit_their_text():
    frame = tables.runs_table(
        __import__("pandas").DataFrame([
            {"run_id": 1, "model": "timm:vit_base_patch16_224", "dims_label": "batch=8, seq=128",
             "status": "done", "best_speedup": 2.31, "gpu": "NVIDIA H200", "spec": {}},
            {"run_id": 2, "model": "mlp", "dims_label": "batch=32", "status": "done",
             "best_speedup": 0.5, "gpu": "cpu", "spec": {}}]),
        {1: ["noisy", "busy host"], 2: []})
    html = people.flag_distrusted(people.styled(frame, {"best_speedup": "{:.2f}"}),
                                  frame).to_html()
    assert html.count("#b45309") == 1  # run 1's speedup only
    widths = {k: v["width"] for k, v in people.runs_columns(frame).items()
              if isinstance(v, dict) and isinstance(v.get("width"), int)}
    assert widths["model"] >= len("timm:vit_base_patch16_224") * people.CHAR_PX
    assert widths["best_speedup"] >= len("Best speedup (×)") * people.CHAR_PX
    assert widths["gpu"] >= len("NVIDIA H200") * people.CHAR_PX


def test_imported_runs_are_listed_without_a_reload(db):
    """The date filter used to keep the span it first showed (today) after a bundle of older
    runs was imported: "4 of 40 runs" until a reload."""
    seed_done(db, spec("mlp"), mlp_results())
    at = app("runs")
    assert "1 of 1 runs" in texts(at.caption)
    import_bundle_result(db, BUNDLE)
    st.cache_data.clear()
    at.run()
    no_exceptions(at)
    total = 1 + len(BUNDLE["runs"])
    assert f"{total} of {total} runs" in texts(at.caption), texts(at.caption)
    # a range the user picked stays as picked
    first, _ = at.date_input(key="filter-dates").value
    at.date_input(key="filter-dates").set_value((first, first)).run()
    assert f"of {total} runs" in texts(at.caption) and f"{total} of" not in texts(at.caption)
