"""Tensor commitments and element openings, docs/commitments.md section 3."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import torch

from trainer.commit import _native
from trainer.commit.errors import ProofError, UnsupportedTensorError
from trainer.commit.merkle import (
    LEAF_PREFIX,
    TENSOR_PREFIX,
    MerkleTree,
    Opening,
    fold,
    leaf_hash,
    list_root,
    root_of_row,
)

CHUNK: Final = 4096
# Up to this many chunks (64 KiB), hashlib on the calling thread is faster than a call into the native library
# (whose fixed cost, a ctypes call and its buffers, is some tens of microseconds): same bits either way.
SMALL_CHUNKS: Final = 16
MAX_NDIM: Final = 32

# code -> (torch dtype, element size in bytes)
DTYPES: Final[dict[int, tuple[torch.dtype, int]]] = {
    1: (torch.float32, 4),
    2: (torch.float64, 8),
    3: (torch.float16, 2),
    4: (torch.bfloat16, 2),
    5: (torch.uint8, 1),
    6: (torch.int8, 1),
    7: (torch.int16, 2),
    8: (torch.int32, 4),
    9: (torch.int64, 8),
    10: (torch.bool, 1),
}
DTYPE_CODES: Final[dict[torch.dtype, int]] = {dt: code for code, (dt, _) in DTYPES.items()}


def dtype_code(dtype: torch.dtype) -> int:
    try:
        return DTYPE_CODES[dtype]
    except KeyError:
        names = ", ".join(str(dt).removeprefix("torch.") for dt in DTYPE_CODES)
        raise UnsupportedTensorError(f"dtype {dtype} has no commitment code; supported: {names}") from None


def element_size(code: int) -> int:
    try:
        return DTYPES[code][1]
    except KeyError:
        raise UnsupportedTensorError(f"unknown dtype code {code}") from None


def header(code: int, shape: tuple[int, ...]) -> bytes:
    """`u8(dtype) || u8(ndim) || u64(dim)...`."""
    element_size(code)
    if len(shape) > MAX_NDIM:
        raise UnsupportedTensorError(f"tensor has {len(shape)} dimensions; at most {MAX_NDIM} are supported")
    if any(not 0 <= d < 2**64 for d in shape):
        raise UnsupportedTensorError(f"shape {shape} has a dimension outside 0 .. 2^64-1")
    return bytes([code, len(shape)]) + b"".join(d.to_bytes(8, "big") for d in shape)


def commitment_of(code: int, shape: tuple[int, ...], data_root: bytes) -> bytes:
    return hashlib.sha256(TENSOR_PREFIX + header(code, shape) + data_root).digest()


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def chunk_count(nbytes: int) -> int:
    return -(-nbytes // CHUNK)


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """The committed bytes of `t`: row-major, little-endian. Refuses what it would have to guess."""
    dtype_code(t.dtype)
    if t.layout != torch.strided:
        raise UnsupportedTensorError(f"tensor layout {t.layout} is not supported; pass a dense tensor")
    if not t.is_contiguous():
        raise UnsupportedTensorError(
            f"tensor of shape {tuple(t.shape)} with strides {t.stride()} is not contiguous; "
            "call .contiguous() first so that its byte order is the row-major one being committed"
        )
    if sys.byteorder != "little":
        raise UnsupportedTensorError("committing tensors needs a little-endian host")
    flat = t.detach().reshape(-1)
    if flat.device.type != "cpu":
        flat = flat.cpu()
    if flat.numel() == 0:
        return memoryview(b"")
    return flat.view(torch.uint8).numpy().data


def chunk_leaves_py(data: memoryview | bytes) -> bytes:
    """Leaf hashes of the 4096-byte chunks of `data`, pure Python (the reference)."""
    pre = hashlib.sha256(LEAF_PREFIX)
    out = []
    for i in range(0, len(data), CHUNK):
        h = pre.copy()
        h.update(data[i : i + CHUNK])
        out.append(h.digest())
    return b"".join(out)


def chunk_leaves(data: memoryview | bytes, *, native: bool = True) -> bytes:
    if native and len(data) > SMALL_CHUNKS * CHUNK:
        fast = _native.chunk_leaves(data, CHUNK)
        if fast is not None:
            return fast
    return chunk_leaves_py(data)


def data_root(data: memoryview | bytes, *, native: bool = True) -> bytes:
    count = chunk_count(len(data))
    if native and count > 1:  # one native call for the whole tree (a single chunk is one hashlib call)
        top = _native.tree_top(data, CHUNK)
        if top is not None:
            return list_root(count, top)
    return root_of_row(chunk_leaves(data, native=native), native=native)


def commit_tensor(t: torch.Tensor, *, native: bool = True) -> bytes:
    """Commitment `H(0x03 || header || dataRoot)` of a dense, contiguous tensor."""
    code = dtype_code(t.dtype)
    return commitment_of(code, tuple(t.shape), data_root(tensor_bytes(t), native=native))


_HEADERS: dict[tuple[int, tuple[int, ...]], bytes] = {}


def commit_tensors(tensors: Sequence[torch.Tensor], *, native: bool = True) -> list[bytes]:
    """The commitments of many tensors, `[commit_tensor(t) for t in tensors]`, in one native call when the
    library is there (same bits: tests/commit/test_native.py compares them); anything but dense, contiguous
    CPU tensors on a little-endian host goes through `commit_tensor` (and its errors)."""
    if native and tensors and sys.byteorder == "little":
        addresses, lengths, headers = [], [], []
        for t in tensors:
            if t.layout != torch.strided or t.device.type != "cpu" or not t.is_contiguous():
                break
            code = dtype_code(t.dtype)
            shape = tuple(t.shape)
            head = _HEADERS.get((code, shape))
            if head is None:
                head = header(code, shape)
                if len(_HEADERS) < 4096:  # a run has a few fixed shapes; a bound all the same
                    _HEADERS[(code, shape)] = head
            addresses.append(t.data_ptr())
            lengths.append(t.numel() * t.element_size())
            headers.append(head)
        else:
            row = _native.commit_buffers(addresses, lengths, headers)  # the tensors stay referenced meanwhile
            if row is not None:
                return [row[i : i + 32] for i in range(0, len(row), 32)]
    return [commit_tensor(t, native=native) for t in tensors]


@dataclass(frozen=True, slots=True)
class ElementOpening:
    """Everything a verifier needs, besides the commitment, to read one element."""

    dtype: int
    shape: tuple[int, ...]
    index: int  # flat row-major element index
    chunk: bytes
    proof: Opening

    @property
    def value_bits(self) -> int:
        """The element's bytes read little-endian, as the Solidity library returns them."""
        size = element_size(self.dtype)
        off = (self.index * size) % CHUNK
        return int.from_bytes(self.chunk[off : off + size], "little")


def open_element(t: torch.Tensor, index: int) -> ElementOpening:
    code = dtype_code(t.dtype)
    n = t.numel()
    if not 0 <= index < n:
        raise ProofError(f"element index {index} is out of range for a tensor of {n} elements")
    data = tensor_bytes(t)
    tree = MerkleTree(chunk_leaves(data))
    j = index * element_size(code) // CHUNK
    return ElementOpening(code, tuple(t.shape), index, bytes(data[j * CHUNK : (j + 1) * CHUNK]), tree.open(j))


def element_commitment(op: ElementOpening) -> bytes:
    """The tensor commitment an element opening implies; raises ProofError if malformed."""
    size = element_size(op.dtype)
    n = numel(op.shape)
    if not 0 <= op.index < n:
        raise ProofError(f"element index {op.index} is out of range for shape {op.shape} ({n} elements)")
    nbytes = n * size
    j = op.index * size // CHUNK
    want = min(CHUNK, nbytes - j * CHUNK)
    if len(op.chunk) != want:
        raise ProofError(f"chunk {j} is {len(op.chunk)} bytes; shape {op.shape} makes it {want}")
    if op.proof.index != j or op.proof.count != chunk_count(nbytes):
        raise ProofError(
            f"opening is for leaf {op.proof.index} of {op.proof.count}; element {op.index} lies in chunk {j} "
            f"of {chunk_count(nbytes)}"
        )
    root = fold(op.proof.count, j, leaf_hash(op.chunk), op.proof.siblings)
    return commitment_of(op.dtype, op.shape, root)


def verify_element(commitment: bytes, op: ElementOpening) -> int:
    """Check an element opening against a tensor commitment; return the element's bits."""
    got = element_commitment(op)
    if got != commitment:
        raise ProofError(f"element opening implies commitment {got.hex()}, not {bytes(commitment).hex()}")
    return op.value_bits
