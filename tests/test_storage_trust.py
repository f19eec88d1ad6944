"""storage/trust.py on each database (PostgreSQL where COMPILELAB_TEST_PG_URL is set): the few
values the verdict's cautions read, extracted by the database, give the same flags as the full
rows, and each flag is one of the verdict's own cautions."""

from __future__ import annotations

from test_dashboard_app import seed_done
from test_dashboard_data import mlp_results, spec
from test_runs_page_trust import CASES, _distrusted

from engine.analysis.verdict import decide, distrust
from storage.records import load_run
from storage.trust import trust_rows


def test_the_flags_are_the_verdicts_cautions_and_storage_reads_them_whole(db):
    """Every case through storage/trust.py's few values gives what the full rows give, and
    each flag is one of the verdict's cautions (each database)."""
    ids = {name: seed_done(db, spec("mlp"), _distrusted(mlp_results(), **kw))
           for name, kw, _ in CASES}
    slim = trust_rows(db, ids.values())
    for name, _, expected in CASES:
        full = load_run(db, ids[name])["variants"]
        assert distrust(full) == expected, name
        assert distrust(slim[ids[name]]) == expected, name
        said = " ".join(decide(full).warnings + [decide(full).provisional or ""]).lower()
        for word in expected:
            assert {"noisy": "noisy", "busy host": "cpu cores busy", "host speed moved":
                    "speed changed", "processes disagree": "disagree",
                    "provisional": "provisional",
                    "eager per variant": "eager differs between rows"}[word] in said, (name, word)
