"""engine/stats_cache.py: the hierarchical interval drawn with kept replicates is the same, to
the last bit, as drawn afresh, and a changed process is never served from the cache."""

from __future__ import annotations

import numpy as np

from engine import stats, stats_cache


def _processes(k: int, rounds: int = 60, block: int = 5, seed: int = 3) -> list:
    rng = np.random.default_rng(seed)
    return [stats.ProcessRounds(rng.gamma(50, 0.002, (rounds, block)) * (1 + 0.1 * i),
                                rng.gamma(50, 0.003, (rounds, block)))
            for i in range(k)]


def _fresh(processes: list, **kw) -> stats.SpeedupEstimate:
    saved = dict(stats_cache._CACHE)
    stats_cache._CACHE.clear()
    try:
        return stats.hierarchical_speedup(processes, **kw)
    finally:
        stats_cache._CACHE.clear()
        stats_cache._CACHE.update(saved)


def test_growing_runs_give_what_a_fresh_draw_gives():
    stats_cache._CACHE.clear()
    procs = _processes(5)
    for k in range(1, 6):  # as the runner asks: after each process, all so far
        assert stats.hierarchical_speedup(procs[:k]) == _fresh(procs[:k])
        assert stats.hierarchical_speedup(procs[:k], seed=7) == _fresh(procs[:k], seed=7)
    assert len(stats_cache._CACHE) == 10  # one entry per prefix and seed


def test_a_changed_process_is_drawn_again():
    stats_cache._CACHE.clear()
    procs = _processes(3)
    before = stats.hierarchical_speedup(procs)
    changed = procs[1].compiled.copy()
    changed[0, 0] *= 3
    procs[1] = stats.ProcessRounds(procs[1].eager, changed)
    after = stats.hierarchical_speedup(procs)
    assert after == _fresh(procs)
    assert after != before


def test_only_new_processes_are_drawn(monkeypatch):
    stats_cache._CACHE.clear()
    procs = _processes(4)
    stats.hierarchical_speedup(procs[:3])
    drawn = []
    real = stats.ProcessRounds.boot_log_ratios
    monkeypatch.setattr(stats.ProcessRounds, "boot_log_ratios",
                        lambda self, n, rng: drawn.append(self) or real(self, n, rng))
    stats.hierarchical_speedup(procs)
    assert drawn == [procs[3]]


def test_the_cache_is_bounded():
    stats_cache._CACHE.clear()
    for seed in range(stats_cache.MAX_ENTRIES + 10):
        stats.hierarchical_speedup(_processes(1, rounds=5, block=2), n_boot=10, seed=seed)
    assert len(stats_cache._CACHE) == stats_cache.MAX_ENTRIES
