"""Streamlit controls that change or carry stored runs, shared by the Runs and Run / compare pages.

- ``notes_editor``: a run's note and tags (read-only viewers see them as text);
- ``bundle_download`` / ``bundle_import`` / ``import_outcome``: export runs as a JSON bundle and
  import one all-or-nothing;
- ``delete_runs_control``: delete runs after a confirmation step.

Every write checks ``auth.can_write()`` and goes through ``data.py``; user text is escaped with
``safe.md``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from dashboard import auth, data, safe
from dashboard.spec import parse_tags
from dashboard.widgets import MAX_LINKED_RUNS, PAGE_COMPARE, set_param


def notes_editor(r: pd.Series) -> None:
    """Edit a run's note and tags (storage.results.set_note / set_tags); read-only viewers see
    them as plain text."""
    rid = int(r["run_id"])
    tags = r.get("tags") if isinstance(r.get("tags"), list) else []
    if not auth.can_write():
        st.caption("Note")
        st.text(r.get("note") or "(none)")
        st.caption("Tags")
        st.text(", ".join(tags) or "(none)")
        return
    note_max = data.max_note_chars()
    with st.form(f"notes-{rid}", border=False):
        # max_chars: the browser stops at the limit (storage refuses a longer note; the
        # editor used to crash on it at 20 001 characters).
        note = st.text_area("Note", value=(r.get("note") or "")[:note_max], key=f"note-{rid}",
                            max_chars=note_max,
                            placeholder="What was this run for? What did you conclude?")
        tag_text = st.text_input("Tags (comma-separated)", value=", ".join(tags),
                                 key=f"tags-{rid}")
        if st.form_submit_button("Save note and tags"):
            # Tags left as they were are saved as they were: a tag given on the CLI may hold a
            # comma ("a, b") and must not split in two because a note was edited.
            new_tags, err = (tags, None) if tag_text == ", ".join(tags) else parse_tags(tag_text)
            if err:
                st.error(safe.md(err))
                return
            try:
                data.set_note(rid, note)
                data.set_tags(rid, new_tags)
            except (ValueError, TypeError, LookupError) as exc:  # storage's message is for users
                st.error(f"Not saved: {safe.md(exc, 500)}")
            else:
                st.success("Saved.")


def bundle_bytes(run_ids: Sequence[int]) -> bytes:
    return json.dumps(data.export_bundle(run_ids), indent=1, default=str).encode()


def bundle_download(run_ids: Sequence[int], key: str) -> None:
    """Download the runs as a JSON bundle (built only when clicked)."""
    ids = [int(r) for r in run_ids]
    name = "compilelab-runs-" + "-".join(map(str, ids[:8])) + ".json"
    st.download_button(
        f"Export {len(ids)} run(s) as JSON bundle", data=lambda: bundle_bytes(ids),
        file_name=name, mime="application/json", key=key, icon=":material/inventory_2:",
        on_click="ignore",
        help="Everything needed to re-open these runs elsewhere (Runs page → Import bundle). "
        "Kept TORCH_TRACE logs are not in the bundle: download them from the run.")


def bundle_import(key: str = "bundle") -> None:
    """Upload a JSON bundle and import it all-or-nothing; errors are shown, nothing written.

    The raw bytes go to storage, which parses them under its limits (size, nesting depth,
    5000-digit numbers, NaN): parsing here with ``json.loads`` let a deeply nested file end
    in a RecursionError traceback."""
    if not auth.can_write():
        st.caption("Importing runs needs write access (you are signed in read-only).")
        return
    up = st.file_uploader("Import a JSON bundle", type=["json"], key=f"{key}-file",
                          help="A file exported from Compile Lab (Export … as JSON bundle).")
    if up is None:
        return
    if not st.button("Import bundle", key=f"{key}-go", icon=":material/upload:"):
        return
    name = safe.md(up.name, 120)
    limit = data.max_bundle_bytes()
    if up.size > limit:
        st.error(f"{name} is {up.size:,} bytes; a bundle may be at most {limit:,} bytes. "
                 "Nothing was imported.")
        return
    try:
        outcome = data.import_bundle(up.getvalue())
    except data.bundle_error_type() as exc:
        st.error(f"Bundle rejected ({name}): {safe.md(exc, 1000)}. Nothing was imported.")
        return
    except Exception as exc:  # noqa: BLE001 - import is all-or-nothing in storage
        st.error(f"Import of {name} failed: {safe.md(exc, 1000)}. Nothing was imported.")
        return
    # Said at the top of the page after a full rerun: drawn here, the page above (its "No runs
    # yet" empty state, its table) stayed as it was before the import.
    st.session_state["import-outcome"] = (name, list(outcome.new_ids),
                                          list(outcome.existing_ids))
    st.rerun()


def import_outcome() -> None:
    """What the last bundle import did (set by ``bundle_import``, shown once)."""
    if "import-outcome" not in st.session_state:
        return
    name, ids, already = st.session_state.pop("import-outcome")
    if already:
        st.info(f"{len(already)} run(s) of {name} are already in this database (as "
                + ", ".join(f"#{i}" for i in already[:20]) + ("…" if len(already) > 20 else "")
                + "): not imported again.")
    if ids:
        st.success(f"Imported {len(ids)} run(s): " + ", ".join(f"#{i}" for i in ids[:50]))
    shown = ids or already
    if shown:
        st.page_link(PAGE_COMPARE, label="Open the imported runs", icon=":material/monitoring:",
                     query_params={"runs": ",".join(map(str, shown[:MAX_LINKED_RUNS]))})


def delete_runs_control(run_ids: Sequence[int], running: Sequence[int] = ()) -> None:
    """Delete the selected runs, after a confirmation step (storage refuses running runs).

    Two steps in session state, not a dialog: the question names the runs, and nothing is
    deleted unless "Delete permanently" is pressed while the same runs are still selected."""
    ids = [int(r) for r in run_ids]
    pending = st.session_state.get("delete-pending")
    if pending != ids:
        if st.button(f"Delete {len(ids)} run(s)…", key="delete-ask", icon=":material/delete:"):
            st.session_state["delete-pending"] = ids
            st.rerun()
        return
    names = ", ".join(f"#{i}" for i in ids[:20]) + ("…" if len(ids) > 20 else "")
    if running:
        st.warning(f"Runs {', '.join(f'#{i}' for i in running)} are running: cancel them "
                   "first, then delete.")
    st.warning(f"Delete {names} and all their results? This cannot be undone "
               "(export them as a bundle first to keep a copy).", icon=":material/warning:")
    yes, no = st.columns(2)
    if yes.button("Delete permanently", key="delete-confirm", type="primary",
                  disabled=bool(running)):
        st.session_state.pop("delete-pending", None)
        if not auth.can_write():
            st.error(auth.READ_ONLY_HELP)
            return
        try:
            n = data.delete_runs(ids)
        except (ValueError, LookupError) as exc:
            st.error(f"Nothing deleted: {safe.md(exc, 500)}")
            return
        st.session_state.pop("runs-initial-selection", None)
        set_param("selected", None)
        st.session_state["delete-done"] = f"Deleted {n} run(s): {names}."
        st.rerun()
    if no.button("Keep them", key="delete-cancel"):
        st.session_state.pop("delete-pending", None)
        st.rerun()
