"""Reading a bundle: ``parse_bundle`` (JSON text, bounded) and ``validate_bundle`` (its fields).

A bundle comes from someone else's machine, so it is hostile input: every field is checked
(types, known keys, allowed statuses, sizes) before anything is written. Hostile input gets one
``BundleError`` naming the field: text that is not valid Unicode (lone surrogates, NUL), numbers
that are not finite, negative latencies or durations, variant names other than plain identifiers
(they are shown in verdicts and chart labels), and more than the limits below (size, nesting
depth, runs, variants, samples). Each run's spec goes through the one validator
(``engine.spec.normalise``, stored=True) and the figures kept in ``extra`` are checked by kind
(storage/bundle_checks.py); one bad run refuses the whole bundle.

The limits live here, beside the checks that read them (tests lower them with ``monkeypatch``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contract.text import MAX_NOTE_CHARS, check_note, normalize_tags
from storage.bundle_checks import MAX_PARSE_BYTES, extra_figures, parse_cost, spec_problem
from storage.bundle_format import BUNDLE_FORMAT, READABLE_VERSIONS, BundleError
from storage.models import FAILURE_KINDS, FINAL_RUN_STATUSES, VARIANT_STATUSES
from storage.results import (
    CHILDREN,
    MAX_ERROR_CHARS,
    MAX_STDERR_CHARS,
    RESULT_FIELDS,
    STATS_FIELDS,
)

# Limits sized from the largest bundle the project ships (data/h200_bundle.json: 5.7 MiB, 36 runs,
# 120 k samples, 171 k free-form JSON values, longest series 1 960) with a margin of about 3x on
# bytes; they bound what a hostile bundle can make the server do (a 69 MB bundle of 2 000 runs
# took 12 s and 528 MiB under the old 512 MiB / 10 000-run limits). The upload limit of the
# dashboard (.streamlit/config.toml, scripts/run_all.py, the shared deployment's proxy) is the
# byte limit. Export fewer runs per bundle when a history is larger.
MAX_BUNDLE_BYTES = 16 * 1024 * 1024
MAX_RUNS = 500
MAX_VARIANTS_PER_RUN = 64
MAX_SERIES_LENGTH = 200_000  # samples of one series (a spec may ask for min_samples=100 000)
MAX_TOTAL_NUMBERS = 2_000_000  # samples in the whole bundle
MAX_CHILDREN = 10_000  # graph breaks / recompiles / sweep points of one variant
MAX_JSON_DEPTH = 32  # spec, environment, extra, compile phases, cudagraph skips
MAX_JSON_NODES = 2_000_000  # values inside those free-form objects, whole bundle
MAX_SHORT_TEXT = 512  # model, variant, dtype, device, dims keys, timer, ...
MAX_TEXT = 100_000  # any other string inside free-form JSON
MAX_DIMS = 64
# Timestamps the dashboard can draw (pandas' Timestamp ends in April 2262).
FIRST_YEAR, LAST_YEAR = 1970, 2261
# Stats figures that other figures are divided by: above zero when present.
POSITIVE_STATS = ("speedup", "speedup_ci_low", "speedup_ci_high", "pipelined_speedup",
                  "pipelined_ci_low", "pipelined_ci_high", "median_ms", "eager_median_ms",
                  "measured_median_ms", "paired_eager_median_ms", "pipelined_median_ms",
                  "eager_pipelined_median_ms")
# Variant names are shown in verdicts (Markdown) and chart labels: identifiers only.
# "@", "=" and "," for grid variants whose name encodes their config (engine/grid.py)
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+@=,-]{0,63}")

_TOP_KEYS = {"format", "version", "exported_at", "runs"}
_RUN_KEYS = {
    "source_id",
    "created_at",
    "started_at",
    "finished_at",
    "status",
    "model",
    "dims",
    "dtype",
    "device",
    "spec",
    "error",
    "note",
    "environment",
    "tags",
    "variants",
}
_RUN_REQUIRED = ("created_at", "status", "model", "spec", "variants")
_VARIANT_KEYS = {"variant", "status", "stats", "extra", *CHILDREN, *RESULT_FIELDS}
_TEXT_LIMITS = {"error": MAX_ERROR_CHARS, "stderr_tail": MAX_STDERR_CHARS}


@dataclass
class _Budget:
    """Running totals over the whole bundle, so many small parts cannot add up to a huge one."""

    numbers: int = 0
    json_nodes: int = 0


def _fail(path: str, message: str) -> BundleError:
    return BundleError(f"{path}: {message}")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _expect_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"expected an object, got {_type_name(value)}")
    return value


def _check_keys(
    value: Any, path: str, allowed: set[str], required: Iterable[str] = ()
) -> dict[str, Any]:
    _expect_object(value, path)
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        raise _fail(path, f"unknown keys {unknown[:5]}")
    absent = [key for key in required if key not in value]
    if absent:
        raise _fail(path, f"missing keys {absent}")
    return value


def _check_text(
    value: Any, path: str, limit: int, nullable: bool = True, empty: bool = True
) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, str):
        raise _fail(path, f"expected a string, got {_type_name(value)}")
    if len(value) > limit:
        raise _fail(path, f"string of {len(value)} characters; the limit is {limit}")
    if not empty and not value.strip():
        raise _fail(path, "must not be empty")
    if "\x00" in value:
        raise _fail(path, "string contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON "\ud800"): no database can store it
        raise _fail(path, "string is not valid Unicode (a lone surrogate)") from None


def _is_duration(name: str, kind: str) -> bool:
    """Latencies and durations (``*_ms``, ``*_s``, ``*_ms_per_call``, sample series): never
    negative. Other numbers (errors, counts, dim values) are checked for type only."""
    return kind == "series" or name.endswith(("_ms", "_s", "_ms_per_call"))


def _check_not_negative(value: Any, path: str) -> None:
    if value is not None and value < 0:
        raise _fail(path, f"{value} is negative; a latency or duration cannot be")


def _check_number(value: Any, path: str, kind: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        expected = "an integer" if kind == "int" else "a number"
        raise _fail(path, f"expected {expected}, got {_type_name(value)}")
    if kind == "int" and not isinstance(value, int):
        raise _fail(path, f"expected an integer, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(path, f"{value} is not a finite number")
    if abs(value) > 2**63 - 1:
        raise _fail(path, "number out of range")


def _check_json(value: Any, path: str, budget: _Budget, depth: int = 0) -> None:
    """Plain JSON values only, bounded in depth, node count and string length."""
    budget.json_nodes += 1
    if budget.json_nodes > MAX_JSON_NODES:
        raise _fail(path, f"the bundle holds more than {MAX_JSON_NODES} JSON values")
    if depth > MAX_JSON_DEPTH:
        raise _fail(path, f"nested deeper than {MAX_JSON_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        _check_number(value, path, "float")
    elif isinstance(value, str):
        _check_text(value, path, MAX_TEXT)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{path}[{i}]", budget, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _fail(path, f"object key {key!r} is not a string")
            _check_text(key, f"{path} key", MAX_SHORT_TEXT)
            _check_json(item, f"{path}.{key}", budget, depth + 1)
    else:
        raise _fail(path, f"{_type_name(value)} is not a JSON value")


def _check_field(value: Any, path: str, name: str, kind: str, budget: _Budget) -> None:
    if kind == "str":
        _check_text(value, path, _TEXT_LIMITS.get(name, MAX_SHORT_TEXT))
    elif kind in ("float", "int"):
        _check_number(value, path, kind)
        if _is_duration(name, kind):
            _check_not_negative(value, path)
    elif kind == "bool":
        if value is not None and not isinstance(value, bool):
            raise _fail(path, f"expected true/false, got {_type_name(value)}")
    elif kind == "series":
        if value is None:
            return
        if not isinstance(value, list):
            raise _fail(path, f"expected a list of numbers, got {_type_name(value)}")
        if len(value) > MAX_SERIES_LENGTH:
            raise _fail(path, f"{len(value)} values; the limit is {MAX_SERIES_LENGTH}")
        budget.numbers += len(value)
        if budget.numbers > MAX_TOTAL_NUMBERS:
            raise _fail(path, f"the bundle holds more than {MAX_TOTAL_NUMBERS} samples")
        for i, item in enumerate(value):
            _check_number(item, f"{path}[{i}]", "float")
            _check_not_negative(item, f"{path}[{i}]")
    elif kind == "json":
        _check_json(value, path, budget)
    else:
        raise AssertionError(kind)


def _check_time(value: Any, path: str, nullable: bool = True) -> None:
    if value is None and nullable:
        return
    _check_text(value, path, 64, nullable=False)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise _fail(path, f"{value!r} is not an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        raise _fail(path, f"{value!r} has no time zone offset")
    try:
        year = moment.astimezone(UTC).year  # 0001-01-01T00:00+14:00 is before year 1 in UTC
    except OverflowError:
        year = 0
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise _fail(path, f"{value!r} lies outside the years {FIRST_YEAR}-{LAST_YEAR} (in UTC) "
                    "that the dashboard can show")


def _check_stats_together(stats: dict[str, Any], path: str) -> None:
    """Figures valid one by one but not together: a ratio or a median of zero (every page
    divides by them), and a speedup outside its own interval."""
    for name in POSITIVE_STATS:
        value = stats.get(name)
        if value is not None and value <= 0:
            raise _fail(f"{path}.{name}", f"{value} is not above zero: a speedup or a median "
                        "time of zero (or less) is no measurement")
    for est, lo, hi in (("speedup", "speedup_ci_low", "speedup_ci_high"),
                        ("pipelined_speedup", "pipelined_ci_low", "pipelined_ci_high")):
        x, a, b = stats.get(est), stats.get(lo), stats.get(hi)
        if None not in (a, b) and a > b * (1 + 1e-9):
            raise _fail(f"{path}.{lo}", f"{a} is above {hi} ({b})")
        if None not in (x, a, b) and not a * (1 - 1e-9) <= x <= b * (1 + 1e-9):
            raise _fail(f"{path}.{est}", f"{x} lies outside its own interval [{a}, {b}]")


def _check_variant_head(result: dict[str, Any], path: str) -> None:
    _check_text(result["variant"], f"{path}.variant", 64, nullable=False, empty=False)
    if not VARIANT_NAME.fullmatch(result["variant"]):
        raise _fail(f"{path}.variant", f"{result['variant'][:64]!r} is not a variant name "
                    "(letters, digits and _ . : + - @ = , only)")
    if result["status"] not in VARIANT_STATUSES:
        raise _fail(f"{path}.status", f"{result['status']!r} is not one of {VARIANT_STATUSES}")
    failure_kind = result.get("failure_kind")
    if failure_kind is not None and failure_kind not in FAILURE_KINDS:
        raise _fail(f"{path}.failure_kind", f"{failure_kind!r} is not one of {FAILURE_KINDS}")


def _check_variant_extra(result: dict[str, Any], path: str, budget: _Budget) -> None:
    """``extra`` as JSON, and the contract's figures in it by their kind."""
    if result.get("extra") is not None:
        _expect_object(result["extra"], f"{path}.extra")
        _check_json(result["extra"], f"{path}.extra", budget)
    for sub, name, kind, value in extra_figures(result.get("extra")):
        if kind == "str":
            _check_text(value, f"{path}.extra.{sub}", MAX_TEXT)
        else:
            _check_field(value, f"{path}.extra.{sub}", name, kind, budget)


def _check_children(result: dict[str, Any], path: str, budget: _Budget) -> None:
    """Graph breaks, recompiles and sweep points: lists of bounded length, fields by kind."""
    for key, (_entity, fields) in CHILDREN.items():
        items = result.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise _fail(f"{path}.{key}", f"expected a list, got {_type_name(items)}")
        if len(items) > MAX_CHILDREN:
            raise _fail(f"{path}.{key}", f"{len(items)} entries; the limit is {MAX_CHILDREN}")
        for i, item in enumerate(items):
            item_path = f"{path}.{key}[{i}]"
            _check_keys(item, item_path, set(fields))
            for name, kind in fields.items():
                if kind == "str":  # reasons and file paths can be long
                    _check_text(item.get(name), f"{item_path}.{name}", MAX_TEXT)
                else:
                    _check_field(item.get(name), f"{item_path}.{name}", name, kind, budget)


def _check_variant(value: Any, path: str, budget: _Budget) -> None:
    result = _check_keys(value, path, _VARIANT_KEYS, ("variant", "status"))
    _check_variant_head(result, path)
    for name, kind in RESULT_FIELDS.items():
        _check_field(result.get(name), f"{path}.{name}", name, kind, budget)
    phases = _expect_object(result.get("compile_phases_s") or {}, f"{path}.compile_phases_s")
    for key, seconds in phases.items():
        _check_number(seconds, f"{path}.compile_phases_s.{key}", "float")
    skips = result.get("cudagraph_skips")
    if skips is not None and not isinstance(skips, list):
        raise _fail(f"{path}.cudagraph_skips", f"expected a list, got {_type_name(skips)}")
    _check_variant_extra(result, path, budget)
    stats = result.get("stats")
    if stats is not None:
        _check_keys(stats, f"{path}.stats", set(STATS_FIELDS))
        for name, kind in STATS_FIELDS.items():
            _check_field(stats.get(name), f"{path}.stats.{name}", name, kind, budget)
    # the stats block as read back: its columns and the figures kept in extra["stats"]
    extra = result.get("extra") if isinstance(result.get("extra"), dict) else {}
    kept = extra.get("stats") if isinstance(extra.get("stats"), dict) else {}
    _check_stats_together({**kept, **(stats or {})}, f"{path}.stats")
    _check_children(result, path, budget)


def _check_run_head(run: dict[str, Any], path: str, budget: _Budget) -> None:
    """Ids, times, status, model, dtype and device, and the spec as JSON."""
    source_id = run.get("source_id")
    if source_id is not None:
        _check_number(source_id, f"{path}.source_id", "int")
    _check_time(run["created_at"], f"{path}.created_at", nullable=False)
    _check_time(run.get("started_at"), f"{path}.started_at")
    _check_time(run.get("finished_at"), f"{path}.finished_at")
    if run["status"] not in FINAL_RUN_STATUSES:
        raise _fail(
            f"{path}.status",
            f"{run['status']!r} is not one of {FINAL_RUN_STATUSES} (only finished runs import)",
        )
    _check_text(run["model"], f"{path}.model", MAX_SHORT_TEXT, nullable=False, empty=False)
    for name in ("dtype", "device"):
        if name in run:
            _check_text(run[name], f"{path}.{name}", 32, nullable=False, empty=False)
    _expect_object(run["spec"], f"{path}.spec")
    _check_json(run["spec"], f"{path}.spec", budget)
    if run["spec"].get("model", run["model"]) != run["model"]:
        raise _fail(f"{path}.model", "differs from spec.model")


def _check_dims(dims: Any, path: str, budget: _Budget) -> None:
    if dims is None:
        return
    _expect_object(dims, f"{path}.dims")
    if len(dims) > MAX_DIMS:
        raise _fail(f"{path}.dims", f"{len(dims)} dims; the limit is {MAX_DIMS}")
    for key, dim in dims.items():
        _check_text(key, f"{path}.dims key", MAX_SHORT_TEXT, nullable=False, empty=False)
        if isinstance(dim, (dict, list)):
            raise _fail(f"{path}.dims.{key}", "expected a number or a string")
        _check_json(dim, f"{path}.dims.{key}", budget)


def _check_words(run: dict[str, Any], path: str, budget: _Budget) -> None:
    """Error, note, environment and tags: user text by the one rule (contract.text)."""
    _check_text(run.get("error"), f"{path}.error", MAX_ERROR_CHARS)
    _check_text(run.get("note"), f"{path}.note", MAX_NOTE_CHARS)
    if run.get("note") is not None:
        try:  # contract.text: the one rule for notes (CLI, dashboard and bundles alike)
            check_note(run["note"])
        except (TypeError, ValueError) as exc:
            raise _fail(f"{path}.note", str(exc)) from None
    environment = run.get("environment")
    if environment is not None:
        _expect_object(environment, f"{path}.environment")
        _check_json(environment, f"{path}.environment", budget)
    tags = run.get("tags")
    if tags is None:
        return
    if not isinstance(tags, list):
        raise _fail(f"{path}.tags", f"expected a list of strings, got {_type_name(tags)}")
    try:
        normalize_tags(tags)
    except (TypeError, ValueError) as exc:
        raise _fail(f"{path}.tags", str(exc)) from None
    for i, tag in enumerate(tags):
        _check_text(tag, f"{path}.tags[{i}]", MAX_SHORT_TEXT, nullable=False)


def _check_variants(variants: Any, path: str, budget: _Budget) -> None:
    if not isinstance(variants, list):
        raise _fail(f"{path}.variants", f"expected a list, got {_type_name(variants)}")
    if len(variants) > MAX_VARIANTS_PER_RUN:
        raise _fail(
            f"{path}.variants", f"{len(variants)} variants; the limit is {MAX_VARIANTS_PER_RUN}"
        )
    seen: set[str] = set()
    for i, variant in enumerate(variants):
        _check_variant(variant, f"{path}.variants[{i}]", budget)
        if variant["variant"] in seen:
            raise _fail(f"{path}.variants[{i}].variant", f"{variant['variant']!r} appears twice")
        seen.add(variant["variant"])


def _check_run(value: Any, path: str, budget: _Budget) -> None:
    run = _check_keys(value, path, _RUN_KEYS, _RUN_REQUIRED)
    _check_run_head(run, path, budget)
    _check_dims(run.get("dims"), path, budget)
    _check_words(run, path, budget)
    _check_variants(run["variants"], path, budget)
    problem = spec_problem(run)  # the one validator, engine/spec.py (storage/bundle_checks.py)
    if problem:
        raise _fail(f"{path}.{problem[0]}", problem[1])


def validate_bundle(bundle: Any) -> dict[str, Any]:
    """Check a parsed bundle (any of ``READABLE_VERSIONS``); returns it, or ``BundleError``."""
    top = _check_keys(bundle, "bundle", _TOP_KEYS, ("format", "version", "runs"))
    if top["format"] != BUNDLE_FORMAT:
        raise _fail("bundle.format", f"expected {BUNDLE_FORMAT!r}, got {top['format']!r}")
    version = top["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise _fail("bundle.version", f"expected an integer, got {_type_name(version)}")
    if version not in READABLE_VERSIONS:
        readable = ", ".join(str(v) for v in READABLE_VERSIONS)
        raise _fail(
            "bundle.version",
            f"version {version} is not supported (this Compile Lab reads versions {readable}); "
            "a newer version comes from a newer Compile Lab: upgrade this checkout",
        )
    _check_time(top.get("exported_at"), "bundle.exported_at")
    runs = top["runs"]
    if not isinstance(runs, list):
        raise _fail("bundle.runs", f"expected a list, got {_type_name(runs)}")
    if len(runs) > MAX_RUNS:
        raise _fail("bundle.runs", f"{len(runs)} runs; the limit is {MAX_RUNS} per bundle")
    budget = _Budget()
    for i, run in enumerate(runs):
        _check_run(run, f"bundle.runs[{i}]", budget)
    return top


def parse_bundle(data: str | bytes) -> dict[str, Any]:
    """Parse bundle JSON text (an uploaded file), bounded in size; ``BundleError`` if invalid."""
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError(f"bundle is {len(data)} bytes; the limit is {MAX_BUNDLE_BYTES}")
    if (cost := parse_cost(data)) > MAX_PARSE_BYTES:  # before json.loads builds it
        raise BundleError(f"bundle would take about {cost // 2**20} MiB to read (the limit is "
                          f"{MAX_PARSE_BYTES // 2**20} MiB): far more JSON values than its "
                          "runs can hold; export fewer runs per bundle")

    def reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        parsed = json.loads(data, parse_constant=reject_constant)
    except RecursionError:
        raise BundleError("bundle JSON is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"bundle is not valid JSON: {exc}") from None
    return validate_bundle(parsed)
