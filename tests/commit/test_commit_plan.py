"""CommitPlan (a fixed list of buffer lengths and tensor headers, one native call per use with only the
addresses) against commit_tensor per tensor: the same commitments, on both compression functions; and it
answers None where the library lacks the batched calls, so its callers take the Python path."""

from __future__ import annotations

import pytest
import torch

from trainer.commit import _native
from trainer.commit.tensor import commit_tensor, dtype_code, header

SHAPES = [(0,), (1,), (55,), (1024,), (1025,), (3, 1024 + 7), (17, 1024), (2, 3, 4), ()]
DTYPES = [torch.float32, torch.int64, torch.uint8, torch.float16]


def _tensors(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i, shape in enumerate(SHAPES):
        dtype = DTYPES[i % len(DTYPES)]
        out.append((torch.randn(shape, generator=g) * 100).to(dtype))
    return out


def test_commit_plan_matches_commit_tensor(sha256_impl: str) -> None:
    first = _tensors(0)
    plan = _native.CommitPlan([t.numel() * t.element_size() for t in first],
                              [header(dtype_code(t.dtype), tuple(t.shape)) for t in first])
    for seed in range(3):  # the same plan, other buffers of the same layout
        ts = _tensors(seed)
        row = plan([t.data_ptr() for t in ts])
        assert row is not None
        want = [commit_tensor(t, native=False) for t in ts]
        assert [row[i : i + 32] for i in range(0, len(row), 32)] == want, sha256_impl


def test_commit_plan_refuses_a_wrong_count_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    t = torch.arange(10, dtype=torch.float32)
    plan = _native.CommitPlan([40], [header(dtype_code(t.dtype), (10,))])
    if plan([t.data_ptr()]) is not None:
        with pytest.raises(ValueError, match="commits 1 buffers, got 2"):
            plan([t.data_ptr(), t.data_ptr()])
    monkeypatch.setattr(_native, "_batched", [False])  # a library built from an older source
    assert plan([t.data_ptr()]) is None
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert plan([t.data_ptr()]) is None
    with pytest.raises(ValueError, match="one header per buffer"):
        _native.CommitPlan([1, 2], [b""])
    assert _native.CommitPlan([], [])([]) in (b"", None)
