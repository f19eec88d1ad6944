"""Slurm's client commands as subprocesses: ``sbatch``, ``scontrol show job``, ``scancel``.

Plain commands rather than a library (docs/SLURM.md says why): every Slurm site has them, their
output is stable across releases, and they need nothing on the submitting host but Debian's
``slurm-client``. Each call has a timeout; every failure becomes one line (``SlurmError``):
a missing tool or an unreachable controller is ``SlurmUnavailable``, a job ``sbatch`` would not
take is ``SubmissionRefused`` with Slurm's own reason.

``scontrol show job -o`` is parsed as ``Key=Value`` pairs (one line per job); ``--json``
output changed shape between releases (22.05's ``squeue --json`` ignores ``--jobs``), the
one-line form did not.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 30.0
_KEY = re.compile(r"(?:^|\s)([A-Za-z][\w:/]*)=")


class SlurmError(RuntimeError):
    """A Slurm command failed; the message is one line for the user."""


class SlurmUnavailable(SlurmError):
    """No Slurm to talk to: a tool is missing, or the controller does not answer."""


class SubmissionRefused(SlurmError):
    """``sbatch`` answered and would not take the job (unknown partition, bad account, ...)."""


@dataclass(frozen=True)
class JobInfo:
    """What ``scontrol show job`` says about one job."""

    job_id: int
    state: str  # PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, NODE_FAIL, PREEMPTED, ...
    reason: str | None  # why it waits (Priority, Resources, ...); None when Slurm says None
    node: str | None
    partition: str | None
    exit_code: str | None  # "STATUS:SIGNAL" as Slurm writes it
    restarts: int
    std_out: str | None

    @property
    def exit_status(self) -> int | None:
        status, _, _ = (self.exit_code or "").partition(":")
        return int(status) if status.isdigit() else None

    @property
    def signal(self) -> int | None:
        _, _, sig = (self.exit_code or "").partition(":")
        return int(sig) if sig.isdigit() and int(sig) > 0 else None


def parse_fields(line: str) -> dict[str, str]:
    """``Key=Value Key2=Value two`` -> dict; a value runs to the next `` Key=``."""
    marks = list(_KEY.finditer(line))
    out = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(line)
        out[m.group(1)] = line[m.end():end].strip()
    return out


def _blank(value: str | None) -> str | None:
    return None if value in (None, "", "None", "(null)", "N/A") else value


def parse_job(line: str) -> JobInfo:
    """One line of ``scontrol show job -o``."""
    f = parse_fields(line)
    try:
        job_id = int(f["JobId"])
    except (KeyError, ValueError):
        raise SlurmError(f"scontrol printed no job id: {line[:200]!r}") from None
    restarts = f.get("Restarts", "0")
    return JobInfo(job_id=job_id, state=(f.get("JobState") or "UNKNOWN").split()[0],
                   reason=_blank(f.get("Reason")), node=_blank(f.get("NodeList")),
                   partition=_blank(f.get("Partition")),
                   exit_code=_blank(f.get("ExitCode")),
                   restarts=int(restarts) if restarts.isdigit() else 0,
                   std_out=_blank(f.get("StdOut")))


def _error_line(text: str) -> str:
    """Slurm's most telling line: the last ``error:`` line without its prefixes."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error:" in ln] or lines or ["no message"]
    line = errors[-1]
    line = re.sub(r"^(sbatch|scontrol|scancel|slurm_load_jobs)(: error)?:\s*", "", line)
    line = re.sub(r"^(error:\s*)?(Batch job submission failed:\s*)", "", line)
    return line[:300]


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class Slurm:
    """The client commands of one Slurm installation (``bin_dir``: where they are, default the
    PATH). ``runner`` is ``subprocess.run`` (tests give a fake)."""

    def __init__(self, bin_dir: str | None = None, timeout_s: float = TIMEOUT_S,
                 runner: Callable[..., Any] = subprocess.run) -> None:
        self.bin_dir = bin_dir
        self.timeout_s = timeout_s
        self.runner = runner

    def tool(self, name: str) -> str:
        """The path of ``name``; SlurmUnavailable (one line) when it is not there."""
        found = shutil.which(name, path=self.bin_dir)
        if found:
            return found
        others = [t for t in ("sbatch", "scontrol", "scancel", "squeue")
                  if t != name and shutil.which(t, path=self.bin_dir)]
        if not others:
            raise SlurmUnavailable(
                f"Slurm is not installed here: no {name} on PATH (a cluster's login node has "
                "Slurm's client commands; Debian's package is slurm-client)")
        raise SlurmUnavailable(f"{name} is missing from PATH (found {', '.join(others)}): "
                               "install Slurm's client commands completely (slurm-client)")

    def check(self) -> None:
        """Every command Compile Lab uses is there."""
        for name in ("sbatch", "scontrol", "scancel"):
            self.tool(name)

    def _run(self, argv: list[str], *, input_text: str | None = None,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        tool = self.tool(argv[0])
        try:
            return self.runner([tool, *argv[1:]], input=input_text, capture_output=True,
                               text=True, timeout=self.timeout_s, env=env, check=False)
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(f"{argv[0]} did not answer within {self.timeout_s:g} s "
                                   "(is the Slurm controller up?)") from None
        except OSError as e:
            raise SlurmUnavailable(f"cannot run {argv[0]}: {e.strerror or e}") from None

    def submit(self, args: list[str] | tuple[str, ...], script: str,
               env: Mapping[str, str]) -> int:
        """``sbatch --parsable ARGS`` with the script on stdin; the job id."""
        done = self._run(["sbatch", "--parsable", *args], input_text=script, env=env)
        if done.returncode != 0:
            line = _error_line(done.stderr or done.stdout or "")
            if re.search(r"unable to contact|connect failure|connection refused|timed? ?out",
                         line, re.IGNORECASE):
                raise SlurmUnavailable(f"sbatch cannot reach the Slurm controller: {line}")
            raise SubmissionRefused(line)
        first = (done.stdout or "").strip().split(";")[0]
        if not first.isdigit():
            raise SlurmError(f"sbatch printed no job id: {(done.stdout or '')[:200]!r}")
        return int(first)

    def job(self, job_id: int) -> JobInfo | None:
        """The job as the controller knows it; None when it knows it no more (ended longer
        ago than its MinJobAge)."""
        done = self._run(["scontrol", "show", "job", "-o", str(int(job_id))])
        if done.returncode != 0:
            line = _error_line(done.stderr or done.stdout or "")
            if "invalid job id" in line.lower():
                return None
            raise SlurmUnavailable(f"scontrol cannot read job {job_id}: {line}")
        lines = [ln for ln in (done.stdout or "").splitlines() if ln.strip()]
        if not lines:
            return None
        return parse_job(lines[0])

    def cancel(self, job_id: int) -> None:
        """``scancel JOB``: the job's processes get SIGTERM, then SIGKILL after KillWait."""
        done = self._run(["scancel", str(int(job_id))])
        if done.returncode != 0:
            line = _error_line(done.stderr or done.stdout or "")
            if "invalid job id" in line.lower() or "already completing" in line.lower():
                return  # nothing left to cancel
            raise SlurmError(f"scancel {job_id}: {line}")
