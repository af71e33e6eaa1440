from __future__ import annotations

import pytest
import torch

from trainer.commit import (
    CHUNK,
    ProofError,
    UnsupportedTensorError,
    commit_tensor,
    element_commitment,
    open_element,
    verify_element,
)
from trainer.commit.tensor import DTYPES, header, tensor_bytes

ALL_DTYPES = [dt for dt, _ in DTYPES.values()]


def sample(dtype: torch.dtype, shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=dtype)


def bits_of(t: torch.Tensor, index: int) -> int:
    raw = tensor_bytes(t)
    size = t.element_size()
    return int.from_bytes(bytes(raw[index * size : (index + 1) * size]), "little")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (CHUNK // 4 + 1,), (7, 300, 3)])
def test_element_openings_verify_and_read_the_element(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    t = sample(dtype, shape)
    c = commit_tensor(t)
    assert c == commit_tensor(t, native=False)
    n = t.numel()
    for e in sorted({0, n // 2, n - 1}):
        assert verify_element(c, open_element(t, e)) == bits_of(t, e)


def test_commitment_binds_dtype_and_shape_not_just_bytes() -> None:
    t = sample(torch.float32, (4, 6))
    assert commit_tensor(t) != commit_tensor(t.view(torch.int32))
    assert commit_tensor(t) != commit_tensor(t.reshape(6, 4))
    assert commit_tensor(t) != commit_tensor(t.reshape(24))


def test_one_ulp_changes_the_commitment() -> None:
    t = sample(torch.float32, (1000,))
    u = t.clone()
    u.view(torch.int32)[517] += 1
    assert commit_tensor(t) != commit_tensor(u)


def test_scalar_and_empty() -> None:
    s = torch.tensor(2.0)
    assert header(1, ()) == bytes([1, 0])
    assert verify_element(commit_tensor(s), open_element(s, 0)) == 0x40000000
    e = torch.zeros(0, 4)
    assert commit_tensor(e) != commit_tensor(torch.zeros(4, 0))
    with pytest.raises(ProofError, match="out of range"):
        open_element(e, 0)


def test_non_contiguous_is_refused() -> None:
    t = sample(torch.float32, (8, 8)).t()
    with pytest.raises(UnsupportedTensorError, match=r"not contiguous; call \.contiguous\(\)"):
        commit_tensor(t)
    assert commit_tensor(t.contiguous()) == commit_tensor(t.contiguous().clone())


@pytest.mark.parametrize("dtype", [torch.complex64, torch.float8_e4m3fn, torch.uint16])
def test_unsupported_dtype_is_refused(dtype: torch.dtype) -> None:
    with pytest.raises(UnsupportedTensorError, match="has no commitment code; supported: float32"):
        commit_tensor(torch.zeros(3, dtype=dtype))


def test_sparse_is_refused() -> None:
    with pytest.raises(UnsupportedTensorError, match="layout"):
        commit_tensor(torch.eye(3).to_sparse())


def test_opening_for_the_wrong_element_is_rejected() -> None:
    t = sample(torch.float32, (5000,))
    op = open_element(t, 10)
    moved = type(op)(op.dtype, op.shape, 4000, op.chunk, op.proof)  # element 4000 lies in chunk 3
    with pytest.raises(ProofError, match="lies in chunk 3"):
        element_commitment(moved)
