"""What a folder another library wrote (a Hugging Face classifier) may ask of the server, judged
before the library reads it: transformers builds a table of ``num_labels`` entries, and sizes its
model by the config's numbers, before any weight is read (a 200-byte config.json asked for 15
million labels: 47 s and 4 GB); and one explanation of a long window holds layers x heads x
window² attention cells (a 4,096-token model: 288 million cells, 49 s and 4 GB before the
explanation limit refused them)."""
from __future__ import annotations

import math

from hierattn.limits import CLASSES, CONFIG_NUMBER, EXPLANATION_CELLS


def fitting_window(layers: int, heads: int) -> int:
    """The most tokens whose explanation stays within ``limits.EXPLANATION_CELLS``: every layer's
    and head's token map and the word map of as many words, 2 t² cells a head (the sentence maps,
    a few hundred cells, are inside the margin of the square root's floor)."""
    return max(8, math.isqrt(int(EXPLANATION_CELLS.value) // max(1, 2 * layers * heads)))


def config_number_problem(config: dict) -> str | None:
    """Why a library's config.json is not read: labels beyond ``limits.CLASSES`` (``num_labels``,
    ``id2label``, ``label2id``), or any other number, or list, beyond ``limits.CONFIG_NUMBER``."""
    labels = config.get("num_labels")
    if labels is not None and (type(labels) is not int or labels < 1):
        return f"config.json's num_labels is {str(labels)[:40]!r}, not a positive whole number"
    if labels is not None and CLASSES.exceeded(labels):
        return CLASSES.message(labels, what="config.json's num_labels")
    for table in ("id2label", "label2id"):
        entries = config.get(table)
        if entries is not None and not isinstance(entries, dict):
            return f"config.json's {table} is not a JSON object"
        if entries is not None and CLASSES.exceeded(len(entries)):
            return CLASSES.message(len(entries), what=f"config.json's {table} (entries)")
    stack = [("", config)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            if CONFIG_NUMBER.exceeded(len(value)):
                return CONFIG_NUMBER.message(len(value), what=f"config.json's {where} (entries)"[:120])
            stack.extend((where, v) for v in value)
        elif type(value) is int and CONFIG_NUMBER.exceeded(abs(value)):
            return CONFIG_NUMBER.message(value, what=f"config.json's {where}"[:120])
    return None
