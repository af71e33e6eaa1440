"""`trainer.commit._native.CopyPlan`: a state's buffers copied back to back in one call (zkdv's post-state copy)
and compared with such a copy in one call (its check that nothing changed between steps), against torch's
own concatenation, byte for byte."""

from __future__ import annotations

import pytest
import torch

from trainer.commit import _native

SHAPES = [(torch.float32, (64, 64)), (torch.int64, (3,)), (torch.float32, ()), (torch.uint8, (5,)),
          (torch.float64, (0,)), (torch.bool, (7,)), (torch.float32, (10, 128))]


def _state(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (max(1, torch.Size(shape).numel()) * dtype.itemsize,), generator=g)
            .to(torch.uint8)[: torch.Size(shape).numel() * dtype.itemsize].view(dtype).reshape(shape)
            for dtype, shape in SHAPES]


def _bytes(tensors: list[torch.Tensor]) -> bytes:
    return b"".join(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() for t in tensors)


@pytest.fixture(autouse=True)
def _library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REFEREED_NATIVE", raising=False)
    if _native.build() is None or _native._load() is None or not _native._closing[-1]:
        pytest.skip("the native hashing library (with rt_gather) cannot be built here")


def test_copy_gives_the_concatenated_bytes() -> None:
    state = _state(1)
    plan = _native.CopyPlan([t.numel() * t.element_size() for t in state])
    out = torch.full((plan.total,), 0xAB, dtype=torch.uint8)
    assert plan.copy([t.data_ptr() for t in state], out.data_ptr())
    assert out.numpy().tobytes() == _bytes(state)


@pytest.mark.parametrize("where", [None, 0, 1, 2, 6, -1])
def test_same_finds_a_changed_byte_anywhere(where: int | None) -> None:
    state = _state(2)
    plan = _native.CopyPlan([t.numel() * t.element_size() for t in state])
    copy = torch.frombuffer(bytearray(_bytes(state)), dtype=torch.uint8)
    if where is not None:
        t = state[where].reshape(-1).view(torch.uint8)
        t[-1] ^= 1  # the last byte of that entry: one bit
    assert plan.same([t.data_ptr() for t in state], copy.data_ptr()) is (where is None)


def test_without_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(3)
    plan = _native.CopyPlan([t.numel() * t.element_size() for t in state])
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    out = torch.zeros(plan.total, dtype=torch.uint8)
    assert plan.copy([t.data_ptr() for t in state], out.data_ptr()) is False
    assert not out.any()
    assert plan.same([t.data_ptr() for t in state], out.data_ptr()) is None
