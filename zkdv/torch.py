"""The Torch frontend: `zkdv.torch.ZKDV` wraps an ordinary eager training loop.

    proof = zkdv.torch.ZKDV("proof", config, max_in_flight=2, replay_snapshot_interval=12)
    proof.start(rolling_window=32, probe_ratio=0.01)
    model, optimizer = proof.prepare(model, optimizer)

    @proof.attest
    def attested_step(model, optimizer, batch): ...   # the hermetic step: proof.forward/backward, step()

    for batch in data:
        with proof.transaction(batch=batch):
            ...the same step, eagerly...
    proof.close()

The first transaction captures `attested_step` into the project's program (trainer.program)
and seals its ONNX artifact. Inside every transaction the eager step runs on RepOps kernels
(`zkdv._mode.RepOpsMode`), so its post-state is what the interpreter computes; the pre-state,
batch, post-state, update, loss and probes are committed to `records.cborl`, and sampled steps
are replayed on a background worker from the latest replay snapshot. docs/zkdv.md specifies it.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import hashlib
import itertools
import math
import operator
import os
import queue
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch._ops import _len_torch_dispatch_stack_pre_dispatch
from torch.func import functional_call
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import _disable_current_modes, _pop_mode, _push_mode

from trainer.commit import _native as _commit_native
from trainer.commit import commit_tensors, name_hash, state_root_ordered
from trainer.commit.records import canonical_names
from trainer.commit.tensor import dtype_code, header
from trainer.interp import Interpreter
from trainer.program import InputKind, InputRef, Program, ProgramError, ProgramInput, TensorType
from trainer.program.capture import _lower
from trainer.program.onnx_io import to_bytes
from trainer.program.optim import BUFFER, PARAM
from trainer.repops import KERNELS, OpSpec
from trainer.runner.snapshots import SnapshotStore
from zkdv import _optim
from zkdv._mode import RANDOMNESS_ADVICE, RepOpsMode, decomposition_table, is_random
from zkdv.config import SamplingPolicy, ZKDVConfig
from zkdv.errors import (
    ImplicitRandomnessError,
    ProgramChangedError,
    TranscriptError,
    ZKDVError,
    ZKDVLoweringError,
    ZKDVPoisonedError,
    ZKDVUsageError,
)
from zkdv.overlap import UNCHECKED, Overlap
from zkdv.transcript import (
    FORMAT_VERSION,
    FlatProbes,
    Probe,
    ProbeSet,
    Slot,
    Template,
    TranscriptWriter,
    cbor_uint,
    encode,
    packed_rows,
    read_records,
    record_hash,
    rolling_root,
    truncate_to,
)

Tensor = torch.Tensor
PROVER = "whitebox-torch"
BATCH = "batch/"
RECORDS = "records.cborl"
ARTIFACT = "program.onnx"
SNAPSHOTS = "snapshots"
EVENTS_KEPT = 1024  # the scheduling events a run keeps for inspection (tests of the overlap policies read them)

_SUB = KERNELS["aten.sub.Tensor"].fast


def leaf_names(spec: Any, n: int, world_size: int = 1) -> list[str]:
    """The batch leaves' names: a flat dict of tensors keeps its keys (so a batch {"x", "y"} is named
    as the protocol's datasets name it), anything else is numbered (`batch_names`)."""
    keys = spec.context if spec.type is dict and all(c.num_leaves == 1 for c in spec.children()) else None
    if keys is not None and all(isinstance(k, str) and k and "/" not in k for k in keys):
        names = [str(k) for k in keys]
        if world_size == 1:
            return names
        return [f"{BATCH}{r:02d}/{k}" for r in range(world_size) for k in names]
    return batch_names(n, world_size)


def batch_names(n: int, world_size: int = 1) -> list[str]:
    """Names of the batch leaves, in pytree-flatten order: batch/0000, batch/0001, ... (canonical order);
    under DDP every rank's leaves, rank by rank: batch/00/0000, ..., batch/01/0000, ..."""
    if world_size == 1:
        return [f"{BATCH}{i:04d}" for i in range(n)]
    return [f"{BATCH}{r:02d}/{i:04d}" for r in range(world_size) for i in range(n)]


def commitments(state: Mapping[str, Tensor]) -> dict[str, bytes]:
    """Every entry's tensor commitment (one native call for the whole state where the library is built)."""
    got = commit_tensors([t if t.is_contiguous() else t.contiguous() for t in state.values()])
    return dict(zip(state, got, strict=True))


def commitments_of(*states: Mapping[str, Tensor]) -> list[dict[str, bytes]]:
    """`[commitments(s) for s in states]`, hashed in one call."""
    got = iter(commit_tensors([t if t.is_contiguous() else t.contiguous() for s in states for t in s.values()]))
    return [{n: next(got) for n in s} for s in states]


_ORDERS: dict[tuple[str, ...], tuple[list[str], bytes]] = {}


def _order(names: tuple[str, ...]) -> tuple[list[str], bytes]:
    """These names in canonical order and the row of their name hashes, cached (a run has a few fixed
    layouts: the state, the update, the batch)."""
    got = _ORDERS.get(names)
    if got is None:
        canon = canonical_names(list(names))
        got = (canon, b"".join(name_hash(n) for n in canon))
        if len(_ORDERS) < 256:
            _ORDERS[names] = got
    return got


def ordered(c: Mapping[str, bytes]) -> list[bytes]:
    """The commitments in canonical name order (a record's `..._entries`)."""
    return [c[n] for n in _order(tuple(c))[0]]


def root_of(c: Mapping[str, bytes]) -> bytes:
    """The state root over these commitments (`state_root_from_commitments`, with the order cached)."""
    canon, hashes = _order(tuple(c))
    return state_root_ordered(hashes, [c[n] for n in canon])


def _layout(state: Mapping[str, Tensor]) -> tuple[Any, ...]:
    return tuple((n, t.dtype, tuple(t.shape)) for n, t in state.items())


def _copy_plan(layout: tuple[Any, ...]) -> _commit_native.CopyPlan:
    """The native copy and compare of a state of this layout (its entries' byte lengths, in order)."""
    return _commit_native.CopyPlan([dtype.itemsize * math.prod(shape) for _, dtype, shape in layout])


def _state_bytes(state: Mapping[str, Tensor], plan: _commit_native.CopyPlan | None = None,
                 spare: collections.deque[Tensor] | None = None) -> Tensor:
    """Every entry's bytes, in order, as one uint8 tensor (a copy nothing else refers to): one native copy with
    `plan` (of the state's layout) where the library is there and every entry is contiguous, into a buffer of
    `spare` (copies nothing refers to any more) of the plan's size where there is one, else a fresh one."""
    values = list(state.values())
    if plan is not None and all(t.is_contiguous() for t in values):
        flat = None
        while spare:
            flat = spare.pop()
            if flat.numel() == plan.total:
                break
            flat = None
        if flat is None:
            flat = torch.empty(plan.total, dtype=torch.uint8)
        if plan.copy([t.data_ptr() for t in values], flat.data_ptr()):
            return flat
    if values and all(t.dtype == values[0].dtype and not t.requires_grad for t in values):
        return torch.cat([t.reshape(-1) for t in values]).view(torch.uint8)  # one dtype: the same bytes, fewer calls
    parts = [t.detach().contiguous().reshape(-1).view(torch.uint8) for t in values]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.uint8)


def _libc_memcmp() -> Callable[[int, int, int], int] | None:
    try:
        fn = ctypes.CDLL(None).memcmp
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


_MEMCMP = _libc_memcmp()


def _same_bytes(a: Tensor, b: Tensor) -> bool:
    """A memcmp of two `_state_bytes` copies (contiguous uint8): libc's, else np.array_equal."""
    if a.shape != b.shape:
        return False
    if _MEMCMP is not None and a.is_contiguous() and b.is_contiguous():
        return _MEMCMP(a.data_ptr(), b.data_ptr(), a.numel()) == 0
    return bool(np.array_equal(a.numpy(), b.numpy()))


def _same_state(flat: Tensor, state: Mapping[str, Tensor], plan: _commit_native.CopyPlan | None = None) -> bool:
    """Whether the state's bytes are those of `flat`, a `_state_bytes` copy of a state with the same layout,
    compared in place without copying the state: one native call with `plan` (of the state's layout), else a
    memcmp per entry against its part of the copy, else `_same_bytes`."""
    contiguous = all(t.is_contiguous() for t in state.values())
    if plan is not None and contiguous and flat.numel() == plan.total:
        same = plan.same([t.data_ptr() for t in state.values()], flat.data_ptr())
        if same is not None:
            return same
    if _MEMCMP is None or not contiguous:
        return _same_bytes(flat, _state_bytes(state))
    base, off = flat.data_ptr(), 0
    for t in state.values():
        size = t.numel() * t.element_size()
        if off + size > flat.numel() or _MEMCMP(t.data_ptr(), base + off, size) != 0:
            return False
        off += size
    return off == flat.numel()


def _entries(layout: tuple[Any, ...], flat: Tensor) -> dict[str, Tensor]:
    """The entries of a `_state_bytes` copy of a state with this layout, as views of it (read only)."""
    out: dict[str, Tensor] = {}
    off = 0
    for n, dtype, shape in layout:
        size = dtype.itemsize * math.prod(shape)
        part = flat[off : off + size]
        if off % dtype.itemsize:  # mixed element sizes: an unaligned slice cannot be viewed as the dtype
            part = part.clone()
        out[n] = part.view(dtype).reshape(shape)
        off += size
    return out


class _StepPlan:
    """The fixed facts of a run's steps, for one layout of the post-state (its `_state_bytes` copy) and of the
    batch (a run has one; built once, on the thread that commits): every entry's byte offset in the copy; the
    update's layout (the parameter entries) and, where those lie back to back in the copy as float32, their
    span (the update is then computed inside the native call from the post- and the pre-state copies' spans,
    into a buffer of the plan); the native plan of a step's close (the update, the commitments of all its
    tensors, the three roots, the batch's rolling digest and the probes in one call, only the addresses
    passed); the probes' gather plan for the Python path."""

    def __init__(self, post: tuple[Any, ...], batch: tuple[Any, ...], probes: ProbeSet, window: int) -> None:
        self.layout = post
        self.post_names = [n for n, _, _ in post]
        self.batch_names = [n for n, _, _ in batch]
        sizes = [dtype.itemsize * math.prod(shape) for _, dtype, shape in post]
        self.offsets, off = [], 0
        for size in sizes:
            self.offsets.append(off)
            off += size
        self.total = off
        params = [i for i, (n, _, _) in enumerate(post) if n.startswith(PARAM)]
        update = tuple(post[i] for i in params)
        self.update_names = [n for n, _, _ in update]
        self.span: tuple[int, int] | None = None  # the parameters' bytes in the copy, when the update is native
        self._out: Tensor | None = None  # the native update's values (float32 bytes), reused under the lock
        self._lock = threading.Lock()
        if (params and params == list(range(params[0], params[-1] + 1))
                and all(dtype is torch.float32 for _, dtype, _ in update) and self.offsets[params[0]] % 4 == 0):
            a = self.offsets[params[0]]
            self.span = (a, self.offsets[params[-1]] + sizes[params[-1]])
            self._out = torch.empty(self.span[1] - a, dtype=torch.uint8)
            out = self._out.data_ptr()
            self._update_at: list[int] = [out + self.offsets[i] - a for i in params]
        self.probes = FlatProbes.plan(probes, post)
        self.groups = []  # per group (post, update, batch): names, its span in the row, canonical order, name hashes
        at = 0
        for names in (self.post_names, self.update_names, self.batch_names):
            canon, hashes = _order(tuple(names))
            self.groups.append((names, at, at + len(names), [names.index(n) for n in canon], hashes))
            at += len(names)
        self.rows, self.width = _packed_shape(batch)
        leaves = [] if self.rows is None else [
            (dtype.itemsize * math.prod(shape[1:]), dtype.itemsize * math.prod(shape[1:]) if shape else 0)
            for _, dtype, shape in batch
        ]
        native_probes = [] if self.probes is None else [
            (self.offsets[self.post_names.index(n)] // 4, rows, probes.probes[n].d, probes.probes[n].k)
            for n, rows in zip(probes.order, self.probes.counts, strict=True)
        ]
        self.probe_order = probes.order if native_probes else []
        entries = (*post, *update, *batch)
        self.close = _commit_native.ClosePlan(
            [dtype.itemsize * math.prod(shape) for _, dtype, shape in entries],
            [header(dtype_code(dtype), shape) for _, dtype, shape in entries],
            [(perm, hashes) for _, _, _, perm, hashes in self.groups],
            leaves, self.rows or 0, window if leaves else 0, native_probes,
            np.concatenate([probes.probes[n].signs.numpy()[: probes.probes[n].d] for n in self.probe_order]
                           or [np.zeros(0, np.float32)]),
            np.concatenate([probes.probes[n].scale.numpy() for n in self.probe_order] or [np.zeros(0, np.float32)]),
        )
        self.probe_slices: list[tuple[str, int, int]] = []  # each probed leaf's bytes in the call's result
        at = 32 * (len(entries) + len(self.groups) + (1 if leaves else 0))
        for n, (_, rows, _, k) in zip(self.probe_order, native_probes, strict=True):
            self.probe_slices.append((n, at, at + 4 * rows * k))
            at += 4 * rows * k
        self.probe_names = list(probes.probes)
        cuts = [slice(i, i + 32) for i in range(0, 32 * self.close.n, 32)]
        self._split: Callable[[bytes], tuple[bytes, ...]] = (
            operator.itemgetter(*cuts) if len(cuts) > 1 else lambda row: tuple(row[c] for c in cuts))
        self._templates: dict[int | None, Template | None] = {}
        self._record_pick: Callable[[bytes], tuple[bytes, ...]] | None = None
        self._addresses: dict[int, list[int]] = {}  # per post-state copy's address: its buffers' and the update's

    def update(self, flat: Tensor, pre: Tensor, pre_layout: tuple[Any, ...]) -> dict[str, Tensor]:
        """The update `new - old` of every parameter entry (docs/zkdv.md section 3) from the post-state's copy and
        the pre-state's (of `pre_layout`) with the RepOps `sub`, entry by entry, as fresh tensors by name: the
        Python path, and the native path's reference (tests compare their bytes)."""
        post, old = _entries(self.layout, flat), _entries(pre_layout, pre)
        return {n: _SUB(post[n], old[n]) for n in self.update_names}

    def commit(self, flat: Tensor, pre: Tensor, pre_layout: tuple[Any, ...], batch: Sequence[Tensor]
               ) -> _Closed | None:
        """The step's update (from the post- and the pre-state's copies, `pre` of `pre_layout`), commitments,
        roots, rolling digest (with a batch of the planned layout) and probes (where the plan has them) in one
        native call; None without the library. The batch tensors are contiguous and of the planned layout (the
        caller checked)."""
        row = self.commit_row(flat, pre, pre_layout, batch)
        return None if row is None else self.closed(row)

    def commit_row(self, flat: Tensor, pre: Tensor, pre_layout: tuple[Any, ...], batch: Sequence[Tensor]
                   ) -> bytes | None:
        """`commit`'s native call: its result (`closed` and `named` read it), or None without the library."""
        base = flat.data_ptr()
        leaves = [t.data_ptr() for t in batch]
        span = self.span
        if span is not None and (pre_layout is self.layout or pre_layout == self.layout):
            a, b = span
            addresses = self._addresses.get(base)  # the post-state's and the update's buffers: a few copies rotate
            if addresses is None:
                if len(self._addresses) >= 8:
                    self._addresses.clear()
                addresses = self._addresses[base] = [base + o for o in self.offsets] + self._update_at
            with self._lock:  # the update's buffer is the plan's
                return self.close(addresses + leaves, leaves if self.close.nleaves else [], base,
                                  ((b - a) // 4, base + a, pre.data_ptr() + a, self._update_at[0]))
        update = self.update(flat, pre, pre_layout)
        return self.close([base + o for o in self.offsets] + [update[n].data_ptr() for n in self.update_names]
                          + leaves, leaves if self.close.nleaves else [], base)

    def named(self, row: bytes) -> tuple[dict[str, bytes], bytes, dict[str, bytes]]:
        """From `commit_row`'s result: the post-state's commitments by name, its root, the update's by name."""
        got = self._split(row)
        (post_names, a, b, _, _), (update_names, c, d, _, _) = self.groups[0], self.groups[1]
        roots = 32 * self.close.n
        return (dict(zip(post_names, got[a:b], strict=True)), row[roots : roots + 32],
                dict(zip(update_names, got[c:d], strict=True)))

    def closed(self, row: bytes) -> _Closed:
        """Everything `commit_row`'s result holds, by name and in canonical order (the record dict's path)."""
        got = self._split(row)
        roots = 32 * self.close.n
        groups = []
        for g, (names, a, b, perm, _) in enumerate(self.groups):
            mine = got[a:b]
            groups.append((dict(zip(names, mine, strict=True)), [mine[i] for i in perm],
                           row[roots + 32 * g : roots + 32 * g + 32]))
        at = roots + 32 * len(self.groups)
        rolling = row[at : at + 32] if self.close.nleaves else None
        probes = None
        if self.probe_slices:
            got_probes = {n: row[a:b] for n, a, b in self.probe_slices}
            probes = {n: got_probes[n] for n in self.probe_names}
        return _Closed(groups, rolling, probes, row)

    def template(self, pre_entries: int | None) -> Template | None:
        """The step record's CBOR template for this plan (a single process's record, with the rolling digest and
        the probes of the native call), with `pre_entries` pre-state commitments or none; None where the plan's
        call gives no rolling digest or no probes (the record is then encoded from its dict). Its values, in
        order: the pre-state root, the loss's 4 bytes, the step's, the overlap's, the two check flags' and the
        snapshot flag's CBOR, `record_values(row)`, the pre-state's commitments, then the writer's `prev`."""
        got = self._templates.get(pre_entries)
        if got is not None or pre_entries in self._templates:
            return got
        if not self.close.nleaves or not self.probe_slices:
            self._templates[pre_entries] = None
            return None
        n_post, n_update = len(self.post_names), len(self.update_names)
        at = itertools.count(7)
        post_entries = [Slot(next(at), 32) for _ in range(n_post)]
        update_entries = [Slot(next(at), 32) for _ in range(n_update)]
        post_root, update_root, batch_root, rolling = (Slot(next(at), 32) for _ in range(4))
        probes = {n: Slot(next(at), b - a) for n, a, b in self.probe_slices}
        record: dict[str, Any] = {
            "type": "step",
            "step": Slot(2),
            "overlap": Slot(3),
            "check": {"state": Slot(4), "update": Slot(5)},
            "snapshot": Slot(6),
            "batch": {"root": batch_root, "rows": self.rows, "width": self.width, "rolling": rolling},
            "pre": Slot(0, 32),
            "post": post_root,
            "post_entries": post_entries,
            "update": update_root,
            "update_entries": update_entries,
            "loss": Slot(1, 4),
            "probes": {n: probes[n] for n in self.probe_names},
        }
        if pre_entries is not None:
            record["pre_entries"] = [Slot(next(at), 32) for _ in range(pre_entries)]
        record["prev"] = Slot(next(at), 32)
        got = self._templates[pre_entries] = Template(record)
        return got

    def record_values(self, row: bytes) -> tuple[bytes, ...]:
        """The pieces of the native call's result a record template takes, in its order: the post-state's and the
        update's commitments in canonical order, the post-state, update and batch roots, the rolling digest, the
        probes (by leaf, in the plan's order)."""
        if self._record_pick is None:
            n = self.close.n
            slices = []
            for _, a, _, perm, _ in self.groups[:2]:
                slices += [slice(32 * (a + i), 32 * (a + i) + 32) for i in perm]
            roots = 32 * n
            slices += [slice(roots + 32 * g, roots + 32 * g + 32) for g in range(len(self.groups))]
            at = roots + 32 * len(self.groups)
            slices.append(slice(at, at + 32))
            slices += [slice(a, b) for _, a, b in self.probe_slices]
            self._record_pick = operator.itemgetter(*slices)
        return self._record_pick(row)


@dataclass(frozen=True, slots=True)
class _Closed:
    """What a step plan's native call gives: per group (post-state, update, batch) the commitments by name,
    in canonical order and the root; the batch's rolling digest and the probes, where the plan has them; the
    call's result (None on the generic path)."""

    groups: list[tuple[dict[str, bytes], list[bytes], bytes]]
    rolling: bytes | None
    probes: dict[str, bytes] | None
    row: bytes | None = None


def _packed_shape(batch: tuple[Any, ...]) -> tuple[int | None, int]:
    """(rows, width in bytes) of the packed rows of a batch of this layout (`packed_rows`); rows None where the
    leaves disagree on their first dimension (`packed_rows` then refuses the batch)."""
    firsts = {shape[0] for _, _, shape in batch if shape}
    if len(firsts) > 1:
        return None, 0
    rows = firsts.pop() if firsts else 1
    return rows, sum(dtype.itemsize * math.prod(shape[1:]) for _, dtype, shape in batch)


class _ModesOff:
    """`_disable_current_modes()` (a context manager): where the only dispatch mode on is one mode (zkdv's own,
    in a transaction) it pops that one and pushes it back, without the general case's imports and lists."""

    __slots__ = ("general", "mode")

    def __enter__(self) -> None:
        self.mode: Any = None
        self.general: Any = None
        if _len_torch_dispatch_stack_pre_dispatch() == 0:
            n = torch._C._len_torch_dispatch_stack()
            if n == 0:
                return
            if n == 1:
                self.mode = _pop_mode()
                return
        self.general = _disable_current_modes()
        self.general.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self.mode is not None:
            _push_mode(self.mode)
        elif self.general is not None:
            self.general.__exit__(*exc)


def _modes_off() -> _ModesOff:
    return _ModesOff()


_BOOL = (b"\xf4", b"\xf5")  # CBOR false, true (indexed by a bool)
_TEXTS: dict[str, bytes] = {}


def _text(value: str) -> bytes:
    """The CBOR of a text (an overlap policy's value), cached."""
    got = _TEXTS.get(value)
    if got is None:
        got = encode(value)  # type: ignore[arg-type]
        if len(_TEXTS) < 64:
            _TEXTS[value] = got
    return got


def _diff(what: str, got: Mapping[str, bytes], want: Mapping[str, bytes]) -> str:
    names = sorted(n for n in set(got) | set(want) if got.get(n) != want.get(n))
    return f"{what} differs in {', '.join(names)}" if names else ""


# -- records kept for checks -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepCommit:
    """What one transaction committed (the parts a check compares)."""

    step: int
    pre: dict[str, bytes]
    post: dict[str, bytes]
    update: dict[str, bytes]
    loss: bytes  # the loss's float32 bits, little-endian

    pre_root: bytes
    post_root: bytes


class _Done:
    """`threading.Event`'s set, is_set and wait, for a flag set once: a lock held until it is set (one C call to
    make, where an Event makes a Condition)."""

    __slots__ = ("_flag", "_lock")

    def __init__(self) -> None:
        self._flag = False
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        if not self._flag:  # one thread sets it (the one that computed the commitments)
            self._flag = True
            self._lock.release()

    def is_set(self) -> bool:
        return self._flag

    def wait(self) -> None:
        if not self._flag:
            with self._lock:  # released by set(); the next waiter gets it in turn
                pass


@dataclass(eq=False)
class _StepWork:
    """A closed transaction's commitments and record, computed (on the commit worker, or at close) from
    inputs nothing else writes: the post-state's bytes and the pre-state's (copies: the update is computed
    from them), the batch (a copy)."""

    step: int
    layout: tuple[Any, ...]  # the post-state's (name, dtype, shape), in order
    flat: Tensor | None  # the post-state's bytes, a copy taken at close: nothing else writes it
    pre_layout: tuple[Any, ...]
    pre_flat: Tensor | None  # the pre-state's bytes: the previous step's post-state copy, or a copy taken at open
    loss: bytes
    batch: list[Tensor] | None  # the rank-local batch leaves (copies), or None with `batch_record` given
    batch_record: dict[str, Any] | None
    pre: dict[str, bytes] | None  # None: the bytes are the previous step's post-state, so are its commitments
    pre_root: bytes
    prev: _StepWork | None
    overlap: str
    checks: tuple[bool, bool]  # (state, update): whether the step's checks were drawn
    snapshot: bool  # whether a replay snapshot was taken at the step's open
    global_batch: bytes | None  # under DDP, the global batch root
    commit: StepCommit | None = None
    record: dict[str, Any] | None = None
    encoded: tuple[Template, tuple[bytes, ...]] | None = None  # or the record as a template and its values
    done: _Done = field(default_factory=lambda: _Done())

    def resolved(self) -> StepCommit:
        self.done.wait()
        if self.commit is None:
            raise ZKDVError(f"the commitments of step {self.step} failed")
        return self.commit


class _Slot:
    """One buffer of the snapshot pool: a full pre-state copy, reused once nothing refers to it."""

    def __init__(self) -> None:
        self.state: dict[str, Tensor] = {}
        self.step = -1
        self.root = b""
        self.root_of: _StepWork | None = None  # the root is this step's committed post-state root
        self.refs = 0

    def resolve(self) -> bytes:
        if self.root_of is not None:
            self.root, self.root_of = self.root_of.resolved().post_root, None
        return self.root


class SnapshotPool:
    """A bounded pool of replay snapshots: `acquire` blocks while every buffer is referenced."""

    def __init__(self, capacity: int) -> None:
        self.slots = [_Slot() for _ in range(capacity)]
        self.cv = threading.Condition()

    def acquire(self, step: int, state: Mapping[str, Tensor], root: bytes) -> _Slot:
        with self.cv:
            while True:
                free = next((s for s in self.slots if s.refs == 0), None)
                if free is not None:
                    break
                self.cv.wait()
            free.refs = 1
        same = free.state.keys() == state.keys() and all(
            free.state[n].shape == t.shape and free.state[n].dtype == t.dtype for n, t in state.items()
        )
        with _modes_off(), torch.no_grad():
            if same:
                for n, t in state.items():
                    free.state[n].copy_(t)
            else:
                free.state = {n: t.detach().clone(memory_format=torch.contiguous_format) for n, t in state.items()}
        free.step, free.root, free.root_of = step, root, None
        return free

    def retain(self, slot: _Slot) -> None:
        with self.cv:
            slot.refs += 1

    def release(self, slot: _Slot) -> None:
        with self.cv:
            slot.refs -= 1
            self.cv.notify_all()


@dataclass
class _CheckJob:
    step: int
    state: bool
    update: bool
    overlap: Overlap
    slot: _Slot
    works: list[_StepWork]
    batches: list[dict[str, Tensor]]
    before: dict[str, bytes] | _StepWork | None = None  # the committed post-state of the step before the snapshot's
    commits: list[StepCommit] = field(default_factory=list)
    done: bool = False
    ok: bool = True
    detail: str = ""
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Capture:
    """The context of the make_fx trace of the attested step."""

    params: dict[str, Tensor]
    fixed: dict[str, Tensor]
    in_forward: int = 0
    loss: Tensor | None = None
    grads: dict[str, Tensor] | None = None
    stepped: bool = False
    grad_after: str = "untouched"  # what p.grad holds after the step: "grads", "none" (zero_grad), "zeros"


@dataclass
class Transaction:
    """One attested step; returned by `ZKDV.transaction`, used as a context manager."""

    proof: ZKDV
    batch: Any
    overlap: Overlap
    step: int = -1
    leaves: list[Tensor] = field(default_factory=list)
    versions: tuple[int, ...] = ()  # the leaves' in-place version counters at open (they must not change)
    mode: RepOpsMode | None = None
    state: dict[str, Tensor] = field(default_factory=dict)  # the pre-state read at open (detached views)
    params: dict[str, nn.Parameter] = field(default_factory=dict)  # the model's parameters by name, read at open
    layout: tuple[Any, ...] = ()  # the pre-state's
    pre_flat: Tensor | None = None  # the pre-state's bytes (a copy nothing else writes)
    pre: dict[str, bytes] | None = None  # None: unchanged since `pre_work`, whose post-state commitments it reuses
    pre_work: _StepWork | None = None
    loss: Tensor | None = None
    grads: dict[str, Tensor] | None = None
    stepped: bool = False
    global_batch: bytes = b""
    pre_root: bytes = b""
    ddp_sync: bool = True

    def __enter__(self) -> Transaction:
        self.proof._open(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.proof._finish(self, failed=exc_type is not None)


class ZKDV:
    """A transcript of the attested updates of one Torch training loop, written under `path`.

    `max_in_flight` bounds the transactions with an unresolved check (the one being admitted
    included); `replay_snapshot_interval` N takes a full pre-state copy every N steps, so a
    check replays at most N - 1 preceding transitions. Under `torch.distributed` each rank
    writes its own transcript under `path/rank<r>`. `commit_worker` computes each step's
    commitments and record on a background thread (True), on the training thread at close
    (False), or, by default (None), on the thread when the process has more CPUs than torch's
    intra-op threads (`commit_worker_default()`); the transcript's bytes are the same either way.
    """

    def __init__(
        self,
        path: str | Path,
        config: ZKDVConfig | None = None,
        *,
        max_in_flight: int = 2,
        replay_snapshot_interval: int = 12,
        commit_worker: bool | None = None,
    ) -> None:
        if config is None:
            config = ZKDVConfig()
        if not isinstance(config, ZKDVConfig):
            raise ZKDVUsageError(f"config must be a zkdv.ZKDVConfig, got {type(config).__name__}")
        for name, v in (("max_in_flight", max_in_flight), ("replay_snapshot_interval", replay_snapshot_interval)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ZKDVUsageError(f"{name} must be a positive integer, got {v!r}")
        if commit_worker is not None and not isinstance(commit_worker, bool):
            raise ZKDVUsageError(f"commit_worker must be True, False or None, got {commit_worker!r}")
        self.commit_worker = commit_worker_default() if commit_worker is None else commit_worker
        self.config = config
        self.max_in_flight = max_in_flight
        self.replay_snapshot_interval = replay_snapshot_interval
        self.rank, self.world_size = (dist.get_rank(), dist.get_world_size()) if _distributed() else (0, 1)
        base = Path(path)
        self.path = base / f"rank{self.rank}" if self.world_size > 1 else base
        self.rolling_window = 0
        self.probe_ratio = 0.0
        self._started = False
        self._closed = False
        self._model: nn.Module | None = None  # what the user passes around (maybe a DDP wrapper)
        self._root: nn.Module | None = None
        self._ddp: nn.Module | None = None
        self._optimizer: torch.optim.Optimizer | None = None
        self._form: _optim.FunctionalOptimizer | None = None
        self._factories: dict[type, _optim.Factory] = dict(_optim.BUILTIN)
        self._attested: Callable[..., Any] | None = None
        self._kernels: Mapping[str, OpSpec] = KERNELS  # the eager side's table (tests swap entries)
        self._param_names: list[str] = []
        self._prefixed: list[tuple[str, str]] = []  # (state name, parameter name) of every trained parameter
        self._buffer_names: list[str] = []
        self._opt_state: dict[str, Tensor] = {}
        self._program: Program | None = None
        self._interpreter: Interpreter | None = None
        # Calling the attested step inside a transaction runs the sealed program (section 2, "Program step"):
        # what the step returns ("none" | "loss"), or None where the program cannot reproduce its effects.
        self._program_returns: str | None = None
        self._runner: Interpreter | None = None  # the training thread's interpreter, on the eager side's table
        self._runner_kernels: Mapping[str, OpSpec] | None = None
        self.program_steps = 0  # transactions whose step ran as the sealed program
        self._signature: tuple[Any, ...] | None = None
        # the last open's cheap parts of the signature (spec, dtypes and shapes as objects) and the signature
        self._fingerprint: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
        self._root_record: dict[str, Any] | None = None
        self._root_key = b""
        self._probes: dict[str, Probe] = {}
        self._probe_set = ProbeSet({})
        self._plans: dict[tuple[Any, ...], _StepPlan] = {}  # per layout of (post-state, batch)
        self._copy_plan: tuple[tuple[Any, ...], _commit_native.CopyPlan] | None = None  # the state's (`_copies`)
        self._last_described: tuple[Any, bytes] | None = None  # `_described`'s last answer
        self._last_plan: tuple[tuple[Any, ...], tuple[Any, ...], _StepPlan] | None = None  # `_plan`'s last answer
        self._capture: _Capture | None = None
        self._batch_spec: Any = None
        self._names_of: tuple[Any, int, int, list[str]] | None = None  # (spec, leaves, world size, names)
        self._mode: RepOpsMode | None = None
        self._active: Transaction | None = None
        self._next_step = 0
        # The committed post-state of the last closed step: written by the commit worker (or by resume).
        self._last_post: dict[str, bytes] | None = None
        self._last_post_root = b""
        self._last_pre_root = b""
        # The last post-state's layout and bytes (a copy): an unchanged state at the next open reuses its commitments.
        self._kept: tuple[tuple[Any, ...], Tensor] | None = None
        self._prev_work: _StepWork | None = None  # the last closed step's commitments (maybe still computing)
        self._unsettled: collections.deque[_StepWork] = collections.deque()
        self._resume_state: dict[str, Tensor] | None = None
        self._kept_root: bytes | None = None  # the root record's CBOR from a resumed transcript
        # pipeline
        self._pool = SnapshotPool(max_in_flight + 2)
        self._base: _Slot | None = None
        self._window: list[_StepWork] = []
        # per step of the window: the batch copy a check replays, or None where no check can use it (below)
        self._window_batches: list[dict[str, Tensor] | None] = []
        # the window's draws (state, update) by step, from its snapshot's step to the next, and the last step of the
        # window that has one (-1: none): a batch after it is never replayed, so it is not copied (see `_open`)
        self._window_draws: list[tuple[bool, bool]] = []
        self._window_last_draw = -1
        self._window_start = 0
        self._window_before: dict[str, bytes] | _StepWork | None = None
        self._pending: dict[int, _CheckJob] = {}
        self._cv = threading.Condition()
        self._outbox: collections.deque[dict[str, Any] | _CheckJob | _StepWork] = collections.deque()
        self._write_lock = threading.Lock()
        self._writer: TranscriptWriter | None = None
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()  # checks and snapshots
        self._worker: threading.Thread | None = None
        self._commit_jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()  # step commitments, in order
        self._committer: threading.Thread | None = None
        self._failure: ZKDVPoisonedError | None = None
        self._counts = {"checks": 0, "failed": 0}
        # ("admit" | "check_start" | "check_done", step), in order: the latest EVENTS_KEPT only (a run is long)
        self._events: collections.deque[tuple[str, int]] = collections.deque(maxlen=EVENTS_KEPT)
        self._commit_delay = 0.0  # seconds the commit worker sleeps before hashing a step (tests)
        self._check_delay = 0.0  # seconds a check sleeps before replaying (tests of the overlap policies)
        self._hook: Any = None
        self.bytes_per_step: list[int] = []
        # `_named_parameters`' last walk: (root, per module its dicts, their names and values, the parameters)
        self._walk: tuple[nn.Module, list[tuple[Any, ...]], dict[str, nn.Parameter]] | None = None
        self._flat_keys: tuple[tuple[Any, ...], Any] | None = None  # `_flatten`'s last dict of tensors: keys, spec
        # state copies whose step is committed (nothing refers to them): the next `_state_bytes` copies into one
        self._spare: collections.deque[Tensor] = collections.deque(maxlen=2)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, rolling_window: int = 32, probe_ratio: float = 0.01, *, resume: bool = False) -> None:
        """Open the transcript. `resume=True` continues a killed run from its last persisted replay
        snapshot: the transcript is cut back to the records before that step, `resume_step` says
        which step the loop must run next, and `prepare` loads the snapshot's state."""
        if self._started:
            raise ZKDVUsageError("start() was already called")
        if isinstance(rolling_window, bool) or not isinstance(rolling_window, int) or rolling_window < 1:
            raise ZKDVUsageError(f"rolling_window must be a positive integer, got {rolling_window!r}")
        if isinstance(probe_ratio, bool) or not isinstance(probe_ratio, int | float) or not 0 < probe_ratio <= 1:
            raise ZKDVUsageError(f"probe_ratio must lie in (0, 1], got {probe_ratio!r}")
        self.rolling_window = rolling_window
        self.probe_ratio = float(probe_ratio)
        self.path.mkdir(parents=True, exist_ok=True)
        records = self.path / RECORDS
        prev = b"\x00" * 32
        if resume and records.is_file():
            prev = self._resume(records)
        elif records.exists():
            if records.stat().st_size:
                raise ZKDVUsageError(f"{records} already holds a transcript; pass resume=True or use a new path")
            records.unlink()
        self._writer = TranscriptWriter(records, prev)
        self._worker = threading.Thread(target=self._work, args=(self._jobs,), name="zkdv-checks", daemon=True)
        self._worker.start()
        self._committer = threading.Thread(target=self._work, args=(self._commit_jobs,), name="zkdv-commit",
                                           daemon=True)
        self._committer.start()
        self._started = True

    @property
    def resume_step(self) -> int:
        """The step the loop runs next (0 for a fresh run)."""
        return self._next_step

    @property
    def last_pre_root(self) -> bytes:
        """The committed pre-state root of the last closed transaction (b"" before the first); waits for
        its commitments."""
        self._settle()
        return self._last_pre_root

    @property
    def last_post_root(self) -> bytes:
        """The committed post-state root of the last closed transaction (b"" before the first); waits for
        its commitments."""
        self._settle()
        return self._last_post_root

    def _settle(self) -> None:
        """Wait for the commitments of every closed transaction (not for the checks)."""
        if self._prev_work is not None:
            self._prev_work.done.wait()

    @property
    def program(self) -> Program | None:
        """The program captured by the first transaction (None before it)."""
        return self._program

    def join(self) -> None:
        """Wait until every queued commitment and check has retired (does not close)."""
        self._require_started()
        self._commit_jobs.join()
        self._jobs.join()
        self._drain()
        self._raise_if_poisoned()

    def close(self) -> None:
        """Wait for every queued commitment and check, flush the transcript, and raise
        `ZKDVPoisonedError` if any check failed."""
        if self._closed:
            self._raise_if_poisoned()
            return
        self._require_started()
        if self._active is not None:
            raise ZKDVUsageError("close() inside an open transaction")
        self._commit_jobs.join()
        self._jobs.join()
        self._drain()
        self._closed = True
        self._commit_jobs.put(None)
        self._jobs.put(None)
        for thread in (self._committer, self._worker):
            if thread is not None:
                thread.join()
        assert self._writer is not None
        with self._write_lock:
            if self._root_record is not None:
                self._writer.append(
                    {
                        "type": "close",
                        "steps": self._next_step,
                        "checks": self._counts["checks"],
                        "failed": self._counts["failed"],
                        "final": self._last_post_root if self._last_post else root_of({}),
                    }
                )
            self._writer.close()
        self._raise_if_poisoned()

    # -- preparing ----------------------------------------------------------------------------

    def register_functional_optimizer(self, optimizer_type: type, factory: _optim.Factory) -> None:
        """Teach zkdv the pure update of `optimizer_type`: `factory(optimizer)` returns an object
        with `describe()`, `init_state(params)` and `update(params, grads, state)` (zkdv._optim)."""
        if not (isinstance(optimizer_type, type) and issubclass(optimizer_type, torch.optim.Optimizer)):
            raise ZKDVUsageError(f"{optimizer_type!r} is not a torch.optim.Optimizer subclass")
        if not callable(factory):
            raise ZKDVUsageError("factory must be callable: optimizer -> functional form")
        self._factories[optimizer_type] = factory

    def prepare(self, *values: Any) -> Any:
        """Prepare the root model and the optimizer; return every value (the sole one for one argument,
        a tuple for several), prepared objects in place, everything else unchanged."""
        self._raise_if_poisoned()
        if not values:
            raise ZKDVUsageError("prepare() needs at least one value")
        for v in values:
            if isinstance(v, nn.Module):
                self._prepare_model(v)
            elif isinstance(v, torch.optim.Optimizer):
                self._prepare_optimizer(v)
        if self._resume_state is not None and self._root is not None and self._optimizer is not None:
            self._load_resume_state()
        return values[0] if len(values) == 1 else tuple(values)

    def _prepare_model(self, model: nn.Module) -> None:
        root = model
        if isinstance(model, nn.parallel.DistributedDataParallel):
            root = model.module
        if self._root is not None and self._root is not root:
            raise ZKDVUsageError(
                "zkdv attests one root model; compose every stateful module of the step under it and prepare "
                f"that root once (already prepared: {type(self._root).__name__})"
            )
        self._model, self._root = model, root
        self._ddp = model if model is not root else None

    def _prepare_optimizer(self, opt: torch.optim.Optimizer) -> None:
        if self._optimizer is not None and self._optimizer is not opt:
            raise ZKDVUsageError("zkdv attests one optimizer; it is already prepared")
        factory = self._factories.get(type(opt))
        if factory is None:
            raise _optim.refuse(opt)
        self._form = factory(opt)
        if self._optimizer is opt:
            return
        self._optimizer = opt
        native_step, native_zero = opt.step, opt.zero_grad

        def step(closure: Callable[[], Any] | None = None) -> Any:
            if self._active is not None or self._capture is not None:
                if closure is not None:
                    raise ZKDVUsageError("an attested optimizer step takes no closure")
                return self._optimizer_step()
            return native_step() if closure is None else native_step(closure)

        def zero_grad(set_to_none: bool = True) -> None:
            if self._capture is not None:
                self._capture.grad_after = "none" if set_to_none else "zeros"
                return
            with _modes_off():
                native_zero(set_to_none=set_to_none)

        opt.step = step  # type: ignore[method-assign]
        opt.zero_grad = zero_grad  # type: ignore[method-assign]

    def attest(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Mark `fn(model, optimizer, batch)` as the attested step (the program of every transaction).

        Returns the step as a function of the same arguments: called inside a transaction, with the
        prepared model and optimizer and the transaction's own batch, it runs the sealed program with
        the RepOps interpreter instead of `fn`'s Python, where the capture showed that the program
        reproduces everything `fn` leaves behind (docs/zkdv.md section 2); anywhere else it is `fn`."""
        if not callable(fn):
            raise ZKDVUsageError("@proof.attest decorates a function")
        self._attested = fn

        @functools.wraps(fn)
        def step(model: Any, optimizer: Any, batch: Any) -> Any:
            txn = self._active
            if txn is not None and self._capture is None and self._program_fits(txn, model, optimizer, batch):
                return self._program_step(txn)
            return fn(model, optimizer, batch)

        return step

    def _program_fits(self, txn: Transaction, model: Any, optimizer: Any, batch: Any) -> bool:
        """Whether this call of the attested step may run as the sealed program (else `fn` runs eagerly)."""
        if self._program_returns is None or self._program is None or self.world_size != 1:
            return False
        if txn.loss is not None or txn.stepped or txn.grads is not None:
            return False  # the transaction's body already did part of the step eagerly
        if model is not self._model or optimizer is not self._optimizer:
            return False
        leaves, spec = self._flatten(batch)
        return (spec == self._batch_spec and len(leaves) == len(txn.leaves)
                and all(a is b for a, b in zip(leaves, txn.leaves, strict=True)))

    def _program_step(self, txn: Transaction) -> Tensor | None:
        """The attested step as the sealed program: the interpreter on the prepared state and the batch,
        its outputs written back into the model's parameters and the optimizer state."""
        program, root = self._program, self._root
        assert program is not None and root is not None
        if self._runner is None or self._runner_kernels is not self._kernels:
            self._runner = Interpreter(program, self._kernels)  # the eager side's table, as the mode uses
            self._runner_kernels = self._kernels
        grad = torch.is_grad_enabled()
        # the mode would see every detach of reading the state; grad mode off as torch.no_grad() sets it (one C call
        # each way, not no_grad's context manager objects)
        with _modes_off():
            torch._C._set_grad_enabled(False)
            try:
                state, own = txn.state, txn.params  # read at open (the update is post - pre of the copies, at close)
                batch = {n: t.detach() for n, t in zip(self._leaf_names(len(txn.leaves)), txn.leaves, strict=True)}
                new, loss = self._runner.run(state, batch)
                for k, n in self._prefixed:  # the user's Parameter objects keep their identity
                    p = own[n]
                    p.copy_(new[k])
                    p.grad = None  # as the step's own optimizer.zero_grad() leaves it
                # buffers: the program passes them through (section 11: buffers must not change in the step)
                self._opt_state = {n: t for n, t in new.items() if not n.startswith((PARAM, BUFFER))}
                loss = loss.detach()  # here, not under the mode (its Python dispatch costs more than the detach)
            finally:
                torch._C._set_grad_enabled(grad)
        txn.loss, txn.grads, txn.stepped = loss, {}, True
        self.program_steps += 1
        return txn.loss if self._program_returns == "loss" else None

    # -- inside the step ----------------------------------------------------------------------

    def forward(self, model: nn.Module, *args: Any, **kwargs: Any) -> Any:
        """The module call of the attested step (outside capture: `model(*args, **kwargs)`)."""
        self._raise_if_poisoned()
        cap = self._capture
        if cap is None:
            return model(*args, **kwargs)
        root = self._root
        assert root is not None
        target = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
        prefix = None
        for name, m in root.named_modules():
            if m is target:
                prefix = name
                break
        if prefix is None:
            raise ZKDVLoweringError(
                f"proof.forward got a {type(target).__name__} that is not the prepared root model or one of its "
                "submodules; compose it under the root and prepare the root with proof.prepare(...)"
            )
        lead = f"{prefix}." if prefix else ""
        sub = {k[len(lead) :]: v for k, v in {**cap.params, **cap.fixed}.items() if k.startswith(lead)}
        cap.in_forward += 1
        try:
            return functional_call(target, sub, args, kwargs)
        finally:
            cap.in_forward -= 1

    def backward(self, loss: Tensor) -> None:
        """The gradient boundary: gradients of `loss` for every trained parameter."""
        self._raise_if_poisoned()
        cap, txn = self._capture, self._active
        if cap is None and txn is None:
            loss.backward()
            return
        if not isinstance(loss, Tensor) or loss.dim() != 0 or not loss.is_floating_point():
            raise ZKDVUsageError(f"proof.backward needs a scalar floating-point loss, got {loss!r}")
        names = self._param_names
        if cap is not None:
            if cap.loss is not None:
                raise ZKDVLoweringError("the attested step calls proof.backward twice; it must call it once")
            inputs = [cap.params[n] for n in names]
        else:
            assert txn is not None and self._root is not None
            if txn.loss is not None:
                raise ZKDVUsageError(f"step {txn.step} calls proof.backward twice; it must call it once")
            own = dict(self._root.named_parameters())
            inputs = [own[n] for n in names]
        got = torch.autograd.grad(loss, inputs, allow_unused=True)
        grads = {n: torch.zeros_like(p) if g is None else g for n, p, g in zip(names, inputs, got, strict=True)}
        if txn is not None and self.world_size > 1:
            grads = self._all_reduce(grads)
        if cap is not None:
            cap.loss, cap.grads, cap.grad_after = loss, grads, "grads"
            return
        assert txn is not None
        txn.loss, txn.grads = loss.detach(), grads
        with _modes_off():
            for p, n in zip(inputs, names, strict=True):
                p.grad = grads[n].detach()

    def _all_reduce(self, grads: dict[str, Tensor]) -> dict[str, Tensor]:
        """The mean of every rank's gradient, summed in rank order with RepOps kernels (deterministic)."""
        out: dict[str, Tensor] = {}
        add = KERNELS["aten.add.Tensor"].fast
        div = KERNELS["aten.div.Tensor"].fast
        with _modes_off(), torch.no_grad():
            for n, g in grads.items():
                parts = [torch.empty_like(g) for _ in range(self.world_size)]
                dist.all_gather(parts, g.detach().contiguous())
                total = parts[0]
                for p in parts[1:]:
                    total = add(total, p)
                out[n] = div(total, float(self.world_size))
        return out

    def _optimizer_step(self) -> None:
        form = self._form
        assert form is not None and self._root is not None
        cap, txn = self._capture, self._active
        if cap is not None:
            if cap.grads is None:
                raise ZKDVLoweringError("the attested step calls optimizer.step() before proof.backward(loss)")
            cap.stepped = True
            return
        assert txn is not None
        if txn.grads is None:
            raise ZKDVUsageError(f"step {txn.step}: optimizer.step() before proof.backward(loss)")
        if txn.stepped:
            raise ZKDVUsageError(f"step {txn.step} calls optimizer.step() twice")
        own = dict(self._root.named_parameters())
        params = {n: own[n].detach() for n in self._param_names}
        with torch.no_grad():
            new_params, new_state = form.update(params, txn.grads, self._opt_state)  # under the RepOps mode
        with _modes_off(), torch.no_grad():
            for n in self._param_names:
                own[n].copy_(new_params[n])
        self._opt_state = {k: new_state[k] for k in canonical_names(list(new_state))}
        txn.stepped = True

    # -- transactions -------------------------------------------------------------------------

    def transaction(self, batch: Any, overlap: Overlap = UNCHECKED) -> Transaction:
        """One attested step over `batch` (a tensor or a pytree of tensors), opened before the forward."""
        if not isinstance(overlap, Overlap):
            raise ZKDVUsageError(f"overlap must be zkdv.overlap.ALWAYS, UNCHECKED or NEVER, got {overlap!r}")
        return Transaction(self, batch, overlap)

    def _open(self, txn: Transaction) -> None:
        self._raise_if_poisoned()
        self._require_started()
        if self._closed:
            raise ZKDVUsageError("the proof is closed")
        if self._active is not None:
            raise ZKDVUsageError("transactions do not nest; close the open one first")
        if self._root is None or self._optimizer is None:
            raise ZKDVUsageError("prepare the model and the optimizer with proof.prepare(model, optimizer) first")
        if self._attested is None:
            raise ZKDVUsageError("mark the attested step with @proof.attest before the first transaction")
        leaves, spec = self._flatten(txn.batch)
        if not leaves or not all(isinstance(t, Tensor) for t in leaves):
            raise ZKDVUsageError("the batch must be a tensor or a pytree (tuple, list, dict) of tensors only")
        if not all(t.is_cpu for t in leaves):
            raise ZKDVUsageError("zkdv's RepOps kernels run on the CPU; move the batch to the CPU")
        t = self._next_step
        self._admit(t)
        self._form = self._factories[type(self._optimizer)](self._optimizer)  # hyperparameters as they are now
        state, params = self._read_state_params()
        layout = _layout(state)
        described = self._described(self._form.describe())
        fingerprint = (id(self._root), id(self._optimizer), spec, tuple((t.dtype, t.shape) for t in leaves), layout,
                       described)
        if self._fingerprint is not None and fingerprint == self._fingerprint[0]:
            signature = self._fingerprint[1]  # equal parts: the signature those parts gave
            fingerprint = self._fingerprint[0]
            spec, layout = fingerprint[2], fingerprint[4]  # the equal objects kept: later checks compare identities
        else:
            signature = self._signature_of(leaves, spec, state, described)
        if self._program is None:
            self._capture_program(leaves, spec, state, signature)
        elif signature != self._signature:
            raise ProgramChangedError(
                f"step {t} does not fit the program captured at the first transaction: "
                f"{_signature_change(self._signature, signature)}; a run attests one program (one model, one "
                "optimizer configuration, one batch layout)"
            )
        self._fingerprint = (fingerprint, signature)
        txn.step, txn.leaves = t, leaves
        txn.versions = tuple(x._version for x in leaves)
        txn.state, txn.params, txn.layout = state, params, layout
        self._batch_spec = spec
        kept = self._kept
        if (
            kept is not None
            and self._prev_work is not None
            and kept[0] == layout
            and _same_state(kept[1], state, self._copies(layout))
        ):  # byte for byte the post-state of the previous step: its commitments (computed on the commit worker)
            txn.pre, txn.pre_work = None, self._prev_work
            txn.pre_flat = kept[1]
        else:
            txn.pre = commitments(state)
            txn.pre_root = root_of(txn.pre)
            txn.pre_flat = _state_bytes(state, self._copies(layout), self._spare)
        if t % self.replay_snapshot_interval == 0 or self._base is None:
            self._snapshot(t, state, txn.pre_root, txn.pre_work)
        if self.world_size > 1 or self.commit_worker or t <= self._window_last_draw:
            with _modes_off():
                every = self._gather(leaves) if self.world_size > 1 else list(leaves)
                names = self._leaf_names(len(leaves), self.world_size)
                self._window_batches.append({n: x.detach().clone() if x.requires_grad else x.clone()  # one op
                                             for n, x in zip(names, every, strict=True)})
                if self.world_size > 1:
                    txn.global_batch = root_of(commitments(dict(zip(names, every, strict=True))))
        else:  # no check of this window replays this batch, and close commits it on this thread: no copy
            self._window_batches.append(None)
        if self._ddp is not None:  # zkdv reduces the gradients itself (deterministically, in rank order)
            txn.ddp_sync = bool(getattr(self._ddp, "require_backward_grad_sync", True))
            setattr(self._ddp, "require_backward_grad_sync", False)  # noqa: B010 - typed as a Module
        if self._mode is None or self._mode.kernels is not self._kernels:
            self._mode = RepOpsMode(self._kernels)
        txn.mode = self._mode
        self._active = txn
        txn.mode.__enter__()

    def _flatten(self, batch: Any) -> tuple[list[Tensor], Any]:
        """`pytree.tree_flatten(batch)`. A dict whose values are all plain tensors and whose keys are, in order, those
        of the last such dict flattened here: its values and that dict's spec (what tree_flatten gives: a dict's
        leaves are its values in key order, its spec its keys), without pytree's walk."""
        last = self._flat_keys
        if type(batch) is dict and last is not None and tuple(batch) == last[0]:
            leaves = list(batch.values())
            if all(type(t) is Tensor for t in leaves):
                return leaves, last[1]
        leaves, spec = pytree.tree_flatten(batch)
        if type(batch) is dict and all(type(t) is Tensor for t in batch.values()):  # each value a leaf
            self._flat_keys = (tuple(batch), spec)
        return leaves, spec

    def _gather(self, leaves: Sequence[Tensor]) -> list[Tensor]:
        """Every rank's batch leaves, rank by rank (all ranks must use the same batch layout)."""
        out: list[list[Tensor]] = [[] for _ in range(self.world_size)]
        for t in leaves:
            parts = [torch.empty_like(t) for _ in range(self.world_size)]
            dist.all_gather(parts, t.detach().contiguous())
            for r, part in enumerate(parts):
                out[r].append(part)
        return [t for rank in out for t in rank]

    def _finish(self, txn: Transaction, *, failed: bool) -> None:
        assert txn.mode is not None
        txn.mode.__exit__(None, None, None)
        self._active = None
        if self._ddp is not None:
            setattr(self._ddp, "require_backward_grad_sync", txn.ddp_sync)  # noqa: B010
        if failed or not txn.stepped:
            self._window_batches.pop()
            if txn.stepped:
                self._poison(txn.step, "the transaction raised after optimizer.step(): the model holds an update "
                             "that was not committed")
            if not failed:
                raise ZKDVUsageError(f"the transaction of step {txn.step} closed without optimizer.step()")
            return
        assert txn.loss is not None and txn.pre_flat is not None and self._optimizer is not None
        t = txn.step
        changed = [i for i, (x, v) in enumerate(zip(txn.leaves, txn.versions, strict=True)) if x._version != v]
        if changed:  # the step read other bytes than the ones close would commit (or than open copied)
            detail = (f"batch tensor {changed[0]} of step {t} was changed in place inside its transaction: the "
                      "transcript commits the batch the step reads; change a copy, or change it before the "
                      "transaction")
            self._poison(t, detail)
            raise ZKDVUsageError(detail)
        post, own = self._read_state_params()
        layout = _layout(post)
        if layout == txn.layout:
            layout = txn.layout  # the object the plans were looked up with (an identity check next time)
        flat = _state_bytes(post, self._copies(layout), self._spare)  # the copy the commitments are computed from
        loss = txn.loss if txn.loss.dtype is torch.float32 else txn.loss.to(torch.float32)
        draws = self._window_draws
        at = t - self._window_start
        do_state, do_update = (draws[at] if 0 <= at < len(draws)
                               else self.config.sampling_policy.draws(self._root_key, t))
        if self.world_size > 1:  # the rank-local leaves, as the user passed them (the window holds every rank's)
            batch, batch_record = None, self._batch_record(txn.leaves)
        else:
            copied = self._window_batches[-1]
            batch, batch_record = list(txn.leaves if copied is None else copied.values()), None
        bits = (loss.numpy() if loss.numel() == 1 else loss.reshape(1).numpy()).tobytes()  # no reshape op for a scalar
        work = _StepWork(
            t, layout, flat, txn.layout, txn.pre_flat, bits, batch, batch_record, txn.pre, txn.pre_root,
            txn.pre_work, txn.overlap.value, (do_state, do_update), t % self.replay_snapshot_interval == 0,
            txn.global_batch if self.world_size > 1 else None,
        )
        txn.pre_flat = None  # the work holds it now (and hands it to `_spare` once committed)
        self._window.append(work)
        self._kept = (layout, flat)
        self._prev_work = work
        self._next_step = t + 1
        _optim.mirror_state(self._optimizer, own, self._opt_state, t + 1)
        while self._unsettled and self._unsettled[0].done.is_set():
            self._unsettled.popleft()
        if len(self._unsettled) >= self.max_in_flight:  # bound the copies waiting for the commit worker
            self._unsettled.popleft().done.wait()
        self._unsettled.append(work)
        with self._write_lock:
            self._outbox.append(work)
        if self.commit_worker:
            self._commit_jobs.put(lambda: self._commit(work))
        else:
            self._commit(work)
        if do_state or do_update:
            assert self._base is not None
            job = _CheckJob(t, do_state, do_update, txn.overlap, self._base, list(self._window),
                            list(self._window_batches), self._window_before)
            self._pool.retain(self._base)
            with self._cv:
                self._pending[t] = job
            with self._write_lock:
                self._outbox.append(job)
            self._jobs.put(lambda: self._run_check(job))
        self._drain()

    def _commit(self, work: _StepWork) -> None:
        """The step's commitments and its record, in step order (on the commit worker, or at close)."""
        try:
            t = work.step
            if self._commit_delay:
                time.sleep(self._commit_delay)
            if work.pre is None:
                assert work.prev is not None
                before = work.prev.resolved()
                pre, pre_root = before.post, before.post_root
            else:
                pre, pre_root = work.pre, work.pre_root
            assert work.flat is not None and work.pre_flat is not None
            named = self._batch_named(work.batch, copies=True) if work.batch is not None else {}
            plan = self._plan(work.layout, work.flat, named)
            row = plan.commit_row(work.flat, work.pre_flat, work.pre_layout, list(named.values())) if plan else None
            first = self._last_post is None or self._last_post_root != pre_root  # the record carries pre_entries
            template = None
            if row is not None and plan is not None and work.batch is not None and len(work.loss) == 4:
                template = plan.template(len(pre) if first else None)
            if template is not None:  # the record from its template: only the commitments a check reads by name
                assert row is not None and plan is not None
                post_c, post_root, update_c = plan.named(row)
                values = (pre_root, work.loss, cbor_uint(t), _text(work.overlap), _BOOL[work.checks[0]],
                          _BOOL[work.checks[1]], _BOOL[work.snapshot], *plan.record_values(row))
                work.encoded = (template, (*values, *ordered(pre)) if first else values)
                work.commit = StepCommit(t, pre, post_c, update_c, work.loss, pre_root, post_root)
                self._last_post, self._last_post_root, self._last_pre_root = post_c, post_root, pre_root
            else:
                work.commit, work.record = self._step_record(work, plan, row, named, pre, pre_root, first)
        except Exception as e:
            self._poison(work.step, f"the commitments of step {work.step} failed: {type(e).__name__}: {e}")
        finally:  # hashed: drop the copies (the next open compares with the training thread's reference)
            spare = work.pre_flat  # the post-state copy of the step before (or open's): nothing else refers to it
            work.flat, work.pre_flat, work.batch = None, None, None
            if spare is not None and spare.dtype is torch.uint8 and spare.is_contiguous():
                self._spare.append(spare)  # a deque: safe from the commit worker
            work.done.set()
        self._drain()

    def _step_record(self, work: _StepWork, plan: _StepPlan | None, row: bytes | None, named: dict[str, Tensor],
                     pre: dict[str, bytes], pre_root: bytes, first: bool) -> tuple[StepCommit, dict[str, Any]]:
        """The step's commitments and its record as a dict (the path without a record template): from the native
        call's result `row` where there is one, else computed here (another layout, or no native library: the
        same bits)."""
        t = work.step
        assert work.flat is not None and work.pre_flat is not None
        post: dict[str, Tensor] = {}
        if row is not None and plan is not None:
            closed = plan.closed(row)
        else:
            post = _entries(work.layout, work.flat)
            old = _entries(work.pre_layout, work.pre_flat)
            update = {k: _SUB(post[k], old[k]) for k in post if k.startswith(PARAM)}
            closed = _Closed([(c, ordered(c), root_of(c)) for c in commitments_of(post, update, named)],
                             None, None)  # one call
        (post_c, post_entries, post_root), (update_c, update_entries, update_root), (batch_c, _, batch_root) = (
            closed.groups)
        commit = StepCommit(t, pre, post_c, update_c, work.loss, pre_root, post_root)
        if work.batch is None:
            batch_record = work.batch_record
        elif closed.rolling is not None and plan is not None:
            batch_record = {"root": batch_root, "rows": plan.rows, "width": plan.width, "rolling": closed.rolling}
        else:
            batch_record = self._batch_record(work.batch, batch_c, batch_root)
        if closed.probes is not None:
            probes = closed.probes
        elif plan is not None and plan.probes is not None:
            probes = plan.probes(work.flat)
        else:
            probes = self._probe_record(post or _entries(work.layout, work.flat))
        record: dict[str, Any] = {
            "type": "step",
            "step": t,
            **({"global_batch": work.global_batch} if work.global_batch is not None else {}),
            "overlap": work.overlap,
            "check": {"state": work.checks[0], "update": work.checks[1]},
            "snapshot": work.snapshot,
            "batch": batch_record,
            "pre": pre_root,
            "post": post_root,
            "post_entries": post_entries,
            "update": update_root,
            "update_entries": update_entries,
            "loss": work.loss,
            "probes": probes,
        }
        if first:
            record["pre_entries"] = ordered(pre)
        self._last_post, self._last_post_root, self._last_pre_root = post_c, post_root, pre_root
        return commit, record

    def _plan(self, layout: tuple[Any, ...], flat: Tensor, batch: Mapping[str, Tensor]) -> _StepPlan | None:
        """The step plan for these layouts (built on first use, kept per layout), or None where the tensors
        are not all contiguous (the generic path then commits them)."""
        if not flat.is_contiguous() or not all(t.is_contiguous() for t in batch.values()):
            return None
        key = (layout, _layout(batch))
        last = self._last_plan
        if last is not None and last[0] is layout and last[1] == key[1]:
            return last[2]  # the step before's plan (the layout is kept as one object while it does not change)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= 8:  # a run has one layout; a bound all the same
                self._plans.clear()
            plan = self._plans[key] = _StepPlan(*key, self._probe_set, self.rolling_window)
        self._last_plan = (layout, key[1], plan)
        return plan

    def _described(self, description: dict[str, Any]) -> bytes:
        """`encode(description)`, the optimizer's hyperparameters; the last one's bytes where it is the same
        (compared value for value with the types and, for floats, the bits: 0.0 and -0.0 differ)."""
        key = _exact(description)
        got = self._last_described
        if got is None or got[0] != key:
            got = self._last_described = (key, encode(description))
        return got[1]

    def _copies(self, layout: tuple[Any, ...]) -> _commit_native.CopyPlan:
        """The native copy and compare of a state of this layout (the last one asked for is kept)."""
        got = self._copy_plan
        if got is None or (got[0] is not layout and got[0] != layout):
            got = self._copy_plan = (layout, _copy_plan(layout))
        return got[1]

    # -- pipeline -----------------------------------------------------------------------------

    def _admit(self, t: int) -> None:
        if not self._pending:  # no check in flight (only this thread adds to or prunes the pending checks)
            self._events.append(("admit", t))
            self._raise_if_poisoned()
            return
        with self._cv:
            while True:
                unresolved = [j for j in self._pending.values() if not j.done]
                allowed = [j.overlap.successors_allowed() for j in unresolved]
                blocked = len(unresolved) >= self.max_in_flight or any(
                    a is not None and t - j.step > a for j, a in zip(unresolved, allowed, strict=True)
                )
                if not blocked or self._failure is not None:
                    break
                self._cv.wait()
            self._pending = {s: j for s, j in self._pending.items() if not j.done}
            self._events.append(("admit", t))
        self._raise_if_poisoned()

    def _snapshot(self, t: int, state: Mapping[str, Tensor], root: bytes, root_of: _StepWork | None) -> None:
        slot = self._pool.acquire(t, state, root)
        slot.root_of = root_of  # the pre-state is the previous step's post-state: its root, once committed
        if self._base is not None:
            self._pool.release(self._base)
        self._base = slot
        self._window = []
        self._window_batches = []
        # the draws of the window's steps (t up to the next multiple of N): known now, as they depend on the step
        # and the root record alone
        end = (t // self.replay_snapshot_interval + 1) * self.replay_snapshot_interval
        policy = self.config.sampling_policy
        self._window_start = t
        self._window_draws = [policy.draws(self._root_key, u) for u in range(t, end)]
        self._window_last_draw = max((t + i for i, d in enumerate(self._window_draws) if d[0] or d[1]), default=-1)
        # the post-state of step t - 1: this process's last closed step, else the resumed one (None at step 0)
        self._window_before = self._prev_work if self._prev_work is not None else self._last_post
        self._pool.retain(slot)
        store = SnapshotStore(self.path / SNAPSHOTS)

        def persist() -> None:
            try:
                store.put(slot.state, slot.resolve())
            except Exception as e:  # a run whose snapshots cannot be kept cannot be resumed or audited
                self._poison(slot.step, f"persisting the replay snapshot of step {slot.step} failed: {e}")
            finally:
                self._pool.release(slot)

        self._jobs.put(persist)

    def _work(self, jobs: queue.Queue[Callable[[], None] | None]) -> None:
        while True:
            job = jobs.get()
            try:
                if job is None:
                    return
                job()
            except Exception as e:  # never let the worker die: join() and close() wait on its queue
                self._poison(self._next_step, f"the zkdv worker failed: {type(e).__name__}: {e}")
            finally:
                jobs.task_done()

    def _run_check(self, job: _CheckJob) -> None:
        with self._cv:
            self._events.append(("check_start", job.step))
        try:
            if self._check_delay:
                time.sleep(self._check_delay)
            job.commits = [w.resolved() for w in job.works]  # computed by the commit worker, in order
            if isinstance(job.before, _StepWork):
                job.before = job.before.resolved().post
            job.detail = self._replay(job)
        except Exception as e:  # an interpreter failure is a failed check, never a silent pass
            job.detail = f"replay raised {type(e).__name__}: {e}"
        finally:
            self._pool.release(job.slot)
        job.ok = not job.detail
        job.record = {
            "type": "check",
            "step": job.step,
            "state": job.state,
            "update": job.update,
            "base": job.slot.step if job.commits else job.step,
            "replayed": len(job.commits) - (0 if job.update else 1),
            "ok": job.ok,
            "detail": job.detail,
        }
        if not job.ok:
            self._poison(job.step, job.detail)
        with self._cv:
            job.done = True
            self._events.append(("check_done", job.step))
            self._cv.notify_all()
        self._drain()

    def _replay(self, job: _CheckJob) -> str:
        """'' when the committed window agrees with the replay, else what differed."""
        interp = self._interpreter
        assert interp is not None
        commits, batches, slot = job.commits, job.batches, job.slot
        first = commits[0]
        if slot.step != first.step or slot.resolve() != first.pre_root:
            return f"the replay snapshot of step {slot.step} does not hold the pre-state committed at step {first.step}"
        if job.before is not None and job.before != first.pre:  # a change right before the snapshot was taken
            return f"step {first.step}: " + _diff(
                f"the pre-state changed between steps {first.step - 1} and {first.step} (outside a transaction): it",
                first.pre, job.before)
        for a, b in itertools.pairwise(commits):
            if a.post != b.pre:
                return f"step {b.step}: " + _diff(
                    f"the pre-state changed between steps {a.step} and {b.step} (outside a transaction): it", b.pre,
                    a.post)
        state: dict[str, Tensor] = dict(slot.state)
        for c, batch in zip(commits[:-1], batches[:-1], strict=True):
            state, _ = interp.run(state, batch)
            got = commitments(state)
            if got != c.post:
                return f"step {c.step} (replayed on the way to step {job.step}): " + _diff(
                    "the committed post-state", c.post, got) + " from the program's"
        last = commits[-1]
        if job.state:
            got = commitments(state)
            if got != last.pre:
                return _diff("the committed pre-state", last.pre, got) + " from the replayed one"
        if job.update:
            new_state, loss = interp.run(state, batches[-1])
            got = commitments(new_state)
            if got != last.post:
                return _diff("the committed post-state", last.post, got) + " from the replay's"
            upd = commitments(
                {PARAM + n: _SUB(new_state[PARAM + n], state[PARAM + n]) for n in self._param_names}
            )
            if upd != last.update:
                return _diff("the committed update", last.update, upd) + " from the replay's"
            bits = loss.to(torch.float32).reshape(1).numpy().tobytes()
            if self.rank == 0 and bits != last.loss:  # the program's loss is rank 0's
                return f"the committed loss {last.loss.hex()} differs from the replay's {bits.hex()} (float32 bits)"
        return ""

    def _drain(self) -> None:
        with self._write_lock:
            if self._writer is None:
                return
            while self._outbox:
                head = self._outbox[0]
                if isinstance(head, _CheckJob):
                    if not head.done:
                        break
                    self._counts["checks"] += 1
                    self._counts["failed"] += 0 if head.ok else 1
                    self._writer.append(head.record)
                elif isinstance(head, _StepWork):
                    if not head.done.is_set():
                        break
                    if head.encoded is not None or head.record is not None:  # else the commitments failed (poisoned)
                        before = self._writer.bytes_written
                        if head.encoded is not None:
                            self._writer.append_encoded(*head.encoded)
                        else:
                            self._writer.append(head.record)
                        self.bytes_per_step.append(self._writer.bytes_written - before)
                else:
                    self._writer.append(head)
                self._outbox.popleft()

    def _poison(self, step: int, detail: str) -> None:
        with self._cv:
            if self._failure is None or step < self._failure.step:
                self._failure = ZKDVPoisonedError(step, detail)
            self._cv.notify_all()

    def _raise_if_poisoned(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _require_started(self) -> None:
        if not self._started:
            raise ZKDVUsageError("call proof.start(...) first")

    # -- state and capture --------------------------------------------------------------------

    def _read_state(self) -> dict[str, Tensor]:
        return self._read_state_params()[0]

    def _read_state_params(self) -> tuple[dict[str, Tensor], dict[str, nn.Parameter]]:
        """The state in canonical order (detached views of the model's tensors, the optimizer state) and the
        model's parameters by name (one walk of the module tree for both)."""
        root, opt, form = self._root, self._optimizer, self._form
        assert root is not None and opt is not None and form is not None
        params = self._named_parameters(root)
        if not self._param_names:
            self._bind(root, opt, params)
            self._opt_state = {k: v for k, v in form.init_state(
                {n: params[n].detach() for n in self._param_names}).items()}
            self._prefixed = [(PARAM + n, n) for n in self._param_names]
        state = {k: params[n].detach() for k, n in self._prefixed}
        if self._buffer_names:  # else nothing to walk the tree for
            buffers = dict(root.named_buffers())
            state.update({BUFFER + n: buffers[n].detach() for n in self._buffer_names})
        state.update(self._opt_state)
        return {n: state[n] for n in _order(tuple(state))[0]}, params

    def _named_parameters(self, root: nn.Module) -> dict[str, nn.Parameter]:
        """`dict(root.named_parameters())`: the last walk's dict while every module of the tree holds the same
        parameter and submodule dicts with the same names and the same objects (checked by identity, a few C calls
        per module), else a new walk. The dict returned is shared: callers only read it."""
        walk = self._walk
        if walk is not None and walk[0] is root:
            for m, ps, pk, pv, ms, mk, mv in walk[1]:
                if (m._parameters is not ps or m._modules is not ms or tuple(ps) != pk or tuple(ms) != mk
                        or not all(map(operator.is_, ps.values(), pv)) or not all(map(operator.is_, ms.values(), mv))):
                    break
            else:
                return walk[2]
        params = dict(root.named_parameters())
        mods = [(m, m._parameters, tuple(m._parameters), tuple(m._parameters.values()), m._modules,
                 tuple(m._modules), tuple(m._modules.values())) for _, m in root.named_modules()]
        self._walk = (root, mods, params)
        return params

    def _bind(self, root: nn.Module, opt: torch.optim.Optimizer, params: dict[str, nn.Parameter]) -> None:
        by_id = {id(p): n for n, p in params.items()}
        in_opt = [p for g in opt.param_groups for p in g["params"]]
        foreign = [p for p in in_opt if id(p) not in by_id]
        if foreign:
            raise ZKDVUsageError(
                f"the optimizer trains {len(foreign)} tensors that are not parameters of the prepared root model; "
                "compose their modules under the root and prepare it"
            )
        trained = {by_id[id(p)] for p in in_opt}
        left = sorted(n for n, p in params.items() if n not in trained and p.requires_grad)
        if left:
            raise ZKDVUsageError(f"parameters {left} require grad but are not in the optimizer; freeze or add them")
        frozen = sorted(n for n in params if n in trained and not params[n].requires_grad)
        if frozen:
            raise ZKDVUsageError(f"parameters {frozen} are in the optimizer but do not require grad")
        untrained = sorted(set(params) - trained)
        if untrained:
            raise ZKDVUsageError(f"parameters {untrained} are not trained; zkdv attests models trained whole")
        self._param_names = canonical_names(list(trained))
        persistent = set(root.state_dict(keep_vars=True))
        self._buffer_names = canonical_names([n for n, _ in root.named_buffers() if n in persistent])

    def _signature_of(self, leaves: Sequence[Tensor], spec: Any, state: Mapping[str, Tensor],
                      described: bytes | None = None) -> tuple[Any, ...]:
        assert self._form is not None
        return (
            id(self._root),
            id(self._optimizer),
            str(spec),
            tuple((str(t.dtype), tuple(t.shape)) for t in leaves),
            tuple((n, str(t.dtype), tuple(t.shape)) for n, t in state.items()),
            encode(self._form.describe()) if described is None else described,
        )

    def _capture_program(
        self, leaves: Sequence[Tensor], spec: Any, state: Mapping[str, Tensor], signature: tuple[Any, ...]
    ) -> None:
        assert self._root is not None and self._form is not None and self._attested is not None
        state_names = list(state)
        world = self.world_size
        b_names = leaf_names(spec, len(leaves), world)
        canonical = canonical_names(b_names)
        order = [b_names.index(n) for n in canonical]  # canonical position j holds leaf order[j]
        n_state = len(state_names)
        n_leaves = len(leaves)
        fixed_names = [n for n in state_names if n.startswith(BUFFER)]
        form, attested, model, opt = self._form, self._attested, self._model, self._optimizer

        def flat(tensors: list[Tensor]) -> list[Tensor]:
            st = dict(zip(state_names, tensors[:n_state], strict=True))
            params = {n: st[PARAM + n].requires_grad_() for n in self._param_names}
            fixed = {n.removeprefix(BUFFER): st[n] for n in fixed_names}
            losses: list[Tensor] = []
            all_grads: list[dict[str, Tensor]] = []
            received = list(tensors[n_state:])  # in canonical name order
            in_leaf_order: list[Tensor] = [received[0]] * len(received)
            for j, i in enumerate(order):
                in_leaf_order[i] = received[j]
            returns: list[str | None] = []
            for r in range(world):  # under DDP: the step of every rank's batch, then the mean gradient
                cap = _Capture(params=params, fixed=fixed)
                self._capture = cap
                try:
                    mine = in_leaf_order[r * n_leaves : (r + 1) * n_leaves]
                    ret = attested(model, opt, pytree.tree_unflatten(list(mine), spec))
                finally:
                    self._capture = None
                # the program reproduces the step's return value only if it is nothing or the loss, and its
                # gradients only if the step leaves none behind (optimizer.zero_grad() after the step)
                kind = "none" if ret is None else "loss" if ret is cap.loss and ret is not None else None
                returns.append(kind if cap.grad_after == "none" else None)
                if cap.loss is None or cap.grads is None:
                    raise ZKDVLoweringError("the attested step never calls proof.backward(loss)")
                if not cap.stepped:
                    raise ZKDVLoweringError("the attested step never calls optimizer.step()")
                losses.append(cap.loss)
                all_grads.append(cap.grads)
            grads = all_grads[0]
            if world > 1:
                grads = {}
                for n in self._param_names:
                    total = all_grads[0][n]
                    for g in all_grads[1:]:
                        total = total + g[n]
                    grads[n] = total / float(world)
            opt_state = {n: st[n] for n in state_names if not n.startswith((PARAM, BUFFER))}
            with torch.no_grad():
                detached = {n: p.detach() for n, p in params.items()}
                new_params, new_opt = form.update(detached, grads, opt_state)
            new: dict[str, Tensor] = {PARAM + n: t for n, t in new_params.items()}
            new.update({n: st[n] for n in fixed_names})
            new.update(new_opt)
            if set(new) != set(state_names):
                raise ZKDVLoweringError(
                    f"the optimizer's functional form maps state {sorted(state)} to {sorted(new)}; the names must agree"
                )
            self._program_returns = returns[0] if world == 1 else None
            return [new[n] for n in state_names] + [losses[0]]  # the loss of rank 0's batch

        every = self._gather(leaves) if world > 1 else [t.detach() for t in leaves]
        example = [state[n].detach().clone() for n in state_names] + [every[i] for i in order]
        hook = nn.modules.module.register_module_forward_pre_hook(self._module_hook)
        try:
            gm = make_fx(flat, decomposition_table=decomposition_table(), record_stack_traces=True)(example)
        except ZKDVError:
            raise
        except Exception as e:
            raise ZKDVLoweringError(f"capturing the attested step failed: {type(e).__name__}: {e}") from e
        finally:
            hook.remove()
        for node in gm.graph.nodes:
            if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and is_random(node.target):
                raise ImplicitRandomnessError(f"the attested step calls {node.target}: {RANDOMNESS_ADVICE}")
            if node.op == "get_attr" and isinstance(getattr(gm, str(node.target), None), nn.Parameter):
                raise ZKDVLoweringError(
                    "the attested step reads a parameter that is not under the prepared root model; compose its "
                    "module under the root and prepare the root with proof.prepare(...)"
                )
        inputs = tuple(
            [ProgramInput(n, InputKind.STATE, TensorType.of(state[n])) for n in state_names]
            + [ProgramInput(b_names[i], InputKind.BATCH, TensorType.of(every[i])) for i in order]
        )
        try:
            program = _lower(gm, inputs, [InputRef(n) for n in state_names + canonical], {}, frozenset(KERNELS))
        except ProgramError as e:
            raise ZKDVLoweringError(str(e)) from e
        artifact = to_bytes(program)
        (self.path / ARTIFACT).write_bytes(artifact)
        self._program = program
        self._interpreter = Interpreter(program)  # always the trusted table, whatever the eager side uses
        self._signature = signature
        self._probes = {}
        for n in self._param_names:
            t = state[PARAM + n]
            if t.dim() > 0:
                self._probes[PARAM + n] = Probe(PARAM + n, int(t.shape[-1]), self.probe_ratio)
        self._probe_set = ProbeSet(self._probes)
        self._plans = {}
        self._last_plan = None
        rows = packed_rows(leaves)
        if self.rolling_window > rows.shape[1]:
            rolling_root(rows, self.rolling_window)  # raises with the message
        ops = sorted({n.op for n in program.nodes})
        self._root_record = {
            "type": "root",
            "version": FORMAT_VERSION,
            "prover": PROVER,
            "name": self.config.name,
            "config": {
                "sampling": self.config.sampling_policy.to_record(),
                "rolling_window": self.rolling_window,
                "probe_ratio": self.probe_ratio,
                "max_in_flight": self.max_in_flight,
                "replay_snapshot_interval": self.replay_snapshot_interval,
            },
            "program": {
                "format": "onnx",
                "artifact_sha256": hashlib.sha256(artifact).digest(),
                "program_hash": program.program_hash,
                "nodes": len(program.nodes),
            },
            "kernels": [[op, KERNELS[op].section] for op in ops],
            "state_names": state_names,
            "batch": [[n, str(t.dtype).removeprefix("torch."), list(t.shape)] for n, t in zip(b_names, every,
                                                                                            strict=True)],
            "optimizer": self._form.describe(),
            "probes": {n: q.k for n, q in self._probes.items()},
            "world": {"rank": self.rank, "size": self.world_size},
        }
        raw = encode({**self._root_record, "prev": b"\x00" * 32})
        self._root_key = record_hash(raw)
        if self._kept_root is not None:
            if raw != self._kept_root:
                raise TranscriptError(
                    "the resumed run does not match the transcript's root record (another program, configuration "
                    "or kernel table); resume with the same script and settings"
                )
        else:
            with self._write_lock:
                assert self._writer is not None
                self._writer.append(self._root_record)

    def _module_hook(self, module: nn.Module, args: Any) -> None:
        cap, root = self._capture, self._root
        if cap is None or root is None:
            return
        under_root = any(m is module for m in root.modules())
        if under_root:
            if not cap.in_forward:
                raise ZKDVLoweringError(
                    f"the attested step calls the prepared model ({type(module).__name__}) directly; call it as "
                    "proof.forward(model, inputs) so the module call is lowered"
                )
            return
        own = list(module.parameters(recurse=False)) + list(module.buffers(recurse=False))
        if own:
            raise ZKDVLoweringError(
                f"the attested step calls a stateful {type(module).__name__} that is not under the prepared root "
                f"model {type(root).__name__}; compose it under the root (e.g. as an attribute) and pass the root to "
                "proof.prepare(...)"
            )

    def _leaf_names(self, n: int, world_size: int = 1) -> list[str]:
        """`leaf_names(self._batch_spec, n, world_size)`, kept for the spec it was computed for."""
        key = (self._batch_spec, n, world_size)
        got = self._names_of
        if got is None or got[1:3] != key[1:] or (got[0] is not key[0] and got[0] != key[0]):  # an equal spec
            # names the leaves alike
            got = self._names_of = (*key, leaf_names(*key))
        return got[3]

    def _batch_named(self, leaves: Sequence[Tensor], *, copies: bool = False) -> dict[str, Tensor]:
        """The rank-local batch leaves, named as a single process names them; `copies`: the leaves are the
        window's copies (detached already), taken as they are where contiguous."""
        names = self._leaf_names(len(leaves))
        if copies and all(t.is_contiguous() for t in leaves):
            return dict(zip(names, leaves, strict=True))
        return {n: t.detach().contiguous() for n, t in zip(names, leaves, strict=True)}

    def _batch_record(self, leaves: Sequence[Tensor], commits: Mapping[str, bytes] | None = None,
                      root: bytes | None = None) -> dict[str, Any]:
        """The step record's `batch`; `commits`: the leaves' commitments when already computed, `root` their root."""
        with _modes_off():
            if commits is None:
                commits = commitments(self._batch_named(leaves))
            rows = packed_rows(leaves)
            return {
                "root": root_of(commits) if root is None else root,
                "rows": int(rows.shape[0]),
                "width": int(rows.shape[1]),
                "rolling": rolling_root(rows, self.rolling_window),
            }

    def _probe_record(self, post: Mapping[str, Tensor]) -> dict[str, bytes]:
        with _modes_off():
            return self._probe_set(post)  # grouped by last dimension: the bits of Probe per leaf

    # -- resume ---------------------------------------------------------------------------------

    def _resume(self, records: Path) -> bytes:
        recs = read_records(records, allow_torn_tail=True)
        if not recs or recs[0][0].get("type") != "root":
            raise TranscriptError(f"{records} does not start with a root record")
        store = SnapshotStore(self.path / SNAPSHOTS)
        cut, chosen = None, None
        for i, (rec, _) in enumerate(recs):
            if rec.get("type") == "step" and rec.get("snapshot") and store.has(rec["pre"]):
                cut, chosen = i, rec
        if cut is None or chosen is None:
            raise TranscriptError(f"{records} has no step with a persisted replay snapshot to resume from")
        kept = [raw for _, raw in recs[:cut]]
        self._kept_root = recs[0][1]
        self._resume_state = store.get(chosen["pre"])
        self._next_step = int(chosen["step"])
        last_post = None
        for rec, _ in recs[1:cut]:
            if rec["type"] == "check":
                self._counts["checks"] += 1
                self._counts["failed"] += 0 if rec["ok"] else 1
                if not rec["ok"]:
                    self._poison(int(rec["step"]), str(rec["detail"]))
            elif rec["type"] == "step":
                last_post = rec
        if last_post is not None:
            names = recs[0][0]["state_names"]
            self._last_post = dict(zip(names, last_post["post_entries"], strict=True))
            self._last_post_root = last_post["post"]
        return truncate_to(records, kept)

    def _load_resume_state(self) -> None:
        state = self._resume_state
        assert state is not None and self._root is not None and self._optimizer is not None
        self._resume_state = None
        self._read_state()  # binds names and the optimizer state layout
        own_p, own_b = dict(self._root.named_parameters()), dict(self._root.named_buffers())
        want = set(self._param_names_full())
        if set(state) != want:
            raise TranscriptError(
                f"the snapshot holds {sorted(state)}, the prepared model and optimizer {sorted(want)}"
            )
        with torch.no_grad():
            for n in self._param_names:
                own_p[n].copy_(state[PARAM + n])
            for n in self._buffer_names:
                own_b[n].copy_(state[BUFFER + n])
        self._opt_state = {n: t.clone() for n, t in state.items() if not n.startswith((PARAM, BUFFER))}

    def _param_names_full(self) -> Iterator[str]:
        yield from (PARAM + n for n in self._param_names)
        yield from (BUFFER + n for n in self._buffer_names)
        yield from self._opt_state


def commit_worker_default() -> bool:
    """Whether a spare CPU is there for the commit worker: more CPUs available to the process than torch's
    intra-op threads (else the worker slows the step's parallel kernels down more than it saves)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus > torch.get_num_threads()


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _exact(value: Any) -> Any:
    """A key equal for two values exactly when their CBOR encodings are: types kept, floats by their bits."""
    kind = type(value)
    if isinstance(value, float):
        return (kind, struct.pack("<d", value))
    if kind is dict:
        return (dict, tuple((_exact(k), _exact(v)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return (kind, tuple(_exact(v) for v in value))
    return (kind, value)


def _signature_change(old: tuple[Any, ...] | None, new: tuple[Any, ...]) -> str:
    what = ["the model object", "the optimizer object", "the batch structure", "the batch shapes or dtypes",
            "the state shapes or dtypes", "the optimizer's hyperparameters"]
    if old is None:
        return "no program"
    changed = [w for w, a, b in zip(what, old, new, strict=True) if a != b]
    parts = []
    for w in changed:
        i = what.index(w)
        parts.append(f"{w} changed" + (f" ({old[i]} -> {new[i]})" if i in (3,) else ""))
    return "; ".join(parts)


__all__ = ["PROVER", "ZKDV", "SamplingPolicy", "StepCommit", "Transaction", "ZKDVConfig", "commit_worker_default"]
