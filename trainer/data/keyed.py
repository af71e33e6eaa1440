"""Counter-based randomness keyed by the task (docs/data.md): batches and initial parameters.

Everything is SHA-256 in counter mode, so a contract can recompute a batch index with one
precompile call, and any implementation gets the same numbers without a shared RNG library.
"""

from __future__ import annotations

import hashlib
import math
from typing import Final

import numpy as np
import torch

from trainer.commit.records import name_hash

BATCH_TAG: Final = b"BTCH"
INIT_TAG: Final = b"INIT"


def _u256(v: int) -> bytes:
    if not 0 <= v < 2**256:
        raise ValueError(f"{v} does not fit in 256 unsigned bits")
    return v.to_bytes(32, "big")


def batch_indices(seed: int, step: int, batch_size: int, dataset_size: int) -> list[int]:
    """Example indices of step `step`: index j = u256(H("BTCH" || seed || step || j)) mod n."""
    if dataset_size <= 0:
        raise ValueError(f"dataset size must be positive, got {dataset_size}")
    if batch_size <= 0:
        raise ValueError(f"batch size must be positive, got {batch_size}")
    prefix = BATCH_TAG + _u256(seed) + _u256(step)
    return [int.from_bytes(hashlib.sha256(prefix + _u256(j)).digest(), "big") % dataset_size for j in range(batch_size)]


def uniform_symmetric(seed: int, name: str, shape: tuple[int, ...], bound: float) -> torch.Tensor:
    """fp32 tensor of values in (-bound, bound), keyed by (seed, tensor name).

    Block b of the stream is H("INIT" || seed || H(name) || b): eight big-endian u32 words.
    Element k takes word k; u24 = word >> 8; the value is fp32(bound) * ((2 u24 + 1 - 2^24) / 2^24),
    where the fraction is exact in fp32 and the product is one IEEE fp32 multiplication.
    """
    n = 1
    for d in shape:
        n *= d
    prefix = INIT_TAG + _u256(seed) + name_hash(name)
    blocks = -(-n // 8)
    stream = b"".join(hashlib.sha256(prefix + _u256(b)).digest() for b in range(blocks))
    words = np.frombuffer(stream, dtype=">u4")[:n].astype(np.int64)
    odd = 2 * (words >> 8) + 1 - 2**24  # odd integers in (-2^24, 2^24): exact in fp32
    frac = torch.from_numpy(odd.astype(np.float32)) / 2**24  # exact: division by a power of two
    return (frac * torch.tensor(bound, dtype=torch.float32)).reshape(shape)


DROPOUT_TAG: Final = b"DROP"


def dropout_threshold(p: float) -> int:
    """floor(p * 2^32): a word w drops its element iff w < this (exact: p * 2^32 scales a binary64)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    return math.floor(p * 2.0**32)


def dropout_scale(p: float) -> float:
    """The kept elements' factor RN32(1 / RN64(1 - p)), as a Python float."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    return float(np.float32(1.0 / (1.0 - p)))


def dropout_mask(seed: int, step: int, name: str, shape: tuple[int, ...], p: float) -> torch.Tensor:
    """fp32 dropout mask keyed by (seed, step, module name): 0 (dropped) or dropout_scale(p).

    Block b of the stream is H("DROP" || seed || step || H(name) || b): eight big-endian u32
    words; element k (row-major) takes word k and is dropped iff word < dropout_threshold(p).
    """
    n = 1
    for d in shape:
        n *= d
    threshold = dropout_threshold(p)
    scale = dropout_scale(p)
    prefix = DROPOUT_TAG + _u256(seed) + _u256(step) + name_hash(name)
    stream = b"".join(hashlib.sha256(prefix + _u256(b)).digest() for b in range(-(-n // 8)))
    words = np.frombuffer(stream, dtype=">u4")[:n].astype(np.int64)
    mask = np.where(words >= threshold, np.float32(scale), np.float32(0.0)).astype(np.float32)
    return torch.from_numpy(mask).reshape(shape)
