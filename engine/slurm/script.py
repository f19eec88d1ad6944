"""The batch job of one run: its ``sbatch`` options and its script, built from the run's spec and
the settings (pure functions: the tests read what would be submitted without a Slurm).

* Resources: one node, one task; ``--gres=gpu:N`` (or ``--gpus=N``) for a cuda run, CPUs and
  memory when set; ``--exclusive`` unless turned off (a benchmark wants a quiet node); the
  run's ``require_gpu`` as ``--constraint`` (the settings' table, else a feature named after
  the GPU: ``NVIDIA H200`` -> ``h200``).
* ``--time``: the run's estimate (engine/analysis/grid_plan.py, from this model's earlier runs where
  there are any) plus the job's own start-up, times the margin, within the settings' bounds.
* The database URL travels in the job's environment (``--export`` names it, the value is never
  on a command line or in the script: it may hold a password).
* The script ``exec``\\ s ``python -m engine worker --once --run-id N --spec-sha256 H``: the job
  claims exactly its run and refuses a spec that changed after submission.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any

from engine.slurm.settings import SettingsError, SlurmSettings

JOB_NAME = "compilelab-run-{run_id}"
# The job's own start before the run's first process: interpreter and torch imports, the
# hardware probe, the database. Added to the estimate so a short run gets a sane limit.
JOB_OVERHEAD_S = 120.0
DB_ENV = "COMPILELAB_DB"
PASSED_ENV = ("COMPILELAB_PLUGIN_DIR",)  # the operator's plugin folder, when set here


@dataclass(frozen=True)
class JobPlan:
    """What ``sbatch`` is given for one run."""

    args: tuple[str, ...]
    script: str
    time_limit_min: int
    log_path: str  # with %j: sbatch puts the job id there
    export: tuple[str, ...]


def spec_digest(spec: Any) -> str:
    """SHA-256 of the spec as stored (canonical JSON): the job refuses a run whose stored spec
    no longer matches what its submitter saw and allowed."""
    from storage.results import json_safe

    text = json.dumps(json_safe(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def feature_for_gpu(gpu: str, settings: SlurmSettings) -> str:
    """The ``--constraint`` for a run that requires GPU model ``gpu``: the settings' table, else
    the name without its vendor, lower case, other characters as ``_`` (``NVIDIA H100 80GB
    HBM3`` -> ``h100_80gb_hbm3``), the feature docs/SLURM.md tells operators to declare."""
    if gpu in settings.constraints:
        return settings.constraints[gpu]
    name = re.sub(r"^(nvidia|amd)\s+", "", gpu.strip(), flags=re.IGNORECASE).lower()
    feature = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    if not feature:
        raise SettingsError(f"GPU {gpu!r} has no Slurm feature: add it to the settings' "
                            "constraints table")
    return feature[:100]


def time_limit_min(estimate_s: float, settings: SlurmSettings) -> int:
    """Minutes for ``--time``: (estimate + the job's start-up) x margin, within the bounds."""
    minutes = math.ceil((max(estimate_s, 0.0) + JOB_OVERHEAD_S) * settings.time_margin / 60)
    return int(min(max(minutes, settings.min_time_min), settings.max_time_min))


def estimate_s(spec: dict[str, Any], history: dict[str, list[float]] | None) -> float:
    """The run's duration by engine/analysis/grid_plan.py, its upper end (processes one at a time)."""
    from engine.analysis.grid_plan import plan

    return plan(spec, history).seconds_high


def _resources(spec: dict[str, Any], settings: SlurmSettings) -> list[str]:
    args = ["--nodes=1", "--ntasks=1"]
    if settings.cpus_per_task:
        args.append(f"--cpus-per-task={settings.cpus_per_task}")
    if settings.mem:
        args.append(f"--mem={settings.mem}")
    if spec.get("device") == "cuda":
        args.append(f"--gres=gpu:{settings.gpus_per_job}" if settings.gpu_option == "gres"
                    else f"--gpus={settings.gpus_per_job}")
    if spec.get("require_gpu"):
        args.append(f"--constraint={feature_for_gpu(str(spec['require_gpu']), settings)}")
    if settings.exclusive:
        args.append("--exclusive")
    return args


def plan_job(run_id: int, spec: dict[str, Any], settings: SlurmSettings, *, minutes: int,
             allow_user_models: bool, environ: dict[str, str] | None = None) -> JobPlan:
    """The options and script for run ``run_id`` (its stored ``spec``)."""
    environ = os.environ if environ is None else environ
    log_path = os.path.join(settings.log_dir, f"{JOB_NAME.format(run_id=run_id)}-%j.out")
    export = (DB_ENV, *(n for n in PASSED_ENV if environ.get(n)), *settings.export)
    args = [f"--job-name={JOB_NAME.format(run_id=run_id)}", f"--time={minutes}",
            f"--output={log_path}", "--open-mode=append", f"--chdir={settings.workdir}",
            f"--export={','.join(dict.fromkeys(export))}",
            "--requeue" if settings.requeue else "--no-requeue"]
    for option, value in (("partition", settings.partition), ("account", settings.account),
                          ("qos", settings.qos)):
        if value:
            args.append(f"--{option}={value}")
    args += _resources(spec, settings)
    command = [settings.python, "-m", "engine", "worker", "--once", "--run-id", str(run_id),
               "--spec-sha256", spec_digest(spec), "--db-wait", f"{settings.db_wait_s:g}"]
    if allow_user_models:
        command.append("--allow-user-models")
    script = "\n".join([
        "#!/bin/bash",
        f"# Compile Lab run {run_id}: generated by engine/slurm/script.py (docs/SLURM.md).",
        f"# The database URL comes in the environment ({DB_ENV}), never in this file.",
        f'echo "compilelab: Slurm job ${{SLURM_JOB_ID:-?}} (start $((${{SLURM_RESTART_COUNT:-0}}'
        f' + 1))) on $(hostname) for run {run_id}"',
        f"cd {shlex.quote(settings.workdir)} || exit 4",
        "exec " + shlex.join(command),
        "",
    ])
    return JobPlan(tuple(args), script, minutes, log_path, tuple(dict.fromkeys(export)))
