"""Developer command for the schema: ``python -m storage.migrate {upgrade,current,revision}``.

Opening a database already upgrades it; this exists to write new revisions after changing the
models (``python -m storage.migrate revision -m "add x"`` autogenerates against a scratch
database at head) and to inspect a database (``current``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from alembic import command
from alembic.config import Config

from storage.db import (
    alembic_config,
    create_db_engine,
    current_revision,
    head_revision,
    open_database,
    resolve_url,
)


def _with_ruff_hooks(cfg: Config) -> Config:
    """Lint-fix and format a new revision with the project's ruff, when it is installed."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff:
        cfg.set_section_option("post_write_hooks", "hooks", "ruff_fix, ruff_format")
        for hook, options in (("ruff_fix", "check --fix -q"), ("ruff_format", "format -q")):
            cfg.set_section_option("post_write_hooks", f"{hook}.type", "exec")
            cfg.set_section_option("post_write_hooks", f"{hook}.executable", ruff)
            cfg.set_section_option(
                "post_write_hooks", f"{hook}.options", f"{options} REVISION_SCRIPT_FILENAME"
            )
    return cfg


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m storage.migrate", description=__doc__)
    parser.add_argument("--url", help="database URL (default: $COMPILELAB_DB or compilelab.db)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("upgrade", help="upgrade the database to head")
    sub.add_parser("current", help="print the database's revision and the code's head")
    rev = sub.add_parser("revision", help="autogenerate a new revision from the models")
    rev.add_argument("-m", "--message", required=True)
    rev.add_argument("--rev-id", help="revision id (default: next 4-digit number)")
    args = parser.parse_args(argv)

    if args.cmd == "upgrade":
        db = open_database(args.url)
        print(f"{db.url} is at {head_revision()}")
    elif args.cmd == "current":
        engine = create_db_engine(resolve_url(args.url))
        print(f"database: {current_revision(engine)}  head: {head_revision()}")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'scratch.db'}"
            open_database(url).dispose()
            rev_id = args.rev_id or f"{int(head_revision()) + 1:04d}"
            command.revision(
                _with_ruff_hooks(alembic_config(url)),
                message=args.message,
                autogenerate=True,
                rev_id=rev_id,
            )


if __name__ == "__main__":
    main()
