"""Who a visitor is, on a server without accounts: a browser.

Every tab of one browser carries Streamlit's XSRF cookie (``_streamlit_xsrf``), whose token stays
the same across tabs and refreshes; a visitor is that token (hashed), or the tab's own session where
there is no cookie (AppTest, a client that sends none). So two tabs of one browser are one
visitor: they share one training run's slot and one share of the kept documents, and a refresh
keeps a run its own. A job's link opened in another browser shows the run, and that visitor
neither owns it nor can cancel or replace it. Another browser (or a private window) is another
visitor: a bound per visitor limits what one browser holds, the server-wide bounds what many do.
"""
from __future__ import annotations

import binascii
import hashlib
import threading

from hierattn.app.process import process_wide
from hierattn.app.sessions import connected, session_id

COOKIE = "_streamlit_xsrf"


def _token(cookie: str) -> bytes:
    """The cookie's stable token: a version-2 value ``2|mask|masked|time`` is the token masked anew
    on each page load (XOR), so the token is unmasked; any other value is taken as it is."""
    value = cookie.strip("\"'")
    parts = value.split("|")
    if len(parts) == 4 and parts[0] == "2":
        try:
            mask, masked = binascii.a2b_hex(parts[1]), binascii.a2b_hex(parts[2])
            return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked)) if mask else masked
        except (binascii.Error, ValueError):
            pass
    return value.encode("utf-8", "replace")


class _Sessions:
    """Each visitor's sessions seen so far, to tell whether any of its tabs is still open."""

    def __init__(self):
        self.lock = threading.Lock()
        self.of: dict[str, set[str]] = {}

    def seen(self, visitor: str, session: str) -> None:
        with self.lock:
            self.of.setdefault(visitor, set()).add(session)

    def sessions(self, visitor: str) -> set[str]:
        with self.lock:
            return set(self.of.get(visitor, ())) | {visitor}


@process_wide
def _sessions() -> _Sessions:
    return _Sessions()


def visitor() -> str | None:
    """This page run's visitor: ``browser-<16 hex>`` from the cookie, else the session (None outside
    a running page)."""
    import streamlit as st

    session = session_id()
    if session is None:
        return None
    try:
        cookie = st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001  no context (AppTest, a bare script run)
        cookie = None
    if not isinstance(cookie, str) or not cookie:
        return session
    who = "browser-" + hashlib.sha256(_token(cookie)).hexdigest()[:16]
    _sessions().seen(who, session)
    return who


def present(who: str) -> bool:
    """Whether any tab of this visitor is still open (a session id is its own visitor)."""
    return any(connected(session) for session in _sessions().sessions(who))
