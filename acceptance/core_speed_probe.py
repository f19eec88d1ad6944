"""Does one allowed CPU core launch work faster than another, and does that hold over a minute?

A probe for the timing core (engine/measure/placement.py), which is always the last allowed
CPU: three H100 BERT-base runs read the host probe's module call at 0.82 µs in one run and
0.90-0.96 µs in the next (eager following it, 4.2 and 4.8 ms). If the cores of a lent host sit
at different speeds (a busy SMT sibling, another frequency), choosing the core could take that
move out; if they move together, it cannot.

Each round visits every allowed core: pinned there, the host probe (engine/measure/host_probe.py)
and a launch-bound call (``--chain`` tiny adds back to back, synchronised) timed on it. Prints a
core x round table of module-call µs and chain ms, the topology (SMT siblings) and a summary:
spread across cores inside a round against spread of one core across rounds.

    python3 acceptance/core_speed_probe.py --rounds 6 --pause-s 8 --device cuda --out $OUT/cores.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine.measure import host_probe  # noqa: E402


def _siblings(core: int) -> str:
    path = Path(f"/sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list")
    try:
        return path.read_text().strip()
    except OSError:
        return "?"


def _chain_ms(device: str, n: int) -> float:
    """Median of 5 timings of ``n`` tiny in-place adds, synchronised: a launch-bound call."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    x = torch.zeros(8, device=device)
    out = []
    for _ in range(6):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        sync()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out[1:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--pause-s", type=float, default=8.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--chain", type=int, default=400)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    torch.set_num_threads(1)
    host_probe.measure(args.device)  # device start-up outside the table
    table: dict[int, list[tuple[float, float]]] = {c: [] for c in cores}
    for r in range(args.rounds):
        for core in cores:
            os.sched_setaffinity(0, {core})
            probe = host_probe.measure(args.device)
            table[core].append((probe["module_call_us"], _chain_ms(args.device, args.chain)))
        os.sched_setaffinity(0, set(cores))
        print(f"round {r + 1}/{args.rounds} done", flush=True)
        if r + 1 < args.rounds:
            time.sleep(args.pause_s)
    print(f"{'core':>4} {'siblings':>9} | module call us per round | chain ms per round")
    for core in cores:
        mc = " ".join(f"{m:.3f}" for m, _ in table[core])
        ch = " ".join(f"{c:.2f}" for _, c in table[core])
        print(f"{core:>4} {_siblings(core):>9} | {mc} | {ch}")
    within = [max(table[c][r][1] for c in cores) / min(table[c][r][1] for c in cores) - 1
              for r in range(args.rounds)]
    across = [max(v for _, v in table[c]) / min(v for _, v in table[c]) - 1 for c in cores]
    best = [min(cores, key=lambda c, r=r: table[c][r][1]) for r in range(args.rounds)]
    print(f"chain: fastest/slowest core inside a round {', '.join(f'{100 * w:.1f} %' for w in within)}")
    print(f"chain: one core across rounds, max/min {', '.join(f'{100 * a:.1f} %' for a in across)}")
    print(f"fastest core per round: {best}; last core (today's timing core) {cores[-1]}")
    if args.out:
        args.out.write_text(json.dumps({"cores": cores, "siblings": {c: _siblings(c) for c in cores},
                                        "table": {str(c): v for c, v in table.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
