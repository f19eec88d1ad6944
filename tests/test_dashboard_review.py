"""The Review page and the run page's baseline section through AppTest, on a temporary SQLite
database holding fabricated runs (a regression appearing at a known run) imported through
storage.bundle."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_support import import_runs, make_run, week_of_runs
from streamlit.testing.v1 import AppTest

from storage.selection import list_baselines, pin_run

APP = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
TIMEOUT = 60


@pytest.fixture
def db(app_db):
    return app_db  # tests/conftest.py


def app(page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()  # st.navigation registers the pages on the first run
    at.switch_page(f"views/{page}.py")
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def no_exceptions(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


# --------------------------------------------------------------------------- review page


def test_review_page_headline_trend_and_changes(db):
    ids = import_runs(db, week_of_runs())
    at = app("review", tag="nightly")
    no_exceptions(at)
    assert not at.error
    headline, changes = (df.value for df in at.dataframe)
    assert list(headline["mode"]) == ["default"]
    assert headline.iloc[0]["pass rate"] == "100% → 100%"
    top = changes.iloc[0]
    assert (top["verdict"], top["figure"], top["runs"]) == ("regressed", "speedup",
                                                            f"#{ids[1]} → #{ids[2]}")
    assert top["compare"].endswith(f"/compare?runs={ids[1]}%2C{ids[2]}")
    assert top["commit"] == "bbbb2222" and top["torch"] == "2.12.0+cu130"
    assert len(at.get("plotly_chart")) == 1
    assert at.query_params["tag"] == "nightly"
    assert any(b.label.startswith("Export the review") for b in at.get("download_button"))


def test_review_page_trends_per_config_can_be_picked(db):
    import_runs(db, week_of_runs() + [make_run("2026-11-03", ["nightly"], model="mlp_b")])
    at = app("review", tag="nightly")
    no_exceptions(at)
    assert len(at.get("plotly_chart")) == 2
    pick = next(m for m in at.multiselect if m.label == "Configs to draw")
    pick.set_value(pick.value[:1]).run()
    no_exceptions(at)
    assert len(at.get("plotly_chart")) == 1


def test_review_page_suite_param_and_window(db):
    import_runs(db, week_of_runs(tag="suite:ci-small"))
    at = app("review", suite="ci-small", since="2026-11-05")
    no_exceptions(at)
    assert "1 finished run(s) of 1 config(s)" in texts(at.caption)
    assert at.query_params["suite"] == "ci-small" and "tag" not in at.query_params
    assert "No change beyond a threshold" in texts(at.success)
    at = app("review", suite="ci-small", since="2026-12-01")
    no_exceptions(at)
    assert "No finished run is tagged" in texts(at.info)


@pytest.mark.parametrize("params, fragment", [
    ({"tag": "nightly", "since": "<script>"}, "since: expected a day as YYYY-MM-DD"),
    ({"tag": "bad\x00tag"}, "tag:"),
    ({"tag": "nightly", "until": "9" * 5000}, "until: expected a day"),
    ({"tag": "nightly", "since": "2026-11-09", "until": "2026-11-01"}, "is after until"),
])
def test_review_page_bad_params_say_so(db, params, fragment):
    import_runs(db, week_of_runs())
    at = app("review", **params)
    no_exceptions(at)
    assert fragment in texts(at.error).replace("\\", "")


def test_review_page_without_tags_says_how(db):
    at = app("review")
    no_exceptions(at)
    assert "No tagged runs yet" in texts(at.info)


def test_review_page_unknown_tag_is_offered_and_empty(db):
    import_runs(db, week_of_runs())
    at = app("review", tag="never-used")
    no_exceptions(at)
    assert "No finished run is tagged never-used" in texts(at.info)
    at = app("review", tag="![x](http://evil/)")  # a valid tag, shown as text, not an image
    no_exceptions(at)
    assert "\\!\\[x\\]\\(http:\\/\\/evil/\\)" in texts(at.info)


# --------------------------------------------------------------------------- baseline section


def _section(at: AppTest) -> str:
    return texts(at.info) + texts(at.markdown) + texts(at.caption) + texts(at.warning)


def test_run_without_baseline_says_how_and_pins(db):
    ids = import_runs(db, week_of_runs())
    at = app("compare", runs=str(ids[2]))
    no_exceptions(at)
    assert [h.value for h in at.header][:2] == ["Verdict", "Against its baseline"]
    assert "No baseline is pinned" in texts(at.info)
    assert "python -m engine baseline pin" in texts(at.info)
    pin = next(b for b in at.button if b.label == "Pin this run as its config's baseline")
    pin.click()
    at.run()
    no_exceptions(at)
    assert [b["run_id"] for b in list_baselines(db)] == [ids[2]]
    assert "pinned baseline of its config" in texts(at.info)


def test_run_against_its_pinned_baseline(db):
    ids = import_runs(db, week_of_runs())
    pin_run(db, ids[0])
    at = app("compare", runs=str(ids[2]))
    no_exceptions(at)
    body = _section(at)
    assert f"Baseline: run #{ids[0]} (run {ids[0]} pinned)" in body
    assert "Regressed" in body and "default speedup -40.0%" in body
    assert "Environment differences" in texts(at.warning)
    env = at.dataframe[0].value
    assert set(env["what"]) == {"torch", "commit"}
    table = at.dataframe[1].value
    speed = table[table["figure"] == "speedup (×)"].iloc[0]
    assert speed["variant"] == "default" and speed["verdict"] == "regressed"
    assert speed["change %"] == pytest.approx((0.6 - 1) * 100, abs=0.05)
    noted = table[table["note"].fillna("") != ""]
    assert not noted.empty  # the notes run off the table's right edge: shown in full below it
    shown = {t.value for t in at.text}
    assert {f"{r['variant']}, {r['figure']}: {r['note']}" for _, r in noted.iterrows()} <= shown
    assert len(at.get("plotly_chart")) >= 1
    assert any(b.label == "Pin this run as the new baseline" for b in at.button)


def test_several_runs_have_no_baseline_section(db):
    ids = import_runs(db, week_of_runs() + [make_run("2026-11-08", ["x"])])
    at = app("compare", runs=f"{ids[0]},{ids[3]}")
    no_exceptions(at)
    assert "Against its baseline" not in [h.value for h in at.header]


def test_read_only_viewers_cannot_pin(db, monkeypatch):
    from dashboard import auth

    monkeypatch.setenv(auth.ROLE_ENV, "readonly")
    ids = import_runs(db, week_of_runs())
    at = app("compare", runs=str(ids[2]))
    no_exceptions(at)
    pin = next(b for b in at.button if b.label == "Pin this run as its config's baseline")
    assert pin.disabled
    assert list_baselines(db) == []
