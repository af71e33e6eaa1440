"""Optional native fast path for chunk leaves and tree levels.

The C source is `native_src/merkle_sha256.c` (SHA-256 with a SHA-NI path picked at run
time and a portable fallback); `python -m trainer.commit._native` builds it into
`native_src/libmerkle_sha256.so`. The library is loaded lazily on first use, through ctypes.

Every function returns None when the library is not built or is switched off
(`REFEREED_NATIVE=0`), so callers fall back to the pure-Python reference in merkle.py and
tensor.py; both give the same bits (tests/commit/test_native.py compares them).
`REFEREED_HASH_THREADS` sets the thread count (default: the CPU count, at most 8; 1 hashes
on the calling thread only). Both variables are read on every call.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trainer import _cbuild

__all__ = [
    "LIBRARY",
    "SOURCE",
    "ClosePlan",
    "CommitPlan",
    "CopyPlan",
    "RecordWriter",
    "available",
    "build",
    "chunk_leaves",
    "commit_buffers",
    "has_shani",
    "parent_row",
    "rolling_root",
    "state_root",
    "threads",
    "tree_top",
]

SOURCE = Path(__file__).with_name("native_src") / "merkle_sha256.c"
LIBRARY = SOURCE.with_name("libmerkle_sha256.so")
MAX_DEFAULT_THREADS = 8

# The loaded library, filled on first use: [] not tried yet, [None] not available.
_holder: list[ctypes.CDLL | None] = []
_batched: list[bool] = []  # [True] when the loaded library has the batched calls (commit_buffers, ...)
_closing: list[bool] = []  # [True] when it has zkdv's step calls (rt_step_close, rt_gather, rt_same)
_recording: list[bool] = []  # [True] when it has zkdv's record write (rt_write_record)


def _load() -> ctypes.CDLL | None:
    if not _holder:
        lib: ctypes.CDLL | None = None
        if LIBRARY.exists():
            try:
                lib = ctypes.CDLL(str(LIBRARY))
            except OSError:
                lib = None
        if lib is not None:
            ptr, size, cint = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
            lib.rt_chunk_leaves.argtypes = [ptr, size, size, ptr, cint]
            lib.rt_chunk_leaves.restype = None
            lib.rt_parent_row.argtypes = [ptr, size, ptr, cint]
            lib.rt_parent_row.restype = None
            lib.rt_tree_top.argtypes = [ptr, size, size, ptr, cint]
            lib.rt_tree_top.restype = cint
            lib.rt_sha256.argtypes = [ptr, size, ptr]
            lib.rt_sha256.restype = None
            lib.rt_has_shani.argtypes = []
            lib.rt_has_shani.restype = cint
            lib.rt_set_portable.argtypes = [cint]
            lib.rt_set_portable.restype = None
            try:  # a library built from an older source lacks these: those callers fall back (same bits)
                lib.rt_commit_tensors.argtypes = [size, ptr, ptr, ptr, ptr, ptr, cint]
                lib.rt_commit_tensors.restype = cint
                lib.rt_state_root.argtypes = [size, ptr, ptr, ptr]
                lib.rt_state_root.restype = cint
                lib.rt_rolling_root.argtypes = [ptr, size, size, size, ptr]
                lib.rt_rolling_root.restype = cint
                _batched.append(True)
            except AttributeError:
                _batched.append(False)
            try:
                lib.rt_step_close.argtypes = [size, ptr, ptr, ptr, ptr, cint, size, ptr, ptr, ptr, size, ptr, ptr, ptr,
                                              size, size, ptr, size, ptr, ptr, ptr, ptr, ptr, ptr, size, ptr, ptr, ptr,
                                              ptr]
                lib.rt_step_close.restype = cint
                lib.rt_gather.argtypes = [size, ptr, ptr, ptr]
                lib.rt_gather.restype = None
                lib.rt_same.argtypes = [size, ptr, ptr, ptr]
                lib.rt_same.restype = cint
                _closing.append(True)
            except AttributeError:
                _closing.append(False)
            try:
                lib.rt_write_record.argtypes = [ptr, size, cint, ptr]
                lib.rt_write_record.restype = ctypes.c_long
                _recording.append(True)
            except AttributeError:
                _recording.append(False)
        _holder.append(lib)
    return _holder[0]


# os.environ's own dict (bytes keys on POSIX), read directly: `os.environ.get` encodes the key and decodes the
# value through Python-level methods on every call (a few microseconds, several calls a zkdv step); the dict is
# what os.environ's reads and writes (monkeypatch.setenv, putenv) go through, so every call still sees the variable
_ENV_DATA: dict[bytes, bytes] | None = getattr(os.environ, "_data", None)
if not isinstance(_ENV_DATA, dict) or os.name != "posix":
    _ENV_DATA = None
_NATIVE_KEY, _THREADS_KEY = b"REFEREED_NATIVE", b"REFEREED_HASH_THREADS"


def _env(key: bytes) -> str:
    """os.environ.get(key, "") for an ASCII key."""
    if _ENV_DATA is None:
        return os.environ.get(key.decode(), "")
    raw = _ENV_DATA.get(key)
    return "" if raw is None else os.fsdecode(raw)


def _lib() -> ctypes.CDLL | None:
    """The library, or None when it is unavailable or switched off by REFEREED_NATIVE=0."""
    if _ENV_DATA is not None and _NATIVE_KEY not in _ENV_DATA:  # the common case: one dict lookup
        return _holder[0] if _holder else _load()
    if _env(_NATIVE_KEY).strip() == "0":
        return None
    return _load()


def _batched_lib() -> ctypes.CDLL | None:
    """The library when it has the batched calls (a stale build may not), else None."""
    lib = _lib()
    return lib if lib is not None and _batched and _batched[-1] else None


def available() -> bool:
    return _lib() is not None


def has_shani() -> bool:
    """Whether the library hashes with the x86 SHA extensions (False when unavailable)."""
    lib = _lib()
    return bool(lib is not None and lib.rt_has_shani())


def threads() -> int:
    """Hashing threads: REFEREED_HASH_THREADS, else the CPU count capped at 8."""
    if _ENV_DATA is not None and _THREADS_KEY not in _ENV_DATA:
        return max(1, min(_cpu_count(), MAX_DEFAULT_THREADS))
    raw = _env(_THREADS_KEY).strip()
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            raise ValueError(f"REFEREED_HASH_THREADS must be a whole number, got {raw!r}") from None
    return max(1, min(_cpu_count(), MAX_DEFAULT_THREADS))


_CPUS: list[int] = []


def _cpu_count() -> int:
    """os.cpu_count(), read once (on Linux it reads a file under /sys each time: some microseconds a call)."""
    if not _CPUS:
        _CPUS.append(os.cpu_count() or 1)
    return _CPUS[0]


def _address(data: memoryview | bytes | bytearray) -> tuple[int | bytes, int, object]:
    """(pointer argument, byte length, object to keep alive) for a buffer, without copying it.

    bytes go to ctypes as they are (it passes a pointer to their storage); any other buffer
    is viewed as uint8 by numpy, which works for read-only views too. Only a buffer that is
    not contiguous is copied.
    """
    if isinstance(data, bytes):
        return data, len(data), data
    mv = memoryview(data)
    if not mv.contiguous:
        copy = mv.tobytes()
        return copy, len(copy), copy
    arr = np.frombuffer(mv, dtype=np.uint8)
    return arr.ctypes.data, arr.nbytes, arr


def chunk_leaves(data: memoryview | bytes, chunk: int) -> bytes | None:
    """`H(0x00 || chunk_j)` for the `chunk`-byte chunks of `data` (the last may be shorter)."""
    lib = _lib()
    if lib is None:
        return None
    if chunk <= 0:
        raise ValueError(f"chunk size must be positive, got {chunk}")
    ptr, nbytes, _keep = _address(data)
    if nbytes == 0:
        return b""
    count = -(-nbytes // chunk)
    out = ctypes.create_string_buffer(32 * count)
    lib.rt_chunk_leaves(ptr, nbytes, chunk, out, threads())
    return out.raw


def tree_top(data: memoryview | bytes, chunk: int) -> bytes | None:
    """The top of the padded tree over the `chunk`-byte chunk leaves of `data` (not empty), in
    one call: `top_of_row(chunk_leaves(data))` without a row crossing into Python per level."""
    lib = _lib()
    if lib is None:
        return None
    if chunk <= 0:
        raise ValueError(f"chunk size must be positive, got {chunk}")
    ptr, nbytes, _keep = _address(data)
    if nbytes == 0:
        raise ValueError("the tree of no bytes has no chunk leaves; its top is the zero pad")
    out = ctypes.create_string_buffer(32)
    if lib.rt_tree_top(ptr, nbytes, chunk, out, threads()) != 0:
        return None  # out of memory in the library: the caller's Python path gives the same bits
    return out.raw


def parent_row(row: bytes) -> bytes | None:
    """`H(0x01 || row[64i : 64i+64])` for each pair of hashes in `row` (a multiple of 64 bytes)."""
    lib = _lib()
    if lib is None:
        return None
    ptr, nbytes, _keep = _address(row)
    if nbytes % 64:
        raise ValueError(f"a row of {nbytes} bytes is not a whole number of hash pairs")
    out = ctypes.create_string_buffer(nbytes // 2)
    lib.rt_parent_row(ptr, nbytes // 64, out, threads())
    return out.raw


def commit_buffers(addresses: Sequence[int], lengths: Sequence[int], headers: Sequence[bytes]) -> bytes | None:
    """The tensor commitments `H(0x03 || header_k || dataRoot)` of many buffers in one call (32 bytes each).

    `addresses[k]` is the address of `lengths[k]` readable bytes that the caller keeps alive during the
    call; `headers[k]` the tensor header of commitments.md section 3.
    """
    lib = _batched_lib()
    if lib is None:
        return None
    n = len(addresses)
    if not n:
        return b""
    ptrs = (ctypes.c_void_p * n)(*addresses)
    lens = (ctypes.c_size_t * n)(*lengths)
    hlens = (ctypes.c_size_t * n)(*map(len, headers))
    out = ctypes.create_string_buffer(32 * n)
    if lib.rt_commit_tensors(n, ptrs, lens, b"".join(headers), hlens, out, threads()) != 0:
        raise MemoryError("the native commitment of a state ran out of memory")
    return out.raw


class CommitPlan:
    """`commit_buffers` for a fixed list of buffer lengths and tensor headers (a training step commits the
    same shapes every time): each call passes only the buffers' addresses, the other arrays are built once."""

    def __init__(self, lengths: Sequence[int], headers: Sequence[bytes]) -> None:
        if len(lengths) != len(headers):
            raise ValueError("a commit plan needs one header per buffer")
        n = self.n = len(lengths)
        self.lengths = tuple(lengths)
        self._lens = (ctypes.c_size_t * n)(*lengths)
        self._hlens = (ctypes.c_size_t * n)(*map(len, headers))
        self._headers = b"".join(headers)
        self._ptrs = ctypes.c_void_p * n
        self._out = ctypes.c_char * (32 * n)  # the result's buffer type (create_string_buffer makes one a call)

    def __call__(self, addresses: Sequence[int]) -> bytes | None:
        """The commitments (32 bytes each, in order) of the buffers at `addresses`, each of its planned length
        and kept alive by the caller during the call; None when the library is not there."""
        lib = _batched_lib()
        if lib is None:
            return None
        if len(addresses) != self.n:
            raise ValueError(f"the plan commits {self.n} buffers, got {len(addresses)} addresses")
        if not self.n:
            return b""
        out = self._out()
        if lib.rt_commit_tensors(self.n, self._ptrs(*addresses), self._lens, self._headers, self._hlens, out,
                                 threads()) != 0:
            raise MemoryError("the native commitment of a state ran out of memory")
        return out.raw


class ClosePlan:
    """Everything a zkdv step's close computes natively, in one call (`rt_step_close`), for fixed layouts: the
    tensor commitments of the step's buffers, the state roots of their groups (post-state, update, batch), the
    batch's rolling digest from its leaves and the probes of float32 leaves of one buffer (docs/zkdv.md
    sections 3 and 7). Everything but the addresses is built once; each call passes only those."""

    def __init__(self, lengths: Sequence[int], headers: Sequence[bytes],
                 groups: Sequence[tuple[Sequence[int], bytes]], leaves: Sequence[tuple[int, int]], rows: int,
                 window: int, probes: Sequence[tuple[int, int, int, int]], signs: np.ndarray, scales: np.ndarray
                 ) -> None:
        """`groups`: per group, in order, the indices (within the group) of its commitments in canonical order
        and their name hashes in that order; the groups take the buffers in turn. `leaves`: per batch leaf, (its
        bytes in a row, its row stride: 0 for a 0-d leaf), `rows` rows, the rolling `window` (no digest without
        leaves). `probes`: per probed leaf, (offset in float32 elements, rows, last dimension d, columns k);
        `signs` (float32) holds d values per leaf and `scales` k, leaf after leaf."""
        if len(lengths) != len(headers) or sum(len(p) for p, _ in groups) != len(lengths):
            raise ValueError("a close plan needs one header per buffer, and groups that cover the buffers")
        if any(len(h) != 32 * len(p) for p, h in groups):
            raise ValueError("a close plan needs a name hash per entry of each group")
        if leaves and not 1 <= window <= sum(b for b, _ in leaves):
            raise ValueError(f"rolling window {window} is outside 1 .. the row width")
        size, i64, f32 = ctypes.c_size_t, ctypes.c_int64, ctypes.c_float
        n, g, nl, np_ = self.n, self.g, self.nleaves, self.nprobes = len(lengths), len(groups), len(leaves), len(probes)
        self._lens = (size * n)(*lengths)
        self._hlens = (size * n)(*map(len, headers))
        self._headers = b"".join(headers)
        self._group_len = (size * g)(*(len(p) for p, _ in groups))
        self._perm = (size * n)(*(i for p, _ in groups for i in p))
        self._names = b"".join(h for _, h in groups)
        self._row_bytes = (size * nl)(*(b for b, _ in leaves))
        self._stride = (size * nl)(*(s for _, s in leaves))
        self.rows, self.window = rows, window
        self._poff, self._prows, self._pd, self._pk = ((i64 * np_)(*(p[j] for p in probes)) for j in range(4))
        self._signs = (f32 * len(signs)).from_buffer_copy(np.ascontiguousarray(signs, dtype=np.float32))
        self._scales = (f32 * len(scales)).from_buffer_copy(np.ascontiguousarray(scales, dtype=np.float32))
        self.probe_bytes = 4 * sum(r * k for _, r, _, k in probes)
        self.size = 32 * (n + g + (1 if nl else 0)) + self.probe_bytes
        self._ptrs = ctypes.c_void_p * n
        self._leaf_ptrs = ctypes.c_void_p * nl
        self._out = ctypes.c_char * self.size  # the result's buffer type (create_string_buffer makes one a call)

    def __call__(self, addresses: Sequence[int], leaves: Sequence[int], probe_base: int,
                 update: tuple[int, int, int, int] | None = None) -> bytes | None:
        """The buffers' commitments, the groups' roots, the rolling digest (with leaves) and the probes' float32
        bytes, back to back; `addresses` of the buffers (each of its planned length), `leaves` of the batch
        leaves, `probe_base` of the float32 buffer the probes read, all kept alive by the caller during the call.
        `update`: (count, post, old, out) to compute first, in the same call, the float32 update
        `out[i] = post[i] - old[i]` of `count` values (the RepOps sub: IEEE binary32, NaN canonical) into `out`,
        where the caller points buffers of `addresses` (the update's entries). None when the library (or a build
        with this call) is not there."""
        lib = _lib()
        if lib is None or not _closing or not _closing[-1]:
            return None
        if len(addresses) != self.n or len(leaves) != self.nleaves:
            raise ValueError(f"the plan closes {self.n} buffers and {self.nleaves} leaves, got {len(addresses)} "
                             f"and {len(leaves)}")
        out = self._out()
        if lib.rt_step_close(self.n, self._ptrs(*addresses), self._lens, self._headers, self._hlens, threads(),
                             self.g, self._group_len, self._perm, self._names, self.nleaves,
                             self._leaf_ptrs(*leaves), self._row_bytes, self._stride, self.rows, self.window,
                             probe_base, self.nprobes, self._poff, self._prows, self._pd, self._pk, self._signs,
                             self._scales, *(update or (0, None, None, None)), out) != 0:
            raise MemoryError("the native close of a step ran out of memory")
        return out.raw


class CopyPlan:
    """A state's bytes, buffers of fixed lengths back to back: one call copies them into one buffer (zkdv's
    post-state copy), one compares them with such a copy (its check that nothing changed between steps)."""

    def __init__(self, lengths: Sequence[int]) -> None:
        n = self.n = len(lengths)
        self.lengths = tuple(lengths)
        self.total = sum(lengths)
        self._lens = (ctypes.c_size_t * n)(*lengths)
        self._ptrs = ctypes.c_void_p * n

    def copy(self, addresses: Sequence[int], dst: int) -> bool:
        """Copy the buffers at `addresses` (each of its planned length) to `dst` (room for `total` bytes);
        False, with nothing done, without the library."""
        lib = _lib()
        if lib is None or not _closing or not _closing[-1]:
            return False
        lib.rt_gather(self.n, self._ptrs(*addresses), self._lens, dst)
        return True

    def same(self, addresses: Sequence[int], ref: int) -> bool | None:
        """Whether the buffers at `addresses` hold, back to back, the `total` bytes at `ref`; None without the
        library."""
        lib = _lib()
        if lib is None or not _closing or not _closing[-1]:
            return None
        return bool(lib.rt_same(self.n, self._ptrs(*addresses), self._lens, ref))


class RecordWriter:
    """A transcript record's line written in one call (`rt_write_record`): the base64 line of its CBOR bytes and
    the line end written to a file descriptor, and the CBOR bytes' SHA-256 (the next record's `prev`) returned:
    what `zkdv.transcript.TranscriptWriter` does with `binascii.b2a_base64`, a write and `hashlib.sha256`."""

    def __init__(self) -> None:
        self._hash = (ctypes.c_char * 32)()

    def __call__(self, raw: bytes, fd: int) -> tuple[int, bytes] | None:
        """(the line's length, the record's SHA-256) once the line is written; None, with nothing written, where
        the library (or a build with this call) is not there. Raises OSError where the write fails."""
        lib = _lib()
        if lib is None or not _recording or not _recording[-1]:
            return None
        got = lib.rt_write_record(raw, len(raw), fd, self._hash)
        if got < 0:
            raise OSError(f"writing a transcript record to file descriptor {fd} failed")
        return got, self._hash.raw


def state_root(name_hashes: bytes, commitments: bytes) -> bytes | None:
    """The state root over entries in canonical order, given their name hashes and commitments as rows."""
    lib = _batched_lib()
    if lib is None:
        return None
    if len(name_hashes) != len(commitments) or len(name_hashes) % 32:
        raise ValueError("state_root needs as many 32-byte name hashes as 32-byte commitments")
    out = ctypes.create_string_buffer(32)
    if lib.rt_state_root(len(name_hashes) // 32, name_hashes, commitments, out) != 0:
        raise MemoryError("the native state root ran out of memory")
    return out.raw


def rolling_root(rows: np.ndarray, window: int) -> bytes | None:
    """The rolling digest of a C-contiguous uint8 matrix (docs/zkdv.md section 3); 1 <= window <= width."""
    lib = _batched_lib()
    if lib is None:
        return None
    if rows.dtype != np.uint8 or rows.ndim != 2 or not rows.flags.c_contiguous:
        raise ValueError("rolling_root needs a C-contiguous 2-d uint8 array")
    if not 1 <= window <= rows.shape[1]:
        raise ValueError(f"rolling window {window} is outside 1 .. {rows.shape[1]}")
    out = ctypes.create_string_buffer(32)
    if lib.rt_rolling_root(rows.ctypes.data, rows.shape[0], rows.shape[1], window, out) != 0:
        raise MemoryError("the native rolling digest ran out of memory")
    return out.raw


def build(force: bool = False) -> Path | None:
    """Compile the library unless it is newer than its source; None when no compiler exists.

    Raises subprocess.CalledProcessError when the compiler fails.
    """
    if not force and _cbuild.is_fresh(LIBRARY, SOURCE):
        return LIBRARY
    cc = _cbuild.compiler()
    if cc is None:
        return None
    _cbuild.compile_shared(cc, ["-O3", "-fPIC", "-shared", "-pthread"], SOURCE, LIBRARY)
    if _holder and _holder[0] is None:
        _holder.clear()  # an earlier failed load is forgotten: the next use loads the new library
        _batched.clear()
        _closing.clear()
        _recording.clear()
    return LIBRARY


if __name__ == "__main__":
    built = build()
    if built is None:
        print(
            "trainer.commit: no C compiler (cc, gcc or $CC) found; "
            "the pure-Python commitment path will be used (about 1.8x slower)"
        )
    else:
        print(f"trainer.commit: native hashing library at {built}")
    sys.exit(0)
