"""``python -m engine export | import | rerun | baseline``: history without the dashboard.

* ``export RUN... -o FILE`` writes a bundle (storage/bundle.py); ``-o -`` writes to stdout.
* ``import FILE`` prints on stdout only run ids, one per line, in bundle order: the new ids, and
  for runs this database already holds (the same content fingerprint, storage/fingerprint.py)
  their ids here, with a line on stderr saying so.  So ``ids=$(python -m engine import b.json)``
  is the list of runs to gate, however often the job is retried.
* ``rerun N`` queues the spec of run N again (``--now``: measure it here, as ``run`` does).
* ``baseline pin RUN | pin --tag TAG [--like RUN] | unpin RUN|KEY | list``: pinned baselines
  (storage/models/baseline.py) that ``gate`` uses when it is given no ``--baseline``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_history_parsers(sub: Any, run_id_type: Any) -> list[argparse.ArgumentParser]:
    e = sub.add_parser("export", help="write finished runs to a bundle file")
    e.add_argument("run_ids", type=run_id_type, nargs="+", metavar="RUN")
    e.add_argument("-o", "--output", required=True, help="bundle file to write ('-': stdout)")

    i = sub.add_parser("import", help="import a bundle file; prints the run ids, one per line")
    i.add_argument("file", help="bundle file ('-': stdin)")

    r = sub.add_parser("rerun", help="queue the spec of a run again")
    r.add_argument("run_id", type=run_id_type)
    r.add_argument("--tag", action="append", default=[],
                   help="tags of the new run (default: none; --same-tags copies the old ones)")
    r.add_argument("--same-tags", action="store_true")
    r.add_argument("--note", default=None, help="default: 'rerun of run N'")
    r.add_argument("--json", action="store_true", help="print the new run id only")

    b = sub.add_parser("baseline", help="pin, list or unpin baselines of configs")
    bsub = b.add_subparsers(dest="baseline_cmd", required=True)
    pin = bsub.add_parser("pin", help="pin RUN, or --tag TAG (its latest run of each config)")
    pin.add_argument("run_id", type=run_id_type, nargs="?", default=None)
    pin.add_argument("--tag", default=None)
    pin.add_argument("--like", type=run_id_type, default=None,
                     help="with --tag: only for the config of this run (default: every config "
                          "without a pin of its own)")
    unpin = bsub.add_parser("unpin", help="remove the pin of RUN's config, or of a config key")
    unpin.add_argument("what", help="a run id, a config key, or '*' (the every-config tag pin)")
    bsub.add_parser("list", help="list pinned baselines")
    parsers = [e, i, r, pin, unpin]
    parsers.append(bsub.choices["list"])
    return parsers


def cmd_export(args: argparse.Namespace) -> int:
    from storage import export_bundle, open_database

    bundle = export_bundle(open_database(args.db, create=False), args.run_ids)
    text = json.dumps(bundle, allow_nan=False)
    if args.output == "-":
        sys.stdout.write(text + "\n")
    else:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as e:
            raise ValueError(f"cannot write {args.output}: {e.strerror or e}") from None
        print(f"exported {len(bundle['runs'])} run(s) to {args.output}", file=sys.stderr)
    _say_artifacts_left_out(args)
    return 0


def _say_artifacts_left_out(args: argparse.Namespace) -> None:
    """Bundles carry results, not the files a run kept (TORCH_TRACE logs): say which stay."""
    from storage import open_database
    from storage.artifacts import list_artifacts

    db = open_database(args.db, create=False)
    for run_id in args.run_ids:
        for a in list_artifacts(db, run_id):
            print(f"note: run {run_id} {a['variant']}: its {a['kind']} ({a['size']} bytes) is "
                  f"not in the bundle: python -m engine trace {run_id} {a['variant']} -o FILE",
                  file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> int:
    import engine.spec  # noqa: F401  (installs the validator the import checks specs with)
    from contract.files import NotARegularFile, read_regular
    from storage import import_bundle_result, open_database
    from storage.bundle import MAX_BUNDLE_BYTES, BundleError

    try:
        if args.file == "-":
            data = sys.stdin.buffer.read(MAX_BUNDLE_BYTES + 1)
        else:  # the parser refuses anything longer; a FIFO or a device is never read
            data = read_regular(args.file, MAX_BUNDLE_BYTES + 1)
    except NotARegularFile as e:
        raise ValueError(f"cannot read the bundle: {e}") from None
    except OSError as e:
        raise ValueError(f"cannot read {args.file}: {e.strerror or e}") from None
    try:
        result = import_bundle_result(open_database(args.db, lasting=True), data)
    except BundleError as e:  # validated whole before the one transaction: nothing was stored
        raise BundleError(f"{e}; nothing was imported (a bundle imports whole or not at "
                          "all)") from None
    for run_id in result.ids:
        print(run_id)
    if result.existing_ids:
        print(f"already in this database (not imported again): run(s) "
              f"{', '.join(map(str, result.existing_ids))}", file=sys.stderr)
    print(f"imported {len(result.new_ids)} new run(s)", file=sys.stderr)
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    from contract.text import check_note, normalize_tags
    from engine.spec import normalise
    from storage import enqueue_run, open_database
    from storage.records import load_run

    db = open_database(args.db, create=False)
    old = load_run(db, args.run_id)
    if old is None:
        raise LookupError(f"no run with id {args.run_id}")
    # The stored spec is data from the database: validated again as any spec is.  Queueing runs
    # nothing here; the worker that claims it checks what its operator allows.
    spec = normalise(old["spec"], check_device=False, check_factory=False,
                     allow_user_models=True)
    tags = normalize_tags([*args.tag, *(old["tags"] if args.same_tags else [])])
    note = check_note(args.note if args.note is not None else f"rerun of run {args.run_id}")
    run_id = enqueue_run(db, spec, tags=tags, note=note)
    print(run_id if args.json else f"queued run {run_id} (the spec of run {args.run_id})")
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    from storage import open_database
    from storage.records import load_run
    from storage.selection import list_baselines, pin_run, pin_tag, unpin

    db = open_database(args.db, create=args.baseline_cmd != "list")
    if args.baseline_cmd == "list":
        rows = list_baselines(db)
        from contract.config_key import config_label

        for b in rows:
            what = f"run {b['run_id']}" if b["run_id"] is not None else f"tag {b['tag']!r}"
            cfg = "every config" if b["config_key"] == "*" else config_label(b["config"])
            print(f"{b['config_key']}  {what:<22s} {cfg}")
        if not rows:
            print("no baselines pinned", file=sys.stderr)
        return 0
    if args.baseline_cmd == "pin":
        if (args.run_id is None) == (args.tag is None):
            raise ValueError("baseline pin takes a RUN or --tag TAG (one of them)")
        if args.run_id is not None:
            key = pin_run(db, args.run_id)
            print(f"run {args.run_id} is the baseline of config {key}")
            return 0
        spec = None
        if args.like is not None:
            like = load_run(db, args.like)
            if like is None:
                raise LookupError(f"no run with id {args.like}")
            spec = like["spec"]
        key = pin_tag(db, args.tag, spec)
        print(f"the latest run tagged {args.tag!r} is the baseline of "
              f"{'every config without a pin' if key == '*' else 'config ' + key}")
        return 0
    what = args.what
    if what.isdigit():
        from contract.config_key import config_key

        run = load_run(db, int(what))
        if run is None:
            raise LookupError(f"no run with id {what}")
        what = config_key(run["spec"])
    if not unpin(db, what):
        raise LookupError(f"no baseline pinned for {args.what}")
    print(f"unpinned {what}")
    return 0
