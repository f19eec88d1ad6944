"""The measuring child: one fresh process per variant, a pure function of its spec.

    python -m engine.measure.child SPEC.json OUT.json

It reads a variant spec ({"run": RunSpec, "variant": name, "phase": "cold" | "warm_cache",
"explain_ahead": whether it traces the run's graph breaks before its own first call, which
nobody reports, engine/schedule.explains_ahead}), measures, and writes one VariantResult JSON
(docs/CONTRACTS.md). It never touches the database.
The runner gives it an empty TORCHINDUCTOR_CACHE_DIR for the cold phase and the same directory
again for the warm-cache phase. Protocol (DESIGN §3): build -> eager reference -> warm-up curve
-> interleaved steady-state rounds -> memory -> profiler pass -> graph-break report (last,
because ``torch._dynamo.explain`` resets dynamo; or traced ahead, engine/measure/slot_tail.py).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # before importing torch: setup time includes the imports

import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
from torch.utils import _pytree as pytree  # noqa: E402

from engine import grid  # noqa: E402
from engine.measure import (  # noqa: E402
    accuracy,
    autotune_draw,
    decode,
    device_time,
    forensics,
    hf_generate,
    host_probe,
    host_settle,
    placement,
    shape_mix,
    signals,
    slot_tail,
    startup,
    torch_trace,
)
from engine.measure.compile_load import CompileLoad  # noqa: E402
from engine.measure.hostload import HostLoad, stop_compile_workers  # noqa: E402
from engine.measure.rounds import steady_rounds, timing_budget  # noqa: E402
from engine.measure.setup import build, environment  # noqa: E402
from engine.measure.timing import Timer  # noqa: E402
from engine.models.registry import arch_figures  # noqa: E402
from engine.orchestrate import gates  # noqa: E402

_T_IMPORTED = time.perf_counter()  # python, torch and the engine imported

# Largest allowed error relative to the output's scale (max |eager|). Compiled code reorders
# reductions and fuses ops, so bit equality is not expected; these bounds are a few ulps of the
# dtype amplified through a model's depth.
RTOL = {"float32": 1e-3, "float16": 1e-2, "bfloat16": 5e-2}
# Per-call samples per function per interleaved round, and untimed calls before them.


class Progress:
    """Writes {"phase", "fraction"} to the file the runner polls; cheap enough to call often."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.last = 0.0

    def __call__(self, phase: str, fraction: float, force: bool = False) -> None:
        now = time.monotonic()
        if not self.path or (not force and now - self.last < 0.25):
            return
        self.last = now
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"phase": phase, "fraction": round(min(max(fraction, 0.0), 1.0), 4)}, f)
        os.replace(tmp, self.path)


def compare(out: Any, ref: Any, dtype: str) -> dict[str, Any]:
    """Max absolute error and error relative to the reference's scale; NaN never passes."""
    a = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
    b = [t for t in pytree.tree_leaves(ref) if isinstance(t, torch.Tensor)]
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b, strict=True)):
        return {"max_abs_err": None, "max_rel_err": None, "correct": False,
                "rtol": RTOL[dtype], "atol": None}
    max_abs, scale = 0.0, 0.0
    for x, y in zip(a, b, strict=True):
        if not (x.is_floating_point() or x.is_complex()):
            max_abs = max(max_abs, float((x != y).sum()))
            continue
        diff = (x.double() - y.double()).abs()
        max_abs = max(max_abs, float(diff.max()) if diff.numel() else 0.0)
        scale = max(scale, float(y.double().abs().max()) if y.numel() else 0.0)
    scale = scale or 1.0
    rel = max_abs / scale
    ok = rel == rel and rel <= RTOL[dtype]  # rel == rel is False for NaN
    return {"max_abs_err": max_abs, "max_rel_err": rel, "correct": bool(ok),
            "rtol": RTOL[dtype], "atol": RTOL[dtype] * scale}


def _clone(x: Any) -> Any:
    # CUDA-graph outputs are overwritten by the next replay: keep a private copy.
    return pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, x)


class PhaseClock:
    """Start and end (unix seconds) of each phase of this process, so that a test can show that
    no timing window overlaps another process's compile (issue: time to answer)."""

    def __init__(self) -> None:
        self.phases: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def phase(self, name: str):  # type: ignore[no-untyped-def]
        start = time.time()
        try:
            yield
        finally:
            self.phases.append({"name": name, "start": start, "end": time.time()})


def _gate(clock: PhaseClock, name: str, progress: Progress, fraction: float,
          core: int | None = None) -> None:
    """Wait at gate ``name`` (engine/orchestrate/gates.py) for the runner's go; the wait is its own phase
    ("waiting"), so the time breakdown and the overlap test see it.  Past the "time" gate the
    process has the run's timing ``core`` to itself (engine/measure/placement.py).  A process
    that will time pinned runs one intra-op thread from its compile on (``_one_thread``)."""
    if name in ("compile", "time"):
        _one_thread(core)
    if gates.enabled():
        progress(f"waiting to {name}", fraction, force=True)
        with clock.phase("waiting"):
            gates.wait(name)
    if name == "time" and core is not None:
        placement.pin(core)


def _one_thread(core: int | None) -> None:
    """One intra-op thread for a process that times on one core, as torch chooses for a process
    started there (taskset): a pool of one thread per core, all on the one core, takes turns with
    the launching thread and reads launch-bound calls far slow
    (docs/measurements/2026-12-06-eager-drift.md).  Set before the first compiled call, not at
    the time gate: the thread count is part of the global state dynamo guards, so changing it
    after the compile recompiled every graph on the next call, in the timing slot, and showed
    the user a recompile ("GLOBAL_STATE changed: num_threads") their model never does."""
    if core is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _after_compile(res: dict[str, Any], clock: PhaseClock, progress: Progress) -> None:
    """The first compiled call has returned: end the compile-worker pool it started (its
    start-up must never run beside another process's timing or compile, engine/measure/hostload.py),
    then tell the runner, which counted this process busy until now."""
    with clock.phase("compile workers"):
        res["compile_workers"] = stop_compile_workers()
    gates.mark("compiled")


def _time_gate(c: _Child) -> None:
    """The time gate; past it, where ``COMPILELAB_TIMING_CORE=fastest``, the process times on
    whichever allowed CPU the host probe's module call reads fastest then
    (``placement.fastest``), and keeps each CPU's reading for its record."""
    _gate(c.clock, "time", c.progress, 0.2, c.core)
    if c.core is None or placement.choice() != "fastest":
        return
    with c.clock.phase("host settle"):
        chosen, read = placement.fastest(
            c.core, lambda: host_probe.measure(c.device)["module_call_us"], c.cpus)
    placement.pin(chosen)
    c.core_probe_us = {str(cpu): us for cpu, us in read.items()}


def _timed_process(c: _Child) -> dict[str, Any]:
    """This process's paired rounds (``_measure_process``) with what its core choice read."""
    proc = _measure_process(c.res, c.timer, c.fns, c.budget, c.clock, c.progress, c.phase,
                            pinned=c.core is not None,
                            seen_us=min(c.core_probe_us.values()) if c.core_probe_us else None)
    proc["core_probe_us"] = c.core_probe_us
    return proc


def _device_ms(timer: Timer, fns: dict[str, Callable[[], object]], rounds: dict[str, Any],
               clock: PhaseClock) -> dict[str, float] | None:
    """Each timed function's device time per call with the host queued ahead
    (engine/measure/device_time.py), after the window: whether a call that read slow in this
    process ran slow kernels or slow host work.  None off a GPU."""
    if not device_time.available(timer.device):
        return None
    got: dict[str, float] = {}
    with clock.phase("device time"):
        for name, fn in fns.items():
            if not rounds.get(name, {}).get("per_call"):
                continue
            try:
                ms = device_time.queued_ms(fn, statistics.median(rounds[name]["per_call"]))
            except Exception:  # noqa: BLE001 - a diagnostic never costs the process its timing
                ms = None
            if ms is not None:
                got[name] = ms
    return got


def _measure_process(res: dict[str, Any], timer: Timer, fns: dict[str, Callable[[], object]],
                     budget: dict[str, Any], clock: PhaseClock, progress: Progress, phase: str,
                     pinned: bool = False, seen_us: float | None = None) -> dict[str, Any]:
    """Paired steady-state rounds in this process: one entry of the result's ``processes``.

    Also keeps the pooled top-level series (``samples_ms`` ...), which the runner concatenates
    over processes, and the host load (the highest over processes wins in the runner).  A
    ``pinned`` process first waits, a few seconds at most, for the host to read at its usual
    speed (engine/measure/host_settle.py)."""
    settled = None
    if pinned and host_settle.enabled():
        with clock.phase("host settle"):
            probe, settled = host_settle.settle(lambda: host_probe.measure(timer.device),
                                                seen_us=seen_us)
    with HostLoad() as load, clock.phase("measure"):
        if settled is None:
            probe = host_probe.measure(timer.device)
        rounds = steady_rounds(timer, fns, **budget,
                               on_round=lambda f: progress("measuring", 0.3 + 0.5 * min(f, 1)))
        # and again once the window closes: a host that slowed inside it (which the probe
        # before cannot see) shows as the two probes apart
        after = host_probe.measure(timer.device)
    device_ms = _device_ms(timer, fns, rounds, clock)
    src = rounds["eager" if "eager" in rounds else "variant"]
    proc = {"phase": phase, "block": budget["block"], "pid": os.getpid(),
            "host_other_busy_cores": load.other_busy_cores, "host_probe": probe,
            "host_settle": settled, "host_probe_after": after, "device_ms": device_ms,
            "timing_cpus": sorted(os.sched_getaffinity(0)), "threads": torch.get_num_threads(),
            "samples_ms": rounds["variant"]["per_call"],
            "pipelined_ms": rounds["variant"]["pipelined"],
            "eager_samples_ms": src["per_call"], "eager_pipelined_ms": src["pipelined"],
            "pipeline_k": max(rounds["variant"]["pipeline_k"], default=budget["k"])}
    res["host_other_busy_cores"] = load.other_busy_cores
    res["host_probe"] = probe
    res["pipeline_k"] = [proc["pipeline_k"]]  # the K used, one per process (runner appends)
    for key in ("samples_ms", "pipelined_ms", "eager_samples_ms", "eager_pipelined_ms"):
        res[key] = proc[key]
    return {**proc, "_rounds": rounds}


@dataclass
class _Child:
    """What one measuring process holds between its phases (``measure`` runs them in order)."""

    run: dict[str, Any]
    variant: str
    phase: str
    progress: Progress
    explain_ahead: bool
    timer: Timer
    clock: PhaseClock
    res: dict[str, Any]
    core: int | None = None
    cpus: set[int] = field(default_factory=set)  # as given, before keep_off and pin
    core_probe_us: dict[str, float] | None = None
    stage: str = "building"
    capture: Any = None
    dims: dict[str, int] = field(default_factory=dict)
    model: Any = None
    inputs: tuple = ()
    train: Any = None
    ref: Any = None
    eager: Callable[[], object] | None = None
    fn: Callable[[], object] | None = None
    compiled: Any = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    fns: dict[str, Callable[[], object]] = field(default_factory=dict)
    budget: dict[str, Any] = field(default_factory=dict)
    warm: list[float] = field(default_factory=list)
    rounds: Any = None

    @property
    def device(self) -> str:
        return self.run["device"]

    @property
    def is_eager(self) -> bool:
        return self.variant == "eager"


def _prepare(c: _Child) -> None:
    """Model, inputs (and a training step), environment; setup in named phases."""
    c.capture = signals.LogCapture()
    if not c.is_eager:
        # Only a compiled variant has recompiles and cudagraph skips to log. The capture
        # imports neither dynamo nor inductor (signals.LogCapture.install).
        c.capture.install()
    c.dims = dict(c.run["dims"])
    sweep = c.run.get("sweep") or None
    if sweep:
        c.dims[sweep["dim"]] = int(sweep["values"][0])
    with c.clock.phase("model build"):
        c.model, c.inputs, loss_fn = build(c.run, c.dims, c.device)
        if c.run.get("step") == "train":  # engine/measure/train_step.py: what a step times
            from engine.measure.train_step import Training

            c.train = Training(c.run, c.variant, c.model, c.inputs, loss_fn, c.device)
    with c.clock.phase("environment"):
        c.res["environment"] = environment(c.device)
        c.res["arch"] = arch_figures(c.model)
    if c.is_eager and c.run.get("profile", True) and c.device.startswith("cuda"):
        # torch.profiler's first trace asks hasattr(torch, "_inductor"), which imports inductor
        # and dynamo (seconds): here, while preparing beside the others, instead of inside
        # eager's timing slot, when nothing else may run. A compiled process imports them anyway.
        with c.clock.phase("profiler import"):
            importlib.import_module("torch._inductor")


def _functions(c: _Child) -> None:
    """Eager's reference call (it pays the device's start-up), then what is timed."""
    c.eager = c.train.eager_step if c.train else lambda: c.model(*c.inputs)
    with c.clock.phase("eager reference"):
        c.res["device_startup_ms"] = c.timer.wall_ms(c.eager)  # CUDA/cuBLAS start-up
        c.ref = None if c.train else _clone(c.model(*c.inputs))
        c.timer.sync()
    c.res["setup_s"] = time.perf_counter() - _T0
    if c.is_eager:
        c.fn = c.eager
    elif c.train:
        c.fn = c.train.variant_step
    else:
        # mode, dynamic, fullgraph and inductor options from the variant's name
        c.kwargs = grid.compile_kwargs(c.run, c.variant)
        with c.clock.phase("compiler import"):  # torch.compile imports dynamo, as in
            c.compiled = torch.compile(c.model, **c.kwargs)  # a user's script: untimed
        c.fn = lambda: c.compiled(*c.inputs)
    c.budget = timing_budget(c.run)
    c.fns = {"variant": c.fn} if c.is_eager else {"eager": c.eager, "variant": c.fn}


def _compile_call(c: _Child, what: str) -> float:
    """The first compiled call (cold or warm cache), at the compile gate, with its forensics."""
    _gate(c.clock, "compile", c.progress, 0.05, c.core)
    c.stage = "compiling"
    if what == "warm_cache" and c.explain_ahead and c.train is None:
        # unreported: the run's graph-break trace fits here (engine/slot_tail)
        c.progress("tracing graph breaks", 0.07, force=True)
        slot_tail.explain_ahead(c.model, c.inputs, c.clock)
    if what == "cold":
        c.capture.context = {"call_index": 1}
    c.progress("warm-cache compile" if what == "warm_cache" else "compiling", 0.1, force=True)
    with (c.clock.phase("compile"), forensics.CompileWatch(c.phase) as watch,
          CompileLoad() as load):
        ms = c.timer.wall_ms(c.fn)
    c.res["compile_load"] = load.figures  # the host beside it (engine/compile_load)
    signals.keep_compilation_metrics()  # dynamo is loaded now: before its 64 records fill
    _after_compile(c.res, c.clock, c.progress)
    c.capture.attach_existing()
    c.res["compile_cache"] = [watch.result()]  # what the caches did (engine/forensics)
    _confirm_draw(c)
    return ms


def _autotune_draw(c: _Child, redraw: bool) -> None:
    """Whether this process's autotuned kernels replay the cache's choice or draw anew
    (engine/measure/autotune_draw.py), set before its first compiled call."""
    if c.is_eager:
        return
    draw, why_not = autotune_draw.for_process(c.run, c.variant, c.phase, redraw)
    c.res["autotune_draw"] = draw
    if why_not:
        c.res["autotune_draw_note"] = why_not


def _confirm_draw(c: _Child) -> None:
    """What the first call's kernels did, over what was set up (a torch whose warm load reads
    the choice another way would replay under a redraw; a graph without autotuned kernels
    draws nothing)."""
    states = (c.res.get("compile_cache") or [{}])[0].get(forensics.AUTOTUNE_STATE) or {}
    draw, note = autotune_draw.confirmed(c.res.get("autotune_draw"), states)
    c.res["autotune_draw"] = draw
    if note:
        c.res["autotune_draw_note"] = note


def _warm_cache_process(c: _Child) -> None:
    """A further measuring process: its first call is the warm-cache compile, then warm-up and
    paired rounds like the cold process, nothing else."""
    c.res["first_call_warm_s"] = _compile_call(c, "warm_cache") / 1e3
    c.res["compile_phases_warm_s"] = signals.compile_phases()
    _time_gate(c)
    c.stage = "warm-up"
    with c.clock.phase("warm-up"):
        for _ in range(max(int(c.run.get("warmup_calls", 10)), 3) - 1):
            c.timer.wall_ms(c.fn)
    c.stage = "measuring"
    proc = _timed_process(c)
    proc.pop("_rounds")
    c.res["processes"] = [proc]


def _warm_up_curve(c: _Child) -> None:
    """Calls 1..N one by one, each synchronised. Call 1 of a compiled variant is the cold
    compile; with reduce-overhead, call 2 records the CUDA graph.  Call 1 of every curve follows
    the eager reference call, which paid the device's start-up: eager's call 1 is then its first
    call as break-even counts it, one figure on every surface."""
    n_warm = max(int(c.run.get("warmup_calls", 10)), 3)
    if c.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    if not c.is_eager:  # call 1: the cold compile, side by side with other compiles
        c.warm.append(_compile_call(c, "cold"))
        if c.train:
            c.train.after_call(len(c.warm))
        if c.run.get("startup"):  # for the portable-artifacts strategy (engine/startup)
            startup.save_artifacts(c.res)
    _time_gate(c)  # from here on, this process times alone
    c.stage = "warm-up"
    while len(c.warm) < n_warm:
        c.capture.context = {"call_index": len(c.warm) + 1}
        c.progress("warm-up", 0.2 + 0.1 * len(c.warm) / n_warm)
        with c.clock.phase("warm-up"):
            c.warm.append(c.timer.wall_ms(c.fn))
        if c.train:
            c.train.after_call(len(c.warm))
    c.res["warmup_ms"] = c.warm
    c.res["first_call_cold_s"] = c.warm[0] / 1e3
    c.res["compile_phases_s"] = signals.compile_phases()


def _memory_and_accuracy(c: _Child) -> None:
    res, dtype = c.res, c.run["dtype"]
    if c.device.startswith("cuda"):
        res["peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated())
        res["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
    else:
        res["peak_allocated_bytes"] = res["peak_reserved_bytes"] = None
    if c.train:
        c.train.discount_eager_twin(res)
        res.update(c.train.accuracy())
        return
    out = None if c.is_eager else _clone(c.fn())
    res.update(compare(out, c.ref, dtype) if not c.is_eager else
               {"max_abs_err": 0.0, "max_rel_err": 0.0, "correct": True,
                "rtol": RTOL[dtype], "atol": None})
    res.update(accuracy.check_inference(c.model, c.inputs, c.ref, out, c.run))


def _steady_state(c: _Child) -> None:
    c.stage = "measuring"
    c.capture.context = {"call_index": None, "phase": "steady"}
    proc = _timed_process(c)
    c.rounds = proc.pop("_rounds")
    c.res["processes"] = [proc]
    c.res["wall_ms_per_call"] = statistics.median(proc["samples_ms"])
    if c.run.get("cross_check"):
        from engine.measure.crosscheck import cross_check

        c.progress("measuring", 0.8, force=True)
        with HostLoad() as load:
            c.res["cross_check"] = cross_check(c.fns, c.timer, c.budget["k"])
        c.res["cross_check"]["host_other_busy_cores"] = load.other_busy_cores


def _call_with(c: _Child) -> Callable[[tuple], object]:
    return (lambda i: c.model(*i)) if c.is_eager else (lambda i: c.compiled(*i))


def _sweep(c: _Child) -> None:
    """The sweep's other values through the same compiled module, and the shape mix."""
    sweep, run = c.run.get("sweep") or None, c.run
    if not sweep:
        return
    c.res["sweep"] = [_sweep_point(sweep["values"][0], c.rounds, recompiled=False,
                                   first_ms=c.warm[0])]
    for value in sweep["values"][1:]:
        c.progress("measuring", 0.8, force=True)
        c.res["sweep"].append(_measure_sweep_value(
            run, c.dims, sweep["dim"], int(value), c.device, c.model, fn_for=_call_with(c),
            timer=c.timer, capture=c.capture, budget=c.budget,
            n_values=len(sweep["values"]), is_eager=c.is_eager))
    if run.get("shape_weights"):  # engine/measure/shape_mix.py: the sizes in their mix
        c.capture.context = {"call_index": None, "phase": "mix"}  # not the last sweep value
        c.res["shape_mix"] = shape_mix.replay(
            sweep["values"], run["shape_weights"], int(run.get("mix_requests", 200)),
            int(run.get("seed", 0)),
            lambda v: build(run, {**c.dims, sweep["dim"]: int(v)}, c.device)[1],
            _call_with(c), c.timer.wall_ms, signals.compile_count)


def _generation(c: _Child) -> None:
    """Token generation, for decode models (engine/measure/decode.py, hf_generate.py)."""
    seed = int(c.run.get("seed", 0))
    if c.train is None and decode.is_decode_model(c.model):
        c.stage = "decoding"
        c.capture.context = {"call_index": None, "phase": "decode"}
        with c.clock.phase("decode"):
            c.res["decode"] = decode.measure(
                c.model, c.model if c.is_eager else c.compiled, None if c.is_eager else c.model,
                c.timer, seed=seed, first_call_ms=None if c.is_eager else c.warm[0],
                progress=lambda f: c.progress("decoding", 0.8 + 0.05 * f), run=c.run)
    if c.train is None and hf_generate.wanted(c.model):
        c.stage = "generating"
        c.capture.context = {"call_index": None, "phase": "generate"}
        with c.clock.phase("decode"):
            c.res["hf_generate"] = hf_generate.measure(
                c.model, None if c.is_eager else c.kwargs, c.timer, seed=seed,
                progress=lambda f: c.progress("generating", 0.8 + 0.05 * f))


def _cold_process(c: _Child) -> None:
    """The variant's first process (or eager's): the warm-up curve from its first call, memory,
    accuracy, steady state, sweep, generation, then the slot's tail (profile, roofline...)."""
    _warm_up_curve(c)
    _memory_and_accuracy(c)
    _steady_state(c)
    _sweep(c)
    _generation(c)
    c.stage = "profiling"
    c.capture.context = {"call_index": None, "phase": "profile"}  # not the timed rounds
    c.progress("profiling", 0.85, force=True)
    slot_tail.record(c.res, run=c.run, variant=c.variant, device=c.device, fn=c.fn,
                     eager=c.eager, model=c.model, inputs=c.inputs, train=c.train,
                     capture=c.capture, clock=c.clock, progress=c.progress)


def measure(spec: dict[str, Any], progress: Progress) -> dict[str, Any]:
    run, variant, phase = spec["run"], spec["variant"], spec.get("phase", "cold")
    timer = Timer(run["device"])
    clock = PhaseClock()
    res: dict[str, Any] = {"variant": variant, "status": "ok", "failure_kind": None,
                           "error": None, "timer": timer.name, "phases": clock.phases,
                           "process_started_at": time.time() - (time.perf_counter() - _T0)}
    c = _Child(run, variant, phase, progress, spec.get("explain_ahead") is True, timer, clock,
               res, core=placement.timing_core(run["device"]), cpus=placement.allowed())
    placement.keep_off(c.core)  # until this process's timing window opens
    try:
        progress("building", 0.0, force=True)
        clock.phases.append({"name": "imports", "start": res["process_started_at"],
                             "end": time.time() - (time.perf_counter() - _T_IMPORTED)})
        _prepare(c)
        with torch.no_grad() if c.train is None else contextlib.nullcontext():
            _functions(c)
            if phase in startup.PHASES and not c.is_eager:  # a start-up strategy's process
                c.stage = "compiling"
                res["startup"] = startup.measure_strategy(phase, c.model, c.inputs, run,
                                                          variant, timer, c.kwargs)
            elif phase == "warm_cache":
                _autotune_draw(c, spec.get("redraw_autotune") is True)
                _warm_cache_process(c)
            else:
                _autotune_draw(c, False)
                _cold_process(c)
    except torch.cuda.OutOfMemoryError as e:
        res.update(status="failed", failure_kind="oom", error=f"out of memory while {c.stage}: "
                   + str(e).splitlines()[0][:300])
        res["stderr_tail"] = traceback.format_exc()[-4000:]
    except Exception as e:  # every failure is a result: keep what was measured, say why
        kind = "compile_error" if c.stage == "compiling" else "error"
        first = (str(e).strip().splitlines() or [""])[0][:500]
        res.update(status="failed", failure_kind=kind,
                   error=f"{type(e).__name__} while {c.stage}: {first}")
        res["stderr_tail"] = traceback.format_exc()[-4000:]
    progress("done", 1.0, force=True)
    return res


def _sweep_point(value: int, rounds: dict, *, recompiled: bool, first_ms: float) -> dict:
    per_call = rounds["variant"]["per_call"]
    # inclusive: with few samples the default method extrapolates past the data (even below 0)
    q = statistics.quantiles(per_call, n=10, method="inclusive") if len(per_call) >= 2 else [per_call[0]] * 9
    eager = rounds.get("eager", rounds["variant"])["per_call"]
    return {"value": value, "first_call_ms": first_ms, "median_ms": statistics.median(per_call),
            "p10_ms": q[0], "p90_ms": q[-1], "n": len(per_call), "recompiled": recompiled,
            "eager_median_ms": statistics.median(eager)}


def _measure_sweep_value(run, dims, dim, value, device, model, fn_for, *, timer, capture,
                         budget, n_values, is_eager) -> dict:
    """Feed the same compiled module a new shape, as a serving process would: the first call at
    this shape shows any recompile stutter; then shorter interleaved rounds."""
    new_dims = {**dims, dim: value}
    _, inputs, _ = build(run, new_dims, device)
    before = signals.compile_count()
    capture.context = {"call_index": 1, "dim_value": value}
    first_ms = timer.wall_ms(lambda: fn_for(inputs))
    recompiled = (not is_eager) and signals.compile_count() > before
    if recompiled:  # a recompile compiles in-process (stop_compile_workers); in case one did not
        stop_compile_workers()
    capture.context = {"dim_value": value}
    small = dict(budget, min_samples=max(10, budget["min_samples"] // 2),
                 min_time_s=budget["min_time_s"] / 2,
                 max_time_s=max(budget["max_time_s"] / n_values, 0.5))
    fns = {"variant": lambda: fn_for(inputs)}
    if not is_eager:
        fns = {"eager": lambda: model(*inputs), **fns}
    rounds = steady_rounds(timer, fns, **small)
    return _sweep_point(value, rounds, recompiled=recompiled, first_ms=first_ms)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m engine.measure.child SPEC.json OUT.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        spec = json.load(f)
    trace_problem = torch_trace.enable_in_child()  # spec keep_trace (engine/measure/torch_trace.py)
    result = measure(spec, Progress(os.environ.get("COMPILELAB_PROGRESS")))
    if trace_problem:
        result["torch_trace"] = {"error": trace_problem}
    tmp = argv[1] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, default=str)
    os.replace(tmp, argv[1])
    # The result is on disk: skip the interpreter's teardown (torch's atexit hooks, module
    # finalisers), which took about 1.8 s a process on this project's 2-core machine and
    # measures nothing. Anything the process started dies with its process group (runner).
    torch_trace.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
