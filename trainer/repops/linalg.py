"""Exact matrix products: aten.mm, aten.addmm, aten.bmm (docs/repops/linalg.md, "Matrix products").

C[i, j] = fp32(S[i, j] * 2^(e_i + e'_j - 2p)), where S is the exact integer dot product of row i
of A and column j of B after each is rounded to its own power-of-two grid of p = p_dot(K) bits.
The result does not depend on summation order, blocking, threads, memory layout or device.

Two engines compute S, with the same bits:
- "f64": the grids' values as float64 (q * 2^(e - p)) through one float64 matmul. Every product
  and partial sum is an integer multiple of 2^(e_i + e'_j - 2p) below 2^53 of it, so the BLAS
  computes S exactly in any order.
- "int8": q split into int8 slices (at p = 14: q = hi * 2^8 + lo, hi in [-64, 64], lo in
  [-128, 127]); one int8 x int8 -> int32 GEMM per slice-weight t = i + j, joining the pairs
  along K (hi.hi, [lo|hi].[hi;lo], lo.lo), combined exactly in float64.
Each engine has two implementations of its passes around the GEMM, with the same bits: the
native one (native_src/linalg.c: one pass per operand for the quantizer, one for the combine;
portable C, AVX2 and AVX-512 loops chosen by cpuid), used on CPU when the library is built,
and the torch-op one (CPU without the library, and CUDA).

The engine is chosen per shape class by a short calibration on first use, cached per machine
and torch build outside the repository (trainer/repops/_calib.py); REFEREED_MM_ENGINE or the
`engine` argument forces one. Since all give the same bits, the choice is only about speed.
"""

from __future__ import annotations

import functools
import math
import operator
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F

from trainer.repops import _calib, _native
from trainer.repops._fixed import F32_NAN as _NAN
from trainer.repops._fixed import (
    all_finite,
    canonical_nan,
    canonicalize_nan,
    exponent_ref,
    grid_inv_ulp,
    grid_magic,
    grid_max,
    grid_ulp,
    is_finite_ref,
    p_dot,
    quantize,
    quantize_ref,
    round_f32,
    round_f32_dyadic,
    safe_max,
)
from trainer.repops._spec import OpSpec, RepOpsError, UnsupportedOpError

Engine = Literal["f64", "int8", "int16"]
ENGINES: tuple[Engine, ...] = ("f64", "int8", "int16")
_INT16_MAX_K = 1 << 24  # linalg.c's I16_MAX_K
_SMALL = 1 << 18  # M * N * K below this: f64 (fewer kernel launches), whatever the device
_JOINT = 1 << 16  # (M + N) * K below this: the f64 engine quantizes A and B^T together
SECTION = "Matrix products"


# --- engines ----------------------------------------------------------------------------------


@functools.cache
def _cpu_has_fast_int8() -> bool:
    """Whether this CPU has int8 dot-product instructions that torch._int_mm uses (VNNI, AMX).

    Without them torch 2.13's CPU _int_mm is a plain loop, 20-50x slower than fp32 mm.
    """
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return bool(flags & {"avx512_vnni", "amx_int8"})
    return False


def engine_candidates(a: torch.Tensor, b: torch.Tensor) -> list[Engine]:
    """The engines worth timing for these operands (all give the same bits).

    int8 only where int8 GEMMs are fast (CUDA, CPUs with VNNI or AMX; REFEREED_MM_CALIBRATE_ALL=1
    adds it everywhere, for tests), only for K within the int8 limit and above tiny sizes."""
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    if m * n * k < _SMALL or k > int8_max_k(p_dot(k)):
        return ["f64"]
    every = _native.env("REFEREED_MM_CALIBRATE_ALL") == "1"
    fast = a.device.type == "cuda" or (a.device.type == "cpu" and _cpu_has_fast_int8())
    found: list[Engine] = ["f64", "int8"] if fast or every else ["f64"]
    if _int16_ok(a, k) and (native_isa() != "portable" or every):
        found.append("int16")
    return found


def default_engine(a: torch.Tensor, b: torch.Tensor) -> Engine:
    """The engine matmul_exact uses for these operands: REFEREED_MM_ENGINE if set, else the
    calibrated choice for their shape class (calibrating it now if it is new)."""
    forced = _native.env("REFEREED_MM_ENGINE")
    if forced:
        if forced not in ENGINES:
            raise RepOpsError(f"REFEREED_MM_ENGINE={forced!r}: expected one of {ENGINES}")
        return _engine(forced)
    # Every input of the choice below, so that a product of a shape seen before skips it (about
    # 30 us of Python a product): the shapes, device and threads, the variables engine_candidates
    # and native_isa read, whether the library is there, and the calibration cache file (its
    # variables). _calib drops these whenever a calibration or clear_memory changes a table.
    key = (
        a.shape, b.shape, a.device, torch.get_num_threads(), _native.env("REFEREED_MM_CALIBRATE_ALL"),
        _native.env(ISA_ENV), _native.linalg_library() is None, _calib.cache_file(a.device),
    )  # fmt: skip
    known = _calib.choices.get(key)
    if known is not None:
        return _engine(known)
    candidates = engine_candidates(a, b)
    if len(candidates) == 1:
        chosen: str = candidates[0]
    else:
        chosen = _calib.choose(a, b, candidates, lambda e: _run_engine(a, b, _engine(e)))
    _calib.choices[key] = chosen
    return _engine(chosen)


def _engine(name: str) -> Engine:
    if name == "f64":
        return "f64"
    if name == "int8":
        return "int8"
    if name == "int16":
        return "int16"
    raise ValueError(f"unknown engine {name!r}; expected one of {ENGINES}")


def _finish(s: torch.Tensor, ma: torch.Tensor, mb: torch.Tensor, mx: torch.Tensor | None = None) -> torch.Tensor:
    """float64 exact values -> float32 (one RNE rounding), zeros +0, non-finite rows/columns NaN.
    ma, mb: the maxima of A's rows and B's columns; mx, if given, holds all of them (one check)."""
    out = s.to(torch.float32).add_(0.0)  # -0 + +0 = +0; nonzero values unchanged
    if not (all_finite(mx) if mx is not None else all_finite(ma, mb)):
        bad = ~(ma < math.inf) | ~(mb < math.inf)  # NaN < inf is False
        out = torch.where(bad, canonical_nan(out.device), out)
    return out


def _matmul_f64(a: torch.Tensor, b: torch.Tensor, p: int, joint: bool | None = None) -> torch.Tensor:
    """The f64 engine. Small products quantize A's rows and B's columns as one (..., M + N, K)
    tensor (fewer kernel launches); large ones quantize A and B apart (no transposed copy of B).
    Each value sees the same operations either way."""
    m, k = a.shape[-2], a.shape[-1]
    if joint is None:
        joint = (m + b.shape[-1]) * k < _JOINT
    if joint:
        x = torch.cat([a, b.transpose(-1, -2)], dim=-2).to(torch.float64)  # exact widening
        mx = grid_max(x, [-1])  # per row of A, then per column of B
        c = grid_magic(mx, p)
        q = x.add_(c).sub_(c)  # q * 2^(e - p) (see _fixed.quantize)
        s = torch.matmul(q[..., :m, :], q[..., m:, :].transpose(-1, -2))
        return _finish(s, mx[..., :m, :], mx[..., m:, :].transpose(-1, -2), mx)
    ma, mb = grid_max(a, [-1]), grid_max(b, [-2])  # (..., M, 1) and (..., 1, N)
    qa = quantize(a, grid_magic(ma, p))
    qb = quantize(b, grid_magic(mb, p))
    return _finish(torch.matmul(qa, qb), ma, mb)


def int8_slices(p: int) -> int:
    """How many int8 slices hold q in [-2^p, 2^p]: 8-bit slices in [-128, 127] below a top slice
    in [-2^(p - 8(n-1)), 2^(p - 8(n-1))], which must fit int8, so p - 8(n-1) <= 6."""
    return 1 if p <= 6 else -(-(p - 6) // 8) + 1


def _slice_ranges(p: int) -> list[int]:
    """Max |slice| per slice, lowest first: 128 below the top, max(1, 2^(p - 8(n-1))) for the top."""
    n = int8_slices(p)
    return [128] * (n - 1) + [1 << max(0, p - 8 * (n - 1))]


def _pairs(n: int) -> list[list[tuple[int, int]]]:
    """For each t = 0 .. 2n-2, the slice pairs (i, j) with i + j = t."""
    return [[(i, t - i) for i in range(n) if 0 <= t - i < n] for t in range(2 * n - 1)]


@functools.cache
def int8_max_k(p: int) -> int:
    """The longest K for which every int32 sum of the int8 engine stays exact (< 2^31)."""
    r = _slice_ranges(p)
    worst = max(sum(r[i] * r[j] for i, j in pairs) for pairs in _pairs(len(r)))
    return ((1 << 31) - 1) // worst


def _combine_fits_f64(p: int, k: int) -> bool:
    """Whether S = sum_t 2^(8t) T_t, summed from t = 0 up, keeps every partial sum below 2^53."""
    r = _slice_ranges(p)
    bound = sum((k * sum(r[i] * r[j] for i, j in pairs)) << (8 * t) for t, pairs in enumerate(_pairs(len(r))))
    return bound <= 1 << 53


def _to_slices(x: torch.Tensor, inv_ulp: torch.Tensor, p: int) -> list[torch.Tensor]:
    """int8 slices s_i, lowest first, with q = sum_i s_i * 2^(8i), q = RNE(x * 2^(p - e))."""
    r = torch.round(x.to(torch.float64).mul_(inv_ulp)).to(torch.int32)  # exact scaling, RNE
    out = []
    for _ in range(int8_slices(p) - 1):
        lo = torch.bitwise_and(r + 128, 255).sub_(128)  # in [-128, 127]
        out.append(lo.to(torch.int8))
        r = torch.bitwise_right_shift(r - lo, 8)  # exact division by 2^8
    out.append(r.to(torch.int8))
    return out


def _int_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch._int_mm, zero-padded to CUDA's shape rules (M > 16, K and N multiples of 8): exact."""
    m, k = a.shape
    n = b.shape[1]
    if a.device.type == "cuda":
        pm, pk, pn = max(0, 17 - m), -k % 8, -n % 8
        if pm or pk or pn:
            a = F.pad(a, (0, pk, 0, pm))
            b = F.pad(b, (0, pn, 0, pk))
            return torch._int_mm(a.contiguous(), b.contiguous())[:m, :n]
    return torch._int_mm(a.contiguous(), b.contiguous())


def _int8_sum(sa: list[torch.Tensor], sb: list[torch.Tensor], p: int, k: int) -> torch.Tensor:
    """The exact S of one (M, K) @ (K, N) pair of sliced operands, as float64."""
    terms = []
    for pairs in _pairs(len(sa)):  # T_t = sum over i + j = t of A_i @ B_j, one int8 GEMM over the joined K
        a = torch.cat([sa[i] for i, _ in pairs], 1) if len(pairs) > 1 else sa[pairs[0][0]]
        b = torch.cat([sb[j] for _, j in pairs], 0) if len(pairs) > 1 else sb[pairs[0][1]]
        terms.append(_int_mm(a, b))
    if _combine_fits_f64(p, k):
        s = terms[0].to(torch.float64)
        for t, term in enumerate(terms[1:], 1):
            s.add_(term, alpha=float(1 << (8 * t)))  # integers below 2^53: exact
        return s
    s64 = terms[0].to(torch.int64)
    for t, term in enumerate(terms[1:], 1):
        s64.add_(torch.bitwise_left_shift(term.to(torch.int64), 8 * t))
    return s64.to(torch.float64)  # |S| <= K * 2^(2p) <= 2^53: exact


def _matmul_int8(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    k = a.shape[-1]
    if k > int8_max_k(p):
        raise RepOpsError(f"int8 engine: K = {k} exceeds {int8_max_k(p)} at p = {p}")
    ma, mb = grid_max(a, [-1]), grid_max(b, [-2])
    if not all_finite(ma, mb):  # keep inf/NaN out of the integer casts
        a = torch.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
        b = torch.nan_to_num(b, nan=0.0, posinf=0.0, neginf=0.0)
    sa, sb = safe_max(ma), safe_max(mb)
    slices_a = _to_slices(a, grid_inv_ulp(sa, p), p)
    slices_b = _to_slices(b, grid_inv_ulp(sb, p), p)
    batch = a.shape[:-2]
    if batch:
        nb = math.prod(batch)
        flat_a = [t.reshape(nb, *t.shape[-2:]) for t in slices_a]
        flat_b = [t.reshape(nb, *t.shape[-2:]) for t in slices_b]
        parts = [_int8_sum([t[i] for t in flat_a], [t[i] for t in flat_b], p, k) for i in range(nb)]
        s = torch.stack(parts).reshape(*batch, *parts[0].shape)
    else:
        s = _int8_sum(slices_a, slices_b, p, k)
    s.mul_(grid_ulp(sa, p)).mul_(grid_ulp(sb, p))  # times 2^(e_i - p) * 2^(e'_j - p): exact
    return _finish(s, ma, mb)


def _matmul_int16(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    """The int16 engine's arithmetic in torch ops (its definition, and what the native kernel is
    tested against): A's rows as whole grid integers qa = hA 2^8 + lA, B's columns as the int8
    engine's two slices lB, hB; T_lo = qa @ lB and T_hi = qa @ hB, each a float64 GEMM of integers
    (|T| <= K 2^21 < 2^53: exact in any order), S = T_lo + 2^8 T_hi (exact), then the scales and
    the combine of every engine. p = 14 only (the native kernel's int16 operands)."""
    if p != 14:
        raise RepOpsError(f"int16 engine: p = {p}; it computes p = 14 grids only (K <= 2^25)")
    ma, mb = grid_max(a, [-1]), grid_max(b, [-2])
    if not all_finite(ma, mb):  # keep inf/NaN out of the integer casts
        a = torch.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
        b = torch.nan_to_num(b, nan=0.0, posinf=0.0, neginf=0.0)
    sa, sb = safe_max(ma), safe_max(mb)
    lo_a, hi_a = _to_slices(a, grid_inv_ulp(sa, p), p)
    lo_b, hi_b = _to_slices(b, grid_inv_ulp(sb, p), p)
    qa = hi_a.to(torch.float64).mul_(256.0).add_(lo_a.to(torch.float64))
    s = torch.matmul(qa, lo_b.to(torch.float64)).add_(torch.matmul(qa, hi_b.to(torch.float64)).mul_(256.0))
    s.mul_(grid_ulp(sa, p)).mul_(grid_ulp(sb, p))  # times 2^(e_i - p) * 2^(e'_j - p): exact
    return _finish(s, ma, mb)


# --- native passes (native_src/linalg.c) ------------------------------------------------------

ISA_ENV = "REFEREED_LINALG_ISA"  # force an instruction path of linalg.c: portable, avx2, avx512


def _linalg_lib() -> _native.Linalg | None:
    return _native.linalg_library()


def native_isa() -> str:
    """The instruction path the native passes use: REFEREED_LINALG_ISA if set, else the best
    this CPU runs. A forced path the CPU lacks is an error, never a silent fallback."""
    lib = _linalg_lib()
    if lib is None:
        raise RepOpsError("the native linalg library is not built (python trainer/repops/_native.py)")
    forced = _native.env(ISA_ENV)
    if forced:
        if forced not in _native.ISAS:
            raise RepOpsError(f"{ISA_ENV}={forced!r}: expected one of {_native.ISAS}")
        if not lib.supported(forced):
            raise RepOpsError(f"{ISA_ENV}={forced!r}: this CPU does not run that instruction path")
        return forced
    return lib.best_isa()


class _Workspace(threading.local):
    """Per-thread scratch buffers reused across calls (the float64 operands, the GEMM result, the
    int8 slices): fresh memory of this size costs page faults on every call, which measured
    up to a third of the f64 engine's time. Buffers above WORKSPACE_MAX bytes are not kept."""

    def __init__(self) -> None:
        self.bufs: dict[tuple[str, torch.dtype], torch.Tensor] = {}

    def get(self, role: str, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        numel = math.prod(shape)
        key = (role, dtype)
        buf = self.bufs.get(key)
        if buf is None or buf.numel() < numel:
            buf = torch.empty(max(numel, 1), dtype=dtype)
            if buf.numel() * buf.element_size() <= WORKSPACE_MAX:
                self.bufs[key] = buf
            else:
                self.bufs.pop(key, None)
        return buf[:numel].view(tuple(shape))

    def raw(self, role: str, nbytes: int) -> torch.Tensor:
        """A uint8 buffer of at least `nbytes` bytes (64-byte aligned, as every CPU allocation of
        torch), for scratch that the native passes only see by address; the caller keeps the
        returned tensor referenced while the address is in use. Cheaper than `get` (no view)."""
        key = (role, torch.uint8)
        buf = self.bufs.get(key)
        if buf is None or buf.numel() < nbytes:
            buf = torch.empty(max(nbytes, 1), dtype=torch.uint8)
            if nbytes <= WORKSPACE_MAX:
                self.bufs[key] = buf
            else:
                self.bufs.pop(key, None)
        return buf


def _carve(base: int, *sizes: int) -> list[int]:
    """Addresses of consecutive parts of the given byte sizes from `base`, each 64-byte aligned."""
    out = []
    for size in sizes:
        out.append(base)
        base += (size + 63) & ~63
    return out


def _carved_size(*sizes: int) -> int:
    return sum((size + 63) & ~63 for size in sizes)


WORKSPACE_MAX = 1 << 28  # bytes per buffer kept between calls
_workspace = _Workspace()


def release_workspace() -> None:
    """Drop this thread's scratch buffers (their memory goes back to the allocator)."""
    _workspace.bufs.clear()


def _threads() -> int:
    return max(1, torch.get_num_threads())


def _lines(x: torch.Tensor) -> tuple[torch.Tensor, int, int, int, int, int, int]:
    """x (nb, R, L) as lines (one grid per line r, values along l): the tensor to read and its
    (nb, R, L, sb, sr, sl), with sl == 1 or sr == 1 (else a contiguous copy: same values)."""
    nb, nr, nl = x.shape
    sb, sr, sl = x.stride()
    if nl == 1:
        sl = 1
    if nr == 1:
        sr = 1 if sl != 1 else nl
    if sl != 1 and sr != 1:
        x = x.contiguous()
        sb, sr, sl = x.stride()
    if nb == 1:
        sb = 0
    return x, nb, nr, nl, sb, sr, sl


def _quant_f64_native(
    lib: _native.Linalg, x: torch.Tensor, p: int, role: str, isa: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Lines of x (nb, R, L) on their grids as float64, in x's own memory order (a BLAS reads
    either): (q (nb, R, L) view, bad flags (nb, R) uint8, number of flagged lines)."""
    x, nb, nr, nl, sb, sr, sl = _lines(x)
    if sl == 1:
        q = _workspace.get(role, (nb, nr, nl), torch.float64)
        osb, osr, osl = nr * nl, nl, 1
    else:
        q = _workspace.get(role, (nb, nl, nr), torch.float64).transpose(1, 2)
        osb, osr, osl = nr * nl, 1, nr
    bad = torch.empty((nb, nr), dtype=torch.uint8)
    nbad = lib.quant_f64(
        x.data_ptr(), nb, nr, nl, sb, sr, sl, p, q.data_ptr(), osb, osr, osl, bad.data_ptr(), isa, _threads()
    )
    if nbad < 0:
        raise RepOpsError("native quantizer refused its arguments")
    return q, bad, int(nbad)


def _as3d(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]:
    batch = tuple(a.shape[:-2])
    if a.dim() == 2:
        return a.unsqueeze(0), b.unsqueeze(0), batch
    if a.dim() == 3:
        return a, b, batch
    return a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]), batch


def _matmul_f64_native(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    """The f64 engine with the native passes: quantize A's rows and B's columns (one pass each,
    into reused float64 buffers), one float64 GEMM (torch.mm / torch.bmm, batched), one combine."""
    lib = _linalg_lib()
    assert lib is not None
    isa = _native.ISAS.index(native_isa())
    a3, b3, batch = _as3d(a, b)
    nb, m, _ = a3.shape
    n = b3.shape[2]
    qa, bad_a, na = _quant_f64_native(lib, a3, p, "qa", isa)
    qbt, bad_b, nbb = _quant_f64_native(lib, b3.transpose(1, 2), p, "qb", isa)
    qb = qbt.transpose(1, 2)
    s = _workspace.get("s", (nb, m, n), torch.float64)
    if nb == 1:
        torch.mm(qa[0], qb[0], out=s[0])
    else:
        torch.bmm(qa, qb, out=s)
    out = torch.empty((nb, m, n), dtype=torch.float32)
    rc = lib.combine_f64(
        s.data_ptr(), nb, m, n, s.stride(0), s.stride(1), bad_a.data_ptr(), bad_b.data_ptr(),
        int(na + nbb > 0), out.data_ptr(), isa, _threads(),
    )  # fmt: skip
    if rc != 0:
        raise RepOpsError("native combine refused its arguments")
    return out.reshape(*batch, m, n)


Int8Form = Literal["split", "wide"]


def int8_form(nb: int, m: int, k: int, n: int) -> Int8Form:
    """The GEMM layout of the native int8 engine: "split" (three _int_mm calls per product, 4
    units of int8 work) or "wide" (one call on W_B = [[lo, hi, 0], [0, lo, hi]], 6 units).
    torch has no batched int8 GEMM, so a batch costs one call per entry either way; "wide" is
    used for batches and for small products, where the calls' fixed cost outweighs the work."""
    return "wide" if nb > 1 or m * n * k < _WIDE_MAX else "split"


_WIDE_MAX = 1 << 25  # M * N * K below this (about 320^3): the one-call "wide" form, also for a single product


def _matmul_int8_native(a: torch.Tensor, b: torch.Tensor, p: int, form: Int8Form | None = None) -> torch.Tensor:
    """The int8 engine with the native passes: each operand quantized in one pass straight into
    the int8 layout the GEMMs read, then one fused combine (T0 + 2^8 T1 + 2^16 T2, the scales,
    f32, +0, NaN). W_A = [lo_A | hi_A] (M x 2K) in both forms; W_B is
    - "split": [hi_B ; lo_B] (2K x N), T0 = W_A[:, :K] @ W_B[K:], T1 = W_A @ W_B,
      T2 = W_A[:, K:] @ W_B[:K]: three _int_mm calls on views, no copies;
    - "wide": [[lo_B, hi_B, 0], [0, lo_B, hi_B]] (2K x 3N, the quantizer writes each slice
      twice), W_A @ W_B = [T0 | T1 | T2]: one _int_mm call per batch entry."""
    lib = _linalg_lib()
    assert lib is not None
    isa = _native.ISAS.index(native_isa())
    a3, b3, batch = _as3d(a, b)
    nb, m, k = a3.shape
    n = b3.shape[2]
    form = form or int8_form(nb, m, k, n)
    # The quantizer writes W_A row-major and W_B's slices in B's row order; an operand stored the
    # other way (x^T of a weight gradient, W^T of a forward) would make every int8 store a
    # strided one (measured 4x slower at 512 x 8192 x 512). A contiguous copy first is one
    # fast transposition; the values, and so the bits, are the same.
    if a3.stride(2) != 1 and k > 1:
        a3 = a3.contiguous()
    if b3.stride(2) != 1 and n > 1:
        b3 = b3.contiguous()
    wa = _workspace.get("wa", (nb, m, 2 * k), torch.int8)
    ua = torch.empty(nb * m, dtype=torch.float64)
    ub = torch.empty(nb * n, dtype=torch.float64)
    bad_a = torch.empty(nb * m, dtype=torch.uint8)
    bad_b = torch.empty(nb * n, dtype=torch.uint8)
    threads = _threads()
    xa, _, _, _, sb, sr, sl = _lines(a3)
    na = lib.quant_int8x2(
        xa.data_ptr(), nb, m, k, sb, sr, sl, p, wa.data_ptr(), wa.data_ptr() + k, None, None,
        m * 2 * k, 2 * k, 1, bad_a.data_ptr(), ua.data_ptr(), isa, threads,
    )  # fmt: skip
    xb, _, _, _, sb, sr, sl = _lines(b3.transpose(1, 2))
    if form == "wide":
        wb = _workspace.get("wb3", (nb, 2 * k, 3 * n), torch.int8)
        wb[:, :k, 2 * n :].zero_()
        wb[:, k:, :n].zero_()
        base = wb.data_ptr()
        nbb = lib.quant_int8x2(
            xb.data_ptr(), nb, n, k, sb, sr, sl, p, base, base + n, base + 3 * k * n + n, base + 3 * k * n + 2 * n,
            2 * k * 3 * n, 1, 3 * n, bad_b.data_ptr(), ub.data_ptr(), isa, threads,
        )  # fmt: skip
    else:
        wb = _workspace.get("wb", (nb, 2 * k, n), torch.int8)
        nbb = lib.quant_int8x2(
            xb.data_ptr(), nb, n, k, sb, sr, sl, p, wb.data_ptr() + k * n, wb.data_ptr(), None, None,
            2 * k * n, 1, n, bad_b.data_ptr(), ub.data_ptr(), isa, threads,
        )  # fmt: skip
    if na < 0 or nbb < 0:
        raise RepOpsError("native quantizer refused its arguments")
    if form == "wide":
        t = _workspace.get("t3", (nb, m, 3 * n), torch.int32)
        for i in range(nb):  # torch has no batched int8 GEMM: one call per entry, into t in place
            torch._int_mm(wa[i], wb[i], out=t[i])
        t0, t1, t2 = (t.data_ptr() + 4 * n * i for i in range(3))
        isb, ism = 3 * m * n, 3 * n
    else:
        t = _workspace.get("t", (3, nb, m, n), torch.int32)
        for i in range(nb):
            torch._int_mm(wa[i, :, :k], wb[i, k:], out=t[0, i])
            torch._int_mm(wa[i], wb[i], out=t[1, i])
            torch._int_mm(wa[i, :, k:], wb[i, :k], out=t[2, i])
        t0, t1, t2 = t[0].data_ptr(), t[1].data_ptr(), t[2].data_ptr()
        isb, ism = m * n, n
    out = torch.empty((nb, m, n), dtype=torch.float32)
    rc = lib.combine_int8x2(
        t0, t1, t2, nb, m, n, isb, ism, ua.data_ptr(), ub.data_ptr(),
        bad_a.data_ptr(), bad_b.data_ptr(), int(na + nbb > 0), out.data_ptr(), isa, threads,
    )  # fmt: skip
    if rc != 0:
        raise RepOpsError("native combine refused its arguments")
    return out.reshape(*batch, m, n)


def _int16_ok(a: torch.Tensor, k: int) -> bool:
    """Whether the int16 engine is worth timing for these operands: its native CPU kernel (the
    torch-op path is two float64 GEMMs, slower than the f64 engine's one), K within its limit
    (the binary64 tile sums stay below 2^53, and p = 14)."""
    lib = _linalg_lib() if a.device.type == "cpu" else None
    return lib is not None and k <= min(lib.i16_max_k, _INT16_MAX_K)


def _matmul_int16_native(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    """The int16 engine (linalg.c, rt_mm_i16), one native call: A's rows and B's columns on the
    p = 14 grid written straight into packed panels (A's integers as int16, B's as its two int8
    engine slices), two int16 GEMMs (vpmaddwd on AVX2: T_lo = qa lB, T_hi = qa hB, summed exactly
    by blocks of K), and the int8 engine's combine. On a CPU without int8 dot-product units its two
    int16 GEMMs cost about one fp32 GEMM, where the f64 engine's float64 GEMM costs two."""
    lib = _linalg_lib()
    assert lib is not None
    isa = _native.ISAS.index(native_isa())
    a3, b3, batch = _as3d(a, b)
    nb, m, k = a3.shape
    n = b3.shape[2]
    # the quantizer's vector loops read lines contiguous or side by side and write the packed
    # layout directly, so either layout of A and B goes without a copy
    xa, _, _, _, asb, asr, asl = _lines(a3)
    xbt, _, _, _, bsb, bsc, bsr = _lines(b3.transpose(1, 2))
    kp, pm, pn = (k + 1) // 2, -(-m // 6), -(-n // 8)
    # scratch seen by address only, carved from one reused buffer: the packed panels (int32), the
    # scales ua, ub (float64) and the flags bad_a, bad_b (uint8); the C code writes each before reading it
    sizes = (nb * pm * kp * 6 * 4, nb * pn * kp * 16 * 4, nb * m * 8, nb * n * 8, nb * m, nb * n)
    scratch = _workspace.raw("i16", _carved_size(*sizes))
    pa, pb, ua, ub, bad_a, bad_b = _carve(scratch.data_ptr(), *sizes)
    out = torch.empty((nb, m, n), dtype=torch.float32)
    rc = lib.mm_i16(
        xa.data_ptr(), nb, m, k, asb, asr, asl, xbt.data_ptr(), n, bsb, bsr, bsc, p, pa, pb,
        ua, ub, bad_a, bad_b, out.data_ptr(), isa, _threads(),
    )  # fmt: skip
    if rc < 0:
        raise RepOpsError("native int16 engine refused its arguments")
    return out.reshape(*batch, m, n)


def _native_ok(a: torch.Tensor) -> bool:
    return a.device.type == "cpu" and _linalg_lib() is not None


def _run_engine(a: torch.Tensor, b: torch.Tensor, engine: Engine, path: str | None = None) -> torch.Tensor:
    """One engine on valid, non-empty operands; path "native", "torch" or None (native on CPU
    when the library is built)."""
    p = p_dot(a.shape[-1])
    native = _native_ok(a) if path is None else path == "native"
    if path not in (None, "native", "torch"):
        raise ValueError(f"unknown path {path!r}; expected 'native' or 'torch'")
    if engine == "f64":
        return _matmul_f64_native(a, b, p) if native else _matmul_f64(a, b, p)
    if engine == "int8":
        k = a.shape[-1]
        if k > int8_max_k(p):
            raise RepOpsError(f"int8 engine: K = {k} exceeds {int8_max_k(p)} at p = {p}")
        if native and int8_slices(p) == 2:
            return _matmul_int8_native(a, b, p)
        return _matmul_int8(a, b, p)
    if engine == "int16":
        if a.shape[-1] > _INT16_MAX_K:
            raise RepOpsError(f"int16 engine: K = {a.shape[-1]} exceeds {_INT16_MAX_K}")
        return _matmul_int16_native(a, b, p) if native else _matmul_int16(a, b, p)
    raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")


def matmul_exact(
    a: torch.Tensor, b: torch.Tensor, engine: Engine | None = None, path: str | None = None
) -> torch.Tensor:
    """A @ B for float32 (..., M, K) @ (..., K, N) with equal batch shapes, by the spec."""
    for name, t in (("A", a), ("B", b)):
        if t.dtype != torch.float32:
            raise UnsupportedOpError(f"RepOps matrix products take float32, got {name} of dtype {t.dtype}")
    if a.dim() < 2 or a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise RepOpsError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not form a matrix product")
    k = a.shape[-1]
    if k == 0 or a.numel() == 0 or b.numel() == 0:
        return torch.zeros((*a.shape[:-1], b.shape[-1]), dtype=torch.float32, device=a.device)
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")
    return _run_engine(a, b, engine or default_engine(a, b), path)


# --- aten kernels -----------------------------------------------------------------------------


def mm(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    """aten.mm.default(Tensor self, Tensor mat2)."""
    if self.dim() != 2 or mat2.dim() != 2:
        raise RepOpsError(f"aten.mm takes 2-D tensors, got {self.dim()}-D and {mat2.dim()}-D")
    return matmul_exact(self, mat2)


def _check_addmm(self: torch.Tensor, beta: object, alpha: object) -> None:
    if beta != 1 or alpha != 1:
        raise UnsupportedOpError(
            f"aten.addmm.default with beta={beta!r}, alpha={alpha!r}: RepOps supports only beta=1 and alpha=1"
        )
    if self.dtype != torch.float32:
        raise UnsupportedOpError(f"aten.addmm.default takes a float32 self, got {self.dtype}")


def addmm(
    self: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, *, beta: float = 1, alpha: float = 1
) -> torch.Tensor:
    """aten.addmm.default: self + mm(mat1, mat2), the sum one IEEE float32 addition."""
    _check_addmm(self, beta, alpha)
    return canonicalize_nan(torch.add(self, mm(mat1, mat2)))


def bmm(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    """aten.bmm.default(Tensor self, Tensor mat2): mm per batch entry."""
    if self.dim() != 3 or mat2.dim() != 3:
        raise RepOpsError(f"aten.bmm takes 3-D tensors, got {self.dim()}-D and {mat2.dim()}-D")
    return matmul_exact(self, mat2)


# --- scalar references ------------------------------------------------------------------------


def _quantized_lines(lines: Sequence[Sequence[float]], p: int) -> list[tuple[int, list[int]] | None]:
    """Per line: (e, q) on its grid, or None if it holds a non-finite value."""
    out: list[tuple[int, list[int]] | None] = []
    for line in lines:
        if not all(is_finite_ref(v) for v in line):
            out.append(None)
            continue
        e = exponent_ref(max((abs(v) for v in line), default=0.0))
        out.append((e, [quantize_ref(v, e, p) for v in line]))
    return out


def mm_values_ref(a: list[list[float]], b: list[list[float]], k: int, n: int) -> list[list[float]]:
    """The spec on Python lists: a is M x K, b is K x N (float32 values as floats)."""
    if k == 0:
        return [[0.0] * n for _ in a]
    p = p_dot(k)
    rows = _quantized_lines(a, p)
    cols = _quantized_lines([[b[kk][j] for kk in range(k)] for j in range(n)], p)
    out = []
    for r in rows:
        line = []
        for c in cols:
            if r is None or c is None:
                line.append(_NAN)
            else:
                s = sum(map(operator.mul, r[1], c[1]))
                line.append(round_f32_dyadic(s, r[0] + c[0] - 2 * p) + 0.0)  # a zero result is +0
        out.append(line)
    return out


def _f32_tensor(values: object, shape: Sequence[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32).reshape(tuple(shape))


def mm_reference(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    if self.dim() != 2 or mat2.dim() != 2:
        raise RepOpsError("aten.mm takes 2-D tensors")
    m, k = self.shape
    n = mat2.shape[1]
    vals = mm_values_ref(self.tolist(), mat2.tolist(), k, n)
    return _f32_tensor(vals, (m, n))


def addmm_reference(
    self: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, *, beta: float = 1, alpha: float = 1
) -> torch.Tensor:
    _check_addmm(self, beta, alpha)
    prod = mm_reference(mat1, mat2)
    bias = self.expand_as(prod) if self.dim() <= 2 else self
    out = [round_f32(x + y) for x, y in zip(bias.reshape(-1).tolist(), prod.reshape(-1).tolist(), strict=True)]
    return _f32_tensor(out, prod.shape)


def bmm_reference(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    if self.dim() != 3 or mat2.dim() != 3:
        raise RepOpsError("aten.bmm takes 3-D tensors")
    bsz, m, _ = self.shape
    n = mat2.shape[2]
    if bsz == 0:
        return torch.zeros((0, m, n), dtype=torch.float32)
    return torch.stack([mm_reference(self[i], mat2[i]) for i in range(bsz)])


OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("aten.mm.default", mm, mm_reference, SECTION),
        OpSpec("aten.addmm.default", addmm, addmm_reference, SECTION),
        OpSpec("aten.bmm.default", bmm, bmm_reference, SECTION),
    )
}
