"""A labelled data set in memory, and the error every reader raises in user terms."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dataset:
    name: str
    texts: list[str]
    labels: list[int]
    label_names: list[str]
    decoded: int = 0  # texts whose HTML markup or entities were decoded when read (your own file)


class DataError(ValueError):
    """A data set could not be read; the message says why in user terms."""
