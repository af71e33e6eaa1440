"""Convolution, pooling and constant padding (docs/repops/conv.md).

A convolution is a matrix product: the patch matrix of the input (im2col, pure data movement)
times the weight matrix, so every output element is an exact dot product on the fixed-point
grid of docs/repops/linalg.md ("Matrix products"), rounded once; the fast kernel builds the
patches and calls the exact matmul. The input gradient is the convolution of the zero-inserted,
padded output gradient with the flipped, transposed weight; the weight gradient the product of
the output gradient by the patch matrix; the bias gradient an exact sum. Pooling windows are
gathered through one index map per geometry: max pooling takes the aten.max.dim rule over the
window, average pooling an exact window sum divided once in binary64, and every backward sends
its terms to input positions where each position's terms are added by the Sums rule.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from trainer.repops._fixed import (
    F32_NAN,
    _exponent_field,
    canonical_nan,
    canonicalize_nan,
    exponent_ref,
    f32_bits,
    nonfinite_sum_ref,
    p_dot,
    p_sum,
    quantize_ref,
    round_f32,
    round_f32_dyadic,
)
from trainer.repops._spec import OpSpec, RepOpsError, UnsupportedOpError
from trainer.repops.linalg import matmul_exact, mm_values_ref
from trainer.repops.reduce import _max_keepdim, exact_sum, max_ref, sum_ref

Tensor = torch.Tensor

SEC_CONV = "Convolution"
SEC_CONV_BWD = "Convolution backward"
SEC_MAX_POOL = "Max pooling"
SEC_AVG_POOL = "Average pooling"
SEC_ADAPTIVE = "Adaptive average pooling"
SEC_PAD = "Constant padding"

OP_CONV = "aten.convolution.default"
OP_CONV_BWD = "aten.convolution_backward.default"


# --- arguments ----------------------------------------------------------------------------------


def _check_f32(op: str, **tensors: Tensor | None) -> None:
    for name, t in tensors.items():
        if t is not None and t.dtype != torch.float32:
            raise UnsupportedOpError(f"{op}: RepOps defines it for float32 tensors, got {name} of dtype {t.dtype}")


def _pair(op: str, name: str, v: int | Sequence[int], d: int, default: Sequence[int] | None = None) -> list[int]:
    """An int list argument of length 1 or d (or empty, meaning `default`) as d ints."""
    vals = [v] if isinstance(v, int) else list(v)
    if not vals and default is not None:
        vals = list(default)
    if len(vals) == 1:
        vals = vals * d
    if len(vals) != d or any(type(x) is not int for x in vals):
        raise RepOpsError(f"{op}: {name} must hold 1 or {d} ints, got {v!r}")
    return vals


class _ConvGeom:
    """The 2-d form of a 1-d or 2-d convolution: 1-d problems get a height of 1."""

    def __init__(
        self,
        op: str,
        input_shape: Sequence[int],
        weight_shape: Sequence[int],
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        transposed: bool,
        output_padding: Sequence[int],
        groups: int,
    ) -> None:
        if transposed:
            raise UnsupportedOpError(
                f"{op} with transposed=True (conv_transpose): RepOps has no kernel for transposed convolution"
            )
        nd = len(weight_shape) - 2
        if nd not in (1, 2):
            raise UnsupportedOpError(f"{op}: RepOps supports 1-d and 2-d convolution, got a {nd}-d weight")
        if len(input_shape) != nd + 2:
            raise RepOpsError(f"{op}: input of shape {list(input_shape)} for a {nd}-d weight; expected a batch")
        if any(v != 0 for v in output_padding):
            raise RepOpsError(f"{op}: output_padding {list(output_padding)} without transposed=True")
        st, pad, dil = (
            _pair(op, n, v, nd) for n, v in (("stride", stride), ("padding", padding), ("dilation", dilation))
        )
        if any(s < 1 for s in st) or any(d < 1 for d in dil) or any(p < 0 for p in pad):
            raise RepOpsError(f"{op}: stride {st} and dilation {dil} must be positive, padding {pad} non-negative")
        n, c = input_shape[0], input_shape[1]
        o, cg = weight_shape[0], weight_shape[1]
        if groups < 1 or c % groups or o % groups or c // groups != cg:
            raise RepOpsError(
                f"{op}: {c} input channels, weight {list(weight_shape)} and groups={groups} do not fit together"
            )
        if nd == 1:
            st, pad, dil = [1, *st], [0, *pad], [1, *dil]
        self.nd, self.n, self.c, self.o, self.cg, self.groups = nd, n, c, o, cg, groups
        self.og = o // groups
        self.spatial = [1, *input_shape[2:]] if nd == 1 else list(input_shape[2:])
        self.kernel = [1, *weight_shape[2:]] if nd == 1 else list(weight_shape[2:])
        self.stride, self.padding, self.dilation = st, pad, dil
        self.out = [
            (size + 2 * p - d * (k - 1) - 1) // s + 1
            for size, k, s, p, d in zip(self.spatial, self.kernel, st, pad, dil, strict=True)
        ]
        if any(v < 1 for v in self.out):
            raise RepOpsError(
                f"{op}: input {list(input_shape)} is smaller than the dilated kernel {list(weight_shape[2:])}"
            )

    def as2d(self, t: Tensor) -> Tensor:
        return t.unsqueeze(2) if self.nd == 1 else t

    def back(self, t: Tensor) -> Tensor:
        return t.squeeze(2) if self.nd == 1 else t


def _conv_geom(op: str, x: Tensor, w: Tensor, *args: object) -> _ConvGeom:
    return _ConvGeom(op, tuple(x.shape), tuple(w.shape), *args)  # type: ignore[arg-type]


# --- convolution: fast kernels --------------------------------------------------------------------


def _patches(x: Tensor, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
             dilation: Sequence[int], groups: int, out: Sequence[int]) -> Tensor:  # fmt: skip
    """The patch matrix (im2col) of x (N, C, H, W): (G, N*Ho*Wo, Cg*kh*kw), zeros where a window
    leaves the input. Data movement only (zero padding, then a strided copy)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (ho, wo) = kernel, stride, padding, dilation, out
    n, c = x.shape[0], x.shape[1]
    cg = c // groups
    xp = F.pad(x, (pw, pw, ph, ph)) if ph or pw else x
    s_n, s_c, s_h, s_w = xp.stride()
    view = xp.as_strided(
        (groups, n, ho, wo, cg, kh, kw), (s_c * cg, s_n, s_h * sh, s_w * sw, s_c, s_h * dh, s_w * dw),
        xp.storage_offset(),
    )  # fmt: skip
    return view.reshape(groups, n * ho * wo, cg * kh * kw)


def _conv2d(x: Tensor, w: Tensor, g: _ConvGeom) -> Tensor:
    """The exact convolution (no bias) of x (N, C, H, W) and w (O, Cg, kh, kw) in 2-d form.

    Row n*L + l of the patch matrix times column o of W_g^T: by the spec, mm(P, W^T)[i, j] has the
    bits of mm(W, P^T)[j, i] (the same integers and exponents), so the patches are the rows."""
    ho, wo = g.out
    cols = _patches(x, g.kernel, g.stride, g.padding, g.dilation, g.groups, g.out)  # (G, N*L, K)
    wt = w.reshape(g.groups, g.og, -1).transpose(1, 2)  # (G, K, Og): its columns are W's rows
    y = matmul_exact(cols, wt) if g.groups > 1 else matmul_exact(cols[0], wt[0]).unsqueeze(0)  # (G, N*L, Og)
    y = y.reshape(g.groups, g.n, ho, wo, g.og).permute(1, 0, 4, 2, 3)
    return y.reshape(g.n, g.o, ho, wo)


def _add_bias(y: Tensor, bias: Tensor | None) -> Tensor:
    if bias is None:
        return y
    return canonicalize_nan(torch.add(y, bias.reshape(1, -1, 1, 1)))


def convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    """aten.convolution.default: exact dot products of patches and filters, then one fp32 bias add."""
    _check_f32(OP_CONV, input=input, weight=weight, bias=bias)
    g = _conv_geom(OP_CONV, input, weight, stride, padding, dilation, transposed, output_padding, groups)
    _check_bias(OP_CONV, bias, g.o)
    y = _add_bias(_conv2d(g.as2d(input), g.as2d(weight), g), bias)
    return g.back(y)


def _check_bias(op: str, bias: Tensor | None, o: int) -> None:
    if bias is not None and tuple(bias.shape) != (o,):
        raise RepOpsError(f"{op}: bias of shape {list(bias.shape)} for {o} output channels")


def _grad_input_operands(dy: Tensor, w: Tensor, g: _ConvGeom) -> tuple[Tensor, Tensor, _ConvGeom]:
    """The operands and geometry of the stride-1 convolution that is the input gradient: dy with
    stride-1 zeros inserted, padded by d*(k-1) - p on the left and so that the output has the
    input's size on the right (negative padding crops); w flipped and transposed per group."""
    n, o = dy.shape[0], dy.shape[1]
    (ho, wo), (sh, sw) = g.out, g.stride
    hd, wd = (ho - 1) * sh + 1, (wo - 1) * sw + 1
    if sh > 1 or sw > 1:
        z = dy.new_zeros((n, o, hd, wd))
        z[:, :, ::sh, ::sw] = dy
    else:
        z = dy
    pads = []
    for size, k, p, d, dil_len in zip(g.spatial, g.kernel, g.padding, g.dilation, (hd, wd), strict=True):
        left = d * (k - 1) - p
        pads.append((left, size - dil_len + p))
    z = F.pad(z, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    kh, kw = g.kernel
    wf = w.reshape(g.groups, g.og, g.cg, kh, kw).transpose(1, 2).flip(-1, -2).reshape(g.c, g.og, kh, kw)
    geom = _ConvGeom(OP_CONV_BWD, tuple(z.shape), tuple(wf.shape), [1, 1], [0, 0], g.dilation, False, [0, 0], g.groups)
    return z, wf, geom


def _grad_weight(dy: Tensor, x: Tensor, g: _ConvGeom) -> Tensor:
    """dW_g = dY_g (Og x N*L) @ P_g (N*L x K): rows per output channel, columns per (c, kh, kw)."""
    ho, wo = g.out
    cols = _patches(x, g.kernel, g.stride, g.padding, g.dilation, g.groups, g.out)  # (G, N*L, K)
    a = dy.reshape(g.n, g.groups, g.og, ho * wo).permute(1, 2, 0, 3).reshape(g.groups, g.og, g.n * ho * wo)
    dw = matmul_exact(a, cols) if g.groups > 1 else matmul_exact(a[0], cols[0]).unsqueeze(0)
    return dw.reshape(g.o, g.cg, *g.kernel)


def convolution_backward(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    bias_sizes: Sequence[int] | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[Tensor, Tensor, Tensor]:
    """aten.convolution_backward.default: (grad_input, grad_weight, grad_bias); a result whose
    output_mask entry is False is an empty float32 tensor of shape [0] (docs/program.md)."""
    _check_f32(OP_CONV_BWD, grad_output=grad_output, input=input, weight=weight)
    g = _conv_geom(OP_CONV_BWD, input, weight, stride, padding, dilation, transposed, output_padding, groups)
    dy = g.as2d(grad_output)
    if tuple(dy.shape) != (g.n, g.o, *g.out):
        raise RepOpsError(f"{OP_CONV_BWD}: grad_output of shape {list(grad_output.shape)} does not fit the convolution")
    if len(output_mask) != 3:
        raise RepOpsError(f"{OP_CONV_BWD}: output_mask must hold 3 bools, got {list(output_mask)}")
    none = torch.empty(0, dtype=torch.float32, device=input.device)
    gi = gw = gb = none
    if output_mask[0]:
        z, wf, geom = _grad_input_operands(dy, g.as2d(weight), g)
        gi = g.back(_conv2d(z, wf, geom))
    if output_mask[1]:
        gw = g.back(_grad_weight(dy, g.as2d(input), g))
    if output_mask[2]:
        # the Sums rule over dy[:, o]; channel-major first so the native grid sum reads it in one pass
        gb = exact_sum(dy.transpose(0, 1).contiguous(), [1, 2, 3], keepdim=False)
    return gi, gw, gb


# --- convolution: scalar references ---------------------------------------------------------------


def _nested(t: Tensor) -> list:  # type: ignore[type-arg]
    return t.tolist()


def convolution_reference(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    _check_f32(OP_CONV, input=input, weight=weight, bias=bias)
    g = _conv_geom(OP_CONV, input, weight, stride, padding, dilation, transposed, output_padding, groups)
    _check_bias(OP_CONV, bias, g.o)
    x, w = _nested(g.as2d(input)), _nested(g.as2d(weight))
    b = bias.tolist() if bias is not None else None
    (h, wd), (kh, kw), (sh, sw), (ph, pw), (dh, dw), (ho, wo) = (
        g.spatial, g.kernel, g.stride, g.padding, g.dilation, g.out,
    )  # fmt: skip
    k = g.cg * kh * kw
    out = [[[[0.0] * wo for _ in range(ho)] for _ in range(g.o)] for _ in range(g.n)]
    for gi in range(g.groups):
        filters = [[w[o][c][i][j] for c in range(g.cg) for i in range(kh) for j in range(kw)]
                   for o in range(gi * g.og, (gi + 1) * g.og)]  # fmt: skip
        for n in range(g.n):
            rows = []  # one patch per output position, in the order of the filter entries
            for oh in range(ho):
                for ow in range(wo):
                    patch = []
                    for c in range(gi * g.cg, (gi + 1) * g.cg):
                        for i in range(kh):
                            for j in range(kw):
                                ih, iw = oh * sh - ph + i * dh, ow * sw - pw + j * dw
                                patch.append(x[n][c][ih][iw] if 0 <= ih < h and 0 <= iw < wd else 0.0)
                    rows.append(patch)
            cols = [[f[kk] for f in filters] for kk in range(k)]  # K x Og
            prod = mm_values_ref(rows, cols, k, g.og)
            for pos, line in enumerate(prod):
                for oo, v in enumerate(line):
                    o = gi * g.og + oo
                    out[n][o][pos // wo][pos % wo] = round_f32(v + b[o]) if b is not None else v
    return g.back(torch.tensor(out, dtype=torch.float32).reshape(g.n, g.o, ho, wo))


def convolution_backward_reference(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    bias_sizes: Sequence[int] | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[Tensor, Tensor, Tensor]:
    """The three gradients straight from their definitions (docs: "Convolution backward"): each
    element a dot product over the terms that reach it, on the grids the spec names."""
    _check_f32(OP_CONV_BWD, grad_output=grad_output, input=input, weight=weight)
    g = _conv_geom(OP_CONV_BWD, input, weight, stride, padding, dilation, transposed, output_padding, groups)
    dy_t = g.as2d(grad_output)
    if tuple(dy_t.shape) != (g.n, g.o, *g.out):
        raise RepOpsError(f"{OP_CONV_BWD}: grad_output of shape {list(grad_output.shape)} does not fit the convolution")
    dy, x, w = _nested(dy_t), _nested(g.as2d(input)), _nested(g.as2d(weight))
    (h, wd), (kh, kw), (sh, sw), (ph, pw), (dh, dw), (ho, wo) = (
        g.spatial, g.kernel, g.stride, g.padding, g.dilation, g.out,
    )  # fmt: skip
    none = torch.empty(0, dtype=torch.float32)
    gi_t = gw_t = gb_t = none
    if output_mask[0]:
        p = p_dot(g.og * kh * kw)
        gi = [[[[0.0] * wd for _ in range(h)] for _ in range(g.c)] for _ in range(g.n)]
        for c in range(g.c):
            grp, cl = divmod(c, g.cg)
            os_ = range(grp * g.og, (grp + 1) * g.og)
            row = _grid([w[o][cl][i][j] for o in os_ for i in range(kh) for j in range(kw)], p)
            for n in range(g.n):
                for ih in range(h):
                    for iw in range(wd):
                        terms = []  # (weight, grad) pairs whose window position lands on (ih, iw)
                        for o in os_:
                            for i in range(kh):
                                for j in range(kw):
                                    th, tw = ih + ph - i * dh, iw + pw - j * dw
                                    if th % sh or tw % sw:
                                        continue
                                    oh, ow = th // sh, tw // sw
                                    if 0 <= oh < ho and 0 <= ow < wo:
                                        terms.append((w[o][cl][i][j], dy[n][o][oh][ow]))
                        gi[n][c][ih][iw] = _dot_ref(row, [t[0] for t in terms], [t[1] for t in terms], p)
        gi_t = g.back(torch.tensor(gi, dtype=torch.float32).reshape(g.n, g.c, h, wd))
    if output_mask[1]:
        kk = g.n * ho * wo
        gw = []
        for o in range(g.o):
            grp = o // g.og
            a = [[dy[n][o][oh][ow] for n in range(g.n) for oh in range(ho) for ow in range(wo)]]
            cols = []
            for cl in range(g.cg):
                for i in range(kh):
                    for j in range(kw):
                        col = []
                        for n in range(g.n):
                            for oh in range(ho):
                                for ow in range(wo):
                                    ih, iw = oh * sh - ph + i * dh, ow * sw - pw + j * dw
                                    inside = 0 <= ih < h and 0 <= iw < wd
                                    col.append(x[n][grp * g.cg + cl][ih][iw] if inside else 0.0)
                        cols.append(col)
            b = [[cols[jj][r] for jj in range(len(cols))] for r in range(kk)]
            gw.append(mm_values_ref(a, b, kk, len(cols))[0])
        gw_t = g.back(torch.tensor(gw, dtype=torch.float32).reshape(g.o, g.cg, kh, kw))
    if output_mask[2]:
        vals = [[dy[n][o][oh][ow] for n in range(g.n) for oh in range(ho) for ow in range(wo)] for o in range(g.o)]
        gb_t = torch.tensor([sum_ref(v) for v in vals], dtype=torch.float32)
    return gi_t, gw_t, gb_t


def _grid(values: Sequence[float], p: int) -> tuple[int, list[int]] | None:
    """(e, q) of one line on its grid, or None if it holds a non-finite value."""
    if any(math.isnan(v) or math.isinf(v) for v in values):
        return None
    e = exponent_ref(max((abs(v) for v in values), default=0.0))
    return e, [quantize_ref(v, e, p) for v in values]


def _dot_ref(row: tuple[int, list[int]] | None, ws: list[float], gs: list[float], p: int) -> float:
    """One input-gradient element: the weight line's grid (row) applied to the weights of the
    terms, the terms' own gradients on their grid, one exact sum, one rounding."""
    col = _grid(gs, p)
    if row is None or col is None:
        return F32_NAN
    e_w = row[0]
    s = sum(quantize_ref(a, e_w, p) * b for a, b in zip(ws, col[1], strict=True))
    return round_f32_dyadic(s, e_w + col[0] - 2 * p) + 0.0


# --- pooling windows ------------------------------------------------------------------------------


def _pool_out(op: str, size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """torch's pooling output size: floor (or ceil) of the window count; with ceil_mode the last
    window must start inside the input or the left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    if out < 1:
        raise RepOpsError(f"{op}: input size {size} gives no window for kernel {k}, stride {s}, padding {p}")
    return out


def _planes(op: str, x: Tensor) -> tuple[Tensor, list[int]]:
    """x (C, H, W) or (N, C, H, W) as (B, H*W) planes, with the leading shape."""
    if x.dim() not in (3, 4):
        raise RepOpsError(f"{op}: expected a 3-D or 4-D input, got shape {list(x.shape)}")
    lead = list(x.shape[:-2])
    return x.reshape(math.prod(lead), x.shape[-2] * x.shape[-1]), lead


def _window_map(
    size: Sequence[int], out: Sequence[int], starts: Sequence[Sequence[int]], lens: Sequence[Sequence[int]],
    dilation: Sequence[int], kmax: Sequence[int],
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """(idx (Ho*Wo, K) int64 flat input positions, valid (Ho*Wo, K) bool): window (oh, ow) holds
    positions starts[0][oh] + i*d0, starts[1][ow] + j*d1 for i < lens[0][oh], j < lens[1][ow], in
    window order (i, then j); positions outside the input or past a window's length are invalid."""
    axes = []
    for a in range(2):
        st = torch.tensor(starts[a], dtype=torch.int64).unsqueeze(1)
        ln = torch.tensor(lens[a], dtype=torch.int64).unsqueeze(1)
        j = torch.arange(kmax[a], dtype=torch.int64).unsqueeze(0)
        pos = st + j * dilation[a]  # (out, k)
        ok = (j < ln) & (pos >= 0) & (pos < size[a])
        axes.append((pos, ok))
    (ph, okh), (pw, okw) = axes
    idx = (ph[:, None, :, None] * size[1] + pw[None, :, None, :]).reshape(out[0] * out[1], kmax[0] * kmax[1])
    valid = (okh[:, None, :, None] & okw[None, :, None, :]).reshape(out[0] * out[1], kmax[0] * kmax[1])
    return torch.where(valid, idx, 0), valid


def _gather_windows(planes: Tensor, idx: Tensor, valid: Tensor, fill: float) -> Tensor:
    """(B, Ho*Wo, K) window values; invalid positions hold `fill`."""
    win = planes[:, idx.reshape(-1)].reshape(planes.shape[0], *idx.shape)
    return torch.where(valid, win, torch.tensor(fill, dtype=planes.dtype, device=planes.device))


def _p_sum_of(count: Tensor) -> Tensor:
    """p_sum(count) = min(50, 53 - ceil(log2 count)) elementwise (int64; 50 for a count of 0 or 1).

    ceil(log2 c) is the bit length of c - 1, which frexp's exponent gives exactly (c < 2^53)."""
    bitlen = torch.frexp((count - 1).clamp(min=0).to(torch.float64))[1].to(torch.int64)
    return (53 - bitlen).clamp_(max=50)


def _scatter_single(terms: Tensor, dest: Tensor, size: int) -> Tensor:
    """_route_sum where no two terms share a destination: the Sums rule of one value is the value
    itself (its grid has p_sum(1) = 50 bits), with -0 as +0 and NaN canonical."""
    out = torch.zeros((terms.shape[0], size), dtype=torch.float32, device=terms.device)
    return canonicalize_nan(out.scatter_(1, dest, terms.reshape(dest.shape) + 0.0))


def _route_sum(terms: Tensor, dest: Tensor, size: int, disjoint: bool = False) -> Tensor:
    """out (B, size): out[b, d] = the Sums rule (linalg.md) over {terms[b, m] : dest[b, m] = d},
    +0 where nothing lands. terms (B, M) fp32, dest (B, M) int64 in [0, size). `disjoint`: the
    caller knows that no two terms of a row share a destination."""
    if disjoint:
        return _scatter_single(terms, dest, size)
    b = terms.shape[0]
    flat = (dest + torch.arange(b, device=dest.device).unsqueeze(1) * size).reshape(-1)
    t = terms.reshape(-1)
    finite = torch.isfinite(t)
    tf = torch.where(finite, t, torch.zeros((), dtype=t.dtype, device=t.device))
    n = b * size
    count = torch.zeros(n, dtype=torch.int64, device=t.device).index_add_(0, flat, torch.ones_like(flat))
    m = torch.zeros(n, dtype=torch.float32, device=t.device).scatter_reduce_(0, flat, tf.abs(), "amax")
    p = _p_sum_of(count)  # per destination
    magic = (_exponent_field(m) + ((53 - p) << 52) + (1 << 51)).view(torch.float64)[flat]
    q = tf.to(torch.float64).add_(magic).sub_(magic)  # each term on its destination's grid (see _fixed.quantize)
    out = torch.zeros(n, dtype=torch.float64, device=t.device).index_add_(0, flat, q).to(torch.float32)
    if not bool(finite.all()):

        def has(mask: Tensor) -> Tensor:
            z = torch.zeros(n, dtype=torch.int64, device=t.device)
            return z.index_add_(0, flat, mask.to(torch.int64)) > 0

        nan, pos, neg = has(torch.isnan(t)), has(t == math.inf), has(t == -math.inf)
        inf = torch.full((), math.inf, dtype=torch.float32, device=t.device)
        out = torch.where(pos, inf, torch.where(neg, -inf, out))
        out = torch.where(nan | (pos & neg), canonical_nan(t.device), out)
    return out.reshape(b, size)


def _route_sum_ref(terms: Sequence[tuple[int, float]], size: int) -> list[float]:
    groups: dict[int, list[float]] = {}
    for d, v in terms:
        groups.setdefault(d, []).append(v)
    return [sum_ref(groups[d]) if d in groups else 0.0 for d in range(size)]


# --- max pooling ----------------------------------------------------------------------------------

OP_MAX = "aten.max_pool2d_with_indices.default"
OP_MAX_BWD = "aten.max_pool2d_with_indices_backward.default"
NEG_ZERO_BITS = -(2**31)  # the int32 view of -0.0


class _MaxGeom:
    def __init__(self, op: str, shape: Sequence[int], kernel_size: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool) -> None:  # fmt: skip
        if len(shape) not in (3, 4):
            raise RepOpsError(f"{op}: expected a 3-D or 4-D input, got shape {list(shape)}")
        k = _pair(op, "kernel_size", kernel_size, 2)
        s = _pair(op, "stride", stride, 2, default=k)
        p = _pair(op, "padding", padding, 2)
        d = _pair(op, "dilation", dilation, 2)
        if min(k) < 1 or min(s) < 1 or min(d) < 1 or min(p) < 0:
            raise RepOpsError(f"{op}: kernel {k}, stride {s}, dilation {d} must be positive, padding {p} >= 0")
        if any(pp > kk // 2 for pp, kk in zip(p, k, strict=True)):
            raise RepOpsError(f"{op}: padding {p} exceeds half the kernel {k}")
        self.size = list(shape[-2:])
        self.out = [_pool_out(op, *a, ceil_mode) for a in zip(self.size, k, s, p, d, strict=True)]
        self.k, self.s, self.p, self.d = k, s, p, d
        starts = [[o * s[a] - p[a] for o in range(self.out[a])] for a in range(2)]
        lens = [[k[a]] * self.out[a] for a in range(2)]
        self.idx, self.valid = _window_map(self.size, self.out, starts, lens, d, k)
        if not bool(self.valid.any(1).all()):
            raise UnsupportedOpError(f"{op}: a window holds no input position (kernel {k}, dilation {d}, padding {p})")
        # Windows that cannot overlap: the output position whose window holds each input position
        # (-1: none), so "every index lies in its own window" is one gather and one comparison.
        self.disjoint = all(ss >= (kk - 1) * dd + 1 for ss, kk, dd in zip(s, k, d, strict=True))
        self.owner: Tensor | None = None
        if self.disjoint:
            positions = torch.arange(self.idx.shape[0], dtype=torch.int64).unsqueeze(1).expand_as(self.idx)
            owner = torch.full((self.size[0] * self.size[1],), -1, dtype=torch.int64)
            self.owner = owner.index_put_((self.idx[self.valid],), positions[self.valid])


@functools.lru_cache(maxsize=256)
def _max_geom_cached(op: str, shape: tuple[int, ...], k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...],
                     d: tuple[int, ...], ceil_mode: bool) -> _MaxGeom:  # fmt: skip
    return _MaxGeom(op, shape, k, s, p, d, ceil_mode)


def _max_geom(op: str, shape: Sequence[int], kernel_size: Sequence[int], stride: Sequence[int],
              padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool) -> _MaxGeom:  # fmt: skip
    """The geometry of a pooling call, built once per distinct call (a training step repeats them).
    Its tensors are shared between calls: read them, never write them."""

    def key(v: object) -> tuple[int, ...] | None:
        """v as a tuple of exact ints, or None. Only exact ints are keys: True == 1 and 2.0 == 2 hash
        alike, and a cached geometry must never let through an argument the checks would refuse."""
        vals = (v,) if type(v) is int else tuple(v) if isinstance(v, list | tuple) else None
        return vals if vals is not None and all(type(x) is int for x in vals) else None

    keys = [key(v) for v in (shape, kernel_size, stride, padding, dilation)]
    if type(ceil_mode) is bool and all(k is not None for k in keys):
        return _max_geom_cached(op, *keys, ceil_mode)  # type: ignore[arg-type]
    return _MaxGeom(op, shape, kernel_size, stride, padding, dilation, ceil_mode)  # the checks say what is wrong


def _max_rule(win: Tensor, valid: Tensor, rows: Tensor) -> tuple[Tensor, Tensor]:
    """Per window (row): the aten.max.dim value and the flat position of its first holder.
    win, valid, rows: (R, K) values (-inf where invalid), validity, flat input positions."""
    v = _max_keepdim(win, [1])
    same = (win == v) & (torch.signbit(win) == torch.signbit(v))
    hit = torch.where(torch.isnan(v), torch.isnan(win), same) & valid
    k = win.shape[1]
    first = torch.amin(torch.where(hit, torch.arange(k, device=win.device), k), dim=1, keepdim=True)
    return v[:, 0], rows.gather(1, first)[:, 0]


def _max_pool_generic(planes: Tensor, g: _MaxGeom) -> tuple[Tensor, Tensor]:
    """Every window by _max_rule: (B, L) values and indices."""
    b, (nl, k) = planes.shape[0], g.idx.shape
    idx, valid = g.idx.to(planes.device), g.valid.to(planes.device)
    win = _gather_windows(planes, idx, valid, -math.inf).reshape(b * nl, k)
    rows = idx.unsqueeze(0).expand(b, -1, -1).reshape(b * nl, k)
    v, i = _max_rule(win, valid.unsqueeze(0).expand(b, -1, -1).reshape(b * nl, k), rows)
    return v.reshape(b, nl), i.reshape(b, nl)


def max_pool2d_with_indices(
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    dilation: Sequence[int] = (1,),
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    """aten.max_pool2d_with_indices.default: per window the aten.max.dim rule (NaN if any, +0 over
    -0) and the first position in window order holding it, as the flat index h * W + w.

    Fast path: torch's own max_pool2d (first strictly larger value in window order) on the order
    key of each value's bits as float64 (exact): the key orders -0 below +0, so the first holder of
    the largest key is the rule's index, and the value is that input's bits. An input without -0
    needs no key: float32's own order is the key's, so torch pools x itself. NaN has no place in
    either order; windows holding one are redone by the rule."""
    _check_f32(OP_MAX, self=self)
    g = _max_geom(OP_MAX, self.shape, kernel_size, stride, padding, dilation, ceil_mode)
    planes, lead = _planes(OP_MAX, self)
    shape = [*lead, *g.out]
    if planes.numel() == 0:
        v, i = _max_pool_generic(planes, g)
        return v.reshape(shape), i.reshape(shape)
    x = self.contiguous()
    bits = x.view(torch.int32)
    if bool((bits == NEG_ZERO_BITS).any()):
        key = torch.bitwise_xor(bits, torch.bitwise_and(torch.bitwise_right_shift(bits, 31), 0x7FFFFFFF))
        _, it = torch.ops.aten.max_pool2d_with_indices(key.to(torch.float64), g.k, g.s, g.p, g.d, ceil_mode)
    else:  # without -0 the float32 order is the key's order (NaN aside): torch's pooling on x itself
        _, it = torch.ops.aten.max_pool2d_with_indices(x, g.k, g.s, g.p, g.d, ceil_mode)
    i = it.reshape(planes.shape[0], -1)
    v = planes.gather(1, i)
    nan = torch.isnan(x)
    if bool(nan.any()):
        has = torch.ops.aten.max_pool2d_with_indices(nan.to(torch.float32), g.k, g.s, g.p, g.d, ceil_mode)[0]
        b, pos = (has.reshape(planes.shape[0], -1) > 0).nonzero(as_tuple=True)
        rows, ok = g.idx.to(self.device)[pos], g.valid.to(self.device)[pos]
        win = torch.where(ok, planes[b.unsqueeze(1), rows], torch.tensor(-math.inf, device=self.device))
        fv, fi = _max_rule(win, ok, rows)
        v, i = v.index_put((b, pos), fv), i.index_put((b, pos), fi)
    return v.reshape(shape), i.reshape(shape)


def max_pool2d_with_indices_backward(
    grad_output: Tensor,
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    indices: Tensor,
) -> Tensor:
    """aten.max_pool2d_with_indices_backward.default: each input position gets the Sums-rule sum of
    the output gradients whose index names it (+0 if none)."""
    _check_f32(OP_MAX_BWD, grad_output=grad_output, self=self)
    g = _max_geom(OP_MAX_BWD, self.shape, kernel_size, stride, padding, dilation, ceil_mode)
    dest = _check_indices(grad_output, self, indices, g.out)
    size = g.size[0] * g.size[1]
    b = dest.shape[0]
    terms = grad_output.reshape(b, -1)
    if _distinct(dest, g):  # the Sums rule of one value is the value: torch's 0 + g, -0 as +0
        return canonicalize_nan(
            torch.ops.aten.max_pool2d_with_indices_backward(
                grad_output.contiguous(), self.contiguous(), g.k, g.s, g.p, g.d, ceil_mode, indices.contiguous()
            )
        )
    return _route_sum(terms, dest, size).reshape(self.shape)


def _distinct(dest: Tensor, g: _MaxGeom) -> bool:
    """Whether no two indices of a plane can coincide: the windows do not overlap and every index
    lies inside its own window's span."""
    if g.owner is None:
        return False
    own = torch.arange(dest.shape[1], dtype=torch.int64, device=dest.device)
    return bool((g.owner.to(dest.device)[dest] == own).all())


def _check_indices(grad_output: Tensor, self: Tensor, indices: Tensor, out: Sequence[int]) -> Tensor:
    want = (*self.shape[:-2], *out)
    if tuple(grad_output.shape) != want or tuple(indices.shape) != want:
        raise RepOpsError(
            f"{OP_MAX_BWD}: grad_output {list(grad_output.shape)} and indices {list(indices.shape)} "
            f"must both have the pooled shape {list(want)}"
        )
    if indices.dtype != torch.int64:
        raise RepOpsError(f"{OP_MAX_BWD}: indices must be int64, got {indices.dtype}")
    size = self.shape[-2] * self.shape[-1]
    dest = indices.reshape(math.prod(self.shape[:-2]), -1)
    if dest.numel() and bool(((dest < 0) | (dest >= size)).any()):
        raise RepOpsError(f"{OP_MAX_BWD}: an index lies outside the input plane [0, {size})")
    return dest


def _max_windows_ref(g: _MaxGeom) -> list[list[int | None]]:
    """Per output position (row-major), its window's flat input positions in window order (None: outside)."""
    (h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw), (ho, wo) = g.size, g.k, g.s, g.p, g.d, g.out
    wins = []
    for oh in range(ho):
        for ow in range(wo):
            win: list[int | None] = []
            for i in range(kh):
                for j in range(kw):
                    ih, iw = oh * sh - ph + i * dh, ow * sw - pw + j * dw
                    win.append(ih * w + iw if 0 <= ih < h and 0 <= iw < w else None)
            wins.append(win)
    return wins


def _same_ref(a: float, b: float) -> bool:
    if math.isnan(b):
        return math.isnan(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def max_pool2d_with_indices_reference(
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    dilation: Sequence[int] = (1,),
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    _check_f32(OP_MAX, self=self)
    g = _max_geom(OP_MAX, self.shape, kernel_size, stride, padding, dilation, ceil_mode)
    planes, lead = _planes(OP_MAX, self)
    wins = _max_windows_ref(g)
    vals, idxs = [], []
    for plane in planes.tolist():
        for win in wins:
            pos = [q for q in win if q is not None]
            v = max_ref([plane[q] for q in pos])
            vals.append(v)
            idxs.append(next(q for q in pos if _same_ref(plane[q], v)))
    shape = [*lead, *g.out]
    return torch.tensor(vals, dtype=torch.float32).reshape(shape), torch.tensor(idxs, dtype=torch.int64).reshape(shape)


def max_pool2d_with_indices_backward_reference(
    grad_output: Tensor,
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    indices: Tensor,
) -> Tensor:
    _check_f32(OP_MAX_BWD, grad_output=grad_output, self=self)
    g = _max_geom(OP_MAX_BWD, self.shape, kernel_size, stride, padding, dilation, ceil_mode)
    dest = _check_indices(grad_output, self, indices, g.out).tolist()
    grads = grad_output.reshape(len(dest), -1).tolist()
    size = g.size[0] * g.size[1]
    out = [_route_sum_ref(list(zip(d, gr, strict=True)), size) for d, gr in zip(dest, grads, strict=True)]
    return torch.tensor(out, dtype=torch.float32).reshape(self.shape)


# --- average pooling ------------------------------------------------------------------------------

OP_AVG = "aten.avg_pool2d.default"
OP_AVG_BWD = "aten.avg_pool2d_backward.default"
OP_ADAPTIVE = "aten._adaptive_avg_pool2d.default"
OP_ADAPTIVE_BWD = "aten._adaptive_avg_pool2d_backward.default"


class _AvgGeom:
    """Windows and divisors of avg_pool2d (torch's rules) or adaptive average pooling."""

    size: list[int]
    out: list[int]
    idx: Tensor
    valid: Tensor
    divisor: list[int]  # per output position, row-major
    regular: tuple[list[int], list[int], list[int]] | None = None  # avg_pool2d's (kernel, stride, padding)
    ceil_mode: bool = False
    starts: list[list[int]]  # per axis, each window's first position (may lie in the padding)
    lens: list[list[int]]  # per axis, each window's length

    @property
    def disjoint(self) -> bool:
        """Whether no two windows share an input position (along both axes)."""
        return all(
            a + n <= b
            for st, ln in zip(self.starts, self.lens, strict=True)
            for a, n, b in zip(st, ln, st[1:], strict=False)
        )

    @classmethod
    def pool(cls, op: str, shape: Sequence[int], kernel_size: Sequence[int], stride: Sequence[int],
             padding: Sequence[int], ceil_mode: bool, count_include_pad: bool,
             divisor_override: int | None) -> _AvgGeom:  # fmt: skip
        if len(shape) not in (3, 4):
            raise RepOpsError(f"{op}: expected a 3-D or 4-D input, got shape {list(shape)}")
        k = _pair(op, "kernel_size", kernel_size, 2)
        s = _pair(op, "stride", stride, 2, default=k)
        p = _pair(op, "padding", padding, 2)
        if min(k) < 1 or min(s) < 1 or min(p) < 0:
            raise RepOpsError(f"{op}: kernel {k} and stride {s} must be positive, padding {p} >= 0")
        if any(pp * 2 > kk for pp, kk in zip(p, k, strict=True)):
            raise RepOpsError(f"{op}: padding {p} exceeds half the kernel {k}")
        if divisor_override is not None and (type(divisor_override) is not int or divisor_override <= 0):
            raise UnsupportedOpError(
                f"{op}: divisor_override={divisor_override!r}; RepOps needs a positive int or None"
            )
        g = cls()
        g.size = list(shape[-2:])
        g.out = [_pool_out(op, *a, 1, ceil_mode) for a in zip(g.size, k, s, p, strict=True)]
        starts = [[o * s[a] - p[a] for o in range(g.out[a])] for a in range(2)]
        g.starts, g.lens = starts, [[k[a]] * g.out[a] for a in range(2)]
        g.idx, g.valid = _window_map(g.size, g.out, starts, g.lens, [1, 1], k)
        g.regular = (k, s, p)
        g.ceil_mode = ceil_mode
        padded = []  # torch: the window clipped to the padded input counts when count_include_pad
        inside = []
        for a in range(2):
            padded.append([min(st + k[a], g.size[a] + p[a]) - st for st in starts[a]])
            inside.append([min(st + k[a], g.size[a]) - max(st, 0) for st in starts[a]])
        if divisor_override is not None:
            g.divisor = [divisor_override] * (g.out[0] * g.out[1])
        else:
            src = padded if count_include_pad else inside
            g.divisor = [src[0][i] * src[1][j] for i in range(g.out[0]) for j in range(g.out[1])]
        return g

    @classmethod
    def adaptive(cls, op: str, shape: Sequence[int], output_size: Sequence[int]) -> _AvgGeom:
        if len(shape) not in (3, 4):
            raise RepOpsError(f"{op}: expected a 3-D or 4-D input, got shape {list(shape)}")
        out = _pair(op, "output_size", output_size, 2)
        if min(out) < 1 or min(shape[-2:]) < 1:
            raise RepOpsError(f"{op}: output_size {out} and input {list(shape)} must be positive")
        g = cls()
        g.size, g.out = list(shape[-2:]), out
        starts = [[(i * g.size[a]) // out[a] for i in range(out[a])] for a in range(2)]
        ends = [[-((-(i + 1) * g.size[a]) // out[a]) for i in range(out[a])] for a in range(2)]
        lens = [[e - s for s, e in zip(starts[a], ends[a], strict=True)] for a in range(2)]
        g.starts, g.lens = starts, lens
        g.idx, g.valid = _window_map(g.size, out, starts, lens, [1, 1], [max(v) for v in lens])
        g.divisor = [lens[0][i] * lens[1][j] for i in range(out[0]) for j in range(out[1])]
        return g


def _padded(planes: Tensor, g: _AvgGeom, fill: float = 0.0) -> tuple[Tensor, list[int]]:
    """The planes (B, H, W) with `fill` around them so every window of a regular geometry lies
    inside, and the right/bottom padding used."""
    assert g.regular is not None
    k, s, p = g.regular
    right = [max(p[a], (g.out[a] - 1) * s[a] - p[a] + k[a] - g.size[a]) for a in range(2)]
    x = planes.reshape(-1, *g.size)
    return F.pad(x, (p[1], right[1], p[0], right[0]), value=fill), right


def _strided_windows(planes: Tensor, g: _AvgGeom) -> Tensor:
    """(B, L, K) window values of a regular geometry, zeros outside the input: the values and order
    of _gather_windows(fill=0), read through a strided view of the zero-padded planes."""
    assert g.regular is not None
    (kh, kw), (sh, sw), _ = g.regular
    xp, _ = _padded(planes, g)
    sb, s_h, s_w = xp.stride()
    ho, wo = g.out
    view = xp.as_strided((xp.shape[0], ho, wo, kh, kw), (sb, s_h * sh, s_w * sw, s_h, s_w), xp.storage_offset())
    return view.reshape(xp.shape[0], ho * wo, kh * kw)


def _strided_route_sum(t: Tensor, g: _AvgGeom) -> Tensor:
    """_route_sum for a regular geometry whose window terms are t (B, L): every window sends its
    term to each of its positions, accumulated offset by offset on strided views of a padded
    plane (max per destination, then each term on its destination's grid, exact float64 sums)."""
    assert g.regular is not None
    (kh, kw), (sh, sw), (ph, pw) = g.regular
    ho, wo = g.out
    b = t.shape[0]
    tt = t.reshape(b, ho, wo)
    finite = torch.isfinite(tt)
    tf = torch.where(finite, tt, torch.zeros((), dtype=tt.dtype, device=tt.device))
    zeros, _ = _padded(torch.zeros((b, g.size[0] * g.size[1]), dtype=torch.float32, device=t.device), g)
    hp, wp = zeros.shape[1:]

    def at(buf: Tensor, i: int, j: int) -> Tensor:
        return buf[..., i : i + sh * (ho - 1) + 1 : sh, j : j + sw * (wo - 1) + 1 : sw]

    mx, count = zeros.clone(), torch.zeros((hp, wp), dtype=torch.int64, device=t.device)
    a = tf.abs()
    for i in range(kh):
        for j in range(kw):
            at(mx, i, j).copy_(torch.maximum(at(mx, i, j), a))
            at(count, i, j).add_(1)
    magic = (_exponent_field(mx) + ((53 - _p_sum_of(count)) << 52) + (1 << 51)).view(torch.float64)
    acc = torch.zeros((b, hp, wp), dtype=torch.float64, device=t.device)
    t64 = tf.to(torch.float64)
    for i in range(kh):
        for j in range(kw):
            c = at(magic, i, j)
            at(acc, i, j).add_((t64 + c).sub_(c))  # each term on its destination's grid: exact sums
    h, w = g.size
    out = acc[:, ph : ph + h, pw : pw + w].to(torch.float32)
    if not bool(finite.all()):
        flags = []
        for mask in (torch.isnan(tt), tt == math.inf, tt == -math.inf):
            hit = torch.zeros((b, hp, wp), dtype=torch.bool, device=t.device)
            for i in range(kh):
                for j in range(kw):
                    at(hit, i, j).logical_or_(mask)
            flags.append(hit[:, ph : ph + h, pw : pw + w])
        nan, pos, neg = flags
        inf = torch.full((), math.inf, dtype=torch.float32, device=t.device)
        out = torch.where(pos, inf, torch.where(neg, -inf, out))
        out = torch.where(nan | (pos & neg), canonical_nan(t.device), out)
    return out.reshape(b, h * w)


def _avg_forward(x: Tensor, g: _AvgGeom, op: str) -> Tensor:
    """Per window: V = the exact Sums-rule value of its input values (p = p_sum(count)), then
    f32(RN64(V / divisor))."""
    _check_f32(op, self=x)
    planes, lead = _planes(op, x)
    valid = g.valid.to(x.device)
    win = _strided_windows(planes, g) if g.regular else _gather_windows(planes, g.idx.to(x.device), valid, 0.0)
    all_finite = bool(torch.isfinite(planes).all())
    wf = win if all_finite else torch.where(torch.isfinite(win), win, torch.zeros((), dtype=win.dtype))
    p = _p_sum_of(valid.sum(1))  # per window, from its number of input positions
    if all_finite and g.regular:  # the window maxima of |x| by torch's max pool (exact; padding never wins)
        k, st, pad = g.regular
        m = torch.ops.aten.max_pool2d(planes.reshape(-1, *g.size).abs(), k, st, pad, [1, 1], g.ceil_mode)
        m = m.reshape(planes.shape[0], -1, 1)
    else:
        m = wf.abs().amax(2, keepdim=True)
    magic = (_exponent_field(m) + ((53 - p) << 52).reshape(1, -1, 1) + (1 << 51)).view(torch.float64)
    v = wf.to(torch.float64).add_(magic).sub_(magic).sum(2)  # exact (see _fixed.quantize)
    div = torch.tensor(g.divisor, dtype=torch.float64, device=x.device)
    out = v.div_(div).to(torch.float32)
    if not all_finite:
        nan = torch.isnan(win).any(2)
        pos, neg = (win == math.inf).any(2), (win == -math.inf).any(2)
        inf = torch.full((), math.inf, dtype=torch.float32, device=x.device)
        out = torch.where(pos, inf, torch.where(neg, -inf, out))
        out = torch.where(nan | (pos & neg), canonical_nan(x.device), out)
    return out.reshape(*lead, *g.out)


def _avg_backward(grad_output: Tensor, x: Tensor, g: _AvgGeom, op: str) -> Tensor:
    """t = f32(grad / divisor) per window, sent to each input position of the window; each input
    position gets the Sums-rule sum of what lands on it."""
    _check_f32(op, grad_output=grad_output, self=x)
    want = (*x.shape[:-2], *g.out)
    if tuple(grad_output.shape) != want:
        raise RepOpsError(f"{op}: grad_output {list(grad_output.shape)} must have the pooled shape {list(want)}")
    b = math.prod(x.shape[:-2])
    div = torch.tensor(g.divisor, dtype=torch.float32, device=x.device)
    t = canonicalize_nan(torch.div(grad_output.reshape(b, -1), div))  # (B, L)
    if g.regular and not g.disjoint:
        return _strided_route_sum(t, g).reshape(x.shape)
    idx, valid = g.idx.to(x.device), g.valid.to(x.device)
    dest = idx[valid]  # (M,) the valid (window, position) pairs, window-major
    src = valid.nonzero()[:, 0]  # their window
    terms = t[:, src]
    return _route_sum(terms, dest.unsqueeze(0).expand(b, -1), g.size[0] * g.size[1], g.disjoint).reshape(x.shape)


def _windows_ref(g: _AvgGeom) -> list[list[int]]:
    """Per output position (row-major), the flat input positions of its window inside the input."""
    (h, w), (ho, wo) = g.size, g.out
    wins = []
    for oh in range(ho):
        for ow in range(wo):
            rows = range(g.starts[0][oh], g.starts[0][oh] + g.lens[0][oh])
            cols = range(g.starts[1][ow], g.starts[1][ow] + g.lens[1][ow])
            wins.append([ih * w + iw for ih in rows for iw in cols if 0 <= ih < h and 0 <= iw < w])
    return wins


def _avg_forward_ref(x: Tensor, g: _AvgGeom, op: str) -> Tensor:
    _check_f32(op, self=x)
    planes, lead = _planes(op, x)
    wins = _windows_ref(g)
    out = []
    for plane in planes.tolist():
        for win, d in zip(wins, g.divisor, strict=True):
            vals = [plane[q] for q in win]
            special = nonfinite_sum_ref(vals)
            if special is not None:
                out.append(special)
                continue
            e = exponent_ref(max(abs(v) for v in vals))
            p = p_sum(len(vals))
            s = sum(quantize_ref(v, e, p) for v in vals)
            out.append(round_f32(math.ldexp(float(s), e - p) / d))  # exact V, one binary64 division, fp32
    return torch.tensor(out, dtype=torch.float32).reshape(*lead, *g.out)


def _avg_backward_ref(grad_output: Tensor, x: Tensor, g: _AvgGeom, op: str) -> Tensor:
    _check_f32(op, grad_output=grad_output, self=x)
    want = (*x.shape[:-2], *g.out)
    if tuple(grad_output.shape) != want:
        raise RepOpsError(f"{op}: grad_output {list(grad_output.shape)} must have the pooled shape {list(want)}")
    b = math.prod(x.shape[:-2])
    wins = _windows_ref(g)
    size = g.size[0] * g.size[1]
    out = []
    for gr in grad_output.reshape(b, -1).tolist():
        terms = [(q, round_f32(v / d)) for v, d, win in zip(gr, g.divisor, wins, strict=True) for q in win]
        out.append(_route_sum_ref(terms, size))
    return torch.tensor(out, dtype=torch.float32).reshape(x.shape)


def avg_pool2d(
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """aten.avg_pool2d.default."""
    g = _AvgGeom.pool(OP_AVG, self.shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _avg_forward(self, g, OP_AVG)


def avg_pool2d_reference(
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    g = _AvgGeom.pool(OP_AVG, self.shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return _avg_forward_ref(self, g, OP_AVG)


def avg_pool2d_backward(
    grad_output: Tensor,
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> Tensor:
    """aten.avg_pool2d_backward.default."""
    g = _AvgGeom.pool(
        OP_AVG_BWD, self.shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )
    return _avg_backward(grad_output, self, g, OP_AVG_BWD)


def avg_pool2d_backward_reference(
    grad_output: Tensor,
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> Tensor:
    g = _AvgGeom.pool(
        OP_AVG_BWD, self.shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )
    return _avg_backward_ref(grad_output, self, g, OP_AVG_BWD)


def adaptive_avg_pool2d(self: Tensor, output_size: Sequence[int]) -> Tensor:
    """aten._adaptive_avg_pool2d.default: windows [floor(i*H/OH), ceil((i+1)*H/OH)) per axis."""
    return _avg_forward(self, _AvgGeom.adaptive(OP_ADAPTIVE, self.shape, output_size), OP_ADAPTIVE)


def adaptive_avg_pool2d_reference(self: Tensor, output_size: Sequence[int]) -> Tensor:
    return _avg_forward_ref(self, _AvgGeom.adaptive(OP_ADAPTIVE, self.shape, output_size), OP_ADAPTIVE)


def adaptive_avg_pool2d_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    """aten._adaptive_avg_pool2d_backward.default: the output size is grad_output's."""
    g = _AvgGeom.adaptive(OP_ADAPTIVE_BWD, self.shape, list(grad_output.shape[-2:]))
    return _avg_backward(grad_output, self, g, OP_ADAPTIVE_BWD)


def adaptive_avg_pool2d_backward_reference(grad_output: Tensor, self: Tensor) -> Tensor:
    g = _AvgGeom.adaptive(OP_ADAPTIVE_BWD, self.shape, list(grad_output.shape[-2:]))
    return _avg_backward_ref(grad_output, self, g, OP_ADAPTIVE_BWD)


# --- constant padding -----------------------------------------------------------------------------

OP_PAD = "aten.constant_pad_nd.default"


def _pad_args(self: Tensor, pad: Sequence[int], value: float | int | bool) -> list[tuple[int, int]]:
    """Per dimension (before, after) padding, dimension 0 first; the value must fit the dtype."""
    if len(pad) % 2 or len(pad) > 2 * self.dim():
        raise RepOpsError(f"{OP_PAD}: pad {list(pad)} must hold pairs for at most {self.dim()} dimensions")
    if not self.dtype.is_floating_point and float(value) != int(value):
        raise UnsupportedOpError(f"{OP_PAD}: value {value!r} is not an integer for a {self.dtype} tensor")
    if self.dtype.is_floating_point and self.dtype != torch.float32:
        raise UnsupportedOpError(f"{OP_PAD}: RepOps defines it for float32 and integer tensors, got {self.dtype}")
    pairs = [(0, 0)] * self.dim()
    for i in range(len(pad) // 2):
        pairs[self.dim() - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    for d, (a, b) in enumerate(pairs):
        if self.shape[d] + min(a, 0) + min(b, 0) < 0:  # torch crops first, then pads
            raise RepOpsError(f"{OP_PAD}: padding {a, b} crops more than dimension {d} of size {self.shape[d]} holds")
    return pairs


def constant_pad_nd(self: Tensor, pad: Sequence[int], value: float | int | bool = 0) -> Tensor:
    """aten.constant_pad_nd.default: data movement; negative padding crops; the fill is `value`
    converted to the dtype (RN to fp32 for float32; NaN is the canonical NaN)."""
    _pad_args(self, pad, value)
    out = torch.constant_pad_nd(self, list(pad), value)
    if self.dtype == torch.float32 and isinstance(value, float) and math.isnan(value):
        out = torch.constant_pad_nd(self, list(pad), 0.0)
        mask = torch.constant_pad_nd(torch.zeros_like(self, dtype=torch.bool), list(pad), True)
        out = torch.where(mask, canonical_nan(self.device), out)
    return out


def constant_pad_nd_reference(self: Tensor, pad: Sequence[int], value: float | int | bool = 0) -> Tensor:
    """Index loops on the elements' bit patterns (float32 as int32 bits, so NaN payloads are kept)."""
    pairs = _pad_args(self, pad, value)
    shape = [n + a + b for n, (a, b) in zip(self.shape, pairs, strict=True)]
    f32 = self.dtype == torch.float32
    src = (self.contiguous().view(torch.int32) if f32 else self.contiguous()).reshape(-1).tolist()
    fill: int | bool
    if f32:
        fill = f32_bits(round_f32(float(value)))
        fill = fill - (1 << 32) if fill >= 1 << 31 else fill
    else:
        fill = bool(value) if self.dtype == torch.bool else int(value)
    in_strides = [math.prod(self.shape[d + 1 :]) for d in range(self.dim())]
    out_strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    out = []
    for i in range(math.prod(shape)):
        at, inside = 0, True
        for d in range(len(shape)):
            j = (i // out_strides[d]) % shape[d] - pairs[d][0]
            if not 0 <= j < self.shape[d]:
                inside = False
                break
            at += j * in_strides[d]
        out.append(src[at] if inside else fill)
    if f32:
        return torch.tensor(out, dtype=torch.int32).view(torch.float32).reshape(shape)
    return torch.tensor(out, dtype=self.dtype).reshape(shape)


OPS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec(OP_CONV, convolution, convolution_reference, SEC_CONV),
        OpSpec(OP_CONV_BWD, convolution_backward, convolution_backward_reference, SEC_CONV_BWD),
        OpSpec(OP_MAX, max_pool2d_with_indices, max_pool2d_with_indices_reference, SEC_MAX_POOL),
        OpSpec(OP_MAX_BWD, max_pool2d_with_indices_backward, max_pool2d_with_indices_backward_reference, SEC_MAX_POOL),
        OpSpec(OP_AVG, avg_pool2d, avg_pool2d_reference, SEC_AVG_POOL),
        OpSpec(OP_AVG_BWD, avg_pool2d_backward, avg_pool2d_backward_reference, SEC_AVG_POOL),
        OpSpec(OP_ADAPTIVE, adaptive_avg_pool2d, adaptive_avg_pool2d_reference, SEC_ADAPTIVE),
        OpSpec(OP_ADAPTIVE_BWD, adaptive_avg_pool2d_backward, adaptive_avg_pool2d_backward_reference, SEC_ADAPTIVE),
        OpSpec(OP_PAD, constant_pad_nd, constant_pad_nd_reference, SEC_PAD),
    )
}
