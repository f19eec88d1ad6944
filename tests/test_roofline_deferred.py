"""The eager process leaves its FLOP count to the first compiled process (counting imports the
compiler, which eager's timing slot should not pay), on any device (engine/measure/roofline.py)."""

from engine.measure import roofline

RUN = {"variants": ["eager", "default"]}


def test_only_an_eager_process_beside_a_compiled_variant_defers():
    assert roofline.deferred(RUN, "eager", "cpu")
    assert roofline.deferred(RUN, "eager", "cuda")
    assert roofline.deferred(RUN, "eager", "cuda:0")
    assert not roofline.deferred(RUN, "default", "cuda")
    assert not roofline.deferred(RUN, "default", "cpu")
    assert not roofline.deferred({"variants": ["eager"]}, "eager", "cpu")  # nobody else counts


def test_the_runner_fills_eager_from_the_compiled_counts_at_eagers_own_speed():
    eager = {"variant": "eager", "wall_ms_per_call": 2.0,
             "roofline": {"deferred": roofline.DEFERRED}}
    compiled = {"variant": "default", "roofline": {"flops_per_call": 4e9,
                                                    "bytes_per_call_estimate": 2e6,
                                                    "achieved_tflops": 99.0}}
    assert roofline.fill_deferred(eager, compiled, "cpu")
    r = eager["roofline"]
    assert r["flops_per_call"] == 4e9 and r["counted_in"] == "default"
    assert abs(r["achieved_tflops"] - 4e9 / 2e-3 / 1e12) < 1e-12  # eager's 2 ms, not 99
    assert abs(r["achieved_gbps_estimate"] - 2e6 / 2e-3 / 1e9) < 1e-12
    assert not roofline.fill_deferred(eager, compiled, "cpu")  # once


def test_nothing_is_filled_from_a_failed_count_or_into_a_counted_eager():
    eager = {"wall_ms_per_call": 2.0, "roofline": {"deferred": roofline.DEFERRED}}
    assert not roofline.fill_deferred(eager, {"roofline": {"error": "x"}}, "cpu")
    assert not roofline.fill_deferred(eager, {}, "cpu")
    counted = {"wall_ms_per_call": 2.0, "roofline": {"flops_per_call": 1}}
    assert not roofline.fill_deferred(counted, {"roofline": {"flops_per_call": 5,
                                                             "bytes_per_call_estimate": 1}}, "cpu")
    assert counted["roofline"] == {"flops_per_call": 1}


def test_on_the_gpu_eager_gets_the_ceilings_the_compiled_process_measured():
    """The runner never measures the GPU itself: eager's share of peak uses the compiled
    process's ceilings, at eager's own per-call time."""
    eager = {"wall_ms_per_call": 2.0, "roofline": {"deferred": roofline.DEFERRED}}
    compiled = {"variant": "default", "roofline": {
        "flops_per_call": 4e9, "bytes_per_call_estimate": 2e6, "peak_tflops_bf16": 800.0,
        "peak_copy_gbps": 4000.0, "gpu": "NVIDIA H200 | torch 2.11"}}
    assert roofline.fill_deferred(eager, compiled, "cuda")
    r = eager["roofline"]
    assert r["gpu"] == "NVIDIA H200 | torch 2.11" and r["peak_tflops_bf16"] == 800.0
    assert abs(r["share_of_peak_tflops"] - (4e9 / 2e-3 / 1e12) / 800.0) < 1e-12
    assert abs(r["share_of_peak_gbps"] - (2e6 / 2e-3 / 1e9) / 4000.0) < 1e-12


def test_without_ceilings_from_the_compiled_process_the_runner_measures_none(monkeypatch):
    def no_gpu_here(device):  # the runner must not initialise CUDA
        raise AssertionError("the runner measured ceilings")

    monkeypatch.setattr(roofline, "ceilings", no_gpu_here)
    eager = {"wall_ms_per_call": 2.0, "roofline": {"deferred": roofline.DEFERRED}}
    compiled = {"roofline": {"flops_per_call": 4e9, "bytes_per_call_estimate": 2e6}}
    assert roofline.fill_deferred(eager, compiled, "cuda")
    assert "share_of_peak_tflops" not in eager["roofline"]
