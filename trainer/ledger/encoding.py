"""Canonical CBOR for ledger records (RFC 8949, section 4.2.1, core deterministic encoding).

Records are maps with text keys, whose values are unsigned or negative integers (bignums
past 64 bits), byte strings, text strings, arrays, maps and booleans; never floats (a float
of the ledger, such as a loss, is recorded as the integer of its IEEE bits). With text keys
only, the bytewise order of the encoded keys that section 4.2.1 asks for is the same as
cbor2's `canonical=True` order, so cbor2 does the encoding; `loads` refuses any input that
is not exactly the canonical encoding of what it decodes to.
"""

from __future__ import annotations

from typing import Any

import cbor2

from trainer.ledger.errors import BlockError


def _check(value: Any, where: str) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | bytes | str):
        return
    if isinstance(value, float):
        raise BlockError(f"{where}: floats are not allowed in ledger records (record IEEE bits as an integer)")
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check(v, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise BlockError(f"{where}: map keys must be text, got {type(k).__name__}")
            _check(v, f"{where}.{k}")
        return
    raise BlockError(f"{where}: a {type(value).__name__} cannot be encoded in a ledger record")


def dumps(value: Any) -> bytes:
    """The canonical CBOR bytes of `value`."""
    _check(value, "record")
    return cbor2.dumps(value, canonical=True)


def loads(data: bytes) -> Any:
    """The value of canonical CBOR `data`; BlockError if `data` is not canonical or not CBOR."""
    try:
        value = cbor2.loads(data)
    except Exception as e:
        raise BlockError(f"not a CBOR record: {type(e).__name__}: {e}") from None
    if not isinstance(data, bytes | bytearray | memoryview):
        raise BlockError("a record must be bytes")
    try:
        again = dumps(value)
    except BlockError as e:
        raise BlockError(f"not a ledger record: {e}") from None
    if again != bytes(data):
        raise BlockError("the record is not in canonical CBOR (RFC 8949 section 4.2.1): re-encoding changes it")
    return value
