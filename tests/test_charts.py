"""Chart builders: pure functions of DataFrames -> Plotly figures with titled, unit-bearing axes."""

from __future__ import annotations

import pandas as pd
import pytest
from test_dashboard_data import bert_results, frames, mlp_results, runs_frame, spec, sweep_results

from dashboard import (
    charts,
    charts_base,
    charts_latency,
    charts_resources,
    charts_sweep,
    charts_warmup,
    tables,
)


@pytest.fixture(scope="module")
def bert():
    return frames({1: bert_results()})


@pytest.fixture(scope="module")
def mlp():
    return frames({2: mlp_results()})


def _title(fig) -> str:
    return fig.layout.title.text


def _has_unit(text: str) -> bool:
    return any(u in text for u in ("(ms", "(s", "(×", "(MiB", "(count", "(value"))


def _assert_titled(fig):
    assert _title(fig) and _has_unit(_title(fig)), _title(fig)
    assert fig.layout.xaxis.title.text, "x axis needs a title"
    assert _has_unit(fig.layout.yaxis.title.text) or _has_unit(fig.layout.xaxis.title.text)


def test_every_compare_figure_is_titled_with_units(bert):
    figs = charts.compare_figures(bert)
    assert [k for k, _ in figs] == list(charts.ALL_COMPARE_FIGURES)
    for _, fig in figs:
        _assert_titled(fig)
        assert len(fig.data) > 0


def test_warmup_cost_cold_and_warm_bars(bert):
    fig = charts_warmup.warmup_cost(bert["variants"])
    assert len(fig.data) == 2
    cold, warm = fig.data
    assert "cold" in cold.name and "warm" in warm.name
    assert list(cold.x) == ["eager", "default", "reduce-overhead"]  # failed variant left out
    assert list(cold.y) == pytest.approx([0.002, 16.0, 17.0])
    assert fig.layout.yaxis.title.text == "first call time (s)"
    assert fig.layout.barmode == "group"


def test_warmup_curve_log_y_marks_cudagraph_recording_and_recompiles(bert):
    fig = charts_warmup.warmup_curve(bert["warmup"], bert["recompiles"])
    names = [t.name for t in fig.data]
    assert names == ["eager", "default", "reduce-overhead", "call 2 records CUDA graphs",
                     "recompile"]
    assert fig.layout.yaxis.type == "log"
    assert "log" in fig.layout.yaxis.title.text and "ms" in fig.layout.yaxis.title.text
    texts = [a.text for a in fig.layout.annotations]
    assert any("call 2 records CUDA graphs" in t for t in texts)
    # two runs' notes stack in the corner (they used to sit on each other beside call 2)
    two = pd.concat([bert["warmup"], bert["warmup"].assign(run_id=99)])
    notes = [a for a in charts_warmup.warmup_curve(two, None).layout.annotations
             if "records CUDA graphs" in (a.text or "")]
    assert len(notes) == 2 and {(a.xref, a.yref) for a in notes} == {("paper", "paper")}
    assert abs(notes[0].y - notes[1].y) >= charts_base.NOTE_STEP - 1e-9
    assert all(a.bgcolor == "rgba(255,255,255,1)" for a in notes)  # no line shows through
    recompile = fig.data[-1]
    assert list(recompile.x) == [5]
    assert recompile.marker.symbol == "x"
    # a grid's four reduce-overhead configs: no pile of notes (the subtitle says it once)
    w = bert["warmup"]
    ro = w[w["variant"] == "reduce-overhead"]
    grid = pd.concat([w] + [ro.assign(variant=f"reduce-overhead@cfg={i}") for i in range(3)])
    texts = [a.text for a in charts_warmup.warmup_curve(grid, None).layout.annotations]
    assert not [t for t in texts if "records CUDA graphs" in (t or "")]


def test_latency_distribution_per_call_and_pipelined_boxes(bert):
    fig = charts_latency.latency_distribution(bert["samples"])
    assert len(fig.data) == 2
    assert all(t.type == "box" for t in fig.data)
    assert "per call" in fig.data[0].name and "pipelined" in fig.data[1].name
    assert fig.layout.yaxis.title.text == "time per call (ms)"
    # eager's paired samples inside compile variants are not drawn as extra boxes
    assert set(fig.data[0].x) == {"eager", "default", "reduce-overhead"}


def test_speedup_colours_faster_green_slower_red_with_ci_and_unity_line():
    f = frames({1: bert_results()[:3], 2: mlp_results()})  # one faster run, one slower run
    fig = charts_latency.speedup(f["variants"])
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"faster than eager", "slower than eager", charts_base.EAGER_LINE}
    assert by_name["faster than eager"].marker.color == charts_base.FASTER == "#2ca02c"
    assert by_name["slower than eager"].marker.color == charts_base.SLOWER == "#d62728"
    assert list(by_name["faster than eager"].x) == ["#1 default", "#1 reduce-overhead"]
    assert len(by_name["slower than eager"].x) == 3
    assert all(v < 1 for v in by_name["slower than eager"].y)
    err = by_name["faster than eager"].error_y
    assert err.visible and len(err.array) == 2 and all(v > 0 for v in err.array)
    hlines = [s for s in fig.layout.shapes if s.y0 == 1.0 and s.y1 == 1.0]
    assert len(hlines) == 1
    assert "×" in fig.layout.yaxis.title.text


@pytest.mark.parametrize("chart", ["speedup", "sweep"])
def test_the_eager_line_is_named_in_the_legend_not_on_the_plot(chart):
    """The 1.0× line's name sat at the plot's right end, on the last bar (grey on green): it
    is a legend entry drawn like the line, and no note lies inside the plot."""
    f = frames({1: bert_results()[:3]})
    fig = (charts_latency.speedup(f["variants"]) if chart == "speedup" else
           charts_sweep.sweep_speedup(pd.DataFrame({
               "run_id": [1, 1, 1, 1], "variant": ["eager", "default"] * 2,
               "value": [64, 64, 128, 128], "median_ms": [2.0, 1.0, 4.0, 5.0],
               "eager_median_ms": [2.0, 2.0, 4.0, 4.0]})))
    entry = [t for t in fig.data if t.name == charts_base.EAGER_LINE]
    assert len(entry) == 1 and entry[0].line.dash == "dash" and entry[0].showlegend is not False
    assert not [a for a in fig.layout.annotations if "eager = 1" in (a.text or "")]


def test_speedup_only_slower(mlp):
    fig = charts_latency.speedup(mlp["variants"])
    assert [t.name for t in fig.data] == ["slower than eager", charts_base.EAGER_LINE]
    assert fig.data[0].marker.color == charts_base.SLOWER


def test_break_even_annotates_crossings_and_never(bert, mlp):
    fig = charts_warmup.break_even(bert["variants"])
    assert [t.name for t in fig.data] == ["eager", "default", "reduce-overhead",
                                          "break-even point"]
    notes = [a for a in fig.layout.annotations if "breaks even after" in (a.text or "")]
    crossings = [a.text for a in notes]
    assert len(crossings) == 2
    # stacked in the plot's corner on opaque boxes: not on each other, no line through them
    assert {(a.xref, a.yref, a.showarrow) for a in notes} == {("paper", "paper", False)}
    assert abs(notes[0].y - notes[1].y) >= charts_base.NOTE_STEP - 1e-9
    assert all(a.bgcolor == "rgba(255,255,255,1)" for a in notes)
    # reduce-overhead: 1 + ceil(16.998 s extra / (5.97 - 1.14) ms saving) = 3,521 calls
    assert any("reduce-overhead breaks even after 3,521 calls" in t for t in crossings)
    assert fig.layout.xaxis.type == "log"
    assert "calls" in fig.layout.xaxis.title.text and "(s" in fig.layout.yaxis.title.text

    fig = charts_warmup.break_even(mlp["variants"])
    # "never" is said in the legend: arrows to the ends of several such lines piled up
    names = [t.name for t in fig.data]
    assert len([t for t in names if "never breaks even" in t]) == 3
    assert names[0] == "eager"
    texts = [a.text for a in fig.layout.annotations]
    assert not [t for t in texts if "breaks even after" in t]


def test_break_even_with_many_crossings_marks_points_instead_of_piling_arrows(bert):
    """A grid of eight configs drew eight arrows stacked over the chart's title: past three
    crossings, each is a point (hover names it) and the legend says the call count."""
    v = bert["variants"]
    compiled = v[v["variant"] != "eager"]
    many = pd.concat([v] + [compiled.assign(variant=compiled["variant"] + f"@cfg={i}")
                            for i in range(3)], ignore_index=True)
    fig = charts_warmup.break_even(many)
    assert not [a for a in fig.layout.annotations if "breaks even after" in (a.text or "")]
    names = [t.name for t in fig.data]
    assert "reduce-overhead — breaks even after 3,521 calls" in names
    pts = next(t for t in fig.data if t.name == "break-even point")
    assert len(pts.x) == 8 and any("reduce-overhead@cfg=2 breaks even after 3,521" in t
                                   for t in pts.text)


def test_break_even_crossing_lies_on_both_lines(bert):
    fig = charts_warmup.break_even(bert["variants"])
    ring = next(t for t in fig.data if t.name == "break-even point")
    n = round(next(x for x, text in zip(ring.x, ring.text, strict=True)
                   if text.startswith("default")))
    row = bert["variants"].set_index("variant").loc["default"]
    assert n == row.break_even_calls

    def compiled(k):
        return row.first_call_cold_s + (k - 1) * row.median_ms / 1000

    def eager(k):
        return 0.002 + (k - 1) * 5.97 / 1000

    assert compiled(n) <= eager(n) and compiled(n - 1) > eager(n - 1)


def test_peak_memory_mib_and_cpu_empty_state(bert):
    fig = charts_resources.peak_memory(bert["variants"])
    assert len(fig.data) == 2
    assert fig.data[0].y[0] == pytest.approx(180.0)
    assert fig.layout.yaxis.title.text == "peak memory (MiB)"
    cpu = charts_resources.peak_memory(frames({1: mlp_results(device="cpu")})["variants"])
    assert len(cpu.data) == 0
    assert "CUDA devices only" in cpu.layout.annotations[0].text
    assert "(MiB)" in _title(cpu)


def test_kernels_and_device_busy(bert):
    fig = charts_resources.kernels_per_call(bert["variants"])
    assert len(fig.data) == 1
    assert list(fig.data[0].y) == [32.0, 1.0, 1.0]
    assert fig.layout.yaxis.title.text == "kernels per call (count)"
    fig = charts_resources.device_busy(bert["variants"])
    assert [t.name for t in fig.data] == ["device busy", "wall"]
    assert fig.data[0].text[0] == "70% busy"  # busy 0.7 x the per-call median (median_ms)
    assert "(ms" in _title(fig)


def test_device_busy_empty_without_busy_times():
    """A CPU run (or profile off) still stores wall_ms_per_call, the steady-state median:
    drawn alone it would only repeat the latency chart."""
    variants = frames({1: mlp_results(device="cpu")})["variants"].copy()
    variants["device_busy_ms_per_call"] = float("nan")
    assert variants["wall_ms_per_call"].notna().all()
    fig = charts_resources.device_busy(variants)
    assert len(fig.data) == 0
    assert "profiler pass on CUDA devices" in charts_base.empty_message(fig)


def test_sweep_latency_and_first_call_mark_recompiles():
    f = frames({5: sweep_results()})
    fig = charts_sweep.sweep_latency(f["sweep_points"], "seq")
    assert [t.name for t in fig.data] == ["eager", "default", "recompiled at this value",
                                          "eager, paired in default's process"]
    assert list(fig.data[-1].y) == [2.0, 3.2, 2.5] and fig.data[-1].line.dash == "dot"
    assert list(fig.data[2].x) == [64]
    assert fig.layout.xaxis.title.text == "seq (value)"
    assert "(ms" in _title(fig) and "seq" in _title(fig)
    assert fig.data[1].error_y.visible
    fig = charts_sweep.sweep_first_call(f["sweep_points"], "seq")
    assert fig.layout.yaxis.type == "log"
    assert len(fig.data) == 3


def test_sweep_speedup_uses_the_paired_eager_and_colours_by_side_of_one():
    f = frames({5: sweep_results()})
    fig = charts_sweep.sweep_speedup(f["sweep_points"], "seq")
    # eager is the baseline: its dashed 1.0× line, not a series of its own
    assert [t.name for t in fig.data] == ["default", charts_base.EAGER_LINE]
    assert [round(v, 3) for v in fig.data[0].y] == [2.0, 2.0, 0.862]
    faster, slower = charts_base.FASTER, charts_base.SLOWER
    assert list(fig.data[0].marker.color) == [faster, faster, slower]
    assert "(×" in _title(fig) and "seq" in _title(fig)
    # sweep points stored before the paired eager median: an empty state that says why
    old = f["sweep_points"].assign(eager_median_ms=None)
    fig = charts_sweep.sweep_speedup(old, "seq")
    assert len(fig.data) == 0 and "paired eager" in charts_base.empty_message(fig)
    assert len(charts_sweep.sweep_latency(old, "seq").data) == 3


def test_multi_run_labels_and_dashes():
    f = frames({3: bert_results(), 7: mlp_results()})
    fig = charts_warmup.warmup_curve(f["warmup"], f["recompiles"])
    names = [t.name for t in fig.data]
    assert "#3 eager" in names and "#7 eager" in names
    dashes = {t.name: t.line.dash for t in fig.data if t.name != "recompile"}
    assert dashes["#3 default"] != dashes["#7 default"]


@pytest.mark.parametrize("builder", [charts_warmup.warmup_cost, charts_latency.speedup,
                                     charts_warmup.break_even, charts_resources.peak_memory,
                                     charts_resources.kernels_per_call,
                                     charts_resources.device_busy])
def test_empty_inputs_give_titled_empty_state(builder):
    fig = builder(pd.DataFrame())
    assert len(fig.data) == 0
    assert fig.layout.annotations and _has_unit(_title(fig))


def test_empty_long_frames():
    empty = pd.DataFrame()
    for fig in (charts_warmup.warmup_curve(empty), charts_latency.latency_distribution(empty),
                charts_sweep.sweep_latency(empty), charts_sweep.sweep_first_call(empty),
                charts_sweep.sweep_speedup(empty)):
        assert len(fig.data) == 0 and fig.layout.annotations


def test_tables(bert):
    runs = runs_frame({1: spec("bert")})
    vt = tables.variants_table(bert["variants"], runs)
    assert {"model", "variant", "median_ms", "speedup_x", "peak_allocated_mib"} <= set(vt.columns)
    assert vt.loc[vt.variant == "default", "peak_allocated_mib"].iloc[0] == pytest.approx(180.0)
    gb = tables.graph_breaks_table(bert["graph_breaks"])
    assert list(gb.columns) == ["run_id", "variant", "reason", "location", "count"]
    assert gb.iloc[0]["location"] == "/models/bert.py:88" and gb.iloc[0]["count"] == 2
    rc = tables.recompiles_table(bert["recompiles"])
    assert "size mismatch" in rc.iloc[0]["reason"]
    assert "None" not in rc.astype(str).to_numpy().ravel().tolist()
    outside = tables.recompiles_table(bert["recompiles"].assign(call_index=None))
    assert set(outside["call_index"]) == {"outside the numbered warm-up calls"}
    assert "dim_value" not in outside.columns  # not a sweep
    # the stored phase says when; a phase the engine does not write (outside input) says nothing
    phased = tables.recompiles_table(bert["recompiles"].assign(call_index=None, phase="steady"))
    assert set(phased["call_index"]) == {"during the timed rounds: a timed call held this "
                                         "compile"}
    odd = tables.recompiles_table(bert["recompiles"].assign(call_index=None,
                                                            phase="<b>x</b>"))
    assert set(odd["call_index"]) == {"outside the numbered warm-up calls"}
    failed = tables.failed_variants(bert["variants"])
    assert list(failed["variant"]) == ["max-autotune"]
    assert failed.iloc[0]["failure_kind"] == "oom"
    rt = tables.runs_table(runs)
    assert rt.iloc[0]["tags"] == "nightly"
    env = tables.environment_rows(runs.iloc[0]["environment"])
    assert env.iloc[0]["key"] == "host"


def test_compile_phases_and_cudagraph_skips_tables(bert):
    phases = tables.compile_phases_table(bert["variants"])
    assert {"dynamo (s)", "inductor (lowering) (s)"} <= set(phases.columns)
    v = bert["variants"].copy()
    v["cudagraph_skips"] = [[], [], [{"reason": "mutated inputs"}], []]
    skips = tables.cudagraph_skips_table(v)
    assert list(skips["reason"]) == ["mutated inputs"]
    assert list(skips["variant"]) == ["reduce-overhead"]


def test_compile_phases_table_names_the_charts_exclusive_phases():
    """torch's totals nest (dynamo's holds the backend's, which holds inductor's, which holds
    code generation): the table listed them raw ('dynamo_total 16.9, backend 14.5, inductor
    8.56, codegen 3.99' beside a 17.6 s first call) and the chart above it named them apart.
    It shows the chart's exclusive phases, which add up to the first call, and the rest in
    plain words."""
    v = pd.DataFrame([{"run_id": 8, "variant": "default", "first_call_cold_s": 17.6,
                       "compile_phases_s": {"dynamo_total": 16.9, "backend": 14.5,
                                            "inductor": 8.5, "codegen": 4.0,
                                            "triton_compile": 0.02, "cudagraphify": 0.01}}])
    row = tables.compile_phases_table(v).iloc[0]
    exclusive = ["dynamo (trace, guards) (s)", "AOTAutograd (s)", "inductor (lowering) (s)",
                 "code generation (s)", "rest of first call (s)"]
    assert [row[c] for c in exclusive] == pytest.approx([2.4, 6.0, 4.5, 4.0, 0.7])
    assert sum(row[c] for c in exclusive) == pytest.approx(17.6)
    assert row["of which Triton kernel compile (s)"] == pytest.approx(0.02)
    assert row["CUDA graph recording (s)"] == pytest.approx(0.01)
    assert not {"dynamo_total (s)", "backend (s)", "codegen (s)"} & set(row.index)


def test_warmup_curve_says_nothing_of_cuda_graphs_on_a_cpu_run(bert):
    """A CPU run's reduce-overhead records no CUDA graph: neither a note nor the subtitle
    says it did (the GPU run beside it keeps its note)."""
    cpu = charts_warmup.warmup_curve(bert["warmup"], None, cuda_runs=set())
    texts = [a.text or "" for a in cpu.layout.annotations]
    assert not any("CUDA graphs" in t for t in texts)
    assert "CUDA graphs" not in cpu.layout.title.to_plotly_json().__repr__()
    assert "call 2 records CUDA graphs" not in [t.name for t in cpu.data]
    both = pd.concat([bert["warmup"], bert["warmup"].assign(run_id=99)])
    run = int(bert["warmup"]["run_id"].iloc[0])
    mixed = charts_warmup.warmup_curve(both, None, cuda_runs={run})
    notes = [a.text for a in mixed.layout.annotations if "records CUDA graphs" in (a.text or "")]
    assert len(notes) == 1 and notes[0].startswith(f"#{run} ")
