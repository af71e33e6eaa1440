"""Exact dot products of rows against one tensor: `refereed::exact_dot` (docs/repops/linalg.md,
"Exact dot products").

`exact_dot(rows, weight)`: rows float32 [R, *S], weight float32 [*S] (N = numel(S) values each);
the result is float64 [R] with

    out[r] = S_r · 2^(e_g + e_w - 2p),   S_r = Σ_n qr[r, n] · qw[n]  (exact integers, |S_r| <= 2^53)

where the whole stack `rows` is on ONE fixed-point grid (exponent e_g from the largest |value| over
every row: the ledger's rule for the contributions of a step, so that Σ_r out[r] is the exact
⟨q(weight), Σ_r q(row_r)⟩) and `weight` on its own (e_w), each of
p = p_dot64(N) = floor((53 - ceil(log2 N)) / 2) bits (the f64 engine's grid of "Matrix products"
without p_dot's cap of 14: this kernel has no int8 engine, and every bit up to |S| <= 2^53 is free
in binary64: 20 bits at N = 4096, 16 at N = 2^20). Nothing is rounded after the grids: S_r has at
most 53 bits and its exponent stays inside binary64's normal range for every fp32 input, so the
binary64 result *is* the exact value. A row's result depends on the stack's largest value (as the
issue's aggregation rule wants), not on the other rows otherwise: permuting rows permutes the
results, an all-zero row changes nothing, a row alone equals itself in a stack whose maximum it holds.

It is not an ATen operator: it is registered with `torch.library` as `refereed::exact_dot`, so
that a captured program records it as one node (`refereed.exact_dot.default`) which the RepOps
interpreter dispatches here like any other kernel. The ledger's block program uses it for the
first-order attribution of each contributor row (docs/ledger.md, section 3).
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from trainer.repops import _native, linalg
from trainer.repops._fixed import exponent_ref, grid_magic, grid_max, is_finite_ref, p_dot64, quantize, quantize_ref
from trainer.repops._spec import OpSpec, RepOpsError, UnsupportedOpError

Tensor = torch.Tensor
NAMESPACE = "refereed"  # the project's operator namespace (torch.ops.refereed)
EXACT_DOT = "refereed.exact_dot.default"
SECTION = "Exact dot products"
CANONICAL_NAN64_BITS = 0x7FF8000000000000  # the only binary64 NaN exact_dot returns


def _check(rows: Tensor, weight: Tensor) -> tuple[int, int]:
    for name, t in (("rows", rows), ("weight", weight)):
        if t.dtype != torch.float32:
            raise UnsupportedOpError(f"{EXACT_DOT} takes float32 tensors, got {name} of dtype {t.dtype}")
    if rows.dim() < 1 or tuple(rows.shape[1:]) != tuple(weight.shape):
        raise RepOpsError(
            f"{EXACT_DOT}: rows {list(rows.shape)} are not a stack of tensors shaped like the weight "
            f"{list(weight.shape)}"
        )
    return int(rows.shape[0]), int(weight.numel())


def exact_dot(rows: Tensor, weight: Tensor, path: str | None = None) -> Tensor:
    """The fast kernel. The whole stack's grid values (q · 2^(e_g - p), binary64, one grid) times the
    weight's (q · 2^(e_w - p)), summed by one float64 matrix-vector product: every product and
    partial sum is an integer multiple of 2^(e_g + e_w - 2p) below 2^53 of it, so any order,
    blocking or thread count gives the exact S_r · 2^(e_g + e_w - 2p).

    `path`: "native" (the matrix products' native quantizer, linalg.c, one pass per operand, the
    stack read as one line), "torch" (torch ops: CUDA, or CPU without the library) or None (native
    on CPU when the library is built). Both give the same bits (tests/repops/test_dot.py)."""
    r, n = _check(rows, weight)
    if r == 0 or n == 0:
        return torch.zeros((r,), dtype=torch.float64, device=rows.device)
    if path not in (None, "native", "torch"):
        raise ValueError(f"unknown path {path!r}; expected 'native' or 'torch'")
    p = p_dot64(n)
    a = rows.reshape(1, r * n)  # the stack is ONE slice: one grid for every row
    b = weight.reshape(1, n)
    lib = _native.linalg_library() if rows.device.type == "cpu" else None
    if path == "native" and lib is None:
        raise RepOpsError("the native linalg library is not built (python trainer/repops/_native.py)")
    if lib is not None and path != "torch":
        isa = _native.ISAS.index(linalg.native_isa())
        qa, _, na = linalg._quant_f64_native(lib, a.unsqueeze(0), p, "dot_rows", isa)
        qb, _, nb = linalg._quant_f64_native(lib, b.unsqueeze(0), p, "dot_weight", isa)
        out = torch.mm(qa[0].reshape(r, n), qb[0].t()).reshape(r).add_(0.0)  # exact; -0 + +0 = +0
        bad = na + nb > 0
    else:
        ma, mb = grid_max(a, [0, 1]), grid_max(b, [0, 1])  # (1, 1) each
        qa = quantize(a, grid_magic(ma, p)).reshape(r, n)
        qb = quantize(b, grid_magic(mb, p))
        out = torch.mm(qa, qb.t()).reshape(r).add_(0.0)  # exact; -0 + +0 = +0
        bad = not (bool(ma.reshape(()) < math.inf) and bool(mb.reshape(()) < math.inf))  # NaN < inf is False
    if not bad:
        return out
    # a NaN or an infinity anywhere in the stack or the weight: no grid, every row the canonical NaN
    nan = torch.tensor(CANONICAL_NAN64_BITS, dtype=torch.int64, device=out.device).view(torch.float64)
    return nan.expand(r).clone()


def exact_dot_values_ref(rows: list[list[float]], weight: list[float]) -> list[float]:
    """The spec on Python lists (float32 values as floats): Python integers and fractions only."""
    n = len(weight)
    if n == 0:
        return [0.0 for _ in rows]
    p = p_dot64(n)
    values = [v for row in rows for v in row]
    if not all(is_finite_ref(v) for v in values + weight):
        return [math.nan for _ in rows]  # float('nan') is the canonical 0x7FF8000000000000
    e_g = exponent_ref(max(abs(v) for v in values)) if values else 1  # one grid for the whole stack
    e_w = exponent_ref(max(abs(v) for v in weight))
    qw = [quantize_ref(v, e_w, p) for v in weight]
    out = []
    for row in rows:
        s = sum(quantize_ref(a, e_g, p) * b for a, b in zip(row, qw, strict=True))
        exact = Fraction(s) * Fraction(2) ** (e_g + e_w - 2 * p)
        value = float(exact)  # exact: |S| <= 2^53 and the exponent is inside binary64's normal range
        if Fraction(value) != exact:
            raise AssertionError(f"{EXACT_DOT}: {exact} is not a binary64 value")
        out.append(value + 0.0)
    return out


def exact_dot_reference(rows: Tensor, weight: Tensor) -> Tensor:
    r, n = _check(rows, weight)
    lines = rows.reshape(r, n).tolist() if r else []
    return torch.tensor(exact_dot_values_ref(lines, weight.reshape(n).tolist()), dtype=torch.float64).reshape(r)


# --- the operator (torch.library) --------------------------------------------------------------
# Registered once, when trainer.repops is imported: capture traces the block program through it
# (make_fx records one node), and trainer.program._schema reads its schema by name.


@torch.library.custom_op("refereed::exact_dot", mutates_args=())
def _exact_dot_op(rows: Tensor, weight: Tensor) -> Tensor:
    return exact_dot(rows, weight)


@_exact_dot_op.register_fake
def _exact_dot_fake(rows: Tensor, weight: Tensor) -> Tensor:
    _check(rows, weight)
    return rows.new_empty((rows.shape[0],), dtype=torch.float64)


OPS: dict[str, OpSpec] = {EXACT_DOT: OpSpec(EXACT_DOT, exact_dot, exact_dot_reference, SECTION)}
