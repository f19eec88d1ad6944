"""Bundles: export/import round trip, and strict all-or-nothing rejection of bad input."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from storage.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    MAX_SERIES_LENGTH,
    READABLE_VERSIONS,
    BundleError,
    export_bundle,
    import_bundle,
)
from storage.db import open_database
from storage.queries import list_runs, load_runs
from storage.queue import claim_next_run, enqueue_run, finish_run
from storage.results import save_variant_result, set_note
from tests.test_storage_support import (
    ENVIRONMENT,
    failed_result,
    run_spec,
    variant_result,
)


@pytest.fixture
def target(tmp_path: Path):
    """A second, empty database to import into."""
    database = open_database(f"sqlite:///{tmp_path / 'target.db'}")
    yield database
    database.dispose()


def _finished_run(db, **spec_overrides: Any) -> int:
    run_id = enqueue_run(db, run_spec(**spec_overrides), tags=["baseline", "h200"], note="n")
    claim_next_run(db, "w")
    save_variant_result(db, run_id, variant_result("eager"))
    save_variant_result(db, run_id, variant_result("reduce-overhead", extra_key={"a": [1, 2]}))
    save_variant_result(db, run_id, failed_result("max-autotune"))
    finish_run(db, run_id, "done", environment=ENVIRONMENT)
    return run_id


def _two_runs_bundle(db) -> dict[str, Any]:
    first = _finished_run(db)
    second = _finished_run(db, model="bert", dims={"batch": 8, "seq": 128})
    return export_bundle(db, [first, second])


@pytest.fixture
def bundle(db) -> dict[str, Any]:
    return _two_runs_bundle(db)


@pytest.fixture(scope="module")
def sqlite_bundle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One exported bundle shared by the rejection tests (they only read it, as deep copies)."""
    db = open_database(f"sqlite:///{tmp_path_factory.mktemp('src') / 'source.db'}")
    try:
        return _two_runs_bundle(db)
    finally:
        db.dispose()


def _assert_same_runs(imported: dict, original: dict) -> None:
    """load_runs frames equal but for what an import changes (ids, queue bookkeeping)."""
    for name, frame in original.items():
        dropped = ["run_id"]
        if name == "runs":
            dropped += ["heartbeat_at", "progress_variant", "progress_phase", "progress_fraction"]
        pd.testing.assert_frame_equal(
            imported[name].drop(columns=dropped), frame.drop(columns=dropped), obj=name
        )


def test_export_is_json_and_roundtrips_through_another_database(db, target, bundle):
    assert bundle["format"] == BUNDLE_FORMAT and bundle["version"] == BUNDLE_VERSION
    text = json.dumps(bundle, allow_nan=False)  # strictly serialisable
    new_ids = import_bundle(target, text)
    assert len(new_ids) == 2
    source_ids = [run["source_id"] for run in bundle["runs"]]
    original, imported = load_runs(db, source_ids), load_runs(target, new_ids)
    _assert_same_runs(imported, original)
    # Timestamps and environment are the originals', not the import's.
    assert imported["runs"]["created_at"].tolist() == original["runs"]["created_at"].tolist()
    assert imported["runs"]["environment"].iloc[0] == ENVIRONMENT
    # The paired eager median of every sweep point travels with the bundle.
    sweep = bundle["runs"][0]["variants"][1]["sweep"]
    assert [point["eager_median_ms"] for point in sweep] == [0.064, 0.083]
    assert imported["sweep_points"]["eager_median_ms"].tolist() == [0.064, 0.083] * 2
    # And a re-export is the same bundle, up to ids and the export time.
    again = export_bundle(target, new_ids)
    for run in (*again["runs"], *bundle["runs"]):
        run.pop("source_id")
    assert again["runs"] == bundle["runs"]


def _as_version_1(bundle: dict[str, Any]) -> dict[str, Any]:
    """The bundle as Compile Lab wrote it before sweep points had eager_median_ms."""
    old = copy.deepcopy(bundle)
    old["version"] = 1
    for run in old["runs"]:
        for variant in run["variants"]:
            for point in variant.get("sweep") or []:
                del point["eager_median_ms"]
    return old


def test_version_1_bundles_still_import(target, bundle):
    assert BUNDLE_VERSION == 3 and READABLE_VERSIONS == (1, 2, 3)
    new_ids = import_bundle(target, json.dumps(_as_version_1(bundle)))
    frames = load_runs(target, new_ids)
    sweep = frames["sweep_points"]
    assert len(sweep) == 4 and sweep["eager_median_ms"].isna().all()
    assert sweep["median_ms"].tolist() == [0.097, 0.121] * 2
    # Re-exported, they are version 3 bundles whose sweep points say "no paired value".
    again = export_bundle(target, new_ids)
    assert again["version"] == 3
    assert again["runs"][0]["variants"][1]["sweep"][0]["eager_median_ms"] is None


SHIPPED_BUNDLE = Path(__file__).resolve().parent.parent / "data" / "h200_bundle.json"


@pytest.mark.skipif(not SHIPPED_BUNDLE.exists(), reason="data/h200_bundle.json not present")
def test_the_shipped_h200_bundle_imports(target):
    text = SHIPPED_BUNDLE.read_text()
    assert json.loads(text)["version"] == 2
    new_ids = import_bundle(target, text)
    frames = load_runs(target, new_ids)
    assert len(frames["runs"]) == len(new_ids) == 36
    # the bundle always keeps the seed MLP and the pointwise chain (issue "Speedups that hold
    # up"); later issues add runs to it rather than replace them
    assert list(frames["runs"].sort_values("run_id")["model"])[:4] == [
        "mlp", "pointwise_chain", "graph_breaks", "varying_seq"]
    assert {"bert_base", "gpt_decoder", "hf:gpt2", "timm:vit_base_patch16_224",
            "llama_decode"} <= set(frames["runs"]["model"])
    assert set(frames["runs"]["gpu"]) == {"NVIDIA H200"}
    # runs 31-36: training steps (issue 15), judged against float64, every variant passing
    runs = frames["runs"].sort_values("run_id")
    train_ids = list(runs["run_id"])[30:]
    assert list(runs["model"])[30:] == ["bert_base"] * 3 + ["gpt_decoder"] * 3
    v = frames["variants"]
    trained = v[v["run_id"].isin(train_ids) & (v["variant"] != "eager")]
    assert sorted(set(trained["variant"])) == ["default", "default+opt", "reduce-overhead"]
    assert (trained["reference_dtype"] == "float64").all() and trained["accuracy_ok"].all()
    sweep = frames["sweep_points"]
    # the compiled sweep carries the paired eager median at every value
    assert sweep.loc[sweep["variant"] == "default", "eager_median_ms"].notna().all()


def test_import_of_a_dict_and_of_bytes(target, bundle, tmp_path):
    assert len(import_bundle(target, copy.deepcopy(bundle))) == 2
    other = open_database(f"sqlite:///{tmp_path / 'other.db'}")
    assert len(import_bundle(other, json.dumps(bundle).encode())) == 2
    other.dispose()


def test_importing_the_same_bundle_twice_says_so_and_adds_nothing(target, bundle):
    from storage import import_bundle_result

    first = import_bundle_result(target, copy.deepcopy(bundle))
    assert len(first.new_ids) == 2 and first.existing_ids == []
    again = import_bundle_result(target, json.dumps(bundle).encode())
    assert again.new_ids == [] and again.existing_ids == first.new_ids
    assert len(list_runs(target)) == 2
    # one new run beside a known one: only the new one is added
    extra = copy.deepcopy(bundle)
    extra["runs"][0]["created_at"] = "2020-01-01T00:00:00.000001+00:00"
    third = import_bundle_result(target, extra)
    assert len(third.new_ids) == 1 and third.existing_ids == first.new_ids[1:]
    assert len(list_runs(target)) == 3


def test_unfinished_and_unknown_runs_are_not_exported(db):
    queued = enqueue_run(db, run_spec())
    with pytest.raises(BundleError, match="not finished"):
        export_bundle(db, [queued])
    with pytest.raises(BundleError, match="no runs"):
        export_bundle(db, [777])


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A mutation that sets bundle[path] (dotted; list indexes as numbers) to value."""

    def mutate(bundle: dict) -> None:
        *parents, last = path.split(".")
        node: Any = bundle
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _delete(path: str) -> Callable[[dict], None]:
    def mutate(bundle: dict) -> None:
        *parents, last = path.split(".")
        node: Any = bundle
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return mutate


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": value}
    return value


BAD_BUNDLES = [
    ("not an object", lambda b: b.clear() or b.update({"runs": "x"}), "missing keys"),
    ("wrong format", _set("format", "zip"), "bundle.format"),
    ("future version", _set("version", 99), "not supported"),
    ("boolean version", _set("version", True), "bundle.version"),
    ("unknown top key", _set("payload", 1), "unknown keys"),
    ("runs not a list", _set("runs", {}), "bundle.runs"),
    ("run unknown key", _set("runs.0.owner", "x"), "runs[0]: unknown keys"),
    ("run missing model", _delete("runs.0.model"), "missing keys"),
    ("running status", _set("runs.1.status", "running"), "only finished runs"),
    ("invented status", _set("runs.0.status", "exploded"), "status"),
    ("naive timestamp", _set("runs.0.created_at", "2026-01-01T00:00:00"), "time zone"),
    ("bad timestamp", _set("runs.0.finished_at", "yesterday"), "ISO 8601"),
    ("empty model", _set("runs.0.model", " "), "must not be empty"),
    ("model differs from spec", _set("runs.0.model", "other"), "differs from spec"),
    ("spec not an object", _set("runs.0.spec", [1]), "spec: expected an object"),
    ("nested dims", _set("runs.0.dims.batch", {"x": 1}), "dims.batch"),
    ("deep environment", _set("runs.0.environment", _deep(50)), "nested deeper"),
    ("NUL in note", _set("runs.0.note", "a\x00b"), "NUL"),
    ("huge note", _set("runs.0.note", "x" * 1_000_000), "limit"),
    ("tags not strings", _set("runs.0.tags", [1, 2]), "tags"),
    ("tag too long", _set("runs.0.tags", ["t" * 200]), "longer than"),
    ("variants not a list", _set("runs.0.variants", {"eager": {}}), "variants"),
    ("duplicate variant", _set("runs.0.variants.1.variant", "eager"), "appears twice"),
    ("variant unknown key", _set("runs.0.variants.0.secret", 1), "unknown keys"),
    ("variant bad status", _set("runs.0.variants.0.status", "meh"), "status"),
    ("bad failure kind", _set("runs.0.variants.2.failure_kind", "bad-luck"), "failure_kind"),
    ("string as number", _set("runs.0.variants.0.setup_s", "1.2"), "expected a number"),
    ("bool as number", _set("runs.0.variants.0.graph_count", True), "expected an integer"),
    ("float as integer", _set("runs.0.variants.0.graph_count", 1.5), "expected an integer"),
    ("huge integer", _set("runs.0.variants.0.peak_allocated_bytes", 10**30), "out of range"),
    ("number as bool", _set("runs.0.variants.0.correct", 1), "true/false"),
    ("series of strings", _set("runs.0.variants.0.samples_ms", ["1"]), "samples_ms[0]"),
    ("series not a list", _set("runs.0.variants.0.warmup_ms", 3.0), "list of numbers"),
    (
        "absurd series",
        _set("runs.0.variants.0.samples_ms", [0.0] * (MAX_SERIES_LENGTH + 1)),
        "limit",
    ),
    ("stats unknown key", _set("runs.0.variants.0.stats.p99_ms", 1.0), "unknown keys"),
    ("stats bad type", _set("runs.0.variants.0.stats.noisy", "no"), "stats.noisy"),
    ("graph break bad line", _set("runs.0.variants.1.graph_breaks.0.line", "42"), "line"),
    ("graph break unknown key", _set("runs.0.variants.1.graph_breaks.0.x", 1), "unknown keys"),
    ("sweep not a list", _set("runs.0.variants.1.sweep", 5), "sweep"),
    (
        "sweep eager median as text",
        _set("runs.0.variants.1.sweep.0.eager_median_ms", "0.06"),
        "sweep[0].eager_median_ms: expected a number",
    ),
    ("sweep unknown key", _set("runs.0.variants.1.sweep.0.eager_p90_ms", 0.1), "unknown keys"),
    ("version 0", _set("version", 0), "not supported"),
    ("phase not a number", _set("runs.0.variants.1.compile_phases_s.dynamo", "fast"), "dynamo"),
    ("extra not an object", _set("runs.0.variants.1.extra", [1]), "extra"),
]


@pytest.mark.parametrize(
    ("mutate", "message"), [pytest.param(m, msg, id=name) for name, m, msg in BAD_BUNDLES]
)
def test_malformed_bundles_are_rejected_and_write_nothing(target, sqlite_bundle, mutate, message):
    bad = copy.deepcopy(sqlite_bundle)
    mutate(bad)
    with pytest.raises(BundleError) as excinfo:
        import_bundle(target, bad)
    assert message in str(excinfo.value)
    assert list_runs(target).empty


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\xff\xfe not json", "not valid JSON"),
        ("{", "not valid JSON"),
        ('{"format": NaN}', "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("[]", "expected an object"),
    ],
    ids=["binary", "truncated", "nan", "deep", "array"],
)
def test_malformed_json_text_is_rejected(target, payload, message):
    with pytest.raises(BundleError, match=message):
        import_bundle(target, payload)


def test_one_bad_run_rejects_the_whole_bundle(target, sqlite_bundle):
    bad = copy.deepcopy(sqlite_bundle)
    bad["runs"].append(copy.deepcopy(bad["runs"][0]))
    bad["runs"][-1]["variants"][0]["stats"]["n"] = -0.5
    with pytest.raises(BundleError, match=r"runs\[2\]"):
        import_bundle(target, bad)
    assert list_runs(target).empty


def test_imported_runs_are_ordinary_runs(target, bundle):
    (new_id, _) = import_bundle(target, bundle)
    set_note(target, new_id, "imported from a colleague")
    runs = list_runs(target, tag="h200", gpu="NVIDIA H200")
    assert new_id in runs["run_id"].tolist()
    assert claim_next_run(target, "w") is None  # finished runs are never re-run
