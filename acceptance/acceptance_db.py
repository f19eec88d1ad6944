"""Shared by the acceptance scripts: the finished runs of one tag, and merging the databases of
several 10-minute commands into one before the table and the bundle are made."""

from __future__ import annotations


def finished(db: object, tag: str) -> list[int]:
    """Ids of the runs tagged ``tag`` that are over (done, failed or cancelled)."""
    from storage import queries

    runs = queries.list_runs(db, tag=tag)
    return [int(r) for r, st in zip(runs["run_id"], runs["status"], strict=True)
            if st in ("done", "failed", "cancelled")]


def merge(target: object, sources: list[str], tag: str) -> None:
    """Copy every finished run tagged ``tag`` of the databases ``sources`` into ``target``
    (through a bundle: a run already there is recognised and not duplicated)."""
    import engine.spec  # noqa: F401  (installs the validator bundle imports check specs with)
    from storage import export_bundle, import_bundle, open_database

    for url in sources:
        src = open_database(url, create=False)
        ids = finished(src, tag)
        if ids:
            new = import_bundle(target, export_bundle(src, ids))
            print(f"merged {len(new)} run(s) from {url}")


def engine_run(engine_args: list[str], label: str) -> int:
    """``python -m engine run ENGINE_ARGS --json`` from the repository root, as a user would run
    it; returns the run id. Exit code 1 (a variant failed) is a result; any other stops here."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "engine", "run", *engine_args, "--json"],
                         cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.stderr.write(out.stderr[-4000:])
        raise SystemExit(f"{label}: engine run exited {out.returncode}")
    run_id = int(out.stdout.strip().splitlines()[-1])
    print(f"== {label}: run {run_id} in {time.monotonic() - t0:.0f} s", flush=True)
    return run_id


def write_bundle(db: object, tag: str, path: str) -> None:
    """The finished runs tagged ``tag`` as one bundle file (what ships under data/)."""
    import json
    from pathlib import Path

    from storage import export_bundle

    ids = finished(db, tag)
    Path(path).write_text(json.dumps(export_bundle(db, ids)))
    print(f"wrote {len(ids)} run(s) to {path}")
