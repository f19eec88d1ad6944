"""Device time with the host queued ahead (engine/measure/device_time.py): stored per process,
one eager figure for the run, and the verdict's sentence on where a gain comes from."""

from __future__ import annotations

import pytest

from engine.analysis.device_share import device_line
from engine.analysis.variant_stats import add_stats
from engine.analysis.verdict import decide


def _proc(variant_ms: float, eager_ms: float | None, dev: dict | None) -> dict:
    out = {"block": 5, "samples_ms": [variant_ms] * 20}
    if eager_ms is not None:
        out["eager_samples_ms"] = [eager_ms] * 20
    if dev is not None:
        out["device_ms"] = dev
    return out


def _results() -> dict:
    eager = {"variant": "eager", "status": "ok", "samples_ms": [7.0] * 20,
             "processes": [_proc(7.0, None, {"variant": 1.05}),
                           _proc(7.2, None, {"variant": 1.07})]}
    default = {"variant": "default", "status": "ok", "samples_ms": [4.5] * 20,
               "processes": [_proc(4.5, 7.1, {"variant": 1.33, "eager": 1.04}),
                             _proc(4.6, 7.0, {"variant": 1.35, "eager": 1.06}),
                             _proc(4.4, 6.9, {"variant": 1.31, "eager": "x"})]}
    return {"eager": eager, "default": default}


def test_stats_keep_each_variants_device_time_and_one_eager_device_time():
    res = _results()
    for r in res.values():
        add_stats(r, res)
    assert res["default"]["stats"]["device_ms_per_call"] == pytest.approx(1.33)
    # eager: every process that timed it, eager's own and default's paired ones (a string is
    # not a time): the median of 1.05, 1.07, 1.04, 1.06
    assert res["eager"]["stats"]["device_ms_per_call"] == pytest.approx(1.055)
    for r in res.values():
        assert r["stats"]["eager_device_ms_per_call"] == pytest.approx(1.055)


def _rows(devs: dict, speedups: dict) -> list[dict]:
    return [{"variant": v, "status": "ok", "device_ms_per_call": d,
             "speedup": speedups.get(v, 1.0)} for v, d in devs.items()]


def test_the_verdict_says_where_each_gain_comes_from():
    rows = _rows({"eager": 1.05, "default": 1.34, "reduce-overhead": 1.07, "max-autotune": 0.7},
                 {"default": 1.5, "reduce-overhead": 5.0, "max-autotune": 1.9})
    text = device_line(rows)
    assert text.startswith("One call's device work with the host queued ahead takes 1.05 ms "
                           "for eager, 1.34 ms for default, 1.07 ms for reduce-overhead, 0.7 ms "
                           "for max-autotune.")
    assert "default reads faster than eager although its kernels take longer on the device" \
        in text and "eager would be faster at these shapes" in text
    assert "reduce-overhead reads faster than eager with kernels that take about eager's" in text
    assert "max-autotune (1.50×) also run faster on the device itself" in text


def test_no_device_sentence_without_the_figures_and_none_from_hostile_ones():
    assert device_line(_rows({"eager": None, "default": 1.3}, {"default": 2})) is None
    assert device_line(_rows({"eager": 1.0}, {})) is None
    for bad in ("1.0", float("nan"), -1.0, True, [1.0]):
        assert device_line(_rows({"eager": 1.0, "default": bad}, {"default": 2})) is None
    # slower than eager per call and on the device: no gain to explain, the figures alone
    text = device_line(_rows({"eager": 1.0, "default": 1.3}, {"default": 0.8}))
    assert text.endswith("1.3 ms for default.")


def test_every_front_end_gets_the_device_sentence_from_the_verdict():
    res = _results()
    rows = []
    for r in res.values():
        add_stats(r, res)
        rows.append({"variant": r["variant"], "status": "ok", **r["stats"]})
    v = decide(rows)
    assert ("Device time", v.device) in v.lines() and v.as_dict()["device"] == v.device
    assert "default reads faster than eager although its kernels take longer" in v.device


def test_a_failed_variant_adds_no_eager_device_reading():
    res = _results()
    res["default"]["status"] = "failed"
    add_stats(res["eager"], res)
    assert res["eager"]["stats"]["device_ms_per_call"] == pytest.approx(1.06)  # 1.05, 1.07
