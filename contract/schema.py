"""The one contract between engine, storage, bundles, CLI, dashboard and HTML report.

Two things live here and nowhere else:

* ``RunSpec``: every option of a run with its default, and ``BOUNDS``: the range of each numeric
  option.  ``engine.spec`` validates raw input into a complete spec dict with exactly these keys;
  the CLI, the dashboard form and the worker all go through it.
* ``FIGURES``: every figure of a VariantResult (what a measuring child reports) and of its
  ``stats`` block (what ``engine.analysis.stats`` derives), each with its kind, whether storage keeps it
  in a column of its own or in the result's ``extra`` JSON, and how tables label it.  Storage
  derives its field maps from it, bundles validate against it, ``engine show`` and the
  dashboard's tables take their columns and labels from it.

Adding a figure: one ``Figure`` line here, the code that measures or derives it (``engine/child``
or ``engine/stats``), and, only if it needs a column of its own, the SQLAlchemy entity
(``storage/models/variant_result.py``) plus a migration.  A figure with ``column=False`` needs no
migration: storage keeps it in ``extra`` and reads it back by name.

Pure Python: no torch, numpy, pandas or SQLAlchemy, so every side can import it.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

KINDS = ("str", "float", "int", "bool", "series", "json")


@dataclass(frozen=True)
class RunSpec:
    """Every option of a run, with its default (docs/CONTRACTS.md "RunSpec")."""

    model: str
    dims: dict[str, int] = field(default_factory=dict)
    sweep: dict[str, Any] | None = None
    dtype: str = "float32"
    device: str = "cpu"
    variants: list[str] = field(default_factory=lambda: ["eager", "default"])
    backend: str = "inductor"
    dynamic: bool | None = None
    fullgraph: bool = False
    warmup_calls: int = 10
    min_samples: int = 30
    min_time_s: float = 0.5
    max_time_s: float = 10.0
    pipeline_k: int = 50
    # Per child process. max-autotune of a large model can take many minutes on its first call.
    timeout_s: float = 1800.0
    seed: int = 0
    profile: bool = True
    warm_cache: bool = True
    # Also time with torch.utils.benchmark and triton's do_bench in the same child (slower).
    cross_check: bool = False
    # Measuring processes per compiled variant (engine/analysis/stats.py: the process is the unit of
    # replication): at least `processes`, more while the interval's relative half-width exceeds
    # `target_halfwidth`, up to `max_processes` or `process_budget_s` seconds of extra processes.
    # A GPU variant that redraws its autotuned kernels gets at least four where `max_processes`
    # allows (engine/measure/autotune_draw.min_processes).
    processes: int = 3
    max_processes: int = 4
    target_halfwidth: float = 0.05
    process_budget_s: float = 30.0
    # Measuring processes alive at once (engine/orchestrate/schedule.py: they prepare and compile side by
    # side, each times alone); 0 = chosen from the host's cores (1 below 8 cores, else one
    # per core up to 16).
    concurrency: int = 0
    # Reported compiles (cold, first warm-cache) at once among them (a max-autotune compile
    # always runs alone; further processes' compiles run together, never beside a reported
    # one, nor beside a process still preparing); 0 = with concurrency 0, 1; with
    # concurrency N, N.
    compile_slots: int = 0
    # Start-up strategies side by side (engine/measure/startup.py): two more processes per compiled
    # variant, portable cache artifacts and regional compilation, beside cold and warm.
    startup: bool = False
    # Keep torch's structured compile log (TORCH_TRACE) of each compiled variant's cold compile,
    # compressed, downloadable from the run for tlparse or an upstream report
    # (engine/measure/torch_trace.py). Logging adds to that compile's time.
    keep_trace: bool = False
    # What is timed (engine/measure/train_step.py): "inference" (forward under no_grad) or "train" (one
    # training step: forward, loss, backward, optimizer step on fixed data from the seed).
    step: str = "inference"
    optimizer: str = "adamw"  # train: "sgd" | "adamw"
    optimizer_impl: str = "default"  # train: "default" | "foreach" | "fused"
    lr: float = 1e-4  # train: small, so thousands of timed steps on one batch stay finite
    autocast: str = "none"  # train: "none" | "bfloat16" | "float16" (float16 adds a GradScaler)
    # Accuracy against a float64 run of the same model (engine/measure/accuracy.py): a compiled variant
    # passes when its error <= accuracy_multiplier x eager's error + accuracy_floor x the
    # reference's RMS (None: the dtype's floor); training compares the loss and the parameter
    # updates after `accuracy_steps` steps.
    accuracy_steps: int = 3
    accuracy_multiplier: float = 3.0
    accuracy_floor: float | None = None
    # What the run needs beyond its device, so that only a worker that has it claims the run
    # (storage/workers.py): a GPU model by its exact name ("NVIDIA H200"), a torch release or a
    # prefix of one ("2.11"). None: any worker with the device.
    require_gpu: str | None = None
    require_torch: str | None = None
    # Grid runs (engine/grid.py): variants may carry a config ("default@dyn=1,fg=1"); a run
    # refuses more compiled variants than this, so a mistyped grid does not book the GPU for a
    # day. Raise it for a bigger grid (at most 63: a bundle holds 64 variants per run).
    grid_limit: int = 16
    # Shape distribution (engine/measure/shape_mix.py): weights of the sweep's values, the mix of sizes
    # a service sees; each variant then replays `mix_requests` requests drawn from it.
    shape_weights: list[float] | None = None
    mix_requests: int = 200

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every option except ``model`` with its default value (fresh containers each call)."""
        out: dict[str, Any] = {}
        for f in fields(cls):
            if f.default is not MISSING:
                out[f.name] = f.default
            elif f.default_factory is not MISSING:
                out[f.name] = f.default_factory()
        return out

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class Bound:
    """The range a numeric option of ``RunSpec`` may take, both ends included.

    ``engine.spec.normalise`` checks every numeric option against ``BOUNDS`` and nothing else,
    and the New run form takes its widgets' limits from the same table, so the two cannot
    disagree.  ``why``: said with a value below ``lo``, where the floor has a reason a user
    would not guess."""

    lo: float
    hi: float
    integer: bool = False
    why: str = ""


BOUNDS: dict[str, Bound] = {
    "warmup_calls": Bound(3, 1000, True, "reduce-overhead records CUDA graphs on call 2 and "
                          "replays them from call 3"),
    "min_samples": Bound(3, 100_000, True),
    "min_time_s": Bound(0, 3600),
    "max_time_s": Bound(0.1, 3600),
    "pipeline_k": Bound(1, 10_000, True),
    "timeout_s": Bound(1, 24 * 3600),
    "seed": Bound(0, 2**31 - 1, True),
    "processes": Bound(1, 100, True),
    "max_processes": Bound(1, 100, True),
    "target_halfwidth": Bound(0, 10),
    "process_budget_s": Bound(0, 24 * 3600),
    "concurrency": Bound(0, 64, True),
    "compile_slots": Bound(0, 64, True),
    # a bundle holds at most 64 variants per run, eager included
    "grid_limit": Bound(1, 63, True),
    "mix_requests": Bound(10, 100_000, True),
    "lr": Bound(1e-12, 10),
    "accuracy_steps": Bound(1, 100, True),
    "accuracy_multiplier": Bound(1, 1e6),
    "accuracy_floor": Bound(0, 1e6),  # or None: the dtype's own floor
}


@dataclass(frozen=True)
class Figure:
    """One figure of a VariantResult (``where="result"``) or of its stats (``where="stats"``)."""

    name: str
    kind: str
    where: str = "result"
    column: bool = True
    """True: a column of the variant_results table; False: kept in the result's ``extra``."""
    label: str | None = None
    """Column title in tables (None: not shown as a table column)."""
    doc: str = ""
    csv: str | None = None
    """Column name in the dashboard's variants table and CSV export, with the unit in the name
    so that a CSV stands on its own (None: not exported). Set from ``EXPORT`` below."""

    def __post_init__(self) -> None:
        assert self.kind in KINDS and self.where in ("result", "stats"), self


def _r(name: str, kind: str, label: str | None = None, doc: str = "", column: bool = True
       ) -> Figure:
    return Figure(name, kind, "result", column, label, doc)


def _s(name: str, kind: str, label: str | None = None, doc: str = "", column: bool = True
       ) -> Figure:
    return Figure(name, kind, "stats", column, label, doc)


FIGURES: tuple[Figure, ...] = (
    # ---- what a child measures (top level of a VariantResult)
    _r("failure_kind", "str", "failure"),
    _r("error", "str", "error"),
    _r("stderr_tail", "str"),
    _r("timer", "str", "timer"),
    _r("setup_s", "float", "setup s", "imports + device init + model build, not compile"),
    _r("device_startup_ms", "float", None, "eager's very first call in the process, which pays "
       "the device's start-up (CUDA context, cuBLAS handles); every warm-up curve starts after "
       "it", column=False),
    _r("first_call_cold_s", "float", "1st call cold s", "compiled call 1, empty cache"),
    _r("first_call_warm_s", "float", "1st call warm s", "call 1 in a fresh process, warm cache"),
    _r("compile_load", "json", None, "the host beside the reported compiles, {cold, warm}: "
       "other_busy_cores (cores kept busy by processes outside the compiling process's tree) "
       "and steal_share (share of the host's CPU time a hypervisor gave away); "
       "engine/measure/compile_load.py", column=False),
    _r("peak_allocated_bytes", "int", "peak alloc MiB"),
    _r("peak_reserved_bytes", "int", "peak reserved MiB"),
    _r("graph_count", "int", "graphs"),
    _r("graph_break_count", "int", "breaks"),
    _r("recompile_count", "int", "recompiles", "defaults to len(recompiles)"),
    _r("kernels_per_call", "float", "kernels/call"),
    _r("eager_kernels_per_call", "float", "eager kernels/call"),
    _r("device_busy_ms_per_call", "float", "device busy ms/call",
       "profiler pass: union of device activity per call"),
    _r("eager_device_busy_ms_per_call", "float", "eager device busy ms/call",
       "the same for eager: far below eager's wall time means eager is launch-bound",
       column=False),
    _r("wall_ms_per_call", "float", "wall ms/call", "steady-state per-call median"),
    _r("max_abs_err", "float", "max abs err"),
    _r("max_rel_err", "float", "max rel err"),
    _r("atol", "float"),
    _r("rtol", "float"),
    _r("correct", "bool", "correct"),
    _r("reference_dtype", "str", "reference", "dtype of the accuracy reference run (float64; "
       "null when it could not run)", column=False),
    _r("eager_error", "float", "eager err vs fp64", "RMSE of eager against the float64 "
       "reference (the tensor that decided; training: the loss, gradient or parameter-update "
       "group that decided)", column=False),
    _r("compiled_error", "float", "compiled err vs fp64", "RMSE of this variant against the "
       "float64 reference, same tensor", column=False),
    _r("accuracy_tensor", "str", "judged tensor", "the tensor eager_error and compiled_error "
       "are of (contract/accuracy.py): a compiled variant's is the one nearest its allowance, "
       "eager's the one with its largest error, so rows of one training run can differ",
       column=False),
    _r("accuracy_multiplier", "float", None, "allowed multiple of eager's error", column=False),
    _r("accuracy_floor", "float", None, "floor added to the allowance, relative to the "
       "reference's RMS", column=False),
    _r("accuracy_ok", "bool", "fp64 accuracy ok", "compiled_error <= multiplier x eager_error "
       "+ floor, for every tensor compared", column=False),
    _r("eager_deterministic", "bool", "eager deterministic", "two eager runs gave identical "
       "results", column=False),
    _r("eager_repeat_max_diff", "float", None, "largest difference between two eager runs",
       column=False),
    _r("accuracy", "json", None, "accuracy detail per quantity (output, or loss and "
       "parameters): errors, worst tensor, steps, torch._dynamo.utils.same's verdict",
       column=False),
    _r("warmup_ms", "series"),
    _r("samples_ms", "series"),
    _r("eager_samples_ms", "series"),
    _r("pipelined_ms", "series"),
    _r("eager_pipelined_ms", "series"),
    _r("pipeline_k", "json", None, "calls per pipelined sample, one per measuring process: "
       "the spec's pipeline_k, capped to about 75 ms of calls a sample "
       "(engine/measure/pipeline_k.py)", column=False),
    _r("compile_phases_s", "json"),
    _r("cudagraph_skips", "json"),
    _r("host_other_busy_cores", "float", "other busy cores",
       "cores other processes kept busy while timing (max over processes)", column=False),
    _r("time_s", "json", None, "where the variant's wall time went, seconds summed over its "
       "processes: process start, imports, setup, compile, warm-up, measure, profile, exit",
       column=False),
    _r("processes", "json", None, "per measuring process: phase, block, samples, host load, "
       "host probe before and after its window, host settle (engine/measure/host_settle.py), "
       "the CPUs it timed on, start/end (unix s)", column=False),
    _r("host_probe", "json", None, "the host's cost of one tiny kernel launch and of one "
       "Python-level module call (microseconds), median over the variant's processes "
       "(engine/measure/host_probe.py)", column=False),
    # ---- compile forensics (engine/measure/forensics.py, engine/measure/losttime.py, engine/measure/startup.py)
    _r("compile_cache", "json", None, "per compile (cold, then each warm-cache process): "
       "torch's cache counters under torch's names (fxgraph_cache_hit, fxgraph_cache_miss, "
       "autograd_cache_hit, ...; Triton: triton_bundler_save_kernel, "
       "triton_bundler_read_and_emit_kernel, async_compile_cache_hit/miss, "
       "select_algorithm_autotune) as integers, autotune_cache_state: Triton kernels per "
       "torch's autotune cache decision (hit, miss, only 1 config), per-frame cache counts, "
       "torch's miss reasons", column=False),
    _r("warm_cache_missed", "bool", "warm cache missed", "a warm-cache compile missed or "
       "bypassed the FX graph or AOTAutograd cache", column=False),
    _r("warm_cache_miss_reason", "str", None, "why, in torch's words where it gives them",
       column=False),
    _r("lost_time", "json", None, "why not faster: ranked time lost per call (graph breaks "
       "with file:line, guards, Python, launch-bound, uncaptured CUDA graphs; recompiles), "
       "shares from a profiler pass applied to the steady-state median; each item's part: "
       "host (the host time of the call) or device (busy + idle during it), each adding up to "
       "1; recompiles with share_of_compile", column=False),
    _r("startup", "json", None, "start-up strategies (spec option startup): time to first "
       "call cold, warm local cache, portable cache artifacts, regional compilation",
       column=False),
    _r("torch_trace", "json", None, "spec keep_trace: the cold compile's TORCH_TRACE log as "
       "kept (name, stored gzip size, log bytes, truncated) or why none was kept; the bytes "
       "are an artifact of the run (python -m engine trace)", column=False),
    _r("cache_artifacts", "json", None, "torch.compiler.save_cache_artifacts in the cold "
       "process: bytes, save seconds", column=False),
    _r("roofline", "json", None, "FLOPs per call (FlopCounterMode), bytes per call (a model: "
       "bytes_per_call_estimate, the floor, parameters, inputs, outputs once; "
       "bytes_per_call_ops, every aten operator of an eager call reads its inputs and writes "
       "its outputs), achieved TFLOP/s and GB/s (achieved_gbps_estimate, achieved_gbps_ops) "
       "against the GPU's measured bf16-matmul and copy ceilings; eager: the counts come from "
       "the first compiled process (counted_in), achieved figures at eager's own median",
       column=False),
    _r("cudagraph_coverage", "json", None, "reduce-overhead / max-autotune: graphs captured "
       "and skipped (with inductor's reasons), share of the call inside captured graphs",
       column=False),
    _r("shape_mix", "json", None, "spec shape_weights: requests replayed in the mix of sweep "
       "sizes (engine/measure/shape_mix.py): mean and per-size per-request ms, recompiles during the "
       "replay", column=False),
    _r("train_phases_ms", "json", None, "training steps: {variant, eager} each with "
       "forward_ms (zero_grad, forward, loss), backward_ms, optimizer_ms and step_ms, means "
       "over the middle `kept` of `steps` steps after timing (by step time, so the phases add "
       "up to the step), marks between the phases (CUDA events on the stream, the host clock "
       "on a CPU); eager: the twin in a compiled variant's process "
       "(engine/measure/train_step.py phase_times)", column=False),
    # ---- what was built, and token generation (engine/measure/decode.py)
    _r("arch", "json", None, "what was built: parameter count; registry and decode models: "
       "the effective dims (hf: dims of 0 stand for the config's own)", column=False),
    _r("decode", "json", None, "decode models (llama_decode): whole generations after the "
       "timed decode step: ttft_ms, per_token_ms, tokens_per_s (prefill included), "
       "decode_tokens_per_s, first_generation_ms, prefill_compiles, decode_recompiles (frames "
       "dynamo compiled), recompiles_per_step (flag), cudagraph_records (CUDA-graph set-ups "
       "and recordings while warming up: not compiles), recorded_steps (the first "
       "generation's decode steps that recorded, at most 21) and later_cudagraph_records "
       "(once warm), and for compiled variants eager's figures from the same "
       "process, the speedups (paired: against that eager), compile_s and break_even_tokens "
       "(null: never); memory: weights_bytes, kv_cache_bytes, peak_allocated_bytes and "
       "peak_reserved_bytes while generating (GPU only); accuracy: the logits of each step, "
       "teacher-forced on float64's greedy tokens, judged against float64 (ok, worst step, "
       "multiplier, floor, top1_agreement)", column=False),
    _r("hf_generate", "json", None, "hf: decoder-only models with new_tokens > 0: the same "
       "generation figures as decode, through transformers' generate() with its static cache "
       "(engine/measure/hf_generate.py); {error} where the installed version cannot", column=False),
    # ---- derived by engine/analysis/stats.py (the stats block)
    _s("median_ms", "float", "median ms/call",
       "eager: the run's eager (eager_median_ms); compiled: eager_median_ms / speedup, the "
       "per-call time at the run's eager conditions (engine/analysis/variant_stats.py)"),
    _s("measured_median_ms", "float", None, "compiled: geometric mean over its "
       "own processes of each process's per-call median, as read", column=False),
    _s("paired_eager_median_ms", "float", None, "compiled: eager's median in this variant's own "
       "processes (geometric mean over them), the eager its paired rounds saw", column=False),
    _s("device_ms_per_call", "float", None, "device time of one call with the host queued "
       "ahead (engine/measure/device_time.py), median over the variant's processes; eager: "
       "eager_device_ms_per_call", column=False),
    _s("eager_device_ms_per_call", "float", None, "the run's eager device time of one call "
       "with the host queued ahead: median over every process that timed eager", column=False),
    _s("mean_ms", "float", "mean ms"),
    _s("p10_ms", "float", "p10 ms"),
    _s("p90_ms", "float", "p90 ms"),
    _s("iqr_ms", "float", "IQR ms"),
    _s("n", "int", "n"),
    _s("noisy", "bool", "noisy"),
    _s("pipelined_median_ms", "float", "pipelined ms/call"),
    _s("eager_median_ms", "float", "eager ms", "the run's eager, the same on every row: "
       "geometric mean over every measuring process of the run (eager's own and each compiled "
       "variant's paired rounds) of its eager per-call median"),
    _s("eager_pipelined_median_ms", "float", "eager pipelined ms", "the run's eager, pipelined "
       "calls, formed the same way"),
    _s("speedup", "float", "speedup", "eager_median_ms / median_ms"),
    _s("speedup_ci_low", "float", "CI low"),
    _s("speedup_ci_high", "float", "CI high"),
    _s("break_even_calls", "float", "break-even calls", "cold cache; null = never"),
    _s("break_even_calls_warm", "float", "break-even calls (warm)", "warm cache; null = never",
       column=False),
    _s("eager_first_call_ms", "float", None, "eager's first call after CUDA start-up, as "
       "break-even used it", column=False),
    _s("n_processes", "int", "processes", column=False),
    _s("process_speedups", "json", None, "speedup measured in each process", column=False),
    _s("process_eager_ms", "json", None, "eager's median in each process's paired rounds (ms), "
       "in the order of process_speedups: which process's host slowed", column=False),
    _s("speedup_spread", "float", "process spread",
       "standard deviation of the per-process log speedups (0.1 ≈ 10 %)", column=False),
    _s("within_process_spread", "float", None,
       "RMS within-process standard error of the log speedup (over kernel draws where processes "
       "drew anew: each draw's that of its processes' mean)", column=False),
    _s("disagree_p", "float", None, "Cochran's Q p-value over processes (kernel draws where drawn anew)",
       column=False),
    _s("processes_disagree", "bool", "processes disagree", column=False),
    _s("interval_method", "str", None, column=False),
    _s("speedup_log_se", "float", None, "standard error of the log speedup the interval used",
       column=False),
    _s("speedup_df", "float", None, "degrees of freedom of the interval's t quantile",
       column=False),
    _s("variance_prior", "str", None, "where the shared variance the interval borrowed came "
       "from (null: this variant's processes alone)", column=False),
    _s("variance_components", "json", None, "where the uncertainty comes from: within-round, "
       "between-round and between-process standard deviations (log scale) and each one's share "
       "of the speedup estimate's variance", column=False),
    _s("decision", "str", None, "\"faster\" or \"slower\" when the interval lies wholly beyond "
       "1 ± 2 %; null: undecided", column=False),
    _s("provisional", "bool", None, "true while more processes may still change the figures",
       column=False),
    _s("final_at", "float", None, "when the figures became final (unix seconds)", column=False),
    _s("pipelined_speedup", "float", "pipelined speedup", "eager ÷ variant, pipelined calls of "
       "the same paired rounds, over processes (or kernel draws) as the speedup is", column=False),
    _s("pipelined_ci_low", "float", "pipelined CI low", column=False),
    _s("pipelined_ci_high", "float", "pipelined CI high", column=False),
    _s("stop_reason", "str", "stopped because", column=False),
)

# Exported figures, in CSV column order: figure name -> CSV column name.
EXPORT: dict[str, str] = {
    "failure_kind": "failure_kind", "median_ms": "median_ms", "p10_ms": "p10_ms",
    "p90_ms": "p90_ms", "iqr_ms": "iqr_ms", "n": "samples", "noisy": "noisy",
    "pipelined_median_ms": "pipelined_median_ms", "eager_median_ms": "eager_median_ms",
    "eager_pipelined_median_ms": "eager_pipelined_median_ms",
    "measured_median_ms": "measured_median_ms", "speedup": "speedup_x",
    "speedup_ci_low": "speedup_ci_low_x", "speedup_ci_high": "speedup_ci_high_x",
    "n_processes": "processes", "speedup_spread": "process_spread_log_sd",
    "processes_disagree": "processes_disagree", "stop_reason": "stopped_because",
    "break_even_calls": "break_even_calls", "break_even_calls_warm": "break_even_calls_warm_cache",
    "setup_s": "setup_s", "first_call_cold_s": "first_call_cold_s",
    "first_call_warm_s": "first_call_warm_s", "peak_allocated_bytes": "peak_allocated_mib",
    "peak_reserved_bytes": "peak_reserved_mib", "graph_count": "graphs",
    "graph_break_count": "graph_breaks", "recompile_count": "recompiles",
    "kernels_per_call": "kernels_per_call", "device_busy_ms_per_call": "device_busy_ms_per_call",
    "eager_device_busy_ms_per_call": "eager_device_busy_ms_per_call",
    "wall_ms_per_call": "wall_ms_per_call", "max_abs_err": "max_abs_err", "correct": "correct",
    "reference_dtype": "accuracy_reference_dtype", "eager_error": "eager_error_vs_reference",
    "compiled_error": "compiled_error_vs_reference", "accuracy_tensor": "accuracy_judged_tensor",
    "accuracy_multiplier": "accuracy_multiplier",
    "accuracy_ok": "accuracy_ok", "eager_deterministic": "eager_deterministic",
    "timer": "timer", "host_other_busy_cores": "other_processes_busy_cpu_cores",
}
FIGURES = tuple(replace(f, csv=EXPORT.get(f.name)) for f in FIGURES)
EXPORTED: tuple[Figure, ...] = tuple(
    next(f for f in FIGURES if f.name == name) for name in EXPORT)
FIGURE_BY_NAME: dict[tuple[str, str], Figure] = {(f.where, f.name): f for f in FIGURES}
RESULT_FIGURES: tuple[Figure, ...] = tuple(f for f in FIGURES if f.where == "result")
STATS_FIGURES: tuple[Figure, ...] = tuple(f for f in FIGURES if f.where == "stats")
STATS_KEYS: tuple[str, ...] = tuple(f.name for f in STATS_FIGURES)


def empty_stats() -> dict[str, Any]:
    """A stats block with every key of the contract and no values."""
    return dict.fromkeys(STATS_KEYS)


def kinds(where: str, *, column: bool | None = None) -> dict[str, str]:
    """``{name: kind}`` of the figures at ``where`` ("result" or "stats"); with ``column``, only
    those that do (True) or do not (False) have a database column."""
    return {f.name: f.kind for f in FIGURES
            if f.where == where and (column is None or f.column == column)}


def fits(kind: str, value: Any) -> bool:
    """Can ``value`` stand for a figure of ``kind``? (None always can.)  For values read back
    from where the schema does not type them (a result's ``extra`` JSON, written by anyone who
    can write the database): a reader shows one that does not fit as missing, never crashes."""
    if value is None:
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("int", "float"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, list if kind == "series" else (dict, list))
