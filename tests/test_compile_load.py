"""The host beside a reported compile (engine/measure/compile_load.py): a neighbour outside the
compiling process's tree is counted, the compile's own children are not; the figures travel
from the child through the runner and storage to ``show`` and the verdict; hostile stored
figures flag nothing."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from engine.analysis.verdict import compile_host_caution, decide
from engine.measure import compile_load
from engine.measure.compile_load import CompileLoad, caution, tree_cpu_seconds
from engine.orchestrate.fold import first_process as _first_process
from engine.orchestrate.fold import merge_process as _merge_process
from storage.queries import load_runs
from storage.queue import claim_next_run, enqueue_run, finish_run
from storage.results import save_variant_result
from tests.quiet_host import on_a_quiet_moment
from tests.test_storage_support import ENVIRONMENT, run_spec, variant_result

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs Linux /proc")

SPIN = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass"


def _other(work) -> float:
    with CompileLoad() as load:
        work()
    assert load.figures["other_busy_cores"] is not None
    assert 0 <= load.figures["steal_share"] <= 1
    return load.figures["other_busy_cores"]


def _outside_tree_spinner(seconds: float) -> int:
    """A spinning process that is not our descendant: started by an intermediate process that
    exits at once, so it is re-parented away from us (as a neighbour on the host is)."""
    out = subprocess.run(
        [sys.executable, "-c",
         "import subprocess, sys\n"
         f"p = subprocess.Popen([sys.executable, '-c', {SPIN.format(s=seconds)!r}], "
         "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
         "print(p.pid)"],
        capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@pytest.mark.host_timing
def test_a_neighbour_counts_and_the_compiles_own_children_do_not():
    def check() -> None:
        # Relative to a quiet baseline taken just before, so load from elsewhere on the machine
        # does not decide the outcome.
        baseline = _other(lambda: time.sleep(1.0))
        own = _other(lambda: subprocess.run([sys.executable, "-c", SPIN.format(s=1.0)], check=True))
        assert own - baseline < 0.4  # a child of ours spinning (a compile worker, g++) is ours
        pid = _outside_tree_spinner(3.0)
        try:
            time.sleep(0.3)
            assert tree_cpu_seconds(os.getpid()) is not None
            neighbour = _other(lambda: time.sleep(1.0))
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert neighbour - baseline > 0.6  # one core spinning (/proc/stat ticks at 100 Hz)

    on_a_quiet_moment(check)


def test_tree_of_a_process_that_is_gone_is_unknown():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert tree_cpu_seconds(p.pid) is None


@pytest.mark.parametrize("figures, flagged", [
    ({"other_busy_cores": 1.0, "steal_share": 0.0}, "other work kept 1.0 CPU cores busy"),
    ({"other_busy_cores": 0.99, "steal_share": 0.049}, None),
    ({"other_busy_cores": 0.0, "steal_share": 0.08}, "a hypervisor took 8% of the host's CPU"),
    ({"other_busy_cores": 2.5, "steal_share": 0.1}, "2.5 CPU cores busy and a hypervisor took"),
    ({"other_busy_cores": math.inf, "steal_share": math.nan}, None),
    ({"other_busy_cores": True, "steal_share": 7.0}, None),
    ({"other_busy_cores": "9", "steal_share": -1}, None),
    ({"other_busy_cores": None}, None),
    ("busy", None),
    (None, None),
])
def test_caution_reads_only_finite_figures(figures, flagged):
    said = caution(figures)
    assert (said is None) if flagged is None else (flagged in said)


def test_the_runner_keeps_the_reported_compiles_load_and_not_the_further_ones():
    quiet, busy = {"other_busy_cores": 0.0, "steal_share": 0.0}, {"other_busy_cores": 3.0,
                                                                   "steal_share": 0.0}
    cold = {"variant": "default", "first_call_cold_s": 9.0, "compile_load": quiet,
            "processes": [{"samples_ms": [1.0], "pipelined_ms": [1.0], "eager_samples_ms": [2.0],
                           "eager_pipelined_ms": [2.0]}]}
    _first_process(cold)
    assert cold["compile_load"] == {"cold": quiet}
    for i, load in enumerate((busy, quiet)):  # the first warm-cache process, then a further one
        _merge_process(cold, {"first_call_warm_s": 1.0 + i, "compile_load": load,
                              "processes": [dict(cold["processes"][0])]})
    assert cold["compile_load"] == {"cold": quiet, "warm": busy}
    assert [p["compile_load"] for p in cold["processes"]] == [quiet, busy, quiet]


def test_stored_figures_reach_show_and_the_verdict(db):
    from engine.analysis.show import format_run

    run_id = enqueue_run(db, run_spec())
    claim_next_run(db, "w")
    save_variant_result(db, run_id, variant_result("eager"))
    save_variant_result(db, run_id, variant_result("reduce-overhead", compile_load={
        "cold": {"other_busy_cores": 2.2, "steal_share": 0.0},
        "warm": {"other_busy_cores": 0.1, "steal_share": 0.0}}))
    finish_run(db, run_id, "done", environment=ENVIRONMENT)
    rows = load_runs(db, [run_id])["variants"]
    text = format_run(db, run_id, width=None)  # whole lines: the phrases below are not wrapped
    assert ("compile host [reduce-overhead]: cold: other processes 2.2 cores, steal 0.0%; "
            "warm: other processes 0.1 cores, steal 0.0%") in text
    assert ("reduce-overhead: during its cold compile other work kept 2.2 CPU cores busy. Its "
            "compile time and break-even may read high") in text
    assert "warm-cache compile other work" not in text
    said = [w for w in decide(rows.to_dict("records"), run_id).warnings if "compile" in w]
    assert len(said) == 1 and "2.2 CPU cores" in said[0]


def test_a_quiet_or_hostile_compile_load_says_nothing():
    base = {"variant": "default", "status": "ok"}
    for load in ({"cold": {"other_busy_cores": 0.2, "steal_share": 0.01}}, {"cold": [1, 2]},
                 "cold", None, {"warm": {"other_busy_cores": -5}}):
        assert compile_host_caution({**base, "compile_load": load}) is None
    frame = pd.DataFrame([{**base, "compile_load": {"warm": {"other_busy_cores": 1.5}}}])
    said = compile_host_caution(frame.to_dict("records")[0])
    assert said and "warm-cache compile other work kept 1.5" in said
    assert compile_load.COMPILE_BUSY_CORES <= 1.5
