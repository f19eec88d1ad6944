"""The measuring child's timing protocol: block-interleaved rounds, the host-load monitor, the
compile-worker settling, and the in-process cross-check against torch's own Timer."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from engine.measure.child import steady_rounds
from engine.measure.crosscheck import cross_check
from engine.measure.hostload import HostLoad, settle_compile_workers
from engine.measure.timing import Timer
from tests.quiet_host import on_a_quiet_moment


class FakeTimer:
    """Records which function each timed sample and each untimed call belonged to."""

    cuda = False

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def per_call_ms(self, fn) -> float:
        self.log.append("T")
        fn()
        return 1.0

    def pipelined_ms(self, fn, k: int) -> float:
        self.log.append(f"P{k}")
        fn()
        return 0.5


def test_rounds_alternate_in_blocks_with_warm_calls_and_flip_order():
    log: list[str] = []
    fns = {"eager": lambda: log.append("e"), "variant": lambda: log.append("v")}
    out = steady_rounds(FakeTimer(log), fns, min_samples=8, min_time_s=0.0, max_time_s=60.0,
                        k=7, block=4, warm=2)
    # 8 samples at 4 per round: 2 rounds; every function gets the same number of paired samples
    assert [len(out[n]["per_call"]) for n in fns] == [8, 8]
    assert [len(out[n]["pipelined"]) for n in fns] == [2, 2]
    one = lambda f: [f, f] + ["T", f] * 4 + ["P7", f]  # noqa: E731 - 2 warm, 4 timed, 1 pipelined
    assert log == one("e") + one("v") + one("v") + one("e")  # order flips each round


def test_rounds_stop_at_max_time_after_three_rounds():
    calls: list[str] = []
    slow = {"f": lambda: time.sleep(0.02)}
    out = steady_rounds(FakeTimer(calls), slow, min_samples=10_000, min_time_s=0.0,
                        max_time_s=0.05, k=1, block=1, warm=0)
    assert len(out["f"]["per_call"]) == 3  # the time limit hit first, but 3 rounds is the floor


def _other_cores(work) -> float:
    with HostLoad() as load:
        work()
    assert load.other_busy_cores is not None
    return load.other_busy_cores


def _spin(seconds: float) -> None:
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass


@pytest.mark.host_timing
def test_host_load_sees_another_busy_process_and_not_our_own_work():
    def check() -> None:
        # Relative to a quiet baseline taken just before, so load from elsewhere on the machine
        # does not decide the outcome.
        baseline = _other_cores(lambda: time.sleep(1.0))
        busy = subprocess.Popen([sys.executable, "-c",
                                 "import time\nt=time.time()\nwhile time.time()-t<3: pass"])
        try:
            time.sleep(0.3)  # let it start
            with_neighbour = _other_cores(lambda: time.sleep(1.0))
        finally:
            busy.kill()
            busy.wait()
        assert with_neighbour - baseline > 0.6  # one core spinning (/proc/stat ticks at 100 Hz)
        own = _other_cores(lambda: _spin(1.0))
        assert own - baseline < 0.4  # our own spinning is not "other"

    on_a_quiet_moment(check)


def test_settle_compile_workers_without_a_pool_is_harmless():
    info = settle_compile_workers()
    assert info["settled"] is True and info["settle_s"] >= 0


STOP_POOL = r"""
import json, os, sys, time
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "3"
import torch
from torch._inductor import async_compile as ac
from engine.measure.hostload import _children, stop_compile_workers
ac.AsyncCompile.warm_pool(); ac.AsyncCompile.wakeup(); ac.AsyncCompile.wait_pool_ready(240)
side = list(ac._pool_set)[0].process.pid
pids = [side, *_children(side)]
info = stop_compile_workers()
time.sleep(0.3)
def alive(p):
    try:
        return open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
print(json.dumps({"info": info, "pids": pids, "alive": [p for p in pids if alive(p)],
                  "threads": torch._inductor.config.compile_threads, "pools": len(ac._pool_set)}))
"""


@pytest.mark.slow
def test_stop_compile_workers_ends_the_pool_at_once_and_compiles_in_process_afterwards():
    """A real inductor worker pool (a helper with three workers) ends within a second, with no
    process left and no 'unclean exit' warning, and later compiles do not start a new one."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    p = subprocess.run([sys.executable, "-c", STOP_POOL], capture_output=True, text=True,
                       timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(out["pids"]) == 4 and out["info"]["killed"] == 4, out
    assert out["info"]["stop_s"] < 1.0, out
    assert out["alive"] == [] and out["pools"] == 0 and out["threads"] == 1, out
    assert "unclean exit" not in p.stderr


def test_stop_compile_workers_without_a_pool_is_harmless(monkeypatch):
    from torch._inductor import config

    from engine.measure.hostload import stop_compile_workers

    monkeypatch.setattr(config, "compile_threads", config.compile_threads)  # restored after
    info = stop_compile_workers()
    assert info.get("pools") == 0 and "stop_error" not in info, info


@pytest.mark.host_timing
@pytest.mark.parametrize("backend", ["eager"])
def test_cross_check_pairs_engine_and_library_timers(backend):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
    x = torch.randn(16, 256)
    compiled = torch.compile(model, backend=backend)

    def check() -> None:
        with torch.no_grad():
            out = cross_check({"eager": lambda: model(x), "variant": lambda: compiled(x)},
                              Timer("cpu"), k=10, reps=3, samples=20)
        for name in ("eager", "variant"):
            row = out[name]
            assert "error" not in row, row
            assert row["pairs"] == 60 and row["reps"] == 3
            for key in ("engine_per_call_ms", "timer_per_call_ms", "timer_net_ms",
                        "engine_pipelined_ms", "timer_blocked_ms", "naive_no_sync_ms"):
                assert row[key] > 0, key
            assert 0 < row["timer_overhead_ms"] < row["timer_per_call_ms"]
            # the same call timed two ways, sample by sample: on a CPU they are one clock
            assert abs(row["per_call_vs_timer_net"]) < 0.5, row
            assert abs(row["pipelined_vs_blocked"]) < 0.5, row
            assert row["per_call_vs_do_bench_sync"] is None  # no do_bench without CUDA

    on_a_quiet_moment(check)


def test_cuda_timer_makes_its_two_events_once_before_any_window(monkeypatch):
    """No GPU here: a stand-in for torch.cuda.Event records the order of calls. Events must be
    created (torch creates them on the first record) before the first timed window, then reused,
    so no event is ever created inside a window; and the stream is looked up once, before any
    window, and given to every record (without it, record() looks the stream up itself, inside
    the window: 11-15 µs on an H100 host)."""
    log: list[str] = []

    class FakeEvent:
        made = 0

        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            FakeEvent.made += 1
            self.name = f"e{FakeEvent.made}"

        def record(self, stream: object = None) -> None:
            assert stream == "the stream", "record() must be given the stream"
            log.append(f"record {self.name}")

        def synchronize(self) -> None:
            log.append(f"sync {self.name}")

        def elapsed_time(self, other: FakeEvent) -> float:
            return 0.25

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("device sync"))
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda: log.append("stream lookup") or "the stream")
    timer = Timer("cuda")
    fn = lambda: log.append("call")  # noqa: E731
    assert timer.per_call_ms(fn) == 0.25
    assert timer.pipelined_ms(fn, 2) == 0.125
    assert timer.per_call_ms(fn) == 0.25
    assert FakeEvent.made == 2
    first_call = log.index("call")
    # both events recorded (so created) and the device synchronised before the first window
    assert log[:first_call] == ["device sync", "stream lookup", "record e1", "record e2",
                                "device sync", "record e1"]
    assert log[first_call:] == ["call", "record e2", "sync e2",
                                "device sync", "record e1", "call", "call", "record e2", "sync e2",
                                "device sync", "record e1", "call", "record e2", "sync e2"]
