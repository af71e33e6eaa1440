from __future__ import annotations

import hashlib
import os
import shutil
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from offchain.store import (
    BLOB,
    DATASET,
    PROGRAM,
    STATE,
    TENSOR,
    CorruptObjectError,
    FolderBackend,
    MissingObjectError,
    Store,
    StoreError,
)
from trainer.commit import commit_tensor, state_root
from trainer.commit.tensor import DTYPES, tensor_bytes
from trainer.data.dataset import Dataset
from trainer.workloads import Workload, mlp_digits

ALL_DTYPES = [dt for dt, _ in DTYPES.values()]
KINDS = [TENSOR, STATE, PROGRAM, DATASET, BLOB]


@pytest.fixture(scope="module")
def workload() -> Workload:
    w = mlp_digits(steps=8, checkpoint_interval=4, batch_size=8, seed=11)
    _ = w.program, w.dataset.root  # capture and hash once for the module
    return w


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store")


def random_bits(dtype: torch.dtype, shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    """Every bit pattern is fair game (NaN payloads, -0.0, subnormals), except bools, which are 0 or 1."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g, dtype=torch.uint8).bool()
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    return torch.randint(0, 256, (nbytes,), generator=g, dtype=torch.uint8).view(dtype).reshape(shape)


def float32_from_bits(*bits: int) -> torch.Tensor:
    return torch.frombuffer(bytearray(struct.pack(f"<{len(bits)}I", *bits)), dtype=torch.float32).clone()


def tiny_dataset(workload: Workload, n: int = 12) -> Dataset:
    return Dataset("digits/tiny", list(workload.dataset.examples[:n]))


def small_state(seed: int = 0) -> dict[str, torch.Tensor]:
    return {
        "param/w": random_bits(torch.float32, (3, 4), seed),
        "param/b": random_bits(torch.bfloat16, (4,), seed),
        "step": torch.tensor(seed, dtype=torch.int64),
        "mask/é": random_bits(torch.bool, (2, 2), seed),
    }


def put_sample(store: Store, kind: str, workload: Workload, seed: int = 0) -> bytes:
    """One object of `kind` (a different one for each seed, except programs: there is one)."""
    if kind == TENSOR:
        return store.put_tensor(random_bits(torch.float32, (5, 7), seed))
    if kind == STATE:
        return store.put_state(small_state(seed))
    if kind == PROGRAM:
        return store.put_program(workload.program)
    if kind == DATASET:
        return store.put_dataset(tiny_dataset(workload, 12 + seed))
    return store.put_blob(b"blob %d" % seed)


def getter(store: Store, kind: str) -> Callable[[bytes], object]:
    return {
        TENSOR: store.get_tensor,
        STATE: store.get_state,
        PROGRAM: store.get_program,
        DATASET: store.get_dataset,
        BLOB: store.get_blob,
    }[kind]


def object_path(store: Store, kind: str, key: bytes) -> Path:
    assert isinstance(store.backend, FolderBackend)
    return store.backend.path(kind, key)


def flip_offset(data: bytes, kind: str, key: bytes) -> int:
    """A byte whose change matters: for programs, one in the program hash the file records
    (the ONNX file also holds names the program hash does not cover); else the middle byte."""
    if kind == PROGRAM:
        return data.index(key.hex().encode()) + 5
    return len(data) // 2


# -- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (7, 300), (2, 3, 4)], ids=str)
def test_tensor_round_trips_bit_exactly(store: Store, dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    t = random_bits(dtype, shape)
    key = store.put_tensor(t)
    got = store.get_tensor(key)
    assert key == commit_tensor(t)
    assert commit_tensor(got) == key
    assert (got.dtype, got.shape) == (t.dtype, t.shape)
    assert bytes(tensor_bytes(got)) == bytes(tensor_bytes(t))


def test_float32_special_values_keep_their_bits(store: Store) -> None:
    t = float32_from_bits(0x7FC00001, 0xFFC12345, 0x7F800001, 0x80000000, 0x00000001, 0x7F800000, 0xFF800000)
    got = store.get_tensor(store.put_tensor(t))
    assert bytes(tensor_bytes(got)) == bytes(tensor_bytes(t))
    assert got[3].item() == 0.0 and torch.signbit(got[3])


def test_non_contiguous_tensor_is_stored_as_its_contiguous_copy(store: Store) -> None:
    t = random_bits(torch.int64, (4, 6)).t()
    key = store.put_tensor(t)
    assert key == commit_tensor(t.contiguous())
    assert torch.equal(store.get_tensor(key), t)


def test_state_round_trips_in_canonical_order(store: Store) -> None:
    state = small_state()
    root = store.put_state(state)
    got = store.get_state(root)
    assert root == state_root(state) == state_root(got)
    assert list(got) == sorted(state, key=lambda n: n.encode())
    assert all(commit_tensor(got[n]) == commit_tensor(state[n]) for n in state)


def test_empty_state_round_trips(store: Store) -> None:
    root = store.put_state({})
    assert store.get_state(root) == {}


def test_blob_is_keyed_by_sha256(store: Store) -> None:
    commitments = [commit_tensor(random_bits(torch.float32, (3,), s)) for s in range(3)]
    data = b"".join(commitments)
    key = store.put_blob(data)
    assert key == hashlib.sha256(data).digest()
    assert store.get_blob(key) == data
    assert store.get_blob(store.put_blob(b"")) == b""


def test_workload_program_dataset_and_state_round_trip(store: Store, workload: Workload) -> None:
    h = store.put_program(workload.program)
    assert h == workload.program.program_hash
    assert store.get_program(h).program_hash == h

    root = store.put_dataset(workload.dataset)
    got = store.get_dataset(root)
    assert root == workload.dataset.root == got.root
    assert got.name == workload.dataset.name and len(got) == len(workload.dataset)
    assert got.examples[0].keys() == workload.dataset.examples[0].keys()

    state = workload.initial_state()
    sroot = store.put_state(state)
    assert sroot == state_root(state) == state_root(store.get_state(sroot))


def test_store_works_over_any_backend(workload: Workload) -> None:
    class MemoryBackend:
        location = "memory"

        def __init__(self) -> None:
            self.objects: dict[tuple[str, bytes], bytes] = {}

        def put(self, kind: str, key: bytes, data: bytes) -> None:
            self.objects[kind, key] = bytes(data)

        def get(self, kind: str, key: bytes) -> bytes:
            try:
                return self.objects[kind, key]
            except KeyError:
                raise MissingObjectError(kind, key, self.location) from None

        def has(self, kind: str, key: bytes) -> bool:
            return (kind, key) in self.objects

        def delete(self, kind: str, key: bytes) -> bool:
            return self.objects.pop((kind, key), None) is not None

        def keys(self, kind: str) -> Iterator[bytes]:
            return iter([k for kd, k in self.objects if kd == kind])

    backend = MemoryBackend()
    store = Store(backend)
    key = store.put_state(small_state())
    assert state_root(store.get_state(key)) == key
    backend.objects[STATE, key] = backend.objects[STATE, store.put_state(small_state(1))]
    with pytest.raises(CorruptObjectError, match="memory"):
        store.get_state(key)


def test_store_accepts_a_str_path(tmp_path: Path) -> None:
    store = Store(str(tmp_path))
    key = store.put_blob(b"x")
    assert (tmp_path / BLOB / key.hex()[:2] / key.hex()).read_bytes() == b"x"


# -- every get checks ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_flipped_byte_on_disk_is_corrupt(store: Store, workload: Workload, kind: str) -> None:
    key = put_sample(store, kind, workload)
    path = object_path(store, kind, key)
    data = bytearray(path.read_bytes())
    data[flip_offset(bytes(data), kind, key)] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError) as info:
        getter(store, kind)(key)
    assert (info.value.kind, info.value.key) == (kind, key)
    assert key.hex() in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("keep", [0, 5, -1])
def test_truncated_file_is_corrupt(store: Store, workload: Workload, kind: str, keep: int) -> None:
    key = put_sample(store, kind, workload)
    path = object_path(store, kind, key)
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    with pytest.raises(CorruptObjectError):
        getter(store, kind)(key)


@pytest.mark.parametrize("kind", [TENSOR, STATE, DATASET, BLOB])
def test_file_swapped_for_another_objects_is_corrupt(store: Store, workload: Workload, kind: str) -> None:
    a, b = put_sample(store, kind, workload, 0), put_sample(store, kind, workload, 1)
    assert a != b
    shutil.copyfile(object_path(store, kind, b), object_path(store, kind, a))
    with pytest.raises(CorruptObjectError, match=b.hex()):  # the message names what was found
        getter(store, kind)(a)


@pytest.mark.parametrize("kind", KINDS)
def test_file_swapped_for_another_kinds_object_is_corrupt(store: Store, workload: Workload, kind: str) -> None:
    key = put_sample(store, kind, workload)
    other_kind = STATE if kind == TENSOR else TENSOR
    other = put_sample(store, other_kind, workload)
    shutil.copyfile(object_path(store, other_kind, other), object_path(store, kind, key))
    with pytest.raises(CorruptObjectError):
        getter(store, kind)(key)


def test_dataset_tampered_with_its_checksum_redone_fails_the_root_check(store: Store, workload: Workload) -> None:
    key = put_sample(store, DATASET, workload)
    path = object_path(store, DATASET, key)
    body = bytearray(path.read_bytes()[:-32])
    body[len(body) // 2] ^= 0x01
    path.write_bytes(bytes(body) + hashlib.sha256(body).digest())
    with pytest.raises(CorruptObjectError, match="dataset root"):
        store.get_dataset(key)


def test_dataset_name_is_covered(store: Store, workload: Workload) -> None:
    key = put_sample(store, DATASET, workload)
    path = object_path(store, DATASET, key)
    data = bytearray(path.read_bytes())
    data[data.index(b"digits/tiny")] ^= 0x20  # d -> D
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match="SHA-256"):
        store.get_dataset(key)


def test_bool_tensor_with_a_byte_other_than_0_or_1_is_corrupt(store: Store) -> None:
    key = store.put_tensor(torch.tensor([True, False]))
    path = object_path(store, TENSOR, key)
    data = bytearray(path.read_bytes())
    data[-1] = 2
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match="bool"):
        store.get_tensor(key)


@pytest.mark.parametrize("kind", KINDS)
def test_missing_key_is_a_missing_object_error_naming_it(store: Store, kind: str) -> None:
    key = hashlib.sha256(b"never stored").digest()
    with pytest.raises(MissingObjectError) as info:
        getter(store, kind)(key)
    err = info.value
    assert isinstance(err, StoreError)
    assert (err.kind, err.key, err.where) == (kind, key, store.backend.location)
    assert f"0x{key.hex()}" in str(err) and str(object_path(store, kind, key).parents[2]) in str(err)


# -- the folder backend --------------------------------------------------------------------


def test_put_is_idempotent_and_repairs(store: Store) -> None:
    t = random_bits(torch.float32, (9,))
    key = store.put_tensor(t)
    path = object_path(store, TENSOR, key)
    first = path.read_bytes()
    assert store.put_tensor(t.clone()) == key
    assert path.read_bytes() == first
    assert list(store.backend.keys(TENSOR)) == [key]
    path.write_bytes(b"junk")
    store.put_tensor(t)
    assert commit_tensor(store.get_tensor(key)) == key


def test_has_delete_and_keys(store: Store) -> None:
    keys = sorted(store.put_blob(b"%d" % i) for i in range(5))
    assert list(store.backend.keys(BLOB)) == keys
    assert list(store.backend.keys(TENSOR)) == []
    assert store.has(BLOB, keys[0]) and not store.has(TENSOR, keys[0])
    assert store.delete(BLOB, keys[0]) is True
    assert store.delete(BLOB, keys[0]) is False
    assert not store.has(BLOB, keys[0])
    with pytest.raises(MissingObjectError):
        store.get_blob(keys[0])
    assert list(store.backend.keys(BLOB)) == keys[1:]


def test_puts_leave_no_temp_files(store: Store, workload: Workload) -> None:
    for kind in KINDS:
        put_sample(store, kind, workload)
    assert isinstance(store.backend, FolderBackend)
    names = [p.name for p in store.backend.root.rglob("*") if p.is_file()]
    assert len(names) == len(KINDS)
    assert all(len(n) == 64 and not n.startswith(".") for n in names)


def test_leftover_temp_file_from_a_crash_is_ignored(store: Store) -> None:
    key = store.put_blob(b"whole")
    lost = hashlib.sha256(b"never finished").digest()
    for k in (key, lost):
        path = object_path(store, BLOB, k)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(f".{k.hex()}.0123456789abcdef.tmp").write_bytes(b"par")
    assert list(store.backend.keys(BLOB)) == [key]
    assert store.get_blob(key) == b"whole"
    assert not store.has(BLOB, lost)
    with pytest.raises(MissingObjectError):
        store.get_blob(lost)


def test_failed_write_leaves_neither_object_nor_temp_file(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        store.put_blob(b"doomed")
    key = hashlib.sha256(b"doomed").digest()
    assert not store.has(BLOB, key)
    assert not any(object_path(store, BLOB, key).parent.iterdir())


@pytest.mark.parametrize("kind", ["", "Tensor", "1x", "a/b", "../x", "a_b", "state "])
def test_bad_kind_is_a_value_error(tmp_path: Path, kind: str) -> None:
    backend = FolderBackend(tmp_path)
    key = bytes(32)
    for call in (
        lambda: backend.put(kind, key, b""),
        lambda: backend.get(kind, key),
        lambda: backend.has(kind, key),
        lambda: backend.delete(kind, key),
        lambda: list(backend.keys(kind)),
    ):
        with pytest.raises(ValueError, match="kind"):
            call()
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("key", [b"", bytes(31), bytes(33), "00" * 32], ids=["empty", "31", "33", "str"])
def test_bad_key_is_a_value_error(store: Store, key: bytes) -> None:
    with pytest.raises(ValueError, match="32-byte"):
        store.get_blob(key)
    with pytest.raises(ValueError, match="32-byte"):
        store.has(BLOB, key)
    with pytest.raises(ValueError, match="32-byte"):
        store.backend.put(BLOB, key, b"x")
