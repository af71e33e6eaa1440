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
  along K (hi.hi, [hi|lo].[lo;hi], lo.lo), combined exactly in float64.
The default is int8 on CUDA and on CPUs with AVX-512 VNNI or AMX, f64 elsewhere.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F

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

Engine = Literal["f64", "int8"]
ENGINES: tuple[Engine, ...] = ("f64", "int8")
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


def default_engine(a: torch.Tensor, b: torch.Tensor) -> Engine:
    """The faster engine for these operands (both give the same bits)."""
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    if m * n * k < _SMALL or k > int8_max_k(p_dot(k)):
        return "f64"
    if a.device.type == "cuda" or (a.device.type == "cpu" and _cpu_has_fast_int8()):
        return "int8"
    return "f64"


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


def matmul_exact(a: torch.Tensor, b: torch.Tensor, engine: Engine | None = None) -> torch.Tensor:
    """A @ B for float32 (..., M, K) @ (..., K, N) with equal batch shapes, by the spec."""
    for name, t in (("A", a), ("B", b)):
        if t.dtype != torch.float32:
            raise UnsupportedOpError(f"RepOps matrix products take float32, got {name} of dtype {t.dtype}")
    if a.dim() < 2 or a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise RepOpsError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not form a matrix product")
    k = a.shape[-1]
    if k == 0 or a.numel() == 0 or b.numel() == 0:
        return torch.zeros((*a.shape[:-1], b.shape[-1]), dtype=torch.float32, device=a.device)
    p = p_dot(k)
    engine = engine or default_engine(a, b)
    if engine == "f64":
        return _matmul_f64(a, b, p)
    if engine == "int8":
        return _matmul_int8(a, b, p)
    raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")


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
