"""The lost-time account's shares add up (issue 41): each item belongs to one account of the
call, host time or the device during it, and each account adds up to 100 %; recompiles carry
their share of the compile time. The analysis is pure Python over profiler-shaped events."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from engine.analysis import forensics_report
from engine.measure import losttime

ROOT = Path(__file__).resolve().parent.parent


def _ev(kind, name, start, end):
    return {"kind": kind, "name": name, "start": start, "end": end, "thread": 1}


def _gpu_call(t0=0.0):
    """One 1000 us call: two graphs, the second replayed as a CUDA graph; device busy 300 us."""
    return [_ev("call", losttime.CALL, t0, t0 + 1000),
            _ev("lookup", "TorchDynamo Cache Lookup", t0 + 10, t0 + 60),
            _ev("region", "Torch-Compiled Region: 0/0", t0 + 60, t0 + 900),
            _ev("graph", "## Call CompiledFxGraph aa ##", t0 + 100, t0 + 400),
            _ev("graph", "## Call CompiledFxGraph bb ##", t0 + 450, t0 + 850),
            _ev("cg_launch", "cudaGraphLaunch", t0 + 500, t0 + 520)]


def _sums(out):
    by = {"host": 0.0, "device": 0.0}
    for i in out["items"]:
        by[i["part"]] += i["share"]
    return by


def test_host_and_device_accounts_each_add_up_to_one():
    tl = {"events": _gpu_call() + _gpu_call(2000.0), "calls": 2,
          "kernels": [[100, 250], [500, 650], [2100, 2250], [2500, 2650]]}
    out = losttime.account(tl, {}, [], wall_ms=1.0, cuda=True, cudagraphs=True)
    assert _sums(out) == {"host": pytest.approx(1.0), "device": pytest.approx(1.0)}
    items = {i["kind"]: i for i in out["items"]}
    # the graph not replayed as a CUDA graph is split out of "inside compiled graphs"
    assert items["uncaptured_cudagraph"]["share"] == pytest.approx(0.30)
    assert items["in_graphs"]["share"] == pytest.approx(0.40)
    assert items["launch_bound"]["share"] == pytest.approx(0.70)
    assert items["device_busy"]["share"] == pytest.approx(0.30)
    assert set(out["parts"]) == {"host", "device"}
    # host items first, each account ranked, its work last
    parts = [i["part"] for i in out["items"]]
    assert parts == sorted(parts, key=lambda p: p != "host")
    assert [i["kind"] for i in out["items"] if i["part"] == "device"] == ["launch_bound",
                                                                           "device_busy"]


def _bundle_row(model: str) -> dict:
    bundle = json.loads((ROOT / "data" / "h200_bundle.json").read_text())
    for run in bundle["runs"]:
        for v in run.get("variants") or run.get("results") or []:
            lost = (v.get("extra") or {}).get("lost_time") or {}
            if run["model"] == model and lost.get("items"):
                return {**v, "lost_time": lost}
    raise AssertionError(model)


def test_a_stored_account_from_before_the_parts_reads_disjoint():
    """The H200 bundle's graph-break run: launch-bound 49 % beside 64 % in graphs. Read as two
    accounts: the host items add up to 100 %, the device's busy and idle to 100 %."""
    lost = _bundle_row("graph_breaks")["lost_time"]
    assert "parts" not in lost
    parts = forensics_report.lost_parts(lost)
    assert sum(i["share"] for i in parts["host"]) == pytest.approx(1.0, abs=1e-3)
    assert sum(i["share"] for i in parts["device"]) == pytest.approx(1.0)
    assert {i["kind"] for i in parts["device"]} == {"launch_bound", "device_busy"}
    # an old account with uncaptured graphs: they were inside "in graphs" too
    old = {"items": [{"kind": "in_graphs", "share": 0.7}, {"kind": "python", "share": 0.3},
                     {"kind": "uncaptured_cudagraph", "share": 0.2},
                     {"kind": "launch_bound", "share": 0.5, "ms_per_call": 1.0}]}
    parts = forensics_report.lost_parts(old)
    assert sum(i["share"] for i in parts["host"]) == pytest.approx(1.0)
    busy = next(i for i in parts["device"] if i["kind"] == "device_busy")
    assert busy["share"] == pytest.approx(0.5) and busy["ms_per_call"] == pytest.approx(1.0)


def test_show_text_separates_the_accounts_and_gives_recompiles_their_share():
    rec = losttime.recompile_item({"0/0": {"compile_s": 6.0}, "0/1": {"compile_s": 3.0},
                                   "0/2": {"compile_s": 1.0}}, first_call_s=6.5)
    assert rec["count"] == 2 and rec["share_of_compile"] == pytest.approx(0.4)
    assert rec["part"] == "once"
    lost = _bundle_row("graph_breaks")["lost_time"] | {"recompiles": rec}
    text = "\n".join(forensics_report.lost_time_lines({"variant": "default", "lost_time": lost}))
    assert "add up to 100 %" in text
    assert "64.5% inside compiled graphs" in text
    assert "busy 51%, idle (launch-bound) 49%" in text
    assert "2 recompile(s): 4.00 s of compile, 40% of this process's compile time (each paid once" \
        in text


@pytest.mark.parametrize("reasons, says, not_says", [
    (["0/0: tensor 'x' size mismatch at index 1. expected 64, actual 128"], "dynamic", "keyword"),
    (["1/0: len(kwargs) == 4  # output = func(self, *args, **kwargs)"], "keyword",
     "mark the changing dimension"),
    (["size mismatch at index 0", "len(kwargs) == 6"], "where a shape changed", None),
    ([], "where a shape changed", None), (["", ""], "where a shape changed", None),
])
def test_the_recompile_remedy_follows_the_guard_that_failed(reasons, says, not_says):
    """A shape change is made dynamic; another guard (hf:mistral's keyword arguments inside
    generate()) is not a shape, and marking a dimension dynamic would not avoid it."""
    rec = losttime.recompile_item({"0/0": {"compile_s": 6.0}, "0/1": {"compile_s": 3.0}}, 6.5,
                                  reasons)
    assert says in rec["action"]
    if not_says:
        assert not_says not in rec["action"]


def test_chart_panels_each_add_up_to_one_per_variant():
    from dashboard import charts_base, charts_forensics

    rec = losttime.recompile_item({"0/0": {"compile_s": 6.0}, "0/1": {"compile_s": 4.0}}, 7.0)
    v = _bundle_row("graph_breaks")
    df = pd.DataFrame([{"run_id": 1, "variant": "eager", "status": "ok"},
                       {"run_id": 1, "variant": "default", "status": "ok",
                        "lost_time": v["lost_time"] | {"recompiles": rec}}])
    fig = charts_forensics.lost_time(df)
    assert [a.text for a in fig.layout.annotations][:3] == [t for _, t in
                                                             charts_forensics.LOST_PANELS]
    assert len(fig.data) == 3
    for bar in fig.data:
        assert sum(bar.x) == pytest.approx(1.0, abs=1e-3), bar.y
    once = fig.data[2]
    assert list(once.y) == ["default · recompiles", "default · first compile"]
    assert list(once.x) == [pytest.approx(0.4), pytest.approx(0.6)]
    # a CPU run: no device panel, no recompiles: one panel
    cpu = pd.DataFrame([{"run_id": 1, "variant": "default", "status": "ok", "lost_time": {
        "items": [{"kind": "python", "part": "host", "share": 0.2},
                  {"kind": "in_graphs", "part": "host", "share": 0.8}], "parts": {}}}])
    fig = charts_forensics.lost_time(cpu)
    assert len(fig.data) == 1 and fig.layout.annotations[0].text.startswith("Host time")
    assert charts_base.empty_message(fig) is None


@pytest.mark.parametrize("cuda", [False, True])
def test_cuda_graph_items_only_on_a_gpu(cuda):
    """max-autotune on a CPU runs no CUDA graphs: its graphs are not 'not replayed as CUDA
    graphs' and it has no coverage figure (it had both, 17 % uncaptured, on this CPU)."""
    lt = object.__new__(losttime.LostTime)
    lt.error, lt.cuda, lt.frames = None, cuda, {}
    lt.timeline = {"events": _gpu_call(), "calls": 1, "kernels": [[100, 400]] if cuda else []}
    out = lt.result({"wall_ms_per_call": 1.0}, {"backend": "inductor"}, "max-autotune")
    kinds = {i["kind"] for i in out["lost_time"]["items"]}
    assert ("uncaptured_cudagraph" in kinds) is cuda
    assert ("cudagraph_coverage" in out) is cuda
