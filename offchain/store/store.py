"""Typed, checked access to a content-addressed store: tensors, states, programs, datasets, blobs.

Each kind is keyed by the commitment the protocol already uses for it, and every `get_*`
decodes the bytes and recomputes that commitment before returning anything, so a backend
(a folder, a bucket, a peer) never has to be trusted. Byte layouts: docs/store.md.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import torch

from offchain.store.backend import Backend, FolderBackend, check_key, check_kind
from offchain.store.errors import CorruptObjectError
from trainer.commit import commit_tensor, dtype_code, state_root
from trainer.commit.records import canonical_names
from trainer.commit.tensor import DTYPES, MAX_NDIM, header, numel, tensor_bytes
from trainer.data.dataset import Dataset
from trainer.program import Program, ProgramError, onnx_io

TENSOR: Final = "tensor"
STATE: Final = "state"
PROGRAM: Final = "program"
DATASET: Final = "dataset"
BLOB: Final = "blob"

TENSOR_TAG: Final = b"TNSR"
STATE_TAG: Final = b"STAT"
DATASET_TAG: Final = b"DSET"

_U32: Final = struct.Struct(">I")
_U64: Final = struct.Struct(">Q")


class _Undecodable(Exception):
    """Bytes that are not an object of the expected format (turned into CorruptObjectError)."""


# -- writing -------------------------------------------------------------------------------


def _name(name: str) -> bytes:
    b = name.encode("utf-8")
    return _U32.pack(len(b)) + b


def _encode_tensor(t: torch.Tensor) -> bytes:
    """`"TNSR" || u8(dtype) || u8(ndim) || u64(dim)... || data`, data row-major little-endian."""
    return b"".join((TENSOR_TAG, header(dtype_code(t.dtype), tuple(t.shape)), tensor_bytes(t)))


def _sized_tensor(t: torch.Tensor) -> bytes:
    body = _encode_tensor(t)
    return _U64.pack(len(body)) + body


def _encode_state(state: Mapping[str, torch.Tensor]) -> bytes:
    """`"STAT" || u32(n) || n * (u32(len) || name || u64(len) || tensor)`, names in canonical order."""
    names = canonical_names(list(state))
    parts = [STATE_TAG, _U32.pack(len(names))]
    for name in names:
        parts += (_name(name), _sized_tensor(state[name].contiguous()))
    return b"".join(parts)


def _encode_dataset(d: Dataset) -> bytes:
    """`"DSET" || name || u64(count) || u32(fields) || fields * (name || tensor[count, ...]) || H(all before)`.

    Each field is stored once, stacked over the examples; the trailing SHA-256 covers the
    dataset's name, which its root does not commit to.
    """
    fields = canonical_names(list(d.examples[0]))
    parts = [DATASET_TAG, _name(d.name), _U64.pack(len(d.examples)), _U32.pack(len(fields))]
    for f in fields:
        parts += (_name(f), _sized_tensor(torch.stack([ex[f] for ex in d.examples])))
    body = b"".join(parts)
    return body + hashlib.sha256(body).digest()


# -- reading -------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n > len(self.data) - self.pos:
            raise _Undecodable(f"it ends at byte {len(self.data)}, {n} more were expected at byte {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def tag(self, tag: bytes) -> None:
        got = bytes(self.take(len(tag)))
        if got != tag:
            raise _Undecodable(f"it starts with {got!r}, not the tag {tag!r}")

    def u8(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:
        return int(_U32.unpack(self.take(4))[0])

    def u64(self) -> int:
        return int(_U64.unpack(self.take(8))[0])

    def name(self) -> str:
        raw = self.take(self.u32())
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as e:
            raise _Undecodable(f"a name at byte {self.pos - len(raw)} is not UTF-8: {e}") from None

    def end(self) -> None:
        if self.pos != len(self.data):
            raise _Undecodable(f"{len(self.data) - self.pos} bytes follow the end of the object at byte {self.pos}")


def _decode_tensor(data: bytes | memoryview) -> torch.Tensor:
    r = _Reader(data)
    r.tag(TENSOR_TAG)
    code, ndim = r.u8(), r.u8()
    if code not in DTYPES:
        raise _Undecodable(f"dtype code {code} is not one of {sorted(DTYPES)}")
    if ndim > MAX_NDIM:
        raise _Undecodable(f"it claims {ndim} dimensions, more than {MAX_NDIM}")
    shape = tuple(r.u64() for _ in range(ndim))
    dtype, size = DTYPES[code]
    n = numel(shape)
    if any(d >= 2**63 for d in shape) or n >= 2**63:
        raise _Undecodable(f"shape {shape} is too large for a tensor")
    raw = r.take(n * size)  # checks that the bytes are there before anything is allocated
    r.end()
    if n == 0:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    if dtype == torch.bool and int(flat.max()) > 1:
        raise _Undecodable("a bool element is neither 0 nor 1")
    return flat.view(dtype).reshape(shape)


def _sized(r: _Reader) -> memoryview:
    return r.take(r.u64())


def _check_order(names: list[str], what: str) -> None:
    encoded = [n.encode("utf-8") for n in names]
    if not all(encoded) or any(a >= b for a, b in itertools.pairwise(encoded)):
        raise _Undecodable(f"its {what} names {names} are not non-empty, distinct and in canonical order")


def _decode_state(data: bytes | memoryview) -> dict[str, torch.Tensor]:
    r = _Reader(data)
    r.tag(STATE_TAG)
    count = r.u32()
    state: dict[str, torch.Tensor] = {}
    names: list[str] = []
    for _ in range(count):
        name = r.name()
        names.append(name)
        state[name] = _decode_tensor(_sized(r))
    r.end()
    _check_order(names, "state")
    return state


def _decode_dataset(data: bytes | memoryview) -> Dataset:
    view = memoryview(data)
    if len(view) < 32 or hashlib.sha256(view[:-32]).digest() != bytes(view[-32:]):
        raise _Undecodable("its trailing SHA-256 does not match the bytes before it")
    r = _Reader(view[:-32])
    r.tag(DATASET_TAG)
    name, count, nfields = r.name(), r.u64(), r.u32()
    if count == 0:
        raise _Undecodable("it holds no examples")
    columns: dict[str, tuple[torch.Tensor, ...]] = {}
    for _ in range(nfields):
        field = r.name()
        stacked = _decode_tensor(_sized(r))
        if stacked.ndim == 0 or stacked.shape[0] != count:
            raise _Undecodable(f"field {field!r} has shape {tuple(stacked.shape)}, not {count} stacked examples")
        columns[field] = stacked.unbind(0)
    r.end()
    _check_order(list(columns), "field")
    return Dataset(name, [{f: col[i] for f, col in columns.items()} for i in range(count)])


# -- the store -----------------------------------------------------------------------------


class Store:
    """Publish and fetch objects by commitment; every get re-checks the commitment.

    `Store(path)` keeps objects in a folder (FolderBackend); `Store(backend)` uses any
    `Backend`. A get raises MissingObjectError when nothing is stored under the key and
    CorruptObjectError when what is stored does not decode or commits to something else.
    """

    def __init__(self, backend: Backend | str | os.PathLike[str]) -> None:
        self.backend: Backend = FolderBackend(Path(backend)) if isinstance(backend, str | os.PathLike) else backend

    def __repr__(self) -> str:
        return f"Store({self.backend!r})"

    def has(self, kind: str, key: bytes) -> bool:
        return self.backend.has(check_kind(kind), check_key(key))

    def delete(self, kind: str, key: bytes) -> bool:
        """Remove an object; True if something was removed."""
        return self.backend.delete(check_kind(kind), check_key(key))

    def _get(self, kind: str, key: bytes) -> tuple[bytes, bytes]:
        """The checked key and the raw bytes under it (ValueError for a malformed key)."""
        key = check_key(key)
        return key, self.backend.get(kind, key)

    def _corrupt(self, kind: str, key: bytes, detail: str) -> CorruptObjectError:
        return CorruptObjectError(kind, key, f"{detail} (read from {self.backend.location})")

    def _mismatch(self, kind: str, key: bytes, what: str, got: bytes) -> CorruptObjectError:
        return self._corrupt(kind, key, f"its contents have {what} 0x{got.hex()}, not the key")

    # -- tensors

    def put_tensor(self, t: torch.Tensor) -> bytes:
        """Store a dense tensor; the key is its commitment (of `t.contiguous()`)."""
        t = t.detach().contiguous()
        key = commit_tensor(t)
        self.backend.put(TENSOR, key, _encode_tensor(t))
        return key

    def get_tensor(self, commitment: bytes) -> torch.Tensor:
        commitment, data = self._get(TENSOR, commitment)
        try:
            t = _decode_tensor(data)
        except _Undecodable as e:
            raise self._corrupt(TENSOR, commitment, f"it is not a stored tensor: {e}") from None
        got = commit_tensor(t)
        if got != commitment:
            raise self._mismatch(TENSOR, commitment, "tensor commitment", got)
        return t

    # -- states

    def put_state(self, state: Mapping[str, torch.Tensor]) -> bytes:
        """Store a named set of tensors as one object; the key is its state root."""
        state = {name: t.detach().contiguous() for name, t in state.items()}
        key = state_root(state)
        self.backend.put(STATE, key, _encode_state(state))
        return key

    def get_state(self, root: bytes) -> dict[str, torch.Tensor]:
        """The state under `root`, names in canonical (UTF-8 byte) order."""
        root, data = self._get(STATE, root)
        try:
            state = _decode_state(data)
        except _Undecodable as e:
            raise self._corrupt(STATE, root, f"it is not a stored state: {e}") from None
        got = state_root(state)
        if got != root:
            raise self._mismatch(STATE, root, "state root", got)
        return state

    # -- programs

    def put_program(self, program: Program) -> bytes:
        """Store a program as its ONNX file (docs/program.md); the key is its program hash."""
        key = program.program_hash
        self.backend.put(PROGRAM, key, onnx_io.to_bytes(program))
        return key

    def get_program(self, program_hash: bytes) -> Program:
        program_hash, data = self._get(PROGRAM, program_hash)
        try:
            return onnx_io.from_bytes(data, expected_hash=program_hash)
        except ProgramError as e:
            raise self._corrupt(PROGRAM, program_hash, f"{type(e).__name__}: {e}") from None

    # -- datasets

    def put_dataset(self, dataset: Dataset) -> bytes:
        """Store a dataset (name and examples in order); the key is its dataset root."""
        key = dataset.root
        self.backend.put(DATASET, key, _encode_dataset(dataset))
        return key

    def get_dataset(self, root: bytes) -> Dataset:
        root, data = self._get(DATASET, root)
        try:
            dataset = _decode_dataset(data)
        except _Undecodable as e:
            raise self._corrupt(DATASET, root, f"it is not a stored dataset: {e}") from None
        got = dataset.root
        if got != root:
            raise self._mismatch(DATASET, root, "dataset root", got)
        return dataset

    # -- blobs

    def put_blob(self, data: bytes) -> bytes:
        """Store raw bytes; the key is their SHA-256."""
        data = bytes(data)
        key = hashlib.sha256(data).digest()
        self.backend.put(BLOB, key, data)
        return key

    def get_blob(self, digest: bytes) -> bytes:
        digest, data = self._get(BLOB, digest)
        got = hashlib.sha256(data).digest()
        if got != digest:
            raise self._mismatch(BLOB, digest, "SHA-256", got)
        return data
