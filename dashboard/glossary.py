"""The words the pages use, each said once for a newcomer (the Models page's Glossary section),
and the line on each page that links its terms there (``terms_line``).

A term's anchor is its slug on the Models page (``/models#glossary-noisy``); the definitions are
plain text, escaped where they are shown.  Method details stay in docs/METHOD.md.
"""

from __future__ import annotations

import re

from engine import grid


def _grid_names() -> str:
    """The short keys of grid variant names spelled out, from engine/grid.py's own table (a key
    added there is explained here without a second list to keep)."""
    keys = "; ".join(f"{key} = {option}" for option, (key, _) in grid.OPTIONS.items())
    return (f"A grid variant is named MODE{grid.SEP}key=value,... (e.g. default{grid.SEP}dyn=none,"
            f"cdt=1): {keys} (the torch.compile and inductor options of those names); 1 = on, 0 = off, none = "
            f"torch.compile decides. A key left out keeps the run's own setting. "
            f"{grid.OPT_SUFFIX} after a mode (training): the optimizer step is compiled too.")


# term -> what it means, in the words a page uses it with
TERMS: dict[str, str] = {
    "eager": "PyTorch running the model op by op, as written: the baseline every compiled "
             "variant is measured against. A run has one eager figure, the same on every row "
             "(a run measured before Compile Lab did so keeps one per variant, and says so).",
    "compile variant": "One way of running torch.compile: a mode (default, reduce-overhead, "
                       "max-autotune, max-autotune-no-cudagraphs), possibly with options "
                       "(a grid variant's name says them, e.g. default@dyn=1).",
    "speedup": "Eager's time per call ÷ the variant's: above 1.00× the variant is faster, "
               "below 1.00× slower (0.50× takes twice as long as eager).",
    "95% CI": "The interval the speedup lies in with 95 % confidence, from the spread between "
              "measuring processes (between kernel draws, where some processes chose their "
              "autotuned kernels anew). An interval that contains 1.00× cannot tell the "
              "variant from eager.",
    "measuring process": "A fresh Python process that builds, compiles and times one variant; "
                         "a variant gets several, because a process's speed drifts with the "
                         "host (the spread between them is the honest uncertainty).",
    "per-call median": "The median time of one call with the device idle before it "
                       "(synchronised): what one request waits.",
    "pipelined": "K calls back to back with one synchronise, divided by K: the time per call "
                 "when calls queue up (throughput).",
    "cold compile": "The first compiled call with an empty compiler cache: compiling plus one "
                    "call.",
    "warm-cache compile": "The first compiled call in a new process that reuses the cache: "
                          "what a restarted service pays.",
    "break-even calls": "How many calls it takes for the time saved per call to repay the "
                        "first call's extra cost; never when compiled is not faster.",
    "noisy": "Calls of one variant vary a lot (the middle half spans more than 10 % of the "
             "median): re-run on a quiet machine before trusting small differences.",
    "busy host": "Other processes kept CPU cores busy while the variant was timed; calls that "
                 "wait on the CPU read slower then.",
    "host speed moved": "The host's own speed changed between the run's measuring processes "
                        "(a tiny probe call cost differently): figures taken apart in time "
                        "differ.",
    "processes disagree": "The variant's measuring processes give speedups further apart than "
                          "their own noise explains; the interval includes that spread.",
    "eager per variant": "A run measured before Compile Lab timed one eager per run: each "
                         "compiled variant is compared with the eager timed in its own "
                         "processes, so eager reads differently on different rows. Each "
                         "speedup is still its own row's eager ÷ its median.",
    "provisional": "The run is still measuring: more processes may come and the figures can "
                   "still move. Final once the run ends.",
    "launch-bound": "The device waits for the CPU to launch kernels, so a call's time follows "
                    "the CPU; fusing kernels (default) or CUDA graphs (reduce-overhead) help.",
    "graph break": "A place where torch.compile stops its graph (a print, a data-dependent "
                   "branch...): the code around it runs eagerly, between compiled pieces.",
    "recompile": "A new compile triggered when an input changes (another shape, another "
                 "dtype): its call pays the compile again.",
    "CUDA graphs": "A recording of a call's GPU work replayed with one launch "
                   "(reduce-overhead, max-autotune): removes launch cost, needs fixed shapes.",
    "kernels per call": "How many GPU (or CPU) kernels one call launches, from a profiler pass "
                        "after timing; compiling fuses them into fewer.",
    "device busy": "Time per call the device spends running kernels; far below the wall time "
                   "means the call is launch-bound.",
    "device time": "One call's kernel work on the GPU with the host's launches queued ahead, "
                   "so host speed is left out; against eager's it says whether a gain is "
                   "faster kernels (holds on any host) or launch work saved (follows the host).",
    "code generation": "The compiler's last phase: writing the kernels (Triton on a GPU, C++ "
                       "on a CPU) and compiling them.",
    "geomean speedup": "The geometric mean of the configs' speedups (the mean of ratios); "
                       "below 1.00× compiled is slower on the whole.",
    "memory, eager ÷ compiled": "Eager's peak memory ÷ the compiled variant's: above 1.00× "
                                "compiling saves memory, below it uses more (0.41× means 2.4 "
                                "times eager's).",
    "pass rate": "Share of the configs asked for whose compiled variant ran and gave correct "
                 "results.",
    "within noise": "The figure moved beyond the threshold between two runs, but the test "
                    "over their processes does not establish the change: it may be noise.",
    "regressed / improved": "A change beyond the threshold that the test over the two runs' "
                            "processes establishes (the CI gate's verdict).",
    "sweep": "One compiled model fed several values of one input dim (batch, seq...): shows "
             "latency per value and the recompiles a new shape triggers.",
    "grid": "Several values of compile options in one run; each combination is its own "
            "variant.",
    "grid variant names": _grid_names(),
}


def slug(term: str) -> str:
    """The anchor of ``term`` on the Models page: ``glossary-95-ci``."""
    return "glossary-" + re.sub(r"[^a-z0-9]+", "-", term.lower()).strip("-")


def terms_line(terms: list[str]) -> str:
    """``Terms: [speedup](/models#glossary-speedup) · ...``: Markdown linking ``terms`` (each
    must be in TERMS) to their definitions."""
    missing = [t for t in terms if t not in TERMS]
    if missing:
        raise KeyError(f"not in the glossary: {missing}")
    return "Terms on this page: " + " · ".join(f"[{t}](/models#{slug(t)})" for t in terms)
