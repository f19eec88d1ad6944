"""Where and how Slurm runs Compile Lab's jobs: settings from a TOML file and the environment.

Read in this order, later wins: defaults, the file named by ``COMPILELAB_SLURM_CONFIG`` (else
``~/.config/compilelab/slurm.toml`` when it exists), then ``COMPILELAB_SLURM_<KEY>`` variables
(``COMPILELAB_SLURM_PARTITION=gpu``). Every value is checked here, before anything is stored or
submitted: a bad one is one clear line naming the setting and where it came from. Values reach
``sbatch`` as separate arguments (never through a shell), and names are restricted to what
Slurm itself accepts, so a setting cannot smuggle in another option.
"""

from __future__ import annotations

import math
import os
import re
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

ENV_PREFIX = "COMPILELAB_SLURM_"
CONFIG_ENV = "COMPILELAB_SLURM_CONFIG"
REPO_ROOT = Path(__file__).resolve().parents[2]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")  # partition, account, QoS
_MEM = re.compile(r"[1-9][0-9]{0,8}[KMGT]?")  # Slurm's --mem: a number, an optional unit
_FEATURE = re.compile(r"[A-Za-z0-9_.\-&|!()\[\]*:,]{1,200}")  # a --constraint expression
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class SettingsError(ValueError):
    """A setting that cannot be used; its message is one line for the user."""


@dataclass(frozen=True)
class SlurmSettings:
    """The checked settings (docs/SLURM.md lists each with its default)."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    gpus_per_job: int = 1
    gpu_option: str = "gres"  # "gres": --gres=gpu:N; "gpus": --gpus=N
    cpus_per_task: int | None = None
    mem: str | None = None
    exclusive: bool = True  # a benchmark wants a quiet node
    requeue: bool = True  # a preempted job or one whose node failed starts again
    time_margin: float = 1.5
    min_time_min: int = 10
    max_time_min: int = 240
    python: str = sys.executable
    workdir: str = str(REPO_ROOT)
    log_dir: str = str(Path("~/.cache/compilelab/slurm").expanduser())
    job_db: str | None = None  # the database URL the nodes use (default: the submitter's)
    export: tuple[str, ...] = ()
    constraints: Mapping[str, str] = field(default_factory=dict)
    db_wait_s: float = 120.0

    def summary(self) -> str:
        """One line for the CLI and the dashboard (no database URL: it may hold a password)."""
        parts = [f"partition {self.partition or '(cluster default)'}"]
        if self.account:
            parts.append(f"account {self.account}")
        if self.qos:
            parts.append(f"QoS {self.qos}")
        parts.append("exclusive node" if self.exclusive else "shared node")
        parts.append(f"time limit at most {self.max_time_min} min")
        return ", ".join(parts)


def _name(value: Any) -> str | None:
    text = _string(value)
    if text is None:
        return None
    if not _NAME.fullmatch(text):
        raise SettingsError(f"{text!r} is not a Slurm name (letters, digits, '_', '.', '-')")
    return text


def _string(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SettingsError(f"expected text, got {type(value).__name__}")
    if any(ord(c) < 32 for c in value) or len(value) > 4096:
        raise SettingsError("control characters or over 4096 characters")
    return value


def _int(lo: int, hi: int, optional: bool = False) -> Callable[[Any], int | None]:
    def check(value: Any) -> int | None:
        if optional and (value is None or value == ""):
            return None
        try:
            number = int(str(value).strip()) if not isinstance(value, bool) else None
        except ValueError:
            number = None
        if number is None or not lo <= number <= hi:
            raise SettingsError(f"expected a whole number from {lo} to {hi}, got {value!r}")
        return number
    return check


def _float(lo: float, hi: float) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        try:
            number = float(str(value).strip()) if not isinstance(value, bool) else math.nan
        except ValueError:
            number = math.nan
        if not lo <= number <= hi:  # NaN fails too
            raise SettingsError(f"expected a number from {lo:g} to {hi:g}, got {value!r}")
        return number
    return check


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"expected true or false, got {value!r}")


def _choice(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise SettingsError(f"expected one of {', '.join(choices)}, got {value!r}")
        return str(value)
    return check


def _mem(value: Any) -> str | None:
    text = _string(value)
    if text is not None and not _MEM.fullmatch(text):
        raise SettingsError(f"expected Slurm's --mem form such as 64G or 16000, got {text!r}")
    return text


def _path(value: Any) -> str:
    text = _string(value)
    if text is None or not os.path.isabs(os.path.expanduser(text)):
        raise SettingsError(f"expected an absolute path, got {value!r}")
    return os.path.expanduser(text)


def _export(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise SettingsError("expected a list of environment variable names")
    names = tuple(str(i).strip() for i in items if str(i).strip())
    bad = [n for n in names if not _ENV_NAME.fullmatch(n)]
    if bad:
        raise SettingsError(f"not an environment variable name: {bad[0]!r}")
    return names


def _constraints(value: Any) -> dict[str, str]:
    """``{"NVIDIA H200": "h200"}`` (file) or ``NVIDIA H200=h200;NVIDIA H100=h100`` (env)."""
    if isinstance(value, str):
        pairs = [p.partition("=") for p in value.split(";") if p.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise SettingsError("expected GPU NAME=FEATURE pairs separated by ';'")
        value = {k.strip(): v.strip() for k, _, v in pairs}
    if not isinstance(value, Mapping):
        raise SettingsError("expected a table of GPU name = feature expression")
    out = {}
    for gpu, feature in value.items():
        if not isinstance(gpu, str) or not gpu or not isinstance(feature, str) \
                or not _FEATURE.fullmatch(feature):
            raise SettingsError(f"GPU {gpu!r}: {feature!r} is not a Slurm feature expression")
        out[gpu] = feature
    return out


CHECKS: dict[str, Callable[[Any], Any]] = {
    "partition": _name, "account": _name, "qos": _name,
    "gpus_per_job": _int(1, 64), "gpu_option": _choice("gres", "gpus"),
    "cpus_per_task": _int(1, 4096, optional=True), "mem": _mem,
    "exclusive": _bool, "requeue": _bool, "time_margin": _float(1.0, 20.0),
    "min_time_min": _int(1, 525600), "max_time_min": _int(1, 525600),
    "python": _path, "workdir": _path, "log_dir": _path, "job_db": _string,
    "export": _export, "constraints": _constraints, "db_wait_s": _float(0.0, 86400.0),
}


def config_path(environ: Mapping[str, str]) -> Path | None:
    """The TOML file to read: the one named by COMPILELAB_SLURM_CONFIG (which must exist), else
    the user's ``~/.config/compilelab/slurm.toml`` when there is one."""
    named = environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    home = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    default = Path(home) / "compilelab" / "slurm.toml"
    return default if default.is_file() else None


def _read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise SettingsError(f"Slurm settings file {path} does not exist ({CONFIG_ENV})") from None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SettingsError(f"Slurm settings file {path}: {e}") from None
    unknown = sorted(set(data) - set(CHECKS))
    if unknown:
        raise SettingsError(f"Slurm settings file {path}: unknown setting {unknown[0]!r} "
                            f"(known: {', '.join(CHECKS)})")
    return data


def load_settings(environ: Mapping[str, str] | None = None) -> SlurmSettings:
    """The settings in force, checked; SettingsError (one line) for the first bad value."""
    environ = os.environ if environ is None else environ
    raw: dict[str, tuple[Any, str]] = {}
    path = config_path(environ)
    if path is not None:
        raw.update({k: (v, f"file {path}") for k, v in _read_file(path).items()})
    for key in CHECKS:
        value = environ.get(ENV_PREFIX + key.upper())
        if value is not None and value != "":
            raw[key] = (value, f"environment {ENV_PREFIX}{key.upper()}")
    values: dict[str, Any] = {}
    for key, (value, source) in raw.items():
        try:
            values[key] = CHECKS[key](value)
        except SettingsError as e:
            raise SettingsError(f"Slurm setting {key} ({source}): {e}") from None
    settings = SlurmSettings(**{k: v for k, v in values.items()
                                if k in {f.name for f in fields(SlurmSettings)}})
    if settings.min_time_min > settings.max_time_min:  # the cap wins
        settings = replace(settings, min_time_min=settings.max_time_min)
    return settings
