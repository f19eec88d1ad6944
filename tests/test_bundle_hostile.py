"""An attacker's pass over bundle import: a file whose JSON would balloon in memory is refused
from its text, before ``json.loads`` builds it (the run-count check came only after the whole
tree was built: 47 MiB of ``[],`` held 1.1 GiB for 12 s)."""

from __future__ import annotations

import json

import pytest

from storage import bundle, bundle_validation
from storage.bundle_checks import _CONTAINER_BYTES as _CONTAINER
from storage.bundle_checks import MAX_PARSE_BYTES, parse_cost
from tests.review_support import BUNDLE


def _no_parse(*args, **kwargs):
    raise AssertionError("json.loads ran on a bundle that should have been refused unread")


@pytest.mark.parametrize("item", [b"[],", b"{},", b"[[]],"])
def test_a_bundle_that_would_balloon_is_refused_before_parsing(item, monkeypatch):
    head = b'{"format": "compilelab-bundle", "version": 2, "runs": ['
    data = head + item * (MAX_PARSE_BYTES // _CONTAINER // (item.count(b"[") + item.count(b"{"))) + b"[]]}"
    assert len(data) < bundle.MAX_BUNDLE_BYTES // 4  # well inside the size limit
    monkeypatch.setattr(bundle_validation.json, "loads", _no_parse)
    with pytest.raises(bundle.BundleError, match="MiB to read"):
        bundle.parse_bundle(data)
    with pytest.raises(bundle.BundleError, match="MiB to read"):
        bundle.parse_bundle(data.decode())


def test_a_genuine_bundle_costs_about_its_size():
    text = BUNDLE.read_bytes()
    assert parse_cost(text) < 4 * len(text)
    assert parse_cost(text) == parse_cost(text.decode())
    assert len(bundle.parse_bundle(text)["runs"]) == len(json.loads(text)["runs"])



def _bundle_of(runs: list[bytes]) -> bytes:
    """A bundle around runs already serialised (one ``json.dumps`` per distinct run)."""
    return (b'{"format": "compilelab-bundle", "version": 2, "runs": ['
            + b", ".join(runs) + b"]}")


def _shipped_runs() -> list[bytes]:
    return [json.dumps(run).encode() for run in json.loads(BUNDLE.read_bytes())["runs"]]


def test_the_old_attack_bundle_is_refused_unread(monkeypatch):
    """2 000 runs in 69 MB held 528 MiB for 12 s under the old limits (512 MiB, 10 000 runs):
    refused now from its length, before anything is parsed."""
    smallest = min(_shipped_runs(), key=len)
    data = _bundle_of([smallest] * 2000)
    assert len(data) > bundle.MAX_BUNDLE_BYTES
    monkeypatch.setattr(bundle_validation.json, "loads", _no_parse)
    with pytest.raises(bundle.BundleError, match="the limit is"):
        bundle.parse_bundle(data)


def test_more_runs_than_the_limit_are_refused_before_any_run_is_checked(monkeypatch):
    data = json.dumps({"format": "compilelab-bundle", "version": 2,
                       "runs": [{}] * (bundle.MAX_RUNS + 1)})
    monkeypatch.setattr(bundle_validation, "_check_run", _no_parse)
    with pytest.raises(bundle.BundleError, match=f"the limit is {bundle.MAX_RUNS}"):
        bundle.parse_bundle(data)


@pytest.mark.slow  # reads a full 16 MiB bundle under tracemalloc: ~10 s on 2 cores
def test_limits_fit_the_largest_shipped_bundle_with_a_margin():
    """The limits come from data/h200_bundle.json (issue 39): about 3x its bytes, 10x its runs;
    a bundle filled with its runs up to the byte limit passes, in bounded memory."""
    import tracemalloc

    shipped = _shipped_runs()
    size = len(BUNDLE.read_bytes())
    assert 2 * size < bundle.MAX_BUNDLE_BYTES < 4 * size
    assert 10 * len(shipped) < bundle.MAX_RUNS
    runs, total = [], 100
    for i in range(10 * len(shipped)):
        run = shipped[i % len(shipped)]
        if total + len(run) + 2 > bundle.MAX_BUNDLE_BYTES:
            break
        runs.append(run)
        total += len(run) + 2
    data = _bundle_of(runs)
    assert bundle.MAX_BUNDLE_BYTES - len(data) < max(map(len, shipped))  # filled to the limit
    tracemalloc.start()
    try:
        parsed = bundle.parse_bundle(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(parsed["runs"]) == len(runs) > 2 * len(shipped)
    assert peak < 8 * bundle.MAX_BUNDLE_BYTES, f"{peak / 2**20:.0f} MiB to read a full bundle"


def _run_with_processes() -> dict:
    run = next(r for r in json.loads(BUNDLE.read_bytes())["runs"]
               if any(len((v.get("extra") or {}).get("processes") or []) >= 2
                      for v in r["variants"] if v["variant"] != "eager"))
    return run


def test_hostile_device_times_in_a_bundle_are_refused_or_read_as_missing(db):
    """Device time (engine/measure/device_time.py) from outside: a stats figure that is not a
    number refuses the bundle; a process's device_ms that is not a time reads as missing."""
    from engine.analysis.show import process_lines
    from storage.records import load_run
    from tests.review_support import import_runs

    run = _run_with_processes()
    v = next(v for v in run["variants"] if len(v["extra"].get("processes") or []) >= 2)
    bad = json.loads(json.dumps(run))
    next(x for x in bad["variants"] if x["variant"] == v["variant"])["extra"].setdefault(
        "stats", {})["device_ms_per_call"] = "<b>1</b>"
    with pytest.raises(bundle.BundleError, match="device_ms_per_call"):
        import_runs(db, [bad])
    procs = v["extra"]["processes"]
    procs[0]["device_ms"] = {"variant": "9", "eager": -1.0, "<b>": 2.0}
    procs[1]["device_ms"] = {"variant": 1.25}
    for p in procs[2:]:
        p["device_ms"] = "x"
    [run_id] = import_runs(db, [run])
    rows = [{**x, **(x.get("stats") or {})} for x in load_run(db, run_id)["variants"]]
    lines = [ln for ln in process_lines(rows) if "device time in each" in ln]
    assert lines == ["    device time in each (host queued ahead): -, 1.2500"
                     + ", -" * (len(procs) - 2) + " ms"]
