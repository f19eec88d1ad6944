"""Worker and queue state from the workers the database says are connected (never from past
runs, never from torch.cuda in the dashboard); run-id parsing."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from dashboard import hardware
from dashboard.widgets import parse_run_ids

NOW = dt.datetime(2025, 1, 2, 12, 0, tzinfo=dt.UTC)


def _runs(*rows) -> pd.DataFrame:
    base = {"run_id": 1, "status": "done", "device": "cuda", "gpu": None, "environment": {},
            "error": None, "created_at": NOW - dt.timedelta(minutes=5), "heartbeat_at": None}
    return pd.DataFrame([{**base, "run_id": i + 1, **r} for i, r in enumerate(rows)])


H200 = {"worker_id": "gpu7:1", "host": "gpu7", "devices": ["cpu", "cuda"],
        "gpu_name": "NVIDIA H200", "gpu_count": 1, "gpu_memory_bytes": 150_000_000_000,
        "torch_version": "2.11.0+cu128"}
LAPTOP = {"worker_id": "laptop:2", "host": "laptop", "devices": ["cpu"], "gpu_name": None,
          "torch_version": "2.13.0"}


def _queued(*needs) -> dict:
    return {"running": 0, "queued_total": len(needs),
            "queued": [{"run_id": i + 1, "device": "cpu", "require_gpu": None,
                        "require_torch": None, **n} for i, n in enumerate(needs)]}


def test_queue_state_no_worker_and_stranded_runs():
    assert not hardware.queue_state(_queued(), []).seems_down
    down = hardware.queue_state(_queued({}), [])
    assert down.seems_down and down.stranded == (1,)
    cuda_waits = hardware.queue_state(_queued({}, {"device": "cuda"}), [LAPTOP])
    assert not cuda_waits.seems_down and cuda_waits.stranded == (2,)
    other_gpu = hardware.queue_state(_queued({"device": "cuda", "require_gpu": "NVIDIA B200"},
                                             {"device": "cuda", "require_torch": "2.11"}),
                                     [H200, LAPTOP])
    assert other_gpu.stranded == (1,)


def test_device_choices_come_from_connected_workers_only():
    assert hardware.device_choices([]) == (["cpu", "cuda"], "cpu")
    assert hardware.device_choices([LAPTOP]) == (["cpu"], "cpu")
    assert hardware.device_choices([LAPTOP, H200]) == (["cpu", "cuda"], "cuda")
    assert hardware.gpu_choices([LAPTOP, H200]) == [hardware.ANY_GPU, "NVIDIA H200"]
    assert hardware.torch_choices([LAPTOP, H200]) == [hardware.ANY_TORCH, "2.11.0+cu128",
                                                      "2.13.0"]
    assert [w["host"] for w in hardware.servers([LAPTOP, H200], "cuda")] == ["gpu7"]
    assert hardware.describe_worker({**H200, "current_run_id": 4}) == (
        "gpu7 · NVIDIA H200 ×1, 140 GiB · torch 2.11.0+cu128 · busy with run #4")


def test_parse_run_ids():
    assert parse_run_ids("3,7") == ([3, 7], [])
    assert parse_run_ids(["3", "#7, 3", "x"]) == ([3, 7], ["x"])
    assert parse_run_ids(None) == ([], [])
