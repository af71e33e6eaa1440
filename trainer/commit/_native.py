"""Optional native fast path for chunk leaves and tree levels (see _native/README).

Returns None from every function when the native library is not built, so callers fall
back to the pure-Python reference in merkle.py and tensor.py; both give the same bits
(tests/commit/test_native.py compares them).
"""

from __future__ import annotations


def chunk_leaves(data: memoryview | bytes, chunk: int) -> bytes | None:
    return None


def parent_row(row: bytes) -> bytes | None:
    return None
