from __future__ import annotations

import pytest
import torch

from trainer.commit import CommitError, StateError, state_root
from trainer.commit.records import canonical_names, encode_record


def test_root_ignores_insertion_order() -> None:
    a = {"w": torch.ones(3), "b": torch.zeros(2), "Z": torch.tensor(1)}
    b = dict(reversed(list(a.items())))
    assert state_root(a) == state_root(b)


def test_order_is_by_utf8_bytes() -> None:
    assert canonical_names(["b", "a", "B", "é", "z"]) == ["B", "a", "b", "z", "é"]


def test_any_change_changes_the_root() -> None:
    base = {"w": torch.ones(3), "b": torch.zeros(2)}
    r = state_root(base)
    assert state_root({"w": torch.ones(3), "c": torch.zeros(2)}) != r
    assert state_root({"w": torch.ones(3), "b": torch.zeros(2), "x": torch.zeros(0)}) != r
    assert state_root({"w": torch.ones(3), "b": torch.zeros(2, dtype=torch.float64)}) != r


@pytest.mark.parametrize("names", [[""], ["a", "a"]])
def test_bad_names_are_refused(names: list[str]) -> None:
    with pytest.raises(StateError):
        canonical_names(names)


def test_record_encoding_rules() -> None:
    assert encode_record(b"TEST", [1, b"\xff" * 32]) == b"TEST" + (1).to_bytes(32, "big") + b"\xff" * 32
    with pytest.raises(CommitError, match="four ASCII"):
        encode_record(b"TOOLONG", [])
    with pytest.raises(CommitError, match="256 unsigned bits"):
        encode_record(b"TEST", [-1])
    with pytest.raises(CommitError, match="expected 32"):
        encode_record(b"TEST", [b"short"])
