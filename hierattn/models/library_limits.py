"""What a folder another library wrote (a Hugging Face classifier) may ask of the server, judged
before the library reads it: transformers builds a table of ``num_labels`` entries, and sizes its
model by the config's numbers, before any weight is read (a 200-byte config.json asked for 15
million labels: 47 s and 4 GB); and one explanation of a long window holds layers x heads x
window² attention cells (a 4,096-token model: 288 million cells, 49 s and 4 GB before the
explanation limit refused them)."""
from __future__ import annotations

import math

from hierattn.contract import HALF_CELLS
from hierattn.limits import CLASSES, CONFIG_NUMBER, EXPLANATION_CELLS


def held_cells(layers: int, heads: int, tokens: int, sentences: int) -> int:
    """The attention one explanation of ``tokens`` tokens holds, in float32 cells (what
    ``limits.EXPLANATION_CELLS`` counts): every layer's and head's token map, in float16 once it is
    past ``contract.HALF_CELLS`` (half a float32 cell each); the word and sentence maps of the layer
    on screen (at most as many words as tokens), computed when read; the first token's rows."""
    token = layers * heads * tokens ** 2
    return ((token + 1) // 2 if token > HALF_CELLS else token) + heads * (tokens ** 2 + sentences ** 2) \
        + heads * (tokens + sentences)


def fitting_window(layers: int, heads: int, sentences: int = 0) -> int:
    """The most tokens whose explanation holds at most ``limits.EXPLANATION_CELLS`` (``held_cells``),
    8 at the least."""
    # held_cells is not monotone where the token map passes HALF_CELLS (held in half, it drops), so
    # scan down from the largest t any model could hold: heads x t^2 cells at the least
    t = math.isqrt(int(EXPLANATION_CELLS.value) // max(1, heads)) + 1
    while t > 8 and EXPLANATION_CELLS.exceeded(held_cells(layers, heads, t, sentences)):
        t -= 1
    return t


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
