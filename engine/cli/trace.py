"""``python -m engine trace RUN VARIANT -o FILE``: write out the TORCH_TRACE log a run kept for
one compiled variant (spec ``keep_trace``, engine/measure/torch_trace.py), gzipped as stored, for
``gunzip`` then ``tlparse`` or an upstream report.

Exit codes: 0 written; 2 unknown run, a variant without a trace, a run that kept none, or a file
that cannot be written (one line on stderr, nothing written). The bytes are written as they are:
nothing is unpacked here. Where they go is handled as in a directory others can write
(``write_file``); ``-o -`` refuses a terminal (the bytes are whatever the row holds).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import tempfile
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
    from contract.text import one_line
    from storage import open_database
    from storage.artifacts import read_artifact

    db = open_database(args.db, create=False)
    meta, data = read_artifact(db, args.run_id, args.variant)  # LookupError: exit 2
    if args.output == "-":
        if sys.stdout.isatty():  # stored bytes, raw on a terminal: its escape sequences too
            raise ValueError("-o - writes gzip bytes: pipe them (-o - | gunzip | tlparse "
                             "/dev/stdin) or name a file")
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    out = Path(args.output)
    write_file(out, data, force=args.force)
    # the note is stored text: one printable line (no terminal escapes), as every CLI message
    note = f" ({one_line(meta['note'], 300)})" if meta.get("note") else ""
    print(f"wrote {out}: TORCH_TRACE of run {args.run_id} variant {args.variant}, "
          f"{len(data)} bytes gzip{note}; gunzip it, then tlparse the .log", file=sys.stderr)
    return 0


def write_file(out: Path, data: bytes, *, force: bool) -> None:
    """Write ``data`` to ``out`` whole or not at all, in a directory others may write to.

    The bytes go first to a fresh file beside ``out`` that ``mkstemp`` creates exclusively
    (``O_EXCL``, never through a link): a fixed name such as ``FILE.part`` would follow a link
    someone planted there and overwrite its target. Without ``force`` the file is then
    hard-linked to ``out``, which fails if anything (a link too) has appeared there since the
    check, so nothing is ever replaced by surprise; with ``force`` it is renamed over ``out``,
    which replaces a link at ``out`` itself, never the file it points to. ``ValueError`` (one
    line for the user) when it cannot be written."""
    if out.is_dir():
        raise ValueError(f"{out} is a directory: name the file to write (e.g. {out}/trace.log.gz)")
    if not force and (out.exists() or out.is_symlink()):
        raise ValueError(f"{out} exists; pass --force to replace it")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name[:64]}.", suffix=".part",
                                        dir=out.parent)
    except OSError as e:
        raise ValueError(f"cannot write {out}: {e.strerror or e}") from None
    tmp = Path(tmp_name)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes it 0600; a plain file's mode instead
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if force:
            os.replace(tmp, out)
            return
        try:
            os.link(tmp, out)
        except OSError as e:
            if e.errno == errno.EEXIST:
                raise ValueError(f"{out} exists; pass --force to replace it") from None
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            if out.exists() or out.is_symlink():  # no hard links here: check, then rename
                raise ValueError(f"{out} exists; pass --force to replace it") from None
            os.replace(tmp, out)
    except OSError as e:
        raise ValueError(f"cannot write {out}: {e.strerror or e}") from None
    finally:
        tmp.unlink(missing_ok=True)
