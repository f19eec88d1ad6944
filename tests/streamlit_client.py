"""A raw Streamlit protocol client, for tests that play someone in front of the dashboard: a
websocket to ``/_stcore/stream`` speaking Streamlit's BackMsg / ForwardMsg protobufs, with any
cookie, Origin, session id to resume or source address, and no browser to keep it honest.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from google.protobuf import text_format
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import connect

# What a refused handshake raises: a status, a closed connection, or InvalidURI for a redirect
# to the sign-in page (websockets tries to follow it and finds an http:// address).
Refused = (InvalidHandshake, ConnectionClosed, OSError, InvalidURI)


def _finished(msg: ForwardMsg) -> bool:
    """A run ended (not one cut short for the rerun it asked for: that one follows)."""
    return (msg.WhichOneof("type") == "script_finished"
            and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN)


class Client:
    """One websocket connection; ``rerun`` and ``read`` as the frontend would."""

    def __init__(self, base: str, *, cookie: str | None = None, origin: str | None = None,
                 session_id: str | None = None, source: str | None = None,
                 timeout: float = 15.0):
        parts = urlsplit(base)
        scheme = "wss" if parts.scheme == "https" else "ws"
        sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout,
                                        source_address=(source, 0) if source else None)
        headers = {"Cookie": cookie} if cookie else {}
        protocols = ["streamlit", "xsrf-unused"] + ([session_id] if session_id else [])
        self.ws = connect(f"{scheme}://{parts.netloc}/_stcore/stream", sock=sock,
                          origin=origin, additional_headers=headers,
                          subprotocols=protocols, open_timeout=timeout,
                          max_size=2**26)
        self.timeout = timeout
        self.seen: list[ForwardMsg] = []

    def close(self) -> None:
        self.ws.close()

    def send(self, kind: str) -> None:
        """A BackMsg with only its ``kind`` field set (``clear_cache``, ``app_heartbeat``…)."""
        msg = BackMsg()
        setattr(msg, kind, True)
        self.ws.send(msg.SerializeToString())

    def rerun(self, page: str = "", query: str = "", fragment_id: str = "",
              triggers: Iterable[str] = ()) -> list[ForwardMsg]:
        """Run a page (or one fragment of it), pressing the buttons whose widget ids are in
        ``triggers``; the messages until the run finished."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = query
        state.page_name = page
        if fragment_id:
            state.fragment_id = fragment_id
            state.is_auto_rerun = True
        for widget_id in triggers:
            w = state.widget_states.widgets.add()
            w.id = widget_id
            w.trigger_value = True
        self.ws.send(msg.SerializeToString())
        return self.read(_finished)

    def read(self, until: Callable[[ForwardMsg], bool], timeout: float | None = None
             ) -> list[ForwardMsg]:
        deadline = time.monotonic() + (timeout or self.timeout)
        got: list[ForwardMsg] = []
        while time.monotonic() < deadline:
            try:
                data = self.ws.recv(timeout=max(0.05, deadline - time.monotonic()))
            except TimeoutError:
                break
            msg = ForwardMsg.FromString(data)
            got.append(msg)
            if until(msg):
                break
        self.seen += got
        return got

    @property
    def session_id(self) -> str:
        for msg in self.seen:
            if msg.WhichOneof("type") == "new_session":
                return msg.new_session.initialize.session_id
        raise AssertionError("no new_session message seen")

    @staticmethod
    def text(msgs: Iterable[ForwardMsg]) -> str:
        return "\n".join(text_format.MessageToString(m, as_utf8=True) for m in msgs)

    @staticmethod
    def fragments(msgs: Iterable[ForwardMsg]) -> list[tuple[str, float]]:
        """``(fragment id, interval s)`` of the auto-refreshing sections the server set up."""
        return [(m.auto_rerun.fragment_id, m.auto_rerun.interval) for m in msgs
                if m.WhichOneof("type") == "auto_rerun"]

    @staticmethod
    def button(msgs: Iterable[ForwardMsg], label: str) -> str:
        """The widget id of the button labelled ``label``."""
        for m in msgs:
            if m.WhichOneof("type") == "delta" and m.delta.WhichOneof("type") == "new_element":
                el = m.delta.new_element
                if el.WhichOneof("type") == "button" and el.button.label == label:
                    return el.button.id
        raise AssertionError(f"no button {label!r}")
