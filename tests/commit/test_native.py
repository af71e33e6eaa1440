"""The native hashing library against the pure-Python reference: the same bits, always."""

from __future__ import annotations

import ctypes
import hashlib
import os

import numpy as np
import pytest
import torch

from trainer.commit import _native
from trainer.commit.merkle import _parent_row_py, top_of_row
from trainer.commit.tensor import CHUNK, chunk_leaves_py, commit_tensor

SIZES = [0, 1, 55, 56, 63, 64, 65, 4095, 4096, 4097, 3 * 4096 + 1, 3 * 1024 * 1024 + 123]
THREADS = ["1", "2"]  # the library threads only rows of 2 MiB and more: see SIZES, npairs


def _random_bytes(n: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed + n).integers(0, 256, size=n, dtype=np.uint8).tobytes()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REFEREED_NATIVE", raising=False)
    monkeypatch.delenv("REFEREED_HASH_THREADS", raising=False)


def test_sha256_known_answers(sha256_lib: ctypes.CDLL, sha256_impl: str) -> None:
    data = _random_bytes(300)
    for n in range(301):
        out = ctypes.create_string_buffer(32)
        sha256_lib.rt_sha256(data[:n], n, out)
        assert out.raw == hashlib.sha256(data[:n]).digest(), f"{sha256_impl}, {n} bytes"


def test_sha256_standard_vectors(sha256_lib: ctypes.CDLL, sha256_impl: str) -> None:
    for msg, want in [
        (b"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (b"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
        ),
    ]:
        out = ctypes.create_string_buffer(32)
        sha256_lib.rt_sha256(msg, len(msg), out)
        assert out.raw.hex() == want


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("n", SIZES)
def test_chunk_leaves_match_reference(
    sha256_lib: ctypes.CDLL, sha256_impl: str, monkeypatch: pytest.MonkeyPatch, n: int, threads: str
) -> None:
    if sha256_impl == "portable" and n > 65536:
        n = 65536 + 17  # the portable path is slow; its threading is the same code
    monkeypatch.setenv("REFEREED_HASH_THREADS", threads)
    data = _random_bytes(n)
    assert _native.chunk_leaves(data, CHUNK) == chunk_leaves_py(data)


@pytest.mark.parametrize("threads", ["0", "1", "2", "3", "8", "64", "1000"])
@pytest.mark.parametrize("nbytes", [2**21 - 1, 2**21, 2**21 + 1, 5 * 2**20 + 4097, 9 * 2**20 + 3])
def test_chunk_leaves_thread_splits(
    sha256_lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, nbytes: int, threads: str
) -> None:
    """Sizes that the library splits over several threads (it wants 1 MiB per thread)."""
    monkeypatch.setenv("REFEREED_HASH_THREADS", threads)
    data = _random_bytes(nbytes)
    assert _native.chunk_leaves(data, CHUNK) == chunk_leaves_py(data)


@pytest.mark.parametrize("chunk", [1, 2, 55, 56, 62, 63, 64, 65, 127, 128, 129, 1000])
def test_chunk_leaves_other_chunk_sizes(sha256_lib: ctypes.CDLL, sha256_impl: str, chunk: int) -> None:
    """Chunk sizes around the block boundaries, odd and even chunk counts (one or two lanes)."""
    for n in (chunk * 7, chunk * 8 - 1, chunk * 70 + 3):
        data = _random_bytes(n)
        assert _native.chunk_leaves(data, chunk) == chunk_leaves_small(data, chunk), (sha256_impl, n)


def chunk_leaves_small(data: bytes, chunk: int) -> bytes:
    return b"".join(hashlib.sha256(b"\x00" + data[i : i + chunk]).digest() for i in range(0, len(data), chunk))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("npairs", [0, 1, 2, 3, 63, 64, 65, 2047, 2048, 5001, 40_001])
def test_parent_row_matches_reference(
    sha256_lib: ctypes.CDLL, sha256_impl: str, monkeypatch: pytest.MonkeyPatch, npairs: int, threads: str
) -> None:
    monkeypatch.setenv("REFEREED_HASH_THREADS", threads)
    row = _random_bytes(64 * npairs)
    assert _native.parent_row(row) == _parent_row_py(row)


@pytest.mark.parametrize("threads", ["1", "2", "3"])
@pytest.mark.parametrize(
    "chunks", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 255, 257, 1000, 2**9 + 1, 2**10 - 1, 2**11 + 3]
)
def test_tree_top_matches_reference(
    sha256_lib: ctypes.CDLL, sha256_impl: str, monkeypatch: pytest.MonkeyPatch, chunks: int, threads: str
) -> None:
    """The whole tree in one call: every padding pattern of odd rows, last chunk full or short."""
    monkeypatch.setenv("REFEREED_HASH_THREADS", threads)
    for n in (CHUNK * chunks, CHUNK * chunks - 1, CHUNK * (chunks - 1) + 1):
        if n == 0:
            continue
        data = _random_bytes(n)
        assert _native.tree_top(data, CHUNK) == top_of_row(chunk_leaves_py(data), native=False), (sha256_impl, n)
    big = _random_bytes(5 * 2**20 + 4097)  # split over threads
    assert _native.tree_top(big, CHUNK) == top_of_row(chunk_leaves_py(big), native=False)
    with pytest.raises(ValueError, match="no bytes"):
        _native.tree_top(b"", CHUNK)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("n", SIZES)
def test_commit_tensor_matches_reference(
    sha256_lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, n: int, threads: str
) -> None:
    monkeypatch.setenv("REFEREED_HASH_THREADS", threads)
    t = torch.from_numpy(np.frombuffer(bytearray(_random_bytes(n)), dtype=np.uint8))
    assert commit_tensor(t, native=True) == commit_tensor(t, native=False)


@pytest.mark.parametrize("threads", THREADS)
def test_commit_float_tensor_matches_reference(
    sha256_lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, threads: str
) -> None:
    monkeypatch.setenv("REFEREED_HASH_THREADS", threads)
    g = torch.Generator().manual_seed(0)
    for shape in [(), (1,), (3, 5), (1024, 1025), (513, 4097)]:
        t = torch.randn(shape, generator=g, dtype=torch.float32)
        assert commit_tensor(t, native=True) == commit_tensor(t, native=False), shape


def test_buffer_kinds(sha256_lib: ctypes.CDLL) -> None:
    """bytes, read-only and writable memoryviews (bytearray, numpy), a non-contiguous view."""
    data = _random_bytes(5 * 4096 + 3)
    want = chunk_leaves_py(data)
    arr = np.frombuffer(bytearray(data), dtype=np.uint8)
    assert _native.chunk_leaves(memoryview(bytearray(data)), CHUNK) == want
    assert _native.chunk_leaves(memoryview(data), CHUNK) == want
    assert _native.chunk_leaves(arr.data, CHUNK) == want
    assert _native.chunk_leaves(memoryview(data)[1:], CHUNK) == chunk_leaves_py(data[1:])
    strided = memoryview(data)[::2]
    assert _native.chunk_leaves(strided, CHUNK) == chunk_leaves_py(data[::2])


def test_env_is_read_per_call(sha256_lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _random_bytes(4097)
    assert _native.chunk_leaves(data, CHUNK) is not None
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert _native.chunk_leaves(data, CHUNK) is None
    assert _native.parent_row(bytes(64)) is None
    assert not _native.available()
    monkeypatch.setenv("REFEREED_NATIVE", "1")
    assert _native.available()
    monkeypatch.setenv("REFEREED_HASH_THREADS", "1")
    assert _native.threads() == 1
    monkeypatch.setenv("REFEREED_HASH_THREADS", "5")
    assert _native.threads() == 5
    monkeypatch.delenv("REFEREED_HASH_THREADS")
    assert _native.threads() == max(1, min(os.cpu_count() or 1, 8))
    monkeypatch.setenv("REFEREED_HASH_THREADS", "many")
    with pytest.raises(ValueError, match="REFEREED_HASH_THREADS"):
        _native.threads()


def test_commit_tensor_native_disabled_is_reference(sha256_lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    t = torch.arange(10000, dtype=torch.float32)
    want = commit_tensor(t, native=False)
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert commit_tensor(t) == want
