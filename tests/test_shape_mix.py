"""Shape distributions (engine/measure/shape_mix.py): weights validated against the sweep, a seeded
replay in the mix, the expected per-request time with recompile stalls, on fixed inputs; and one
aot_eager run that replays a mix end to end."""

from __future__ import annotations

import json

import pytest

from engine.measure import shape_mix
from engine.spec import SpecError, normalise
from tests.conftest import FAST, run_cli


def test_weights_are_checked_against_the_sweep_and_normalised() -> None:
    spec = normalise({"model": "varying_seq", "sweep": {"dim": "seq", "values": [8, 16, 32]},
                      "shape_weights": [6, 3, 1]})
    assert spec["shape_weights"] == pytest.approx([0.6, 0.3, 0.1])
    for weights, message in (([1, 2], "list of 3 numbers"), ([1, -1, 1], "from 0 to 1e12"),
                             ([0, 0, 0], "not all be 0"),
                             ([1e308, 1e308, 1], "from 0 to 1e12")):  # sum overflowed to inf
        with pytest.raises(SpecError, match=message):
            normalise({"model": "varying_seq", "sweep": {"dim": "seq", "values": [8, 16, 32]},
                       "shape_weights": weights})
    with pytest.raises(SpecError, match="give the sizes as a sweep"):
        normalise({"model": "varying_seq", "shape_weights": [1.0]})


def test_replay_draws_the_mix_and_times_each_request() -> None:
    calls: list[int] = []
    compiles = iter([0, 2])  # two recompiles during the replay
    out = shape_mix.replay([8, 16], [0.75, 0.25], 400, 0, inputs_for=lambda v: v,
                           call=calls.append, time_ms=lambda f: (f(), float(calls[-1]))[1],
                           compile_count=lambda: next(compiles))
    assert len(calls) == 400 and 250 < calls.count(8) < 350  # about 3 in 4
    assert out["mean_ms"] == pytest.approx(sum(calls) / 400)
    assert out["per_value_median_ms"] == {"8": 8.0, "16": 16.0}
    assert out["recompiles"] == 2
    assert shape_mix.draw([8, 16], [0.75, 0.25], 50, 3) == shape_mix.draw([8, 16], [0.75, 0.25],
                                                                          50, 3)


def test_expected_per_request_time_with_stalls() -> None:
    mix = {"mean_ms": 2.0, "weights": {"8": 0.9, "16": 0.1}, "recompiles": 0}
    sweep = [{"value": 8, "first_call_ms": 5.0, "median_ms": 1.0, "recompiled": False},
             {"value": 16, "first_call_ms": 1001.0, "median_ms": 1.0, "recompiled": True}]
    e = shape_mix.expected(mix, sweep, 10)
    seen = 1 - 0.9 ** 10  # the 16-token size shows up at least once in 10 requests
    assert e["stall_ms"] == pytest.approx(1000.0 * seen)
    assert e["per_request_ms"] == pytest.approx(2.0 + 1000.0 * seen / 10)
    big = shape_mix.expected(mix, sweep, 1_000_000)
    assert big["per_request_ms"] == pytest.approx(2.0 + 1000.0 / 1_000_000)
    assert shape_mix.expected({}, sweep, 10) is None


@pytest.mark.slow  # an end-to-end run (10-30 s here): the slow tier
def test_cli_run_replays_the_mix_and_recommend_reports_it(db_url: str) -> None:
    p = run_cli("run", "--model", "varying_seq", "--dim", "batch=1", "--dim", "hidden=16",
                "--dim", "heads=2", "--dim", "seq=8,12", "--weights", "3,1", "--backend",
                "aot_eager", "--variants", "eager,default", "--option", "dynamic=none,true",
                "--no-warm-cache", *FAST, "--json", db_url=db_url)
    assert p.returncode == 0, p.stderr[-2000:]
    run_id = p.stdout.strip().splitlines()[-1]
    shown = json.loads(run_cli("show", run_id, "--json", db_url=db_url).stdout)
    mixes = {v["variant"]: v["shape_mix"] for v in shown["variants"]}
    assert all(m and m["requests"] == 200 and m["mean_ms"] > 0 for m in mixes.values())
    assert mixes["default@dyn=1"]["weights"] == {"8": 0.75, "12": 0.25}
    rec = run_cli("recommend", run_id, "--calls", "1000", "--db", db_url)
    assert "Shape mix: expected per-request time over 1,000 requests" in rec.stdout
    assert "default@dyn=1 (dynamic True)" in rec.stdout
