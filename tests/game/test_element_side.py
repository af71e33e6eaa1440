"""offchain.game.element: the contract's computations (broadcast index, first differing element) and an
ElementSide's moves, against the referee's vectors (scripts/element_referee_vectors.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from offchain.game import GameError, fold
from offchain.game.element import ElementSide, broadcast_index, first_differing_element
from trainer.commit import list_root
from trainer.commit.merkle import depth

VECTORS = Path(__file__).resolve().parents[2] / "contracts" / "test" / "vectors" / "element_referee.json"


def test_broadcast_index_and_first_element_match_the_vectors() -> None:
    data = json.loads(VECTORS.read_text())
    for case in data["cases"]:
        out_shape = case["output"]["shape"]
        size = {1: 4, 2: 8, 10: 1}[case["output"]["dtype"]]
        for lie in case["lies"]:
            e = lie["element"]
            for header, opening in zip(case["inputs"], lie["openings"], strict=True):
                assert broadcast_index(e, out_shape, header["shape"]) == opening["index"]
            honest = bytes.fromhex(lie["honestChunk"][2:])
            liar = bytes.fromhex(lie["liarChunk"][2:])
            assert first_differing_element(honest, liar, size, lie["chunkIndex"]) == e


def test_side_moves_fold_to_its_data_root() -> None:
    a = torch.arange(3 * 4000, dtype=torch.float32).view(3, 4000)
    side = ElementSide([a], a * 2)
    root = side.header().data_root
    n = (a.numel() * 4 + 4095) // 4096
    h = depth(n)
    assert list_root(n, fold(side.nodes(h, 0, 4), h, 0, n)) == root
    assert len(side.chunk(n - 1)) == a.numel() * 4 - 4096 * (n - 1)
    with pytest.raises(GameError):
        side.chunk(n)
    with pytest.raises(GameError):
        broadcast_index(0, (3,), (2, 3))
    with pytest.raises(GameError):
        first_differing_element(b"ab", b"ab", 1, 0)
