"""The Slurm executor's pure parts: settings, the job's sbatch options and script, scontrol's
output parsed, and what each job state means for its run (engine/slurm/). No Slurm needed."""

from __future__ import annotations

import shlex

import pytest

from engine.slurm.commands import _error_line, parse_fields, parse_job
from engine.slurm.script import (
    JOB_OVERHEAD_S,
    feature_for_gpu,
    plan_job,
    spec_digest,
    time_limit_min,
)
from engine.slurm.settings import SettingsError, SlurmSettings, load_settings
from engine.slurm.states import ENDED, decide
from engine.spec import normalise

# Lines as Slurm 22.05's `scontrol show job -o` printed them on the one-node test cluster.
RUNNING = ("JobId=1 JobName=j.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
           "Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) "
           "Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:01 "
           "TimeLimit=00:01:00 Partition=debug AllocNode:Sid=localhost:2736 NodeList=vm "
           "BatchHost=vm NumNodes=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* Command=/tmp/my dir/j.sh "
           "WorkDir=/tmp/sl StdErr=/tmp/sl/1.out StdIn=/dev/null StdOut=/tmp/sl/1.out Power=")


def _job(state: str, exit_code: str = "0:0", reason: str = "None", restarts: int = 0):
    return parse_job(RUNNING.replace("JobState=RUNNING", f"JobState={state}")
                     .replace("ExitCode=0:0", f"ExitCode={exit_code}")
                     .replace("Reason=None", f"Reason={reason}")
                     .replace("Restarts=0", f"Restarts={restarts}"))


def test_settings_defaults_file_then_environment(tmp_path):
    assert load_settings({}).exclusive is True  # a benchmark wants a quiet node
    conf = tmp_path / "slurm.toml"
    conf.write_text('partition = "gpu"\naccount = "perf"\nexclusive = false\n'
                    'max_time_min = 90\n[constraints]\n"NVIDIA H200" = "h200&nvlink"\n')
    s = load_settings({"COMPILELAB_SLURM_CONFIG": str(conf), "COMPILELAB_SLURM_PARTITION": "big",
                       "COMPILELAB_SLURM_QOS": "high"})
    assert (s.partition, s.account, s.qos, s.exclusive, s.max_time_min) == \
        ("big", "perf", "high", False, 90)
    assert s.constraints == {"NVIDIA H200": "h200&nvlink"}
    assert "partition big" in s.summary() and "shared node" in s.summary()


@pytest.mark.parametrize(("env", "says"), [
    ({"COMPILELAB_SLURM_PARTITION": "gpu --account=x"}, "setting partition (environment"),
    ({"COMPILELAB_SLURM_MEM": "lots"}, "setting mem"),
    ({"COMPILELAB_SLURM_EXCLUSIVE": "maybe"}, "expected true or false"),
    ({"COMPILELAB_SLURM_MAX_TIME_MIN": "0"}, "setting max_time_min"),
    ({"COMPILELAB_SLURM_TIME_MARGIN": "nan"}, "setting time_margin"),
    ({"COMPILELAB_SLURM_PYTHON": "python3"}, "absolute path"),
    ({"COMPILELAB_SLURM_EXPORT": "OK,not-a-name"}, "not an environment variable name"),
    ({"COMPILELAB_SLURM_CONSTRAINTS": "NVIDIA H200"}, "NAME=FEATURE"),
    ({"COMPILELAB_SLURM_CONFIG": "/nonexistent/slurm.toml"}, "does not exist"),
])
def test_a_bad_setting_is_one_line_naming_it(env, says):
    with pytest.raises(SettingsError) as e:
        load_settings(env)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_an_unknown_key_in_the_file_is_refused(tmp_path):
    conf = tmp_path / "s.toml"
    conf.write_text('partiton = "gpu"\n')
    with pytest.raises(SettingsError, match="unknown setting 'partiton'"):
        load_settings({"COMPILELAB_SLURM_CONFIG": str(conf)})


def test_time_limit_is_the_estimate_with_margin_within_the_bounds():
    s = SlurmSettings(time_margin=2.0, min_time_min=5, max_time_min=60)
    assert time_limit_min(600 - JOB_OVERHEAD_S, s) == 20  # 600 s x 2 = 20 min
    assert time_limit_min(0, s) == 5  # a short run still gets the floor
    assert time_limit_min(10_000, s) == 60  # capped by the setting
    assert time_limit_min(10_000, SlurmSettings(min_time_min=1, max_time_min=1)) == 1


def test_gpu_constraint_from_the_table_else_named_after_the_gpu():
    s = SlurmSettings(constraints={"NVIDIA H200": "h200&ib"})
    assert feature_for_gpu("NVIDIA H200", s) == "h200&ib"
    assert feature_for_gpu("NVIDIA H100 80GB HBM3", s) == "h100_80gb_hbm3"
    with pytest.raises(SettingsError):
        feature_for_gpu("!!!", s)


def _plan(spec_overrides=None, **settings):
    spec = normalise({"model": "mlp", "dims": {"batch": 8}, **(spec_overrides or {})})
    s = SlurmSettings(workdir="/srv/compile lab", log_dir="/logs", python="/venv/bin/python",
                      **settings)
    return spec, plan_job(7, spec, s, minutes=30, allow_user_models=False, environ={})


def test_the_job_of_a_cpu_run():
    spec, job = _plan(partition="debug", account="perf")
    args = list(job.args)
    assert "--exclusive" in args and "--requeue" in args
    assert {"--partition=debug", "--account=perf", "--time=30", "--nodes=1",
            "--job-name=compilelab-run-7", "--output=/logs/compilelab-run-7-%j.out",
            "--chdir=/srv/compile lab", "--export=COMPILELAB_DB"} <= set(args)
    assert not any(a.startswith(("--gres", "--gpus", "--constraint", "--qos")) for a in args)
    command = job.script.splitlines()[-1]
    assert shlex.split(command) == [
        "exec", "/venv/bin/python", "-m", "engine", "worker", "--once", "--run-id", "7",
        "--spec-sha256", spec_digest(spec), "--db-wait", "120"]
    assert "cd '/srv/compile lab'" in job.script  # quoted: a path is not shell code


def test_the_job_of_a_cuda_run_that_requires_a_gpu_model():
    _, job = _plan({"device": "cuda", "require_gpu": "NVIDIA H200"}, exclusive=False,
                   gpu_option="gpus", gpus_per_job=2, mem="64G", cpus_per_task=8,
                   export=("HF_HOME",))
    args = list(job.args)
    assert {"--gpus=2", "--constraint=h200", "--mem=64G", "--cpus-per-task=8",
            "--export=COMPILELAB_DB,HF_HOME"} <= set(args)
    assert "--exclusive" not in args
    _, gres = _plan({"device": "cuda"})
    assert "--gres=gpu:1" in gres.args


def test_the_database_url_is_never_in_the_options_or_the_script():
    spec = normalise({"model": "mlp"})
    job = plan_job(1, spec, SlurmSettings(job_db="postgresql://u:secret@db/x"), minutes=5,
                   allow_user_models=True, environ={"COMPILELAB_DB": "postgresql://u:secret@db/x"})
    assert "secret" not in job.script and not any("secret" in a for a in job.args)
    assert job.script.rstrip().endswith("--allow-user-models")


def test_the_spec_digest_changes_with_the_spec():
    a = normalise({"model": "mlp", "dims": {"batch": 8}})
    assert spec_digest(a) == spec_digest(dict(reversed(list(a.items()))))  # key order: same
    assert spec_digest(a) != spec_digest({**a, "dims": {**a["dims"], "batch": 9}})


def test_scontrol_lines_are_parsed_with_spaces_in_values():
    f = parse_fields(RUNNING)
    assert f["Command"] == "/tmp/my dir/j.sh" and f["AllocNode:Sid"] == "localhost:2736"
    job = parse_job(RUNNING)
    assert (job.job_id, job.state, job.reason, job.node, job.partition, job.std_out) == \
        (1, "RUNNING", None, "vm", "debug", "/tmp/sl/1.out")
    killed = _job("FAILED", "0:9")
    assert (killed.exit_status, killed.signal) == (0, 9)
    assert _job("FAILED", "3:0").exit_status == 3 and _job("FAILED", "3:0").signal is None


def test_sbatch_errors_come_down_to_slurms_reason():
    text = ("sbatch: error: invalid partition specified: nosuch\n"
            "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
    assert _error_line(text) == "Invalid partition name specified"


@pytest.mark.parametrize(("state", "exit_code", "status", "words"), [
    ("TIMEOUT", "0:15", "failed", "time limit: Slurm stopped job 1 at its limit of 3 min"),
    ("NODE_FAIL", "0:0", "failed", "node failure: vm failed"),
    ("PREEMPTED", "0:15", "failed", "preempted"),
    ("FAILED", "0:9", "failed", "killed by signal 9 (SIGKILL)"),
    ("FAILED", "3:0", "failed", "could not reach the database"),
    ("FAILED", "1:0", "failed", "exit code 1"),
    ("COMPLETED", "0:0", "failed", "without finishing the run"),
    ("OUT_OF_MEMORY", "0:9", "failed", "out of memory"),
    ("CANCELLED", "0:15", "cancelled", "cancelled outside Compile Lab (scancel)"),
])
def test_an_ended_job_ends_its_run_with_the_reason(state, exit_code, status, words):
    for run_status in ("queued", "running"):
        action = decide(run_status, False, _job(state, exit_code), limit_min=3)
        assert (action.kind, action.status) == ("finish", status)
        assert words in action.error


def test_what_a_living_or_vanished_job_means():
    assert decide("queued", False, _job("PENDING", reason="Priority")).kind == "none"
    assert decide("running", False, _job("RUNNING")).kind == "none"
    assert decide("running", False, _job("PENDING", restarts=1)).kind == "requeue"
    assert decide("cancelled", True, _job("PENDING")).kind == "scancel"
    assert decide("cancelled", True, _job("RUNNING")).kind == "scancel"
    assert decide("done", False, _job("RUNNING")).kind == "none"  # it is exiting by itself
    assert decide("done", False, _job("COMPLETED")).kind == "none"
    assert decide("running", True, _job("CANCELLED")).error == "cancelled by the user"
    gone = decide("running", False, None, last_state="RUNNING")
    assert gone.status == "failed" and "gone from Slurm (last seen RUNNING)" in gone.error
    assert decide("failed", False, None).kind == "none"
    assert "GONE" in ENDED and "PENDING" not in ENDED
