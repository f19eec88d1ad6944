"""Compile-forensics figures and the show text: pure functions of the contract's rows."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard import charts_base, charts_forensics
from engine.analysis import forensics_report

LOST = {"items": [
    {"kind": "graph_break", "share": 0.32, "ms_per_call": 0.64, "file": "/x/engine/models/breaks.py",
     "line": 19, "what": "graph break at engine/models/breaks.py:19: Tensor.item()",
     "action": "remove the .item() at engine/models/breaks.py:19"},
    {"kind": "graph_break", "share": 0.14, "ms_per_call": 0.28, "file": "/x/engine/models/breaks.py",
     "line": 18, "what": "graph break at engine/models/breaks.py:18: print",
     "action": "remove the print at engine/models/breaks.py:18"},
    {"kind": "guards", "share": 0.04, "ms_per_call": 0.08, "what": "guard checks"},
    {"kind": "in_graphs", "share": 0.36, "ms_per_call": 0.72, "what": "inside compiled graphs"}],
    "recompiles": {"what": "1 recompile(s)", "compile_s": 0.5, "action": "mark it dynamic"}}
CACHE = [{"phase": "cold", "counters": {"fxgraph_cache_miss": 4, "fxgraph_cache_hit": 0},
          "reasons": ["fxgraph cache miss: key f… is not in the cache"]},
         {"phase": "warm_cache", "counters": {"fxgraph_cache_hit": 4, "autograd_cache_hit": 4},
          "reasons": []}]
STARTUP = {"cold": {"time_to_first_call_s": 16.0}, "warm_local": {"time_to_first_call_s": 4.1},
           "portable": {"time_to_first_call_s": 5.0},
           "regional": {"error": "no repeated blocks"}}


def variants() -> pd.DataFrame:
    return pd.DataFrame([
        {"run_id": 1, "variant": "eager", "status": "ok", "first_call_cold_s": 0.1},
        {"run_id": 1, "variant": "default", "status": "ok", "first_call_cold_s": 10.0,
         "first_call_warm_s": 2.0, "compile_phases_s": {
             "dynamo_total": 9.0, "backend": 8.0, "inductor": 6.0, "codegen": 4.0},
         "lost_time": LOST, "compile_cache": CACHE, "startup": STARTUP,
         "warm_cache_missed": False}])


def test_compile_phases_stack_to_the_cold_first_call():
    fig = charts_forensics.compile_phases(variants())
    bars = [t for t in fig.data if t.type == "bar"]
    by_name = {t.name: t.y[0] for t in bars}
    assert by_name == {"dynamo (trace, guards)": 1.0, "AOTAutograd": 2.0,
                       "inductor (lowering)": 2.0, "code generation": 4.0,
                       "rest of first call": 1.0}
    assert sum(by_name.values()) == pytest.approx(10.0)  # the cold first call
    assert list(bars[0].x) == ["default"]  # eager has no compile
    assert fig.layout.barmode == "stack"
    warm = next(t for t in fig.data if t.type == "scatter")
    assert list(warm.y) == [2.0]


def test_startup_strategies_side_by_side_with_reasons():
    fig = charts_forensics.startup_strategies(variants())
    assert [t.name for t in fig.data] == ["cold", "warm local cache", "portable cache artifacts",
                                          "regional compilation"]
    assert [t.y[0] for t in fig.data] == [16.0, 4.1, 5.0, None]
    assert "no repeated blocks" in fig.data[3].customdata[0]
    empty = variants().drop(columns=["startup"])
    assert "not measured" in charts_base.empty_message(charts_forensics.startup_strategies(empty))
    # a compared run that did not measure them adds no group of "n/a" bars
    other = variants().assign(run_id=2)
    other.loc[1, "startup"] = None
    both = pd.concat([variants(), other], ignore_index=True)
    assert len(charts_forensics.startup_strategies(both).data[0].x) == 1


def test_lost_time_names_breaks_by_file_and_line_ranked():
    fig = charts_forensics.lost_time(variants())
    bar = fig.data[0]
    assert list(bar.y[:2]) == ["default · break breaks.py:19", "default · break breaks.py:18"]
    assert list(bar.x[:2]) == [0.32, 0.14]
    assert "remove the .item()" in bar.customdata[0]
    no = variants().drop(columns=["lost_time"])
    assert charts_base.empty_message(charts_forensics.lost_time(no)) is not None


def test_cache_table_has_torchs_counter_names_as_integers():
    t = charts_forensics.cache_table(variants())
    assert list(t["compile"]) == ["cold", "warm_cache"]
    assert list(t["fxgraph_cache_miss"]) == [4, 0] and list(t["fxgraph_cache_hit"]) == [0, 4]
    assert t["autograd_cache_hit"].dtype.kind == "i"


def test_show_text_lists_caches_breaks_startup_and_a_warm_miss():
    row = variants().iloc[1].to_dict()
    row.update(warm_cache_missed=True, warm_cache_miss_reason="fxgraph cache bypassed: because",
               cudagraph_coverage={"graphs": 2, "captured": 1, "skipped": 1,
                                   "share_in_captured": 0.5, "skip_reasons": ["mutated inputs"]})
    text = "\n".join(forensics_report.lines([{"variant": "eager"}, row]))
    assert "cold: fxgraph_cache_miss=4" in text and "warm_cache: fxgraph_cache_hit=4" in text
    assert "WARM CACHE MISSED [default]: fxgraph cache bypassed: because" in text
    assert "32.0% 0.6400 ms graph break at engine/models/breaks.py:19" in text
    assert "-> remove the .item()" in text
    assert "1 recompile(s): 0.50 s of compile" in text
    assert "cold 16.00 s | warm local cache 4.10 s | portable cache artifacts 5.00 s | " \
           "regional compilation no repeated blocks" in text
    assert "1 of 2 graphs captured, 1 skipped; 50% of the call" in text
    assert "compile phases [default] (cold, s): dynamo (trace, guards) 1.00" in text
