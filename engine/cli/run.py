"""``python -m engine run``: its arguments, the run itself in this process with a live progress
line, and what the CLI says about the time before the run started.

Bad input gets one clear line on stderr and exit code 2 (``engine.cli.main.main`` turns
``UsageError`` into that), and nothing is stored: the spec, tags and note are validated
completely (including the device, the backend and user factories) before a run row is written.
``run`` ends its run as cancelled on Ctrl-C, SIGTERM or SIGHUP (the measuring child's process
group is ended first), so nothing is left ``running``.  ``execute_here`` is shared with ``suite
run`` and ``rerun --now``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from engine.spec import (
    ALL_VARIANTS,
    AUTOCASTS,
    DEFAULTS,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    STEPS,
    SpecError,
    normalise,
)


class UsageError(Exception):
    pass


def _parse_dims(items: list[str]) -> tuple[dict[str, int], dict[str, Any] | None]:
    dims: dict[str, int] = {}
    sweep = None
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--dim expects name=value or name=v1,v2,..., got {item!r}")
        try:
            values = [int(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise UsageError(f"--dim {name}: values must be whole numbers, got {value!r}") from None
        if not values:
            raise UsageError(f"--dim {name}: no value given")
        if name in dims and len(values) == 1:  # a value beside a sweep: the validator says
            raise UsageError(f"--dim {name} is given twice: give it once (name=value, or "
                             "name=v1,v2,... to sweep it)")
        if len(values) > 1:
            if sweep:
                raise UsageError("only one dim can be swept per run")
            sweep = {"dim": name, "values": values}
        else:
            dims[name] = values[0]
    return dims, sweep


def _dynamic(text: str) -> bool | None:
    choices = {"none": None, "true": True, "false": False}
    if text.lower() not in choices:
        raise argparse.ArgumentTypeError(f"expected none, true or false, got {text!r}")
    return choices[text.lower()]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``run`` subcommand's arguments."""
    r = sub.add_parser("run", help="benchmark a model: eager vs compile variants")
    r.add_argument("--model", required=True,
                   help="catalogue name, plugin:NAME, timm:NAME, torchvision:NAME, hf:ARCH, "
                        "path/file.py:factory or pkg.mod:factory")
    r.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="repeatable; a sweep as NAME=1,8,32")
    r.add_argument("--dtype", default=DEFAULTS["dtype"])
    r.add_argument("--device", default=DEFAULTS["device"])
    r.add_argument("--variants", default="eager,default",
                   help=f"comma list from {', '.join(ALL_VARIANTS)} (eager is always included; "
                        "MODE+opt: with --step train, the optimizer step compiled too)")
    r.add_argument("--backend", default="inductor")
    r.add_argument("--dynamic", type=_dynamic, default=None, choices=[None, True, False],
                   metavar="{none,true,false}")
    r.add_argument("--fullgraph", action="store_true")
    r.add_argument("--option", action="append", default=[], metavar="NAME=V1,V2",
                   help="grid: repeatable, several values per compile option (dynamic=none,true;"
                        " fullgraph=false,true; coordinate_descent_tuning=false,true; "
                        "freezing=false,true), crossed with --variants into one run "
                        "(engine/grid.py)")
    r.add_argument("--weights", default=None, metavar="W1,W2,...",
                   help="with a sweep: how often a service sees each swept size; each variant "
                        "replays requests in that mix (engine/measure/shape_mix.py)")
    r.add_argument("--grid-limit", type=int, default=DEFAULTS["grid_limit"],
                   help="refuse grids with more compiled variants than this (raise it to run a "
                        "bigger grid)")
    r.add_argument("--warmup-calls", type=int, default=DEFAULTS["warmup_calls"])
    r.add_argument("--min-samples", type=int, default=DEFAULTS["min_samples"])
    r.add_argument("--min-time", type=float, default=DEFAULTS["min_time_s"], help="seconds")
    r.add_argument("--max-time", type=float, default=DEFAULTS["max_time_s"], help="seconds")
    r.add_argument("--pipeline-k", type=int, default=DEFAULTS["pipeline_k"],
                   help="calls per pipelined sample, at most: fewer where K calls would take "
                        "over ~75 ms (engine/measure/pipeline_k.py); the K used is stored and shown")
    r.add_argument("--timeout", type=float, default=DEFAULTS["timeout_s"],
                   help="seconds per variant child")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--processes", type=int, default=DEFAULTS["processes"],
                   help="measuring processes per compiled variant, at least (the interval "
                        "needs several; on a GPU a variant that autotunes its kernels gets at least 4: "
                        "docs/METHOD.md §2)")
    r.add_argument("--max-processes", type=int, default=DEFAULTS["max_processes"],
                   help="more processes while the interval is wider than --target-halfwidth")
    r.add_argument("--target-halfwidth", type=float, default=DEFAULTS["target_halfwidth"],
                   help="relative half-width of the speedup interval to stop at (0.05 = 5 %%)")
    r.add_argument("--process-budget", type=float, default=DEFAULTS["process_budget_s"],
                   help="seconds of extra processes beyond --processes")
    r.add_argument("--concurrency", type=int, default=DEFAULTS["concurrency"],
                   help="measuring processes alive at once: they prepare and compile side by "
                        "side, each times alone (0 = from the host's cores: 1 below 8, else one "
                        "per core up to 16)")
    r.add_argument("--compile-slots", type=int, default=DEFAULTS["compile_slots"],
                   help="reported compiles (cold and first warm-cache) at once among those "
                        "processes (0 = 1 with --concurrency 0, else --concurrency); the first "
                        "warm-cache ones after every cold one; max-autotune's cold compile "
                        "always runs alone")
    r.add_argument("--no-warm-cache", action="store_true", help="do not insist on a warm-cache process: with --processes 1 the "
                        "variant runs in one (cold) process only")
    r.add_argument("--startup-strategies", action="store_true", help="also measure start-up "
                   "strategies per compiled variant: portable cache artifacts and regional "
                   "compilation, beside cold and warm local cache (two more processes each)")
    r.add_argument("--keep-trace", action="store_true", help="keep torch's TORCH_TRACE log of "
                   "each compiled variant's cold compile with the run (python -m engine trace "
                   "RUN VARIANT -o FILE; open it in tlparse); logging adds to that compile")
    r.add_argument("--step", choices=STEPS, default=DEFAULTS["step"],
                   help="what one timed call is: a forward (inference) or a training step "
                        "(forward, loss, backward, optimizer step on a fixed batch)")
    r.add_argument("--optimizer", choices=OPTIMIZERS, default=DEFAULTS["optimizer"])
    r.add_argument("--optimizer-impl", choices=OPTIMIZER_IMPLS,
                   default=DEFAULTS["optimizer_impl"])
    r.add_argument("--lr", type=float, default=DEFAULTS["lr"], help="learning rate (train)")
    r.add_argument("--autocast", choices=AUTOCASTS, default=DEFAULTS["autocast"],
                   help="train: mixed precision on float32 parameters (float16 adds a "
                        "GradScaler)")
    r.add_argument("--accuracy-steps", type=int, default=DEFAULTS["accuracy_steps"],
                   help="train: steps after which loss and parameters are compared")
    r.add_argument("--accuracy-multiplier", type=float,
                   default=DEFAULTS["accuracy_multiplier"],
                   help="compiled may be this many times eager's error against float64")
    r.add_argument("--accuracy-floor", type=float, default=None,
                   help="absolute error always allowed (default: by dtype)")
    r.add_argument("--require-gpu", default=None, metavar="NAME",
                   help="with --queue: only a worker with this GPU model claims the run "
                        "(exact name, e.g. 'NVIDIA H200')")
    r.add_argument("--require-torch", default=None, metavar="RELEASE",
                   help="with --queue: only a worker whose torch release starts with this "
                        "('2.11' matches 2.11.0+cu128)")
    r.add_argument("--tag", action="append", default=[])
    r.add_argument("--note", default="")
    r.add_argument("--queue", action="store_true",
                   help="only queue the run for a worker (python -m engine worker)")
    r.add_argument("--slurm", action="store_true",
                   help="hand the run to Slurm as one batch job (settings: docs/SLURM.md); "
                        "follow it with python -m engine show RUN")
    r.add_argument("--json", action="store_true", help="print the run id only")
    return r


class ProgressLine:
    """A live progress bar on stderr: rewritten in place on a terminal, one line per phase
    change otherwise (logs, CI).  Once stderr's reader is gone (``run ... 2>&1 | head``) it
    stays silent: what is shown must never end what is measured (a broken pipe failed the
    run as an engine error)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last: tuple[str, str] | None = None
        self.gone = False

    def write(self, text: str) -> None:
        if self.gone:
            return
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (BrokenPipeError, ValueError):  # ValueError: stderr closed
            self.gone = True

    def __call__(self, variant: str, phase: str, fraction: float) -> None:
        if self.tty:
            filled = int(30 * fraction)
            self.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {fraction:5.1%} "
                       f"{variant:>26s}: {phase:<40s}")
        elif (variant, phase.split(" · ")[0]) != self.last:  # a log line per phase, not per ETA
            self.write(f"  {fraction:5.1%}  {variant}: {phase}\n")
        self.last = (variant, phase.split(" · ")[0])

    def say(self, line: str) -> None:
        """A log line of the run, below the bar."""
        self.close()
        self.write(line + "\n")

    def close(self) -> None:
        if self.tty:
            self.write("\n")


def execute_here(db: Any, run_id: int, spec: dict[str, Any]) -> str:
    """Claim queued run ``run_id`` and measure it in this process with a progress line on
    stderr; returns its final status, or ``cancelled:SIGNUM`` when a signal ended it (the run
    is then finished as cancelled).  Shared by ``run``, ``suite run`` and ``rerun --now``."""
    from contract.text import one_line
    from engine.orchestrate.execute import execute_run
    from storage import queue

    worker_id = queue.worker_identity("cli")
    if not queue.claim_run(db, run_id, worker_id):
        raise UsageError(f"run {run_id} was taken by a worker; see python -m engine show {run_id}")
    bar = ProgressLine()
    bar.say(run_heading(run_id, spec))
    caught: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        if caught:  # a second signal: stop waiting for the child to be ended cleanly
            raise KeyboardInterrupt
        caught.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        # A signal sets ``caught``; the runner then ends the child's process group (as for a
        # cancel) and execute_run returns "interrupted": the run is finished here, as cancelled.
        status = execute_run(db, run_id, spec, worker_id, on_progress=bar,
                             stop_requested=lambda: bool(caught),
                             log=bar.say)
    except KeyboardInterrupt:
        status = "interrupted"
        caught.append(signal.SIGINT)
    except Exception as e:  # a bug must not leave the run "running" (the worker does the same)
        bar.close()
        queue.finish_run(db, run_id, "failed", error=f"engine error: {one_line(e, 900)}",
                         worker_id=worker_id)
        raise
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
    bar.close()
    if status == "interrupted":
        name = signal.Signals(caught[0]).name
        reason = "interrupted from the keyboard" if caught[0] == signal.SIGINT else \
            f"interrupted by {name}"
        queue.finish_run(db, run_id, "cancelled", error=reason, worker_id=worker_id)
        bar.say(f"run {run_id} cancelled ({reason})")
        return f"cancelled:{caught[0]}"
    return status


def _weights(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise UsageError(f"--weights expects numbers like 0.6,0.3,0.1, got {text!r}") from None


def _grid_variants(args: argparse.Namespace) -> list[str]:
    """--variants crossed with every --option's values (engine/grid.py)."""
    from engine.grid import GridError, expand, parse_options

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    try:
        return expand(variants, parse_options(args.option))
    except GridError as e:
        raise UsageError(str(e)) from None


def _start_server_early(args: argparse.Namespace) -> None:
    """A run measured here starts the preloaded process server (engine/orchestrate/forked.py) before its
    spec is checked; ``python -m engine run`` has started it even earlier (engine/__main__.py,
    ``forked.start_for_argv``), and then this does nothing."""
    from engine.orchestrate import forked, preloads

    forked.start_early(libraries=preloads.wants_libraries(args.model))


def process_age_s() -> float | None:
    """Seconds since this process started (Linux ``/proc``; None elsewhere): the part of a
    run's time to answer spent before its first measuring process, which the run's own
    phases do not see."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(uptime - start_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return None


def run_heading(run_id: int, spec: dict[str, Any]) -> str:
    """``run 7: mlp (batch=32, hidden=1024) float32 on cpu: eager, default``, the dims as show
    writes them (it printed the spec's dict: ``{'batch': 32, 'hidden': 1024}``)."""
    dims = ", ".join(f"{k}={v}" for k, v in (spec.get("dims") or {}).items())
    return (f"run {run_id}: {spec['model']} ({dims}) {spec['dtype']} on {spec['device']}: "
            f"{', '.join(spec['variants'])}")


def _before_the_run(marks: list[tuple[str, float | None]]) -> str:
    """``before the run 5.8 s: command start and imports 1.2 s, ...`` from the process ages
    at the end of each stage."""
    from engine.orchestrate import device_check

    if any(t is None for _, t in marks):
        return ""
    parts, last = [], 0.0
    for name, t in marks:
        parts.append(f"{name} {t - last:.1f} s")  # type: ignore[operator]
        if name.startswith("spec and device check") and device_check.TIMES:
            parts[-1] += " (" + ", ".join(f"{k} {v:.1f} s"
                                          for k, v in device_check.TIMES.items()) + ")"
        last = t  # type: ignore[assignment]
    return f"compilelab: before the run {last:.1f} s: " + ", ".join(parts)


def cmd_run(args: argparse.Namespace) -> int:
    from contract.text import check_note, normalize_tags

    marks: list[tuple[str, float | None]] = [("command start and imports", process_age_s())]
    if args.slurm and args.queue:
        raise UsageError("--slurm and --queue: choose one (Slurm's job, or any worker)")
    elsewhere = args.queue or args.slurm  # measured on another machine
    if (args.require_gpu or args.require_torch) and not elsewhere:
        raise SpecError("--require-gpu / --require-torch choose the worker that takes a queued "
                        "run: add --queue or --slurm (a run measured here uses this machine)",
                        "require_gpu")
    if not elsewhere:  # measured here: the process server starts while we check the spec
        _start_server_early(args)
        import engine.orchestrate.execute  # noqa: F401  (numpy, scipy: 1.5 s, beside the server's start)
        marks.append(("engine imports", process_age_s()))
    dims, sweep = _parse_dims(args.dim)
    tags, note = normalize_tags(args.tag), check_note(args.note)
    raw = {
        "model": args.model, "dims": dims, "sweep": sweep, "dtype": args.dtype,
        "device": args.device, "variants": _grid_variants(args),
        "grid_limit": args.grid_limit, "shape_weights": _weights(args.weights),
        "backend": args.backend, "dynamic": args.dynamic, "fullgraph": args.fullgraph,
        "warmup_calls": args.warmup_calls, "min_samples": args.min_samples,
        "min_time_s": args.min_time, "max_time_s": args.max_time, "pipeline_k": args.pipeline_k,
        "timeout_s": args.timeout, "seed": args.seed, "warm_cache": not args.no_warm_cache,
        "processes": args.processes, "max_processes": args.max_processes,
        "target_halfwidth": args.target_halfwidth, "process_budget_s": args.process_budget,
        "concurrency": args.concurrency, "compile_slots": args.compile_slots,
        "startup": args.startup_strategies,
        "keep_trace": args.keep_trace,
        "step": args.step, "optimizer": args.optimizer, "optimizer_impl": args.optimizer_impl,
        "lr": args.lr, "autocast": args.autocast, "accuracy_steps": args.accuracy_steps,
        "accuracy_multiplier": args.accuracy_multiplier, "accuracy_floor": args.accuracy_floor,
        "require_gpu": args.require_gpu, "require_torch": args.require_torch,
    }
    # The local user typed this command, file and module references included.
    # --slurm: the device is the compute node's, not this host's.
    spec = normalise(raw, check_device=not args.slurm, check_factory=True,
                     allow_user_models=True)
    marks.append(("spec and device check", process_age_s()))
    from engine.measure.autotune_draw import few_draws_note

    if note_line := few_draws_note(spec):
        print(f"note: {note_line}", file=sys.stderr)
    from storage import open_database, queue

    db = open_database(args.db, lasting=True)
    marks.append(("database", process_age_s()))
    if args.option or len(spec["variants"]) > 2:
        from engine.analysis.grid_plan import plan
        from storage.history import process_seconds

        # the count and an estimate before anything starts (engine/analysis/grid_plan.py)
        print("grid: " + plan(spec, process_seconds(db, spec["model"], spec["device"])).text(),
              file=sys.stderr)
    if args.slurm:
        return _submit_to_slurm(db, spec, tags, note, args.json)
    run_id = queue.enqueue_run(db, spec, tags=tags, note=note)
    if args.queue:
        print(run_id if args.json else f"queued run {run_id}")
        return 0
    marks.append(("queued", process_age_s()))
    if line := _before_the_run(marks):  # where the time went before the run's own phases
        print(line, file=sys.stderr)
    status = execute_here(db, run_id, spec)
    if status.startswith("cancelled:"):
        return 128 + int(status.split(":")[1])
    if args.json:
        print(run_id)
        return 0
    from engine.analysis.show import format_run

    print(format_run(db, run_id))
    return 0 if status == "done" else 1


def _submit_to_slurm(db: Any, spec: dict[str, Any], tags: list[str], note: str,
                     as_json: bool) -> int:
    """``run --slurm``: store the run and hand it to Slurm (engine/slurm/submit.py). A bad
    setting or a missing Slurm: one line, nothing stored; a refused job: one line, the run
    stored as failed."""
    from engine.slurm.commands import SlurmError
    from engine.slurm.submit import submit_run
    from engine.spec import is_reference

    try:
        done = submit_run(db, spec, tags=tags, note=note,
                          allow_user_models=is_reference(spec["model"]))  # this user typed it
    except SlurmError as e:
        raise UsageError(str(e)) from None
    print(done.run_id if as_json else done.text())
    if not as_json:
        print(f"follow it: python -m engine show {done.run_id}", file=sys.stderr)
    return 0
