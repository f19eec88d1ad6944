"""The ``workers`` table: the engine workers connected to this database, and what they can run.

Each running ``python -m engine worker`` registers one row when it starts (its claimer id, host,
the devices torch sees there, the GPU's name and memory, the torch version) and refreshes
``heartbeat_at`` every few seconds; a clean stop deletes the row. The dashboard's New run page
reads these rows, never the environment of past (possibly imported) runs, to say which devices
can be asked for and whether any worker is running at all. A row whose heartbeat is old is a
worker that died without saying goodbye: readers treat it as gone, and the next worker that
registers sweeps such rows away.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from storage.models.base import Base, json_column_type


class Worker(Base):
    """One connected worker process (primary key: its claimer id, ``HOST:PID[:suffix]``)."""

    __tablename__ = "workers"

    worker_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    host: Mapped[str] = mapped_column(String(256))
    pid: Mapped[int | None] = mapped_column(Integer)
    started_at: Mapped[datetime]
    heartbeat_at: Mapped[datetime] = mapped_column(index=True)
    # What the worker can serve: device kinds ("cpu", "cuda"), the GPU model and torch release.
    devices: Mapped[list[str]] = mapped_column(json_column_type())
    gpu_name: Mapped[str | None] = mapped_column(String(256))
    gpu_count: Mapped[int] = mapped_column(Integer, default=0)
    gpu_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    torch_version: Mapped[str | None] = mapped_column(String(64))
    # The run it is measuring now (None when idle), for the dashboard's worker list.
    current_run_id: Mapped[int | None] = mapped_column(Integer)
    # Anything else the worker reports (CUDA and driver versions, CUDA_VISIBLE_DEVICES, python).
    info: Mapped[dict[str, Any] | None] = mapped_column(json_column_type())
