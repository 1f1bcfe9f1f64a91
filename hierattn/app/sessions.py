"""A page run's session, and whether a session's tab is still open: the two questions about
Streamlit's sessions that both the background computations (``tasks``) and the visitors
(``visitors``) ask."""
from __future__ import annotations


def session_id() -> str | None:
    """This page run's session (None outside a running page)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx else None


def connected(session: str | None) -> bool:
    """Whether a visitor's tab is still open (always, outside a running server: AppTest, tests)."""
    from streamlit import runtime

    if session is None or not runtime.exists():
        return True
    return runtime.get_instance().is_active_session(session)
