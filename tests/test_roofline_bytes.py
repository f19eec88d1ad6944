"""Bytes per call in the roofline (issue 41): the floor (each parameter, input and output once)
and eager op by op (each aten operator reads its inputs and writes its outputs), achieved GB/s
against the copy ceiling, in show and in the dashboard's table (engine/measure/roofline.py)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from engine.analysis import forensics_report
from engine.measure import roofline

F32 = 4


class ViewsThenRelu(nn.Module):
    def forward(self, x):
        return torch.relu(x.view(-1).t().reshape(4, -1))  # views move nothing; relu does


def test_op_by_op_counts_each_operator_and_no_view():
    x = torch.randn(8, 16)
    r = roofline.per_call(ViewsThenRelu(), (x,))
    assert r["ops_per_call"] == 1
    assert r["bytes_per_call_ops"] == 2 * 8 * 16 * F32  # relu reads x, writes its output
    assert r["bytes_per_call_estimate"] == 2 * 8 * 16 * F32


def test_a_linear_gelu_chain_moves_more_op_by_op_than_its_floor():
    model = nn.Sequential(nn.Linear(64, 32, bias=False), nn.GELU(), nn.Linear(32, 16, bias=False))
    x = torch.randn(8, 64)
    r = roofline.per_call(model, (x,))
    assert r["flops_per_call"] == 2 * 8 * (64 * 32 + 32 * 16)  # FlopCounterMode still counts
    mm1 = (8 * 64 + 64 * 32 + 8 * 32) * F32
    gelu = 2 * 8 * 32 * F32
    mm2 = (8 * 32 + 32 * 16 + 8 * 16) * F32
    assert r["bytes_per_call_ops"] == mm1 + gelu + mm2
    assert r["bytes_per_call_estimate"] == (64 * 32 + 32 * 16 + 8 * 64 + 8 * 16) * F32
    assert r["bytes_per_call_ops"] > r["bytes_per_call_estimate"]
    assert "aten operator" in r["bytes_method"]


def test_a_broadcast_input_counts_its_stored_elements():
    b = torch.randn(16).expand(8, 16)
    assert roofline.stored_bytes(b) == 16 * F32
    assert roofline.stored_bytes(torch.randn(8, 16)) == 8 * 16 * F32
    assert roofline.stored_bytes(torch.randn(0, 3)) == 0


def test_achieved_gbps_and_share_of_the_copy_ceiling_for_both_counts():
    counts = {"flops_per_call": 2e9, "bytes_per_call_estimate": 1e6, "bytes_per_call_ops": 4e6}
    r = roofline.from_counts(counts, 2.0, "cuda", peak={"peak_tflops_bf16": 800.0,
                                                        "peak_copy_gbps": 4000.0, "gpu": "g"})
    assert r["achieved_gbps_estimate"] == pytest.approx(0.5)
    assert r["achieved_gbps_ops"] == pytest.approx(2.0)
    assert r["share_of_peak_gbps_ops"] == pytest.approx(2.0 / 4000.0)
    old = roofline.from_counts({"flops_per_call": 1, "bytes_per_call_estimate": 1}, 1.0, "cpu")
    assert "achieved_gbps_ops" not in old  # a count from before: nothing invented


def test_the_runner_gives_eager_the_op_by_op_count_too():
    eager = {"variant": "eager", "wall_ms_per_call": 2.0,
             "roofline": {"deferred": roofline.DEFERRED}}
    compiled = {"variant": "default", "roofline": {
        "flops_per_call": 4e9, "bytes_per_call_estimate": 2e6, "bytes_per_call_ops": 8e6,
        "ops_per_call": 40, "bytes_method": roofline.BYTES_METHOD}}
    assert roofline.fill_deferred(eager, compiled, "cpu")
    assert eager["roofline"]["achieved_gbps_ops"] == pytest.approx(8e6 / 2e-3 / 1e9)
    assert eager["roofline"]["bytes_method"] == roofline.BYTES_METHOD


def test_show_and_the_table_say_floor_to_op_by_op():
    from dashboard import charts_forensics

    counts = {"flops_per_call": 174e9, "bytes_per_call_estimate": 210 * 2**20,
              "bytes_per_call_ops": 943 * 2**20}
    r = roofline.from_counts(counts, 5.97, "cuda", peak={"peak_tflops_bf16": 750.0,
                                                          "peak_copy_gbps": 4000.0, "gpu": "g"})
    text = forensics_report.roofline_line({"variant": "eager", "roofline": r})
    assert "210 MiB/call (floor: parameters, inputs, outputs once) to 943 MiB (eager op by op)" \
        in text
    assert "36.9 to 166 GB/s" in text and "0.9% to 4.1%" in text
    old = forensics_report.roofline_line({"variant": "eager", "roofline": {
        "flops_per_call": 1e9, "bytes_per_call_estimate": 2**20}})
    assert "~1 MiB/call (estimate)" in old
    t = charts_forensics.roofline_table(pd.DataFrame([
        {"run_id": 1, "variant": "eager", "status": "ok", "roofline": r},
        {"run_id": 1, "variant": "default", "status": "ok", "roofline": {"error": "x"}}]))
    assert list(t["variant"]) == ["eager"]
    assert t["MiB/call op by op"][0] == pytest.approx(943)
    assert t["GB/s op by op"][0] == pytest.approx(943 * 2**20 / 5.97e-3 / 1e9)
    assert t["% of copy GB/s op by op"][0] == pytest.approx(100 * 943 * 2**20 / 5.97e-3 / 1e9
                                                            / 4000)


def test_the_table_leaves_out_what_no_variant_has():
    from dashboard import charts_forensics

    cpu = roofline.from_counts({"flops_per_call": 1e9, "bytes_per_call_estimate": 2**20}, 1.0,
                               "cpu")
    t = charts_forensics.roofline_table(pd.DataFrame([
        {"run_id": 1, "variant": "eager", "status": "ok", "roofline": cpu}]))
    assert list(t.columns) == ["variant", "GFLOP/call", "MiB/call floor", "TFLOP/s",
                               "GB/s floor"]
