"""On the CPU the eager process leaves its FLOP count to the first compiled process (counting
imports the compiler); GPU runs count in every process as before (engine/roofline.py)."""

from engine import roofline

RUN = {"variants": ["eager", "default"]}


def test_only_a_cpu_eager_process_beside_a_compiled_variant_defers():
    assert roofline.deferred(RUN, "eager", "cpu")
    assert not roofline.deferred(RUN, "eager", "cuda")
    assert not roofline.deferred(RUN, "eager", "cuda:0")
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
