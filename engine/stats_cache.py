"""The within-process bootstrap replicates of ``engine.stats``, drawn once per process.

The runner recomputes a variant's interval after every measuring process ends, before it lets
the next one time (the interval decides whether another process is needed).  Each time, the
hierarchical bootstrap drew 2000 round-resampled replicates for every process so far: 0.1-0.6 s
with four processes of 100-300 rounds on the 2-core host, and on the H200 the next process's
timing slot opened 0.02 s after the first process of a run ended but 0.22 s after the
thirteenth (issue "time to answer").

Process ``i``'s replicates depend only on its own rounds and on the random generator's state
after processes ``0..i-1`` were drawn.  So they are kept, keyed by the seed, ``n_boot`` and the
contents of processes ``0..i``, with the generator's state after them: a recomputation draws
only the processes it has not seen, and its result is identical, to the last bit, to drawing
them all again (tests/test_stats_cache.py).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

MAX_ENTRIES = 256
"""Process prefixes kept (a run has a few variants of a few processes each)."""

_CACHE: OrderedDict[tuple[Any, ...], tuple[np.ndarray, dict[str, Any]]] = OrderedDict()


class Rounds(Protocol):
    eager: np.ndarray
    compiled: np.ndarray

    def boot_log_ratios(self, n_boot: int, rng: np.random.Generator) -> np.ndarray: ...


def _digest(p: Rounds) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for a in (p.eager, p.compiled):
        h.update(repr((a.shape, a.dtype.str)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.digest()


def within_rows(processes: Sequence[Rounds], n_boot: int, rng: np.random.Generator,
                seed: int) -> np.ndarray:
    """``np.stack([p.boot_log_ratios(n_boot, rng) for p in processes])`` for a generator
    ``rng`` fresh from ``seed``, leaving ``rng`` in the same state as that would."""
    rows: list[np.ndarray] = []
    key: tuple[Any, ...] = (int(seed), int(n_boot))
    for p in processes:
        key = (*key, _digest(p))
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            row, state = hit
            rng.bit_generator.state = state
        else:
            row = p.boot_log_ratios(n_boot, rng)
            row.setflags(write=False)
            _CACHE[key] = (row, rng.bit_generator.state)
            while len(_CACHE) > MAX_ENTRIES:
                _CACHE.popitem(last=False)
        rows.append(row)
    return np.stack(rows)
