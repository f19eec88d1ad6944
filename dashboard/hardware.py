"""The connected workers as the New run page and the sidebar show them (pure, no Streamlit).

Input: rows of ``storage.workers.live_workers`` (what each running worker registered: devices,
GPU model and memory, torch release, the models it can build) and the queue. Never past runs'
environments: an imported H200 run says nothing about the machine that would measure a run
queued now.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.text import one_line
from dashboard.catalogue import DEFAULT_DTYPES, ModelChoice, to_model_choice
from storage.workers import capabilities_of

# What a worker may register as a model name (engine/orchestrate/hardware.py catalogue_offer):
# catalogue names and plugin:NAME. Anything else in the row (a path, a module reference, markup)
# is not offered: the workers table is written by whoever can write the database.
_OFFERED_NAME = re.compile(r"(plugin:)?[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
_REGISTRY = re.compile(r"(timm|torchvision|hf):[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")


@dataclass(frozen=True)
class Offer:
    """The models the New run page offers. ``from_workers``: the connected workers said what
    they can build (else the dashboard host's catalogue, as before workers registered one);
    ``registries``: the prefixes (timm, torchvision, hf) some worker can build; ``host_lacks``:
    offered names the dashboard host cannot build (validated by form, then by the worker)."""

    models: list[ModelChoice]
    from_workers: bool = False
    registries: tuple[str, ...] = ()
    host_lacks: frozenset[str] = field(default_factory=frozenset)

    def note(self, workers: Sequence[Mapping[str, Any]]) -> str | None:
        """A caption for the page, or None."""
        if self.from_workers:
            regs = ", ".join(f"{p}:" for p in self.registries) or "none"
            return (f"Models the connected workers can build ({len(self.models)}; registries: "
                    f"{regs}), as they registered them.")
        if workers:
            return ("The connected workers did not say which models they can build (started "
                    "before they registered a catalogue): the list is this dashboard host's.")
        return None

    def offers_registry(self, name: str) -> bool:
        return bool(_REGISTRY.fullmatch(name)) and name.split(":", 1)[0] in self.registries

    def registry_choice(self, name: str) -> ModelChoice | None:
        """A registry model (``timm:NAME``, ``torchvision:NAME``, ``hf:ARCH``) that a worker
        can build, described from the registry's own dims (no library imported), or None."""
        if not self.offers_registry(name):
            return None
        from engine.spec_stored import stored_model_info

        return to_model_choice(stored_model_info(name, {}))


def _worker_model(entry: Any) -> ModelChoice | None:
    """One registered model as a ``ModelChoice``, or None when the entry is not one."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        return None
    dtypes = [t for t in entry.get("dtypes") or [] if t in DEFAULT_DTYPES]
    if not _OFFERED_NAME.fullmatch(entry["name"]) or not dtypes:
        return None  # not a name a worker registers, or nothing to run it in
    try:
        choice = to_model_choice({
            "name": entry["name"], "description": one_line(entry.get("description") or "", 300),
            "dims": [d for d in entry.get("dims") or [] if isinstance(d, Mapping)
                     and isinstance(d.get("name"), str)][:32],
            "dtypes": dtypes,
            "source": "plugin" if entry["name"].startswith("plugin:") else "catalogue"})
    except (TypeError, ValueError):
        return None
    return choice


def offered_models(workers: Sequence[Mapping[str, Any]], host: Sequence[ModelChoice]) -> Offer:
    """What the New run page offers: the union of what the connected workers registered (their
    catalogue, plugins and registries), or the dashboard host's catalogue when none did."""
    catalogues = [(w.get("info") or {}).get("catalogue") for w in workers]
    catalogues = [c for c in catalogues if isinstance(c, Mapping)]
    if not catalogues:
        return Offer(list(host))
    found: dict[str, ModelChoice] = {}
    for cat in catalogues:
        for entry in cat.get("models") or []:
            choice = _worker_model(entry)
            if choice is not None:
                found.setdefault(choice.name, choice)
    regs = tuple(sorted({p for c in catalogues for p, ok in dict(c.get("registries") or {})
                         .items() if ok is True and p in ("timm", "torchvision", "hf")}))
    known = {m.name for m in host}
    return Offer(list(found.values()), True, regs, frozenset(set(found) - known))

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
    running_ids: tuple[int, ...] = ()

    def text(self) -> str:
        """``2 running (#12, #13), 1 queued`` or ``queue empty``: the queue as it stands."""
        if not self.running and not self.queued:
            return "queue empty"
        ids = ", ".join(f"#{i}" for i in self.running_ids)
        return (f"{self.running} running" + (f" ({ids})" if ids else "")
                + f", {self.queued} queued")

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
    return QueueState(total, int(summary.get("running") or 0), tuple(workers), stranded,
                      tuple(int(i) for i in summary.get("running_ids") or ()))
