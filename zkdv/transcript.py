"""The transcript file `records.cborl`: framing, the hash chain, reading back, batch digests, probes.

Framing (docs/zkdv.md, "Transcript"): every record is a CBOR map encoded canonically
(RFC 8949 section 4.2.1, `cbor2.dumps(record, canonical=True)`), written as one line of
standard base64 (RFC 4648 section 4, with padding, no line breaks) followed by one `\\n`.
CBOR is binary and may contain the byte 0x0A, so raw CBOR cannot be split on newlines;
base64 keeps one record per line, makes a torn last line (a killed writer) recognisable,
and costs 4/3 of the bytes. Every record carries `prev`, the SHA-256 of the previous
record's CBOR bytes (32 zero bytes for the root record), so the file is a hash chain.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import operator
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import cbor2
import numpy as np
import torch

from trainer.commit import _native
from zkdv.config import probe_width
from zkdv.errors import TranscriptError, ZKDVUsageError

GENESIS = b"\x00" * 32
FORMAT_VERSION = 1
ROLLING_BASE = 257
ROLLING_MODULUS = 2**31 - 1


def encode(record: Mapping[str, Any]) -> bytes:
    """The record's canonical CBOR (`cbor2.dumps(record, canonical=True)`): where it holds only maps with text
    keys, lists, text, bytes, integers, booleans and None (a step record), the plain encoding of a copy whose
    maps are in canonical key order, the same bytes at a fraction of the cost (tests/zkdv/test_encode.py
    compares them); anything else (a float, whose canonical form is its shortest exact width) canonically."""
    ordered = _in_key_order(record)
    if ordered is _MIXED:
        return cbor2.dumps(dict(record), canonical=True)
    return cbor2.dumps(ordered)


_PLAIN = frozenset({bytes, str, int, bool, type(None)})  # encoded the same, canonical or not
_MIXED = object()  # what `_in_key_order` gives for a value that must be encoded canonically
_KEY_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _key_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """Text keys in canonical order: bytewise by their CBOR encodings (RFC 8949 section 4.2.1), cached."""
    got = _KEY_ORDERS.get(keys)
    if got is None:
        got = tuple(sorted(keys, key=cbor2.dumps))
        if len(_KEY_ORDERS) < 1024:
            _KEY_ORDERS[keys] = got
    return got


def _in_key_order(value: Any) -> Any:
    """`value` with every map's keys in canonical order, or `_MIXED` where it holds anything whose plain and
    canonical encodings may differ (a float, a key that is not text, another type)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        keys = tuple(value)
        if not all(type(k) is str for k in keys):
            return _MIXED
        out = {}
        for k in _key_order(keys):
            v = value[k]
            if type(v) not in _PLAIN:
                v = _in_key_order(v)
                if v is _MIXED:
                    return _MIXED
            out[k] = v
        return out
    if kind is list or kind is tuple:
        if all(type(x) in _PLAIN for x in value):
            return value
        items = []
        for x in value:
            v = _in_key_order(x)
            if v is _MIXED:
                return _MIXED
            items.append(v)
        return items
    return _MIXED


class Slot:
    """A value left open in a `Template`: `nbytes` raw bytes of exactly that length (its CBOR head is part of the
    template), or, with `nbytes` None, a value given already CBOR-encoded (an integer's, a bool's, a text's)."""

    __slots__ = ("index", "nbytes")

    def __init__(self, index: int, nbytes: int | None = None) -> None:
        self.index, self.nbytes = index, nbytes


def cbor_head(major: int, n: int) -> bytes:
    """The head of a CBOR item of major type `major` and argument `n` (RFC 8949 section 3, shortest form)."""
    if n < 24:
        return bytes([major << 5 | n])
    for info, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([major << 5 | info]) + n.to_bytes(width, "big")
    raise ValueError(f"{n} does not fit a CBOR argument")


def cbor_uint(n: int) -> bytes:
    """The CBOR encoding of a non-negative integer (its canonical one: the shortest head)."""
    return cbor_head(0, n)


class Template:
    """The canonical CBOR of records of one structure with some values left open (`Slot`s): maps with text keys,
    lists, bytes, text, integers, booleans and None, and slots, encoded once in canonical key order (as `encode`
    orders them) into constant bytes around the slots; `fill(values)` gives `encode` of the record with every
    slot's value put in (`values[slot.index]`: raw bytes of the slot's length, or an item's CBOR), in one bytes
    formatting call. The same bytes as `encode` of the filled record (tests/zkdv/test_encode.py compares them)."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        parts: list[bytes] = []
        order: list[int] = []
        self.lengths: dict[int, int | None] = {}

        def const(b: bytes) -> None:
            parts.append(b.replace(b"%", b"%%"))

        def walk(value: Any) -> None:
            kind = type(value)
            if kind is Slot:
                if value.nbytes is not None:
                    const(cbor_head(2, value.nbytes))
                parts.append(b"%b")
                order.append(value.index)
                self.lengths[value.index] = value.nbytes
            elif kind is dict:
                keys = tuple(value)
                if not all(type(k) is str for k in keys):
                    raise ValueError("a template's maps have text keys")
                const(cbor_head(5, len(keys)))
                for k in _key_order(keys):
                    const(cbor2.dumps(k))
                    walk(value[k])
            elif kind is list or kind is tuple:
                const(cbor_head(4, len(value)))
                for v in value:
                    walk(v)
            elif kind in _PLAIN:
                const(cbor2.dumps(value))
            else:
                raise ValueError(f"a template holds no {kind.__name__}")

        walk(record)
        self.format = b"".join(parts)
        self.order = tuple(order)
        self._pick = operator.itemgetter(*order) if len(order) > 1 else None

    def fill(self, values: Sequence[Any]) -> bytes:
        """The record's CBOR with `values` in its slots (each raw slot's value of the slot's length: the caller's
        contract, checked by the tests)."""
        if self._pick is None:
            return self.format % tuple(values[i] for i in self.order)
        return self.format % self._pick(values)


def record_hash(cbor_bytes: bytes) -> bytes:
    return hashlib.sha256(cbor_bytes).digest()


def frame(cbor_bytes: bytes) -> bytes:
    return binascii.b2a_base64(cbor_bytes, newline=True)  # base64.b64encode's bytes, then b"\n", in one call


def read_records(path: Path, *, allow_torn_tail: bool = False) -> list[tuple[dict[str, Any], bytes]]:
    """Every (record, its CBOR bytes) of the file, in order, with the hash chain checked.

    A last line without its newline is a torn write: refused, or dropped when `allow_torn_tail`.
    """
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    if tail and not allow_torn_tail:
        raise TranscriptError(f"{path}: the last record has no line end (a torn write)")
    out: list[tuple[dict[str, Any], bytes]] = []
    prev = GENESIS
    for i, line in enumerate(lines):
        try:
            raw = base64.b64decode(line, validate=True)
            rec = cbor2.loads(raw)
        except Exception as e:
            raise TranscriptError(f"{path}: line {i + 1} is not a base64 CBOR record: {e}") from None
        if not isinstance(rec, dict) or raw != encode(rec):
            raise TranscriptError(f"{path}: line {i + 1} is not a canonically encoded CBOR map")
        if rec.get("prev") != prev:
            raise TranscriptError(f"{path}: line {i + 1} does not chain to the record before it")
        prev = record_hash(raw)
        out.append((rec, raw))
    return out


class TranscriptWriter:
    """Appends records to the file, chaining each to the one before. Not thread-safe: one owner."""

    def __init__(self, path: Path, prev: bytes = GENESIS) -> None:
        self.path = Path(path)
        self.prev = prev
        self.bytes_written = 0
        # unbuffered: each record reaches the file in one write, as a buffered write and a flush did
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed in close()
        self._fd = self._file.fileno()
        self._native = _native.RecordWriter()

    def append(self, record: Mapping[str, Any]) -> bytes:
        rec = dict(record)
        rec["prev"] = self.prev
        return self._write(encode(rec))

    def append_encoded(self, template: Template, values: Sequence[Any]) -> bytes:
        """`append` of the record `template` gives with `values` and, in the slot of index `len(values)`, this
        writer's `prev` (the template's `prev` slot, raw 32 bytes)."""
        return self._write(template.fill((*values, self.prev)))

    def _write(self, raw: bytes) -> bytes:
        got = self._native(raw, self._fd)  # the line written and the hash taken in one native call
        if got is not None:
            self.bytes_written += got[0]
            self.prev = got[1]
            return self.prev
        line = frame(raw)
        done = self._file.write(line) or 0
        while done < len(line):  # a short write (a regular file gives one only when it cannot take more)
            done += self._file.write(memoryview(line)[done:]) or 0
        self.bytes_written += len(line)
        self.prev = record_hash(raw)
        return self.prev

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()


def truncate_to(path: Path, records: Sequence[bytes]) -> bytes:
    """Rewrite the file to hold exactly these CBOR records (a prefix of what it held); returns the chain head."""
    tmp = Path(path).with_suffix(".tmp")
    with open(tmp, "wb") as f:
        for raw in records:
            f.write(frame(raw))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return record_hash(records[-1]) if records else GENESIS


# -- batch rows ------------------------------------------------------------------------------


def packed_rows(leaves: Sequence[torch.Tensor]) -> np.ndarray:
    """The batch as a rectangular byte matrix: row r is the concatenation, in leaf order, of
    the little-endian bytes of `leaf[r]` for every leaf (all leaves share their first dimension;
    a 0-d leaf is one row of its own value repeated in every row)."""
    rows: int | None = None
    for t in leaves:
        if t.dim() > 0:
            if rows is not None and t.shape[0] != rows:
                raise ZKDVUsageError(
                    f"batch leaves disagree on their first (row) dimension: {rows} and {t.shape[0]}"
                )
            rows = int(t.shape[0])
    rows = 1 if rows is None else rows
    parts = []
    for t in leaves:
        a = t.detach().contiguous().cpu()
        if a.dtype == torch.bool:
            a = a.to(torch.uint8)
        raw = a.view(torch.uint8).numpy() if a.dim() > 0 else a.reshape(1).view(torch.uint8).numpy()
        raw = raw.reshape(rows if a.dim() > 0 else 1, -1)
        if a.dim() == 0:
            raw = np.repeat(raw, rows, axis=0)
        parts.append(raw)
    return np.concatenate(parts, axis=1) if parts else np.zeros((rows, 0), dtype=np.uint8)


def rolling_root(rows: np.ndarray, window: int) -> bytes:
    """SHA-256 over the row digests; a row's digest is SHA-256 of the big-endian u32 values
    R_i = sum_{j<w} B[i+j] * 257^(w-1-j) mod (2^31 - 1), i = 0 .. width - w, of its bytes B."""
    width = rows.shape[1]
    if window > width:
        raise ZKDVUsageError(
            f"rolling_window {window} exceeds the packed width of a batch row ({width} bytes); "
            "choose rolling_window <= the bytes of one row"
        )
    if rows.dtype == np.uint8:
        fast = _native.rolling_root(np.ascontiguousarray(rows), window)  # same bits: test_native_batched.py
        if fast is not None:
            return fast
    powers = np.array([pow(ROLLING_BASE, window - 1 - j, ROLLING_MODULUS) for j in range(window)], dtype=np.int64)
    wide, n = rows.astype(np.int64), width - window + 1
    values = np.zeros((rows.shape[0], n), dtype=np.int64)
    for j in range(window):  # exact integers: every product < 2^39, every sum < 2^63 for w < 2^24
        values += wide[:, j : j + n] * powers[j]
    flat = (values % ROLLING_MODULUS).astype(">u4").tobytes()  # each row's digest hashes a slice of it
    step = 4 * n
    h = hashlib.sha256()
    for r in range(rows.shape[0]):
        h.update(hashlib.sha256(flat[r * step : (r + 1) * step]).digest())
    return h.digest()


# -- probes ---------------------------------------------------------------------------------


class Probe:
    """The fixed orthonormal projection of one parameter leaf's last dimension (d -> k columns).

    Column j of Q (d x k) is supported on the indices i with i mod k == j and holds
    s_i * c_j there, where s_i = -1 if bit 0 of SHA-256(b"ZKDV-PROBE" || utf8(name) || u64(i))[0]
    is 1 and +1 otherwise, and c_j = float32(1 / sqrt(n_j)), n_j the size of the support:
    disjoint supports make the columns orthonormal. The probe of a leaf viewed as rows x d is
    computed as: pad every row with zeros to m * k (m = ceil(d / k)), multiply by s (RepOps
    `aten.mul.Tensor`), view as rows x m x k, sum over m (RepOps `aten.sum.dim_IntList`),
    multiply by c (RepOps `aten.mul.Tensor`): a rows x k float32 matrix.
    """

    def __init__(self, name: str, last_dim: int, probe_ratio: float) -> None:
        k = probe_width(last_dim, probe_ratio)
        m = -(-last_dim // k)
        prefix = b"ZKDV-PROBE" + name.encode()
        signs = [
            -1.0 if hashlib.sha256(prefix + i.to_bytes(8, "big")).digest()[0] & 1 else 1.0 for i in range(last_dim)
        ]
        self.d, self.k, self.m = last_dim, k, m
        self.signs = torch.tensor(signs + [0.0] * (m * k - last_dim), dtype=torch.float32)
        counts = [len(range(j, last_dim, k)) for j in range(k)]
        self.scale = torch.tensor([1.0 / float(np.sqrt(np.float64(c))) for c in counts], dtype=torch.float32)

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        from trainer.repops import KERNELS

        mul = KERNELS["aten.mul.Tensor"].fast
        total = KERNELS["aten.sum.dim_IntList"].fast
        rows = t.detach().to(torch.float32).reshape(-1, self.d)
        if self.m * self.k > self.d:
            rows = torch.cat([rows, torch.zeros((rows.shape[0], self.m * self.k - self.d), dtype=torch.float32)], 1)
        signed = mul(rows, self.signs)
        return mul(total(signed.reshape(-1, self.m, self.k), [1]), self.scale).contiguous()


class ProbeSet:
    """Every probe of a run in a few RepOps kernel calls per step instead of three per leaf: one `mul` by
    the signs over every leaf's padded rows at once, one `sum` per distinct m over all the (row, column)
    slices of that length, one `mul` by the scales. Each slice is laid out contiguously (rows x k x m rather
    than rows x m x k), which changes neither its values nor the exact grid sum of each slice nor any
    product, so the bits are those of `Probe.__call__` per leaf (tests/zkdv/test_probe_set.py compares their
    hashes, with signed zeros, infinities and NaNs)."""

    def __init__(self, probes: Mapping[str, Probe]) -> None:
        self.probes = dict(probes)
        by_m: dict[int, list[str]] = {}
        for n, p in self.probes.items():
            by_m.setdefault(p.m, []).append(n)
        self.order = [n for names in by_m.values() for n in names]  # leaves grouped by m
        self.groups = [(m, len(names)) for m, names in by_m.items()]
        self._fixed: dict[tuple[int, ...], tuple[torch.Tensor, torch.Tensor]] = {}  # per row counts

    def _constants(self, counts: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        """The signs per element and the scale per slice, in the stacked layout (fixed in a run)."""
        got = self._fixed.get(counts)
        if got is None:
            signs, scales = [], []
            for n, r in zip(self.order, counts, strict=True):
                p = self.probes[n]
                signs.append(p.signs.reshape(p.m, p.k).t().reshape(1, -1).expand(r, -1).reshape(-1))
                scales.append(p.scale.reshape(1, -1).expand(r, -1).reshape(-1))
            got = (torch.cat(signs), torch.cat(scales))
            self._fixed[counts] = got
        return got

    def __call__(self, tensors: Mapping[str, torch.Tensor]) -> dict[str, bytes]:
        from trainer.repops import KERNELS

        if not self.probes:
            return {}
        mul = KERNELS["aten.mul.Tensor"].fast
        total = KERNELS["aten.sum.dim_IntList"].fast
        parts, counts = [], []
        for n in self.order:
            p = self.probes[n]
            rows = tensors[n].detach().to(torch.float32).reshape(-1, p.d)
            if p.m * p.k > p.d:
                rows = torch.cat([rows, torch.zeros((rows.shape[0], p.m * p.k - p.d), dtype=torch.float32)], 1)
            parts.append(rows.reshape(-1, p.m, p.k).transpose(1, 2).reshape(-1))  # slice (r, j) contiguous
            counts.append(int(rows.shape[0]))
        signs, scales = self._constants(tuple(counts))
        signed = mul(torch.cat(parts), signs)
        sums, off, leaf = [], 0, 0
        for m, count in self.groups:
            size = sum(parts[i].numel() for i in range(leaf, leaf + count))
            sums.append(total(signed[off : off + size].reshape(-1, m), [1]))
            off, leaf = off + size, leaf + count
        got = mul(torch.cat(sums) if len(sums) > 1 else sums[0], scales).contiguous()
        out: dict[str, bytes] = {}
        off = 0
        for n, r in zip(self.order, counts, strict=True):
            size = r * self.probes[n].k
            out[n] = got[off : off + size].numpy().tobytes()
            off += size
        return {n: out[n] for n in self.probes}


class FlatProbes:
    """A ProbeSet's probes read straight out of one byte copy of a state (`zkdv.torch`'s post-state copy),
    for one fixed layout: the padded, slice-contiguous rows ProbeSet builds leaf by leaf (a reshape, a pad
    and a transpose each) are one `index_select` from the copy viewed as float32, with the pad positions
    then set to +0.0, so the same RepOps kernels (the signs `mul`, one `sum` per distinct m, the scales
    `mul`) see the same values and give the same bits (tests/zkdv/test_flat_probes.py compares them).

    `spans[name] = (byte offset, shape)` of every probed leaf in the copy; `plan` returns None where this
    does not apply (a leaf that is not float32 or not 4-byte aligned in the copy, an empty leaf, a copy
    whose size is not a multiple of 4): the caller then uses ProbeSet on views of the copy."""

    def __init__(self, probes: ProbeSet, spans: Mapping[str, tuple[int, tuple[int, ...]]]) -> None:
        self.names = list(probes.probes)
        idx, pad, counts, any_pad = [], [], [], False
        for n in probes.order:
            p = probes.probes[n]
            off, shape = spans[n]
            rows = math.prod(shape) // p.d
            col = torch.arange(p.m).reshape(1, 1, p.m) * p.k + torch.arange(p.k).reshape(1, p.k, 1)  # (1, k, m)
            src = off // 4 + torch.arange(rows).reshape(rows, 1, 1) * p.d + col
            out = (col >= p.d).expand(rows, p.k, p.m)
            any_pad = any_pad or bool(out.any())
            idx.append(torch.where(out, torch.zeros((), dtype=torch.int64), src).reshape(-1))
            pad.append(out.reshape(-1))
            counts.append(rows)
        self.index = torch.cat(idx) if idx else torch.zeros(0, dtype=torch.int64)
        self.pad = torch.cat(pad) if any_pad else None
        self.counts = counts  # rows of each leaf, in `probes.order`
        self.signs, self.scales = probes._constants(tuple(counts))
        self.groups: list[tuple[int, int, int]] = []  # (m, first value, end) of each group in the gathered row
        at, leaf = 0, 0
        for m, count in probes.groups:
            size = sum(counts[i] * probes.probes[probes.order[i]].k * m for i in range(leaf, leaf + count))
            self.groups.append((m, at, at + size))
            at, leaf = at + size, leaf + count
        self.slices: dict[str, tuple[int, int]] = {}  # each leaf's bytes in the result
        at = 0
        for n, r in zip(probes.order, counts, strict=True):
            size = 4 * r * probes.probes[n].k
            self.slices[n] = (at, at + size)
            at += size

    @staticmethod
    def plan(
        probes: ProbeSet, entries: Sequence[tuple[str, torch.dtype, tuple[int, ...]]]
    ) -> FlatProbes | None:
        """The plan for a copy holding `entries` (name, dtype, shape) back to back, in order; None where it
        does not apply."""
        spans: dict[str, tuple[int, tuple[int, ...]]] = {}
        off = 0
        for n, dtype, shape in entries:
            if n in probes.probes:
                if dtype != torch.float32 or off % 4 or math.prod(shape) == 0:
                    return None
                spans[n] = (off, tuple(shape))
            off += dtype.itemsize * math.prod(shape)
        if off % 4 or set(spans) != set(probes.probes) or not spans:
            return None
        return FlatProbes(probes, spans)

    def __call__(self, flat: torch.Tensor) -> dict[str, bytes]:
        """The probes of the state whose bytes `flat` (contiguous uint8, the planned layout) holds."""
        from trainer.repops import KERNELS

        mul = KERNELS["aten.mul.Tensor"].fast
        total = KERNELS["aten.sum.dim_IntList"].fast
        rows = flat.view(torch.float32).index_select(0, self.index)
        if self.pad is not None:
            rows.masked_fill_(self.pad, 0.0)
        signed = mul(rows, self.signs)
        sums = [total(signed[a:b].view(-1, m), [1]) for m, a, b in self.groups]
        raw = mul(torch.cat(sums) if len(sums) > 1 else sums[0], self.scales).contiguous().numpy().tobytes()
        got = {n: raw[a:b] for n, (a, b) in self.slices.items()}
        return {n: got[n] for n in self.names}
