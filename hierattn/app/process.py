"""Objects that live as long as the server process, out of reach of any client message.

Streamlit drops every ``st.cache_resource`` when any client sends ``clear_cache`` (a websocket
message a browser's menu or a script can send), and that reset the server's limits: the training
runs' cap, the remembered refusals of hostile checkpoint folders, the models' memory budget, the
background computations and their bound. Whatever enforces a limit or holds work under
way is made once per process here; only caches whose loss costs time, not a limit, stay in
Streamlit's caches."""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_made: list[Callable[[], object]] = []


def process_wide(factory: Callable[[], T]) -> Callable[[], T]:
    """``factory()`` made once, on first use, and returned to every later call of every session.
    ``.forget()`` drops it (tests only: a server never does)."""
    lock, box = threading.Lock(), []

    @functools.wraps(factory)
    def get() -> T:
        if not box:
            with lock:
                if not box:
                    box.append(factory())
        return box[0]

    get.forget = box.clear  # type: ignore[attr-defined]
    _made.append(get)
    return get


def forget_all() -> None:
    """Drop every process-wide object (tests that change what they would be made from)."""
    for get in _made:
        get.forget()  # type: ignore[attr-defined]
