"""engine/analysis/recommend.py: the arithmetic of ``python -m engine recommend`` on fixed inputs, and
the command on the real H200 runs of data/h200_bundle.json (imported first)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from engine.analysis.recommend import Candidate, envelope, recommend
from tests.conftest import ROOT, run_cli


def row(variant: str, *, first: float | None = None, warm: float | None = None,
        per_ms: float, speedup: float | None = None, lo: float | None = None,
        hi: float | None = None, peak: int | None = None, **more) -> dict:
    """A variant row as storage.records gives it (only the figures recommend reads)."""
    r = {"variant": variant, "status": "ok", "median_ms": per_ms, "first_call_cold_s": first,
         "first_call_warm_s": warm, "speedup": speedup, "speedup_ci_low": lo,
         "speedup_ci_high": hi, "peak_reserved_bytes": peak, "correct": True}
    r.update(more)
    return r


def fixed_rows() -> list[dict]:
    """eager 10 ms first call / 1 ms per call; A compiles in 3.0104 s, 0.5 ms per call;
    B compiles in 10 s, 0.2 ms per call."""
    return [
        row("eager", first=1.5, per_ms=1.0, peak=100 * 2**20),
        row("A", first=3.0104, warm=0.5104, per_ms=0.5, speedup=2.0, lo=1.8, hi=2.2,
            peak=200 * 2**20, eager_first_call_ms=10.0),
        row("B", first=10.0, warm=1.0, per_ms=0.2, speedup=5.0, lo=4.0, hi=6.0,
            peak=900 * 2**20, eager_first_call_ms=10.0),
    ]


def test_total_time_and_envelope_on_fixed_inputs() -> None:
    rec = recommend(fixed_rows(), 1000)
    eager = next(c for c in rec.candidates if c.name == "eager")
    # eager's first call is the stats block's eager_first_call_ms (after CUDA start-up), not
    # the eager process's first_call_cold_s
    assert eager.first_s == pytest.approx(0.010)
    assert eager.total_s(1000) == pytest.approx(0.010 + 999 * 0.001)
    # A beats eager once 0.5 ms x (N - 1) > 3.0004 s: N - 1 > 6000.8, N = 6002;
    # B beats A once 0.3 ms x (N - 1) > 6.9896 s: N - 1 > 23298.67, N = 23300
    assert rec.changes == [(1, "eager"), (6002, "A"), (23300, "B")]
    assert rec.choice == "eager"
    assert rec.runner_up is not None and rec.runner_up.name == "A"
    assert rec.margin_s == pytest.approx((3.0104 + 999 * 0.0005) - (0.010 + 999 * 0.001))
    # A's per-call interval is its median scaled by speedup / CI ends; eager is a point
    lo = 3.0004 + 999 * (0.0005 * 2.0 / 2.2 - 0.001)
    hi = 3.0004 + 999 * (0.0005 * 2.0 / 1.8 - 0.001)
    assert (rec.margin_low_s, rec.margin_high_s) == (pytest.approx(lo), pytest.approx(hi))
    assert rec.change_points() == (None, (6002, "A"))
    lines = rec.lines()
    assert lines[0] == "Recommend: eager"
    assert any("Compiling does not pay off" in line for line in lines)
    assert any(line.startswith("Answer changes: from 6,002 calls A") for line in lines)


def test_boundaries_of_the_envelope_are_exact() -> None:
    rows = fixed_rows()
    assert recommend(rows, 6001).choice == "eager"
    assert recommend(rows, 6002).choice == "A"
    assert recommend(rows, 23299).choice == "A"
    assert recommend(rows, 23300).choice == "B"
    big = recommend(rows, 1_000_000)
    assert big.choice == "B" and big.change_points() == ((23300, "A"), None)
    assert big.runner_up.name == "A"
    assert big.margin_s == pytest.approx(3.0104 - 10.0 + 999_999 * 0.0003)


def test_warm_cache_uses_the_warm_first_call() -> None:
    rec = recommend(fixed_rows(), 1000, warm_cache=True)
    # A: 0.5004 s extra / 0.5 ms saving -> N - 1 > 1000.8 -> 1002; B beats A once
    # 0.3 ms x (N - 1) > 0.4896 s -> N - 1 > 1632 -> 1634
    assert rec.changes == [(1, "eager"), (1002, "A"), (1634, "B")]
    assert rec.choice == "eager"
    assert recommend(fixed_rows(), 2000, warm_cache=True).choice == "B"


def test_wrong_failed_and_over_budget_variants_are_left_out() -> None:
    rows = fixed_rows()
    rows[2]["correct"] = False  # B: output differs from eager beyond tolerance
    rec = recommend(rows, 1_000_000)
    assert rec.choice == "A"
    assert ("B", "fails the accuracy check") in rec.excluded
    rows = fixed_rows()
    rows[2].update(status="failed", failure_kind="compile_error")
    assert recommend(rows, 1_000_000).choice == "A"
    # B's peak of 900 MiB does not fit 512 MiB; unknown peaks are kept with a note
    rec = recommend(fixed_rows(), 1_000_000, memory_mib=512)
    assert rec.choice == "A" and rec.excluded[0][0] == "B"
    assert "exceeds the 512 MiB budget" in rec.excluded[0][1]
    rows = fixed_rows()
    rows[1]["peak_reserved_bytes"] = None
    rec = recommend(rows, 1_000_000, memory_mib=512)
    assert rec.choice == "A" and any("could not be checked" in n for n in rec.notes)


def test_fp64_accuracy_verdict_is_the_one_verdicts() -> None:
    rows = fixed_rows()
    rows[2].update(reference_dtype="float64", accuracy_ok=False, compiled_error=1.0,
                   eager_error=1e-6, accuracy_multiplier=3.0)
    assert recommend(rows, 1_000_000).choice == "A"


def test_margin_within_noise_is_said() -> None:
    rows = [row("eager", per_ms=1.0),
            row("A", first=0.0, per_ms=0.99, speedup=1.01, lo=0.9, hi=1.1,
                eager_first_call_ms=1.0)]
    rec = recommend(rows, 10_000)
    assert rec.choice == "A"
    assert rec.margin_low_s < 0 < rec.margin_high_s
    assert any("within noise" in line for line in rec.lines())


def test_nothing_to_recommend_and_bad_arguments() -> None:
    rec = recommend([row("eager", per_ms=1.0, status="failed")], 10)
    assert rec.choice is None and rec.lines()[0] == "Recommend: none"
    with pytest.raises(ValueError):
        recommend(fixed_rows(), 0)
    with pytest.raises(ValueError):
        recommend(fixed_rows(), 10, memory_mib=-1)


def test_envelope_agrees_with_brute_force() -> None:
    rng = random.Random(7)
    for _ in range(200):
        cands = [Candidate(f"c{i}", rng.uniform(0, 5), p, p, p)
                 for i, p in enumerate(rng.uniform(1e-4, 2e-3) for _ in range(rng.randint(1, 5)))]
        env = envelope(cands)
        for n in sorted({1, 2, 10, 100, 1000, 5000, 20000, 10**6, *(s for s, _ in env),
                         *(s - 1 for s, _ in env if s > 1)}):
            named = [name for start, name in env if start <= n][-1]
            best = min(c.total_s(n) for c in cands)
            chosen = next(c for c in cands if c.name == named)
            assert chosen.total_s(n) <= best + 1e-12, (n, env)


@pytest.mark.slow  # imports the whole 30-run H200 bundle (about 25 s here)
def test_recommend_command_on_imported_h200_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h200.db'}"
    imported = run_cli("import", str(ROOT / "data" / "h200_bundle.json"), "--db", url)
    assert imported.returncode == 0, imported.stderr
    ids = imported.stdout.split()
    bert = ids[7]  # the bundle's run 8: BERT-base with default and reduce-overhead
    few = run_cli("recommend", bert, "--calls", "1000", "--db", url)
    many = run_cli("recommend", bert, "--calls", "1e6", "--json", "--db", url)
    assert few.returncode == 0, few.stderr
    assert few.stdout.splitlines()[0] == "Recommend: eager"  # 16 s of compile for 1000 calls
    doc = json.loads(many.stdout)
    assert doc["recommend"] == "reduce-overhead" and doc["calls"] == 1_000_000
    assert doc["changes_below"][1] == "eager"
    for calls in ("0", "inf", "1e400"):  # int(inf) used to raise before the range check
        bad = run_cli("recommend", bert, "--calls", calls, "--db", url)
        assert bad.returncode == 2 and "call count" in bad.stderr and "Traceback" not in bad.stderr
    # the bundle's BERT grid (run 30): reduce-overhead configs hold 636-756 MiB reserved
    grid = run_cli("recommend", ids[29], "--calls", "1e6", "--memory-mib", "600", "--db", url)
    assert grid.returncode == 0, grid.stderr
    assert "Left out: reduce-overhead@fg=0,frz=0 (peak reserved memory 636.0 MiB exceeds the " \
        "600 MiB budget)." in grid.stdout
    assert not grid.stdout.splitlines()[0].startswith("Recommend: reduce-overhead")
    missing = run_cli("recommend", "999", "--calls", "10", "--db", url)
    assert missing.returncode == 2 and "no run 999" in missing.stderr


def test_per_call_time_is_the_paired_eager_time_over_the_paired_speedup() -> None:
    """A variant whose processes ran everything slower than eager's own process (its paired
    eager too) is judged on the paired figures, as the verdict judges it: eager is the paired
    eager time, not the eager process's median."""
    rows = [row("eager", per_ms=1.0),
            row("slow-process", first=0.0, per_ms=5.0, speedup=2.0, lo=1.5, hi=2.5,
                eager_first_call_ms=1.0, eager_median_ms=10.0)]
    rec = recommend(rows, 100)
    c = next(c for c in rec.candidates if c.name == "slow-process")
    e = next(c for c in rec.candidates if c.name == "eager")
    assert e.per_call_s == pytest.approx(0.010)
    assert c.per_call_s == pytest.approx(0.005)
    assert (c.per_call_low_s, c.per_call_high_s) == (pytest.approx(0.004),
                                                     pytest.approx(10 / 1.5 / 1000))
    assert rec.choice == "slow-process"


def test_eager_reference_is_the_geometric_mean_of_the_paired_eager_times() -> None:
    rows = [row("eager", per_ms=1.0),
            row("a", first=1.0, per_ms=2.0, speedup=2.0, eager_median_ms=4.0),
            row("b", first=1.0, per_ms=4.0, speedup=4.0, eager_median_ms=16.0)]
    per = {c.name: c.per_call_s for c in recommend(rows, 10).candidates}
    assert per == {"eager": pytest.approx(0.008), "a": pytest.approx(0.004),
                   "b": pytest.approx(0.002)}


@pytest.mark.parametrize("first_s,speedup", [(26.6, 4.06), (31.8, 1.38), (3.0, 1.02)])
def test_one_variant_changes_where_the_stats_break_even_says(first_s, speedup) -> None:
    """The verdict's break-even (engine.analysis.stats) and recommend's change point are one figure."""
    from engine.analysis.stats import break_even_calls

    eager_first_ms, eager_ms = 34.7, 34.69
    rows = [row("eager", per_ms=40.9),
            row("ro", first=first_s, per_ms=eager_ms / speedup * 1.01, speedup=speedup,
                eager_median_ms=eager_ms, eager_first_call_ms=eager_first_ms)]
    be = break_even_calls(eager_first_ms, first_s * 1000, eager_ms, eager_ms / speedup)
    below, _ = recommend(rows, 10**7).change_points()
    assert below == (be, "eager")
