"""Typed results: one measuring process, one variant, one run, each with one JSON form.

Shaped as pyperf's ``Run``/``Benchmark`` (DESIGN §6): a frozen, validated record per measuring
process (``ProcessResult``), a variant as its processes plus its one-off figures
(``VariantResult``), a run as its variants (``RunResult``).  ``from_json`` is where anything read
from outside (a child's output file, a database row, a bundle) becomes one of these: a value that
does not fit its figure's kind (``contract.schema.fits``) is dropped, never passed on, so every
consumer reads numbers it can use.  ``to_json`` gives back the dict form storage and bundles keep.

A variant's figures are not listed here one by one: ``contract.schema.FIGURES`` names them (with
kind, storage column and table label), so a new figure is one line there, the code that measures
it and, where it is shown, the line that shows it.  A per-process figure is one field here.
Pure Python: no torch, numpy or SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from contract.fmt import finite
from contract.schema import FIGURES, STATS_KEYS, fits
from contract.text import one_line

#: A process's autotuned kernels: the cold compile's own draw, the cache's choice replayed, or
#: drawn anew in a warm process (engine/measure/autotune_draw.py).
DRAWS = ("drawn", "replayed", "redrawn")
SERIES = ("samples_ms", "eager_samples_ms", "pipelined_ms", "eager_pipelined_ms")
CHILDREN = ("graph_breaks", "recompiles", "sweep")
_RESULT_KINDS = {f.name: f.kind for f in FIGURES if f.where == "result"}
_STATS_KINDS = {f.name: f.kind for f in FIGURES if f.where == "stats"}
_STRUCTURE = frozenset({"variant", "status", "stats", "processes", *CHILDREN})
MAX_SERIES = 1_000_000


_number = finite  # contract.fmt: the one reading of a stored number


def _series(value: Any) -> tuple[float, ...]:
    """Positive finite times, or nothing: a series with anything else is not a measurement."""
    if not isinstance(value, (list, tuple)) or len(value) > MAX_SERIES:
        return ()
    out = tuple(_number(x) for x in value)
    return out if all(x is not None and x > 0 for x in out) else ()  # type: ignore[return-value]


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return MappingProxyType(dict(value)) if isinstance(value, dict) else None


def _probe(value: Any) -> Mapping[str, float] | None:
    """engine/measure/host_probe.py's figures: positive numbers by name, the rest left out."""
    if not isinstance(value, dict):
        return None
    return MappingProxyType({k: v for k, v in value.items() if isinstance(k, str)
                             and _number(v) is not None and v > 0})


def _settle(value: Any) -> Mapping[str, Any] | None:
    """engine/measure/host_settle.py's record: seconds waited, probes, still slow, reference."""
    if not isinstance(value, dict):
        return None
    waited, ref = _number(value.get("waited_s")), _number(value.get("reference_us"))
    probes = value.get("probes")
    return MappingProxyType({
        "waited_s": waited if waited is not None and waited >= 0 else None,
        "reference_us": ref if ref is not None and ref > 0 else None,
        "probes": probes if isinstance(probes, int) and not isinstance(probes, bool)
        and probes >= 0 else None,
        "slow": value.get("slow") if isinstance(value.get("slow"), bool) else None})


@dataclass(frozen=True)
class ProcessResult:
    """What one measuring process timed, and where and when it ran."""

    phase: str = "cold"
    block: int = 1
    samples_ms: tuple[float, ...] = ()
    eager_samples_ms: tuple[float, ...] = ()
    pipelined_ms: tuple[float, ...] = ()
    eager_pipelined_ms: tuple[float, ...] = ()
    pipeline_k: int | None = None
    pid: int | None = None
    host_other_busy_cores: float | None = None
    host_probe: Mapping[str, float] | None = None
    host_settle: Mapping[str, Any] | None = None
    host_probe_after: Mapping[str, float] | None = None
    # device ms per call with the host queued ahead, by timed function ("variant", "eager")
    device_ms: Mapping[str, float] | None = None
    core_probe_us: Mapping[str, float] | None = None  # per allowed CPU, where the core was chosen
    timing_cpus: tuple[int, ...] = ()
    threads: int | None = None
    first_call_s: float | None = None
    phases: tuple[Mapping[str, Any], ...] = ()
    compile_load: Mapping[str, Any] | None = None
    autotune_draw: str | None = None
    autotune_draw_note: str | None = None
    started_at: float | None = None
    spawned_at: float | None = None
    ended_at: float | None = None

    @classmethod
    def from_json(cls, raw: Any) -> ProcessResult:
        """One process as written by the child or stored; what does not fit is left out."""
        if not isinstance(raw, Mapping):
            return cls()
        return cls(
            phase=str(raw.get("phase") or "cold")[:32],
            block=int(b) if isinstance(b := raw.get("block"), int) and not isinstance(
                b, bool) and 0 < b <= 100_000 else 1,
            **{k: _series(raw.get(k)) for k in SERIES},
            pipeline_k=_int(raw.get("pipeline_k")),
            pid=_int(raw.get("pid")),
            host_other_busy_cores=_number(raw.get("host_other_busy_cores")),
            host_probe=_probe(raw.get("host_probe")),
            host_settle=_settle(raw.get("host_settle")),
            host_probe_after=_probe(raw.get("host_probe_after")),
            device_ms=_probe(raw.get("device_ms")),
            core_probe_us=_probe(raw.get("core_probe_us")),
            timing_cpus=tuple(c for c in raw.get("timing_cpus") or () if _int(c) is not None)
            if isinstance(raw.get("timing_cpus"), list) else (),
            threads=_int(raw.get("threads")),
            first_call_s=_number(raw.get("first_call_s")),
            phases=tuple(MappingProxyType(dict(p)) for p in raw.get("phases") or ()
                         if isinstance(p, dict)) if isinstance(raw.get("phases"), list) else (),
            compile_load=_mapping(raw.get("compile_load")),
            autotune_draw=d if (d := raw.get("autotune_draw")) in DRAWS else None,
            autotune_draw_note=one_line(n, 300) if isinstance(
                n := raw.get("autotune_draw_note"), str) else None,
            **{k: _number(raw.get(k)) for k in ("started_at", "spawned_at", "ended_at")})

    @classmethod
    def from_child(cls, child: Mapping[str, Any], first_call_s: Any) -> ProcessResult:
        """A measuring child's output: its one entry of ``processes`` and its own timeline."""
        base = dict((child.get("processes") or [{}])[0])
        base.update(first_call_s=first_call_s, phases=child.get("phases"),
                    compile_load=child.get("compile_load"),
                    autotune_draw=child.get("autotune_draw"),
                    autotune_draw_note=child.get("autotune_draw_note"),
                    started_at=child.get("process_started_at"),
                    spawned_at=child.get("process_spawned_at"),
                    ended_at=child.get("process_ended_at"))
        return cls.from_json(base)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = [dict(v) if isinstance(v, Mapping) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    @property
    def paired(self) -> bool:
        """Whether its per-call series are paired rounds (same length, whole blocks)."""
        n = len(self.samples_ms)
        return n > 0 and n == len(self.eager_samples_ms) and n % self.block == 0


def process_draws(processes: Any) -> list[str | None]:
    """Each stored process's ``autotune_draw`` in order (None where it holds none; [] for what
    is not a list of processes): the one reading every surface shares."""
    if not isinstance(processes, list):
        return []
    return [ProcessResult.from_json(p).autotune_draw for p in processes]


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class VariantResult:
    """One variant of a run: its processes, its figures (the contract's, by kind) and stats."""

    variant: str
    status: str
    processes: tuple[ProcessResult, ...] = ()
    figures: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    stats: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    children: Mapping[str, tuple[Any, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """What the result holds beyond the contract's figures (a process's errors, the scheduling,
    the environment the child saw): kept as given, for storage's ``extra``."""

    @classmethod
    def from_json(cls, raw: Any) -> VariantResult:
        """A VariantResult dict (the child's, the runner's, a row's, a bundle's); figures that
        do not fit their kind are dropped (they read as missing everywhere)."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"a variant result must be an object, got {type(raw).__name__}")
        stats = raw.get("stats") if isinstance(raw.get("stats"), Mapping) else {}
        return cls(
            variant=str(raw.get("variant") or "?")[:64],
            status=str(raw.get("status") or "failed")[:32],
            processes=tuple(ProcessResult.from_json(p) for p in raw.get("processes") or ()
                            if isinstance(p, Mapping)),
            figures=MappingProxyType({k: v for k, v in raw.items()
                                      if k in _RESULT_KINDS and k != "processes"
                                      and fits(_RESULT_KINDS[k], v)}),
            stats=MappingProxyType({k: stats.get(k) for k in STATS_KEYS
                                    if fits(_STATS_KINDS[k], stats.get(k))}),
            children=MappingProxyType({k: tuple(raw[k]) for k in CHILDREN
                                       if isinstance(raw.get(k), list)}),
            extra=MappingProxyType({k: v for k, v in raw.items() if isinstance(k, str)
                                    and k not in _RESULT_KINDS and k not in _STRUCTURE}))

    def figure(self, name: str) -> Any:
        """A figure by its contract name, from the result or its stats (None when absent)."""
        return self.figures.get(name, self.stats.get(name))

    def row(self, series: bool = False) -> dict[str, Any]:
        """The variant as one flat row keyed by the contract's figure names (result and stats
        figures side by side, None where absent), its processes and children: what the
        verdict, ``show`` and the dashboard's tables read.  The per-call series (at the top
        and inside each process) only with ``series``."""
        out: dict[str, Any] = {"variant": self.variant, "status": self.status}
        for f in FIGURES:
            if series or f.kind != "series":
                out[f.name] = self.figure(f.name)
        processes = [p.to_json() for p in self.processes]
        out["processes"] = [p if series else {k: v for k, v in p.items() if k not in SERIES}
                            for p in processes] or None
        out.update({k: list(self.children.get(k, ())) for k in CHILDREN})
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"variant": self.variant, "status": self.status,
                               **{k: v for k, v in self.figures.items()}}
        if self.processes:
            out["processes"] = [p.to_json() for p in self.processes]
        out.update({k: list(v) for k, v in self.children.items()})
        out.update(self.extra)
        out["stats"] = {k: self.stats.get(k) for k in STATS_KEYS}
        return out


@dataclass(frozen=True)
class RunResult:
    """A run: what was asked (its spec), where it ran (environment) and its variants."""

    run_id: int | None
    spec: Mapping[str, Any]
    environment: Mapping[str, Any]
    variants: tuple[VariantResult, ...]

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RunResult:
        rid = raw.get("run_id")
        return cls(run_id=rid if isinstance(rid, int) and not isinstance(rid, bool) else None,
                   spec=MappingProxyType(dict(raw.get("spec") or {})),
                   environment=MappingProxyType(dict(raw.get("environment") or {})),
                   variants=tuple(VariantResult.from_json(v) for v in raw.get("variants") or ()))

    def variant(self, name: str) -> VariantResult | None:
        return next((v for v in self.variants if v.variant == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "spec": dict(self.spec),
                "environment": dict(self.environment),
                "variants": [v.to_json() for v in self.variants]}
