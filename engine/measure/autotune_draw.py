"""Whether a further measuring process draws its compile's autotuned kernel choices anew.

Inductor gives a Triton kernel with several candidate configs (block sizes, warps) to its
autotuner, which benchmarks them at the kernel's first call and keeps the winner in the cache
(``*.best_config`` beside the kernel; a warm load's pickled autotuners read it from the path of
the compile that filled the cache). Every later process on that cache replays the winner. The
winner is itself a draw: cold compiles of one model choose differently, and runs that differed
only in that draw read their compiled time a few per cent apart while each run's processes
agreed (docs/METHOD.md §5). Processes that all replay one choice measure one draw, so their
interval cannot cover the spread a user's own compile meets.

A process given ``redraw`` answers every stored choice with "none" and keeps its own winners to
itself: its first call autotunes anew, as the cold compile's did, and nothing it chooses reaches
the next process. The compile itself (graph, kernels, their binaries) is still the cached one.
Only a GPU variant without max-autotune redraws: max-autotune's GEMM choices are made while
compiling and live in the cached code, and its coordinate-descent tuning, a search over many
configs per kernel, would be repeated in full at every first call.
"""

from __future__ import annotations

import fcntl
import functools
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from contract.results import DRAWS
from engine import grid
from engine.measure import run_share

#: What a process's ``autotune_draw`` says (``contract.results.ProcessResult``).
DRAWN, REPLAYED, REDRAWN = DRAWS


LOCK_NAME = "autotune.lock"  # in the run's folder: one process benchmarks configs at a time

FIRST_REDRAW = 2
"""The first process index that draws anew: the cold one (0) draws, the first warm-cache one (1)
replays, so its first call stays what a user's restart pays."""


def applies(run: Mapping[str, Any], variant: str) -> bool:
    """Whether ``variant``'s processes autotune Triton kernels at their first call and may
    redraw: inductor on a GPU, without max-autotune or coordinate-descent tuning."""
    if not str(run.get("device", "cpu")).startswith("cuda"):
        return False
    if run.get("backend", "inductor") != "inductor":
        return False
    mode = grid.mode_of(variant)
    if mode == "eager" or "max-autotune" in mode:
        return False
    return not grid.settings(variant).get("coordinate_descent_tuning")


def min_processes(k_min: int, k_max: int) -> int:
    """The fewest processes of a variant that redraws: enough for three independent draws
    where ``max_processes`` allows.  The cold process and the first warm-cache one share a
    draw and count once in the interval (engine/analysis/stats.draw_units), so three
    processes would be two draws and a t quantile on one degree of freedom.  A minimum that
    reaches no redraw (one or two processes, asked for a quick look) is left as asked."""
    if k_min <= FIRST_REDRAW:
        return k_min
    return max(k_min, min(FIRST_REDRAW + 2, k_max))


def variant_min_processes(run: Mapping[str, Any], variant: str, k_min: int, k_max: int) -> int:
    """The fewest processes ``variant`` of ``run`` is planned: ``min_processes`` where it
    redraws, else the run's ``k_min``.  The runner's plan and the grid's estimate both ask."""
    return min_processes(k_min, k_max) if applies(run, variant) else k_min


def process_bounds(spec: Mapping[str, Any]) -> tuple[int, int]:
    """(fewest, most) processes per compiled variant that ``spec`` asks for: ``processes``, at
    least two with ``warm_cache`` (a cold and a warm-cache one), up to ``max_processes``.  The
    runner's plan and the grid's estimate both start from these."""
    k_min = max(int(spec.get("processes", 1)), 2 if spec.get("warm_cache", True) else 1)
    return k_min, max(int(spec.get("max_processes", k_min)), k_min)


def draws(processes: int) -> int:
    """Independent kernel draws among a redrawing variant's first ``processes`` processes: the
    cold one and the first warm-cache one share one."""
    return 1 + max(0, processes - FIRST_REDRAW)


def few_draws_note(spec: Mapping[str, Any], setting: str = "--max-processes") -> str | None:
    """A line for the user where ``spec``'s process counts leave a redrawing variant at most
    two kernel draws at its most processes, so its interval would rest on one draw (it cannot
    cover the spread between cold compiles) or on a t quantile with one degree of freedom; None
    otherwise.  Valid as asked, so said rather than refused.  ``setting``: how the caller's
    user wrote the limit (the CLI's flag, a suite file's key)."""
    k_max = process_bounds(spec)[1]
    few = [v for v in spec.get("variants", ()) if v != "eager" and applies(spec, v)]
    if not few or draws(k_max) >= 3:
        return None
    n = draws(k_max)
    what = ("one kernel draw (the cold compile's, replayed): their intervals leave out how much "
            "cold compiles differ" if n == 1 else
            "two kernel draws: their intervals rest on one degree of freedom and will be wide")
    return (f"{setting} {k_max} leaves {', '.join(few)} {what}; "
            f"{FIRST_REDRAW + 2} processes give three draws (docs/METHOD.md §2)")


def asked(phase: str, index: int) -> bool:
    """Whether the runner asks process ``index`` (of ``phase``) to draw anew."""
    return phase == "warm_cache" and index >= FIRST_REDRAW


def redraw() -> str | None:
    """Make this process's autotuners ignore the cache's choices and keep their own, and take
    turns with the run's other redrawing processes while they benchmark configs; None if it
    did, else why not (a torch without the hooks this relies on)."""
    try:
        from torch._inductor.runtime.autotune_cache import AutotuneCache
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except Exception as e:  # no inductor runtime: nothing autotunes here
        return f"torch's autotuner could not be imported ({type(e).__name__})"
    missing = [f"{cls.__name__}.{n}" for cls, n in (
        (AutotuneCache, "read_best"), (AutotuneCache, "save"),
        (CachingAutotuner, "benchmark_all_configs")) if not callable(getattr(cls, n, None))]
    if missing:
        return f"torch has no {', '.join(missing)}"
    # Class attributes, so the autotuners unpickled from the cache (whose save hook is a bound
    # method looked up when it is unpickled, after this) and those built from source both see
    # them.
    AutotuneCache.read_best = _no_choice  # type: ignore[method-assign]
    AutotuneCache.save = _keep_own  # type: ignore[method-assign]
    CachingAutotuner.benchmark_all_configs = _taking_turns(  # type: ignore[method-assign]
        CachingAutotuner.benchmark_all_configs)
    return None


def _taking_turns(benchmark: Callable[..., Any]) -> Callable[..., Any]:
    """``benchmark`` holding the run's autotune lock: redrawing processes compile side by side
    (their warm loads are CPU work), but a config's timing must not share the GPU with another
    process's benchmarks, or the choice would rest on the other process's kernels; the cold
    compile's benchmarks never run beside them (engine/orchestrate/schedule.py rule 5)."""
    folder = os.environ.get(run_share.ENV)
    held = threading.local()  # a second flock from this process would wait for itself

    @functools.wraps(benchmark)
    def benchmark_all_configs(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not folder or not os.path.isdir(folder) or getattr(held, "lock", False):
            return benchmark(self, *args, **kwargs)
        with open(os.path.join(folder, LOCK_NAME), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            held.lock = True
            try:
                return benchmark(self, *args, **kwargs)
            finally:
                held.lock = False

    return benchmark_all_configs


def _no_choice(self: Any, *args: Any, **kwargs: Any) -> None:
    """No stored winner: the kernel autotunes at its first call."""
    return None


def _keep_own(self: Any, *args: Any, **kwargs: Any) -> None:
    """This process's winner stays in this process: the next one draws on its own."""
    return None


# A bound method pickles as getattr(instance, __name__): a kernel compiled in a redrawing
# process (a recompile) is saved to the shared cache with its save hook, which must load in a
# process without the redraw as torch's own ``save``.
_no_choice.__name__ = _no_choice.__qualname__ = "read_best"
_keep_own.__name__ = _keep_own.__qualname__ = "save"


def for_process(run: Mapping[str, Any], variant: str, phase: str,
                wants_redraw: bool) -> tuple[str | None, str | None]:
    """(``autotune_draw`` for this process's result, or None where nothing autotunes; a reason
    where a redraw was asked for and could not be made)."""
    if not applies(run, variant):
        return None, None
    if phase == "cold":
        return DRAWN, None
    if not wants_redraw:
        return REPLAYED, None
    why_not = redraw()
    return (REPLAYED, why_not) if why_not else (REDRAWN, None)


def confirmed(draw: str | None, states: Mapping[str, int]) -> tuple[str | None, str | None]:
    """The draw as the process's first call saw it, from torch's ``autotune_cache_state`` per
    kernel (engine/measure/forensics.py), over ``draw`` (what was set up): a kernel that found
    its choice in the cache ("hit") means the process replayed; kernels that autotuned ("miss")
    and none that replayed, a draw of its own (the cold compile's, or anew); neither, no
    autotuned kernel and so no draw. The note says where a redraw was asked and not made."""
    if draw is None:
        return None, None
    hits, misses = states.get("hit", 0), states.get("miss", 0)
    if hits:
        if draw != REDRAWN:
            return REPLAYED, None
        kernels = f"{hits} autotuned kernels" if hits != 1 else "1 autotuned kernel"
        return REPLAYED, f"{kernels} still read the choice from the cache"
    if misses:
        return (DRAWN if draw == DRAWN else REDRAWN), None
    return None, None
