"""``python -m engine trace RUN VARIANT -o FILE``: write out the TORCH_TRACE log a run kept for
one compiled variant (spec ``keep_trace``, engine/torch_trace.py), gzipped as stored, for
``gunzip`` then ``tlparse`` or an upstream report.

Exit codes: 0 written; 2 unknown run, a variant without a trace, a run that kept none, or a file
that cannot be written (one line on stderr, nothing written). The bytes are written as they are:
nothing is unpacked here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


def add_trace_parser(sub: Any, run_id_type: Any) -> argparse.ArgumentParser:
    t = sub.add_parser("trace", help="write out a compiled variant's kept TORCH_TRACE log "
                       "(run with --keep-trace) for tlparse")
    t.add_argument("run_id", type=run_id_type)
    t.add_argument("variant", help="the compiled variant, as show names it (e.g. default)")
    t.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="where to write the gzipped log ('-' for stdout); an existing file is "
                        "only replaced with --force")
    t.add_argument("--force", action="store_true", help="replace FILE if it exists")
    return t


def cmd_trace(args: argparse.Namespace) -> int:
    from storage import open_database
    from storage.artifacts import read_artifact

    db = open_database(args.db, create=False)
    meta, data = read_artifact(db, args.run_id, args.variant)  # LookupError: exit 2
    if args.output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    out = Path(args.output)
    if out.exists() and not args.force:
        raise ValueError(f"{out} exists; pass --force to replace it")
    tmp = out.with_name(out.name + ".part")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"cannot write {out}: {e.strerror or e}") from None
    note = f" ({meta['note']})" if meta.get("note") else ""
    print(f"wrote {out}: TORCH_TRACE of run {args.run_id} variant {args.variant}, "
          f"{len(data)} bytes gzip{note}; gunzip it, then tlparse the .log", file=sys.stderr)
    return 0
