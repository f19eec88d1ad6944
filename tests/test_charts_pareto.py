"""The Pareto view (engine/analysis/pareto.py, dashboard/charts_pareto.py) on a fixed grid."""

from __future__ import annotations

import pandas as pd

from dashboard.charts_base import empty_message
from dashboard.charts_pareto import pareto_figure, pareto_figures
from engine.analysis.pareto import front, mark

MiB = 2**20


def grid_frame() -> pd.DataFrame:
    rows = [  # variant, cold first call s, per-call ms, peak MiB, correct
        ("eager", 0.01, 4.0, 300, True),
        ("default@fg=0", 10.0, 3.0, 350, True),
        ("default@fg=1", 12.0, 3.5, 340, True),      # dominated by default@fg=0 on time
        ("reduce-overhead@fg=0", 15.0, 1.5, 600, True),
        ("reduce-overhead@fg=1", 20.0, 1.0, 900, False),  # fastest, but wrong
    ]
    return pd.DataFrame([{"run_id": 1, "variant": v, "status": "ok", "first_call_cold_s": c,
                          "median_ms": m, "peak_reserved_bytes": p * MiB, "correct": ok}
                         for v, c, m, p, ok in rows])


def test_front_on_fixed_points() -> None:
    assert front([(1, 5), (2, 4), (3, 4), (2, 6), (4, 1)]) == [True, True, False, False, True]
    assert front([(1, 1), (1, 1)]) == [True, True]  # equal points do not dominate each other


def test_mark_judges_the_front_among_correct_configs_only() -> None:
    rows = grid_frame().to_dict("records")
    pts = {p["row"]["variant"]: p for p in mark(rows, "first_call_cold_s")}
    assert {v for v, p in pts.items() if p["front"]} == {"eager", "default@fg=0",
                                                         "reduce-overhead@fg=0"}
    assert pts["reduce-overhead@fg=1"]["correct"] is False
    mem = {p["row"]["variant"]: p for p in mark(rows, "peak_memory")}
    assert mem["default@fg=1"]["x"] == 340
    # on memory, default@fg=1 (340 MiB, 3.5 ms) is not beaten by default@fg=0 (350 MiB, 3 ms)
    assert {v for v, p in mem.items() if p["front"]} == {"eager", "default@fg=0", "default@fg=1",
                                                         "reduce-overhead@fg=0"}


def test_pareto_figure_rings_the_front_and_hovers_settings() -> None:
    fig = pareto_figure(grid_frame(), "first_call_cold_s")
    points = {t.name: t for t in fig.data if t.mode == "markers"}
    assert points["default@fg=0"].marker.line.width == 3
    assert points["default@fg=1"].marker.line.width == 1
    assert points["reduce-overhead@fg=1"].marker.symbol == "x"
    hover = points["default@fg=1"].hovertext
    assert "mode: default" in hover and "fullgraph: True" in hover
    assert "not a candidate" in points["reduce-overhead@fg=1"].hovertext
    step = [t for t in fig.data if t.mode == "lines"]
    assert len(step) == 1 and list(step[0].x) == [0.01, 10.0, 15.0]


def test_pareto_without_memory_says_why() -> None:
    df = grid_frame().assign(peak_reserved_bytes=None)
    figs = dict(pareto_figures(df))
    assert "No peak memory measured" in (empty_message(figs["pareto_memory"]) or "")
    assert empty_message(figs["pareto_compile"]) is None
    empty = pareto_figure(df.iloc[0:0])
    assert empty_message(empty) == "No finished variants."


def test_a_long_legend_grows_the_figure_instead_of_squeezing_the_plot() -> None:
    few = pareto_figure(grid_frame())
    many_rows = pd.concat([grid_frame()] + [
        grid_frame().assign(variant=grid_frame()["variant"] + f"@cfg{i}") for i in range(3)],
        ignore_index=True)
    many = pareto_figure(many_rows)
    n_few = sum(1 for t in few.data if t.name)
    n_many = sum(1 for t in many.data if t.name)
    assert n_many > n_few > 0
    assert few.layout.height == 480 + 20 * max(n_few - 4, 0)
    assert many.layout.height == min(480 + 20 * (n_many - 4), 960) > few.layout.height
