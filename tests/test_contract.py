"""``contract.Maps``: maps computed when read, big maps held in float16, the bytes they hold."""
from __future__ import annotations

import torch

from hierattn.contract import HALF_CELLS, AttentionMap, DerivedMap, Maps

AXES = ("batch", "layer", "head", "query", "key")


def _maps(tokens: int, layers: int = 4, heads: int = 2) -> tuple[Maps, torch.Tensor, list[int]]:
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(1, layers, heads, tokens, tokens) * 2, -1)
    mask = torch.ones(1, 1, 1, tokens, tokens, dtype=torch.bool).expand_as(weights)
    calls = []

    def derive(source: torch.Tensor, layer: int | None) -> AttentionMap:  # a toy derived map: twice the source
        calls.append(layer)
        return AttentionMap(source * 2, AXES, "word", torch.ones_like(source, dtype=torch.bool), source="token")
    maps = Maps({"token": AttentionMap(weights, AXES, "subword", mask)},
                {"double": DerivedMap(AXES, "word", "attention", "token", derive)})
    return maps, weights, calls


def test_a_derived_map_is_computed_when_read_and_a_layer_alone_when_a_layer_is_read():
    maps, weights, calls = _maps(8)
    assert list(maps) == ["token", "double"] and maps.describe("double").level == "word" and calls == []
    torch.testing.assert_close(maps.layer("double", 2).weights, 2 * weights[:, 2:3])
    maps.layer("double", 2)  # the same layer again: kept
    assert calls == [2]
    torch.testing.assert_close(maps["double"].weights, 2 * weights)
    assert calls == [2, None] and maps["double"] is maps["double"]  # read whole once, then kept


def test_a_big_map_is_held_in_half_and_read_in_float32():
    tokens = 400  # 4 x 2 x 400^2 = 1.28 million cells, past HALF_CELLS
    maps, weights, _ = _maps(tokens)
    assert weights.numel() > HALF_CELLS
    held = maps.held()
    assert held.describe("token").weights.dtype == torch.float16
    assert held.weight_bytes == 2 * weights.numel()  # half of float32's
    # the mask is one matrix expanded: counted once, at its own size
    assert held.nbytes == 2 * weights.numel() + tokens * tokens
    read = held["token"].weights
    assert read.dtype == torch.float32 and (read - weights).abs().max() < 1e-3
    assert held.layer("token", 1).weights.dtype == torch.float32
    torch.testing.assert_close(held.layer("double", 1).weights, 2 * read[:, 1:2])
    small, _, _ = _maps(8)
    assert small.held().describe("token").weights.dtype == torch.float32  # small maps stay as they are


def test_one_held_maps_read_by_many_sessions_at_once_gives_each_the_layer_it_asked_for():
    """A cached explanation is read by every session's thread: each keeps the layer it last read of a
    derived map, and another thread's read in between must never hand it someone else's layer."""
    from concurrent.futures import ThreadPoolExecutor

    maps, weights, _ = _maps(400)  # past HALF_CELLS: held in float16, widened and derived when read
    held = maps.held()
    expected = 2 * held["token"].weights

    def reader(seed: int) -> int:
        wrong = 0
        for step in range(60):
            layer = (seed + step) % weights.shape[1]
            got = held.layer("double", layer).weights
            wrong += not torch.equal(got, expected[:, layer:layer + 1])
            if step % 20 == seed % 20:
                wrong += not torch.equal(held["double"].weights, expected)
            wrong += held.nbytes <= 0  # measured by the cache while others read
        return wrong

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(reader, range(8))) == 0
