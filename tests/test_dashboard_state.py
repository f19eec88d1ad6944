"""Worker and GPU state read from the run list (never from torch.cuda in the dashboard)."""

from __future__ import annotations

import datetime as dt

import pandas as pd
from test_dashboard_data import ENVIRONMENT

from dashboard import data
from dashboard.widgets import parse_run_ids

NOW = dt.datetime(2025, 1, 2, 12, 0, tzinfo=dt.UTC)


def _runs(*rows) -> pd.DataFrame:
    base = {"run_id": 1, "status": "done", "device": "cuda", "gpu": None, "environment": {},
            "error": None, "created_at": NOW - dt.timedelta(minutes=5), "heartbeat_at": None}
    return pd.DataFrame([{**base, "run_id": i + 1, **r} for i, r in enumerate(rows)])


def test_worker_seems_down_only_when_runs_wait_without_heartbeats():
    assert not data.worker_state(_runs({}), NOW).seems_down
    waiting = data.worker_state(_runs({"status": "queued"}), NOW)
    assert waiting.queued == 1 and waiting.seems_down
    fresh = data.worker_state(_runs({"status": "queued"},
                                    {"status": "running", "heartbeat_at": NOW}), NOW)
    assert fresh.running == 1 and not fresh.seems_down
    just_queued = data.worker_state(_runs({"status": "queued", "created_at": NOW}), NOW)
    assert not just_queued.seems_down
    stale = data.worker_state(_runs({"status": "queued"}, {
        "status": "done", "heartbeat_at": pd.Timestamp(NOW - dt.timedelta(hours=1))}), NOW)
    assert stale.seems_down


def test_gpu_info_from_fingerprints():
    assert data.gpu_info(pd.DataFrame()).state == "unknown"
    yes = data.gpu_info(_runs({"environment": ENVIRONMENT}))
    assert (yes.state, yes.name) == ("yes", "NVIDIA H200")
    # a CPU run's fingerprint (gpu=None, gpu_count=0) says nothing about the host
    cpu_env = {"torch": "2.13.0", "gpu": None, "gpu_count": 0}
    assert data.gpu_info(_runs({"device": "cpu", "environment": cpu_env})).state == "unknown"
    older_gpu = _runs({"device": "cpu", "environment": cpu_env},
                      {"environment": {"gpu": "NVIDIA H200", "gpu_count": 1},
                       "created_at": NOW - dt.timedelta(days=1)})
    assert data.gpu_info(older_gpu).state == "yes"
    assert data.gpu_info(_runs({"environment": {"host_gpu_count": 0}})).state == "no"
    failed = _runs({"status": "failed", "error": "device 'cuda' was requested but no CUDA GPU "
                    "is visible here"})
    assert data.gpu_info(failed).state == "no"
    assert data.gpu_info(_runs({"gpu": "NVIDIA A100"})).name == "NVIDIA A100"


def test_parse_run_ids():
    assert parse_run_ids("3,7") == ([3, 7], [])
    assert parse_run_ids(["3", "#7, 3", "x"]) == ([3, 7], ["x"])
    assert parse_run_ids(None) == ([], [])
