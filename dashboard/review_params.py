"""The Review page's query parameters, validated (pure: no Streamlit).

``?tag=nightly`` or ``?suite=ci-small`` (the suite's runs carry the tag ``suite:ci-small``),
``&since=2026-12-01&until=2026-12-07`` (UTC days, both included).  Everything in a URL is
hostile: a tag goes through the storage layer's own rule (``contract.text.check_tag``), a day
must be exactly ``YYYY-MM-DD``; a bad value is dropped with a message that says what was
expected, never a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from engine.cli.suite_file import TAG_PREFIX

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # ASCII digits only ("²" is a digit too)
MAX_PARAM_CHARS = 300
FIRST_YEAR, LAST_YEAR = 1970, 2999


@dataclass(frozen=True)
class ReviewQuery:
    tag: str | None = None
    since: date | None = None
    until: date | None = None

    @property
    def window(self) -> tuple[datetime | None, datetime | None]:
        """The window as aware UTC bounds; ``until`` covers its whole day."""
        since = datetime.combine(self.since, time(), tzinfo=UTC) if self.since else None
        until = (datetime.combine(self.until + timedelta(days=1), time(), tzinfo=UTC)
                 - timedelta(microseconds=1)) if self.until else None
        return since, until

    def params(self) -> dict[str, str]:
        """The query params that name this selection (a suite's tag as ``suite=``)."""
        out: dict[str, str] = {}
        if self.tag and self.tag.startswith(TAG_PREFIX):
            out["suite"] = self.tag[len(TAG_PREFIX):]
        elif self.tag:
            out["tag"] = self.tag
        if self.since:
            out["since"] = self.since.isoformat()
        if self.until:
            out["until"] = self.until.isoformat()
        return out


def _short(text: str) -> str:
    return repr(text[:40] + ("…" if len(text) > 40 else ""))


def parse_day(text: str | None, name: str) -> tuple[date | None, str | None]:
    """A UTC day from ``YYYY-MM-DD``, or (None, message)."""
    if text is None or not text.strip():
        return None, None
    text = text.strip()
    if len(text) != 10 or not _DAY.fullmatch(text):
        return None, f"{name}: expected a day as YYYY-MM-DD, got {_short(text)}"
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None, f"{name}: {text} is not a calendar day"
    if not FIRST_YEAR <= day.year <= LAST_YEAR:  # 9999-12-31 + 1 day overflows the window
        return None, f"{name}: expected a year from {FIRST_YEAR} to {LAST_YEAR}, got {day.year}"
    return day, None


def _tag(text: str | None, what: str) -> tuple[str | None, str | None]:
    from contract.text import check_tag

    if text is None or not text.strip():
        return None, None
    if len(text) > MAX_PARAM_CHARS:
        return None, f"{what}: longer than {MAX_PARAM_CHARS} characters"
    try:
        return check_tag(TAG_PREFIX + text.strip() if what == "suite" else text), None
    except (TypeError, ValueError) as exc:
        return None, f"{what}: {exc}"


def parse_review_params(params: Mapping[str, str | None]) -> tuple[ReviewQuery, list[str]]:
    """The selection the URL names, and one message per value that was dropped."""
    errors: list[str] = []
    tag, err = _tag(params.get("tag"), "tag")
    errors += [err] if err else []
    suite, err = _tag(params.get("suite"), "suite")
    errors += [err] if err else []
    if tag and suite:
        errors.append("give a tag or a suite, not both: showing the tag")
    since, err = parse_day(params.get("since"), "since")
    errors += [err] if err else []
    until, err = parse_day(params.get("until"), "until")
    errors += [err] if err else []
    if since and until and since > until:
        errors.append(f"since ({since}) is after until ({until}): showing all time")
        since = until = None
    return ReviewQuery(tag or suite, since, until), errors
