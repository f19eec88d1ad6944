"""The connected workers as the New run page and the sidebar show them (pure, no Streamlit).

Input: rows of ``storage.workers.live_workers`` (what each running worker registered: devices,
GPU model and memory, torch release) and the queue. Never past runs' environments: an imported
H200 run says nothing about the machine that would measure a run queued now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage.workers import capabilities_of

DEVICE_ORDER = ("cpu", "cuda")
ANY_GPU = "(any GPU model)"
ANY_TORCH = "(any torch release)"
START_ONE = "`make worker` (or `make run`, which starts the dashboard and a worker)"


def device_choices(workers: Sequence[Mapping[str, Any]]) -> tuple[list[str], str]:
    """Devices to offer and the preselected one. With workers connected: the devices they have
    (cuda first choice when one has a GPU). With none: cpu and cuda (a run may be queued for a
    worker that is not up yet), cpu preselected."""
    if not workers:
        return list(DEVICE_ORDER), "cpu"
    have = {d for w in workers for d in (w.get("devices") or ())}
    devices = [d for d in DEVICE_ORDER if d in have] or ["cpu"]
    return devices, "cuda" if "cuda" in devices else devices[0]


def gpu_choices(workers: Sequence[Mapping[str, Any]]) -> list[str]:
    names = [w.get("gpu_name") for w in workers if w.get("gpu_name")]
    return [ANY_GPU, *dict.fromkeys(sorted(names))]


def torch_choices(workers: Sequence[Mapping[str, Any]]) -> list[str]:
    versions = [w.get("torch_version") for w in workers if w.get("torch_version")]
    return [ANY_TORCH, *dict.fromkeys(sorted(versions))]


def describe_worker(w: Mapping[str, Any]) -> str:
    """``gpu7 · NVIDIA H200 ×1, 140 GiB · torch 2.11.0+cu128 · busy with run #12``."""
    parts = [str(w.get("host") or w.get("worker_id"))]
    if w.get("gpu_name"):
        mem = w.get("gpu_memory_bytes")
        parts.append(f"{w['gpu_name']} ×{w.get('gpu_count') or 1}"
                     + (f", {mem / 2**30:.0f} GiB" if mem else ""))
    else:
        parts.append("CPU only")
    parts.append(f"torch {w.get('torch_version') or 'unknown'}")
    if w.get("current_run_id"):
        parts.append(f"busy with run #{w['current_run_id']}")
    if (w.get("info") or {}).get("probe_error"):
        parts.append(f"GPU probe failed: {w['info']['probe_error']}")
    return " · ".join(parts)


def servers(workers: Sequence[Mapping[str, Any]], device: str, require_gpu: str | None = None,
            require_torch: str | None = None) -> list[Mapping[str, Any]]:
    """The connected workers that would claim such a run (the claim query's rule)."""
    return [w for w in workers
            if capabilities_of(w).serves(device, require_gpu or None, require_torch or None)]


def needs_text(device: str, require_gpu: str | None, require_torch: str | None) -> str:
    return ", ".join(x for x in (device, require_gpu, require_torch and f"torch {require_torch}")
                     if x)


@dataclass(frozen=True)
class QueueState:
    """The queue and the workers, for the sidebar and the "nobody will run this" banners."""

    queued: int
    running: int
    workers: tuple[Mapping[str, Any], ...] = ()
    stranded: tuple[int, ...] = ()
    """Queued runs that no connected worker can serve (all of them when none is connected)."""

    @property
    def seems_down(self) -> bool:
        return self.queued > 0 and not self.workers


def queue_state(summary: Mapping[str, Any], workers: Sequence[Mapping[str, Any]]) -> QueueState:
    """``summary``: ``storage.workers.queue_summary``; which queued runs would wait forever."""
    queued = list(summary.get("queued") or [])
    stranded = tuple(int(q["run_id"]) for q in queued
                     if not servers(workers, q.get("device") or "cpu", q.get("require_gpu"),
                                    q.get("require_torch")))
    total = int(summary.get("queued_total") or len(queued))
    return QueueState(total, int(summary.get("running") or 0), tuple(workers), stranded)
