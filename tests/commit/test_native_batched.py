"""The batched native calls (many tensor commitments, a state root, a batch's rolling digest in one call)
against the pure-Python reference: the same bits, compared as hashes, on both compression functions."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from trainer.commit import _native
from trainer.commit.records import name_hash, state_root_from_commitments, state_root_ordered
from trainer.commit.tensor import commit_tensor, commit_tensors
from zkdv.transcript import rolling_root

SIZES = [0, 1, 55, 56, 63, 64, 65, 1023, 1024, 1025, 3 * 1024 + 7, 9 * 1024, 17 * 1024 + 1]  # float32 elements


def _tensors(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = [torch.randn(n, generator=g) for n in SIZES]
    out += [torch.randn(3, 5, 7, generator=g).double(), torch.randint(0, 9, (33,), generator=g),
            torch.rand(4097, generator=g) > 0.5, torch.randn((), generator=g), torch.zeros(0, 3),
            torch.randn(64, 65, generator=g).to(torch.bfloat16), torch.randint(-5, 5, (4099,), dtype=torch.int8)]
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_commit_tensors_match_reference(sha256_impl: str, seed: int) -> None:
    ts = _tensors(seed)
    got = commit_tensors(ts)
    want = [commit_tensor(t, native=False) for t in ts]
    assert hashlib.sha256(b"".join(got)).digest() == hashlib.sha256(b"".join(want)).digest(), sha256_impl


def test_commit_tensors_threads_large(sha256_impl: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREED_HASH_THREADS", "2")
    n = (3 << 20) // 4 + 5 if sha256_impl == "shani" else 70_000  # a threaded row (>= 2 MiB) on SHA-NI
    ts = [torch.randn(n, generator=torch.Generator().manual_seed(3)), torch.randn(17)]
    assert commit_tensors(ts) == [commit_tensor(t, native=False) for t in ts]


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_commit_tensors_shared_by_threads(sha256_impl: str, monkeypatch: pytest.MonkeyPatch, threads: str) -> None:
    """Tensors of 1 MiB and more in all, none of 2 MiB: threads take whole tensors in turn."""
    monkeypatch.setenv("REFEREED_HASH_THREADS", threads)
    g = torch.Generator().manual_seed(4)
    sizes = [70_000, 5, 0, 200_003, 1, 65_536] if sha256_impl == "shani" else [70_000, 5, 0, 200_003]
    ts = [torch.randn(n, generator=g) for n in sizes] + _tensors(5)
    got = commit_tensors(ts)
    assert hashlib.sha256(b"".join(got)).digest() == hashlib.sha256(
        b"".join(commit_tensor(t, native=False) for t in ts)).digest()


def test_commit_tensors_fallback_without_library(monkeypatch: pytest.MonkeyPatch) -> None:
    ts = _tensors(2)
    want = [commit_tensor(t, native=False) for t in ts]
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert commit_tensors(ts) == want


def test_commit_tensors_refuse_what_commit_tensor_refuses() -> None:
    with pytest.raises(Exception, match="not contiguous"):
        commit_tensors([torch.randn(4, 4), torch.randn(4, 4).t()])
    with pytest.raises(Exception, match="no commitment code"):
        commit_tensors([torch.randn(2).to(torch.complex64)])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 100])
def test_state_root_ordered_matches_reference(sha256_impl: str, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    rng = np.random.default_rng(n)
    names = sorted(f"param/w{i:03d}" for i in range(n))
    commits = {name: rng.integers(0, 256, 32, dtype=np.uint8).tobytes() for name in names}
    hashes = b"".join(name_hash(x) for x in names)
    want = state_root_from_commitments(commits)
    assert state_root_ordered(hashes, [commits[x] for x in names]) == want, sha256_impl
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert state_root_ordered(hashes, [commits[x] for x in names]) == want


def _rolling_py(rows: np.ndarray, window: int, monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as m:
        m.setenv("REFEREED_NATIVE", "0")
        return rolling_root(rows, window)


@pytest.mark.parametrize(("rows", "width", "window"), [(1, 1, 1), (64, 72, 8), (16, 520, 32), (3, 40, 40),
                                                       (5, 300, 1), (0, 9, 3), (7, 4096 + 3, 255),
                                                       (13, 100, 8), (17, 2, 2), (24, 600, 300), (9, 264, 8)])
def test_rolling_root_matches_reference(sha256_impl: str, monkeypatch: pytest.MonkeyPatch, rows: int, width: int,
                                        window: int) -> None:
    data = np.random.default_rng(width).integers(0, 256, (rows, width), dtype=np.uint8)
    data[0:1, :5] = 255 if rows else data[0:1, :5]
    if width >= 264:  # the largest residues: rows of 255s (and of 0s) through whole windows
        data[1:3] = 255
        data[3:4] = 0
    want = _rolling_py(data, window, monkeypatch)
    got = _native.rolling_root(data, window)
    assert got == want, sha256_impl
    assert rolling_root(data, window) == want


def test_a_stale_library_without_the_batched_calls_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library built from an older source (no rt_commit_tensors ...) is used for what it has; the batched
    callers take the Python path, with the same bits."""
    ts = _tensors(6)
    want = [commit_tensor(t, native=False) for t in ts]
    monkeypatch.setattr(_native, "_batched", [False])
    assert _native.commit_buffers([0], [0], [b""]) is None
    assert commit_tensors(ts) == want
    rows = np.random.default_rng(1).integers(0, 256, (4, 20), dtype=np.uint8)
    assert _native.rolling_root(rows, 3) is None
    assert rolling_root(rows, 3) == _rolling_py(rows, 3, monkeypatch)
