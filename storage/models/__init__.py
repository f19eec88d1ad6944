"""Typed SQLAlchemy entities, one per file; importing this package registers them all."""

from storage.models.artifact import Artifact
from storage.models.base import (
    FAILURE_KINDS,
    FINAL_RUN_STATUSES,
    RUN_STATUSES,
    VARIANT_STATUSES,
    Base,
    utcnow,
)
from storage.models.baseline import ALL_CONFIGS, Baseline
from storage.models.graph_break import GraphBreak
from storage.models.recompile import Recompile
from storage.models.run import Run
from storage.models.run_tag import RunTag
from storage.models.slurm_job import SlurmJob
from storage.models.sweep_point import SweepPoint
from storage.models.variant_result import VariantResult
from storage.models.worker import Worker

__all__ = [
    "ALL_CONFIGS",
    "Artifact",
    "FAILURE_KINDS",
    "FINAL_RUN_STATUSES",
    "RUN_STATUSES",
    "VARIANT_STATUSES",
    "Base",
    "Baseline",
    "GraphBreak",
    "Recompile",
    "Run",
    "RunTag",
    "SlurmJob",
    "SweepPoint",
    "VariantResult",
    "Worker",
    "utcnow",
]
