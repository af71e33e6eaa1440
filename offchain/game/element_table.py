"""The table that decides which program nodes the element phase takes (docs/game.md section 2.7).

A node is keyed by `keccak256(abi.encode(H(utf8(op)), H(argBytes), nIn))`, the three values its
descriptor (already proven against the graph root) fixes. `ElementReferee.elementOp` holds the keys'
first 12 bytes, each followed by its code + 1, packed in one constant, `TABLE`
(`tests/game/test_element_table.py` checks it against this list). Twelve bytes suffice: a node that
another entry's key would take needs a second preimage of 96 bits (about 2^92 hashes for the
whole table), and the packed table is 13 bytes an entry where a 32-byte comparison took 46 of the
contract's bytecode, which is at its size limit. Only calls
whose arguments are all tensors (and the schema's default `alpha=1`) are keyed: a Python scalar gives
another `argBytes` and goes to the oracle.
"""

from __future__ import annotations

import functools
import hashlib
import struct

import torch
from eth_hash.auto import keccak

from trainer.program.program import TENSOR, encode_args

# (op, args, RepOpsElement code): the element ops of docs/repops/ieee.md whose call takes tensors only.
ENTRIES: tuple[tuple[str, tuple[tuple[str, object], ...], int], ...] = (
    ("aten.add.Tensor", (("self", TENSOR), ("other", TENSOR), ("alpha", 1)), 0),  # ADD
    ("aten.sub.Tensor", (("self", TENSOR), ("other", TENSOR), ("alpha", 1)), 2),  # SUB
    ("aten.mul.Tensor", (("self", TENSOR), ("other", TENSOR)), 4),  # MUL
    ("aten.div.Tensor", (("self", TENSOR), ("other", TENSOR)), 5),  # DIV
    ("aten.neg.default", (("self", TENSOR),), 6),  # NEG
    ("aten.reciprocal.default", (("self", TENSOR),), 7),  # RECIPROCAL
    ("aten.sqrt.default", (("self", TENSOR),), 8),  # SQRT
    ("aten.rsqrt.default", (("self", TENSOR),), 9),  # RSQRT
    ("aten.abs.default", (("self", TENSOR),), 10),  # ABS
    ("aten.relu.default", (("self", TENSOR),), 12),  # RELU
    ("aten.where.self", (("condition", TENSOR), ("self", TENSOR), ("other", TENSOR)), 13),  # WHERE
    # The exact dot products: the element is isolated here, then decided by DotReferee (docs/game.md 2.8).
    ("aten.mm.default", (("self", TENSOR), ("mat2", TENSOR)), 64),  # ElementReferee.MM
    (
        "aten.addmm.default",
        (("self", TENSOR), ("mat1", TENSOR), ("mat2", TENSOR), ("beta", 1), ("alpha", 1)),
        65,
    ),  # ElementReferee.ADDMM
    # The transcendental functions: the element is isolated here, then decided by a TraceReferee game that
    # the DotReferee opens (docs/game.md 2.9). Code 66 + i is trainer.repops.programs function i; rsqrt (69)
    # is computed inline above (RSQRT), so it is not keyed to the trace game.
    ("aten.exp.default", (("self", TENSOR),), 66),
    ("aten.log.default", (("self", TENSOR),), 67),
    ("aten.log1p.default", (("self", TENSOR),), 68),
    ("aten.tanh.default", (("self", TENSOR),), 70),
    ("aten.sigmoid.default", (("self", TENSOR),), 71),
    ("aten.erf.default", (("self", TENSOR),), 72),
    ("aten.gelu.default", (("self", TENSOR), ("approximate", "none")), 73),
    ("aten.gelu.default", (("self", TENSOR), ("approximate", "tanh")), 74),
    # Copies whose arguments are fixed: ElementReferee.COPY (the same flat index).
    ("aten.clone.default", (("self", TENSOR),), 52),
    ("aten.clone.default", (("self", TENSOR), ("memory_format", torch.contiguous_format)), 52),
    # A conversion to fp32, keyed as the int64 one (I64_TO_F32): the bundled workloads' convert a count (a mean's
    # divisor). From another dtype, the defender proves the input's dtype and the oracle decides it.
    (
        "aten._to_copy.default",
        (("self", TENSOR), ("dtype", torch.float32), ("non_blocking", False), ("memory_format", None)),
        26,
    ),
)
# The Tensor-Scalar calls: an fp32 tensor and a Python number (`mul.Tensor(x, 0.9)`, AdamW's and GELU's
# constants, `add.Tensor(x, 1e-08)`). The number varies, so they are keyed with argHash 0 (`SCALAR_ARGS`); the
# game's defender opens the argument bytes (`ElementReferee.openArgs`) and the referee reads the number
# (`scalar_arg` is the same reading). ElementReferee's codes MUL_SCALAR (48) .. 51, each one one input.
SCALAR_ENTRIES: tuple[tuple[str, int], ...] = (
    ("aten.mul.Tensor", 48),
    ("aten.div.Tensor", 49),
    ("aten.add.Tensor", 50),
    ("aten.sub.Tensor", 51),
)
SCALAR_OPS: frozenset[int] = frozenset(code for _, code in SCALAR_ENTRIES)
# Data movement whose arguments vary (sizes, dims), also keyed with argHash 0: the output element is one input
# element. COPY (52): at the same flat index (the input's and the output's shapes hold as many elements);
# EXPAND (53): at its broadcast position; PERMUTE (54): at its permuted position, the dims read from the argument
# bytes in stage ARGS (`permute_dims`).
COPY, EXPAND, PERMUTE = 52, 53, 54
# Creation ops, also keyed with argHash 0 (the fill value varies): the output element is the fill value rounded to
# fp32, read from the argument bytes in stage ARGS (`const_arg`). CONST0 (55): no tensor input (scalar_tensor, full);
# CONST1 (56): one, which gives only the shape (full_like).
CONST0, CONST1 = 55, 56
LAYOUT_ENTRIES: tuple[tuple[str, int], ...] = (
    ("aten.view.default", COPY),
    ("aten._unsafe_view.default", COPY),
    ("aten.squeeze.dims", COPY),
    ("aten.squeeze.dim", COPY),
    ("aten.unsqueeze.default", COPY),
    ("aten.expand.default", EXPAND),
    ("aten.permute.default", PERMUTE),
)
CONST_ENTRIES: tuple[tuple[str, int, int], ...] = (  # (op, nIn, code)
    ("aten.scalar_tensor.default", 0, CONST0),
    ("aten.full.default", 0, CONST0),
    ("aten.full_like.default", 1, CONST1),
)
CONST_OPS: frozenset[int] = frozenset({CONST0, CONST1})
LAYOUT_OPS: frozenset[int] = frozenset({COPY, EXPAND, PERMUTE})
# The codes whose game starts in stage ARGS (the defender opens the argument bytes) when keyed with argHash 0.
ARGS_OPS: frozenset[int] = SCALAR_OPS | {PERMUTE} | CONST_OPS
SCALAR_ARGS = bytes(32)  # the argHash of the scalar and layout entries' keys
# The template of their argument bytes (canonical CBOR, docs/program.md): [["self", undefined], ["other", s]],
# then ["alpha", 1] for add and sub.
_SELF_OTHER = bytes.fromhex("826473656c66f782656f74686572")
_ALPHA_ONE = bytes.fromhex("8265616c70686101")
_SELF_DIMS = bytes.fromhex("82826473656c66f7826464696d73")  # permute's: [["self", undefined], ["dims", [..]]]
# The creation calls' templates around their fill value (canonical CBOR, docs/program.md).
_SCALAR_TENSOR_HEAD = bytes.fromhex("82826173")  # [["s", v], ...
_FULL_HEAD = bytes.fromhex("83826473697a65")  # [["size", [..]], ...
_FILL_VALUE = bytes.fromhex("826a66696c6c5f76616c7565")  # ["fill_value", ...
_DTYPE_F32 = bytes.fromhex("8265647479706567666c6f61743332")  # ["dtype", "float32"]]
_FULL_LIKE_HEAD = bytes.fromhex("84826473656c66f7826a66696c6c5f76616c7565")  # [["self", undefined], ["fill_value",
_FULL_LIKE_TAILS = (  # ["dtype", None], ["memory_format", preserve_format or None]]
    bytes.fromhex("82656474797065f6826d6d656d6f72795f666f726d61746f70726573657276655f666f726d6174"),
    bytes.fromhex("82656474797065f6826d6d656d6f72795f666f726d6174f6"),
)

# The op codes ElementReferee hands to DotReferee once it isolated the element.
DOT_OPS: frozenset[int] = frozenset({64, 65})
# The op codes whose element a TraceReferee game decides (DotReferee.startTrace): 66 + TracePrograms' id.
TRACE_BASE = 66
TRACE_OPS: frozenset[int] = frozenset(range(TRACE_BASE, TRACE_BASE + 9))


# The sums (docs/game.md 2.10): `sum.dim_IntList(x, dims, keepdim, dtype=None)` keyed by its own argument bytes,
# one entry per (dims, keepdim), to ElementReferee.SUM (112) + variant, the variant being the dims and keepdim
# (bit 0 keepdim; bits 1 .. 4 the dims 0 .. 3, bit 5 the dim -1, bit 6 the dim -2; no dim bit: every dim).
# The element is isolated here, then decided by a SumReferee game that the DotReferee opens (`startSum`). The
# same arguments on a bool or int64 input (a mean's count) are keyed too: the defender proves the input's dtype
# inapplicable and the oracle decides them.
SUM_BASE = 112
_SUM_SLOTS = (0, 1, 2, 3, -1, -2)  # the dims a variant names, from bit 1 on
SUM_DIMS: tuple[tuple[int, ...], ...] = ((), (0,), (1,), (2,), (-1,), (0, 1))
SUM_OPS: frozenset[int] = frozenset(range(SUM_BASE, SUM_BASE + 128))


def sum_variant(dims: tuple[int, ...], keepdim: bool) -> int:
    """The variant (ISumReferee.Params) of `sum.dim_IntList(x, dims, keepdim)`."""
    return int(keepdim) | sum(1 << (1 + _SUM_SLOTS.index(d)) for d in set(dims))


def sum_args(dims: tuple[int, ...], keepdim: bool) -> tuple[tuple[str, object], ...]:
    return (("self", TENSOR), ("dim", dims), ("keepdim", keepdim), ("dtype", None))


def sum_reduced(variant: int, ndim: int) -> tuple[int, ...]:
    """The dims a sum of `variant` reduces on an input of `ndim` dimensions, sorted (SumReferee's `_slice`; a
    0-dimensional input: none, its one value is the slice)."""
    if ndim == 0:
        return ()
    dims = {d % ndim for i, d in enumerate(_SUM_SLOTS) if variant >> (1 + i) & 1}
    return tuple(sorted(dims)) if dims else tuple(range(ndim))


def trace_function(code: int) -> str:
    """The trainer.repops.programs function a trace op code stands for."""
    from trainer.repops.programs import FUNCTIONS

    by_id = {i: name for name, i in FUNCTIONS.items()}
    return by_id[code - TRACE_BASE]


# The table keys operators, not dtypes: the bundled workloads' cross-entropy runs where.self on int64
# targets, which the referee's WHERE (bool/f32/f32 -> f32) does not take. There the defender proves an
# input's dtype (`proveInapplicable`) and the oracle decides the node (docs/game.md 2.7).


def key(op: str, arg_bytes: bytes, n_in: int) -> bytes:
    """The table key of a node: keccak256(abi.encode(H(op), H(argBytes), nIn))."""
    return _key(op, hashlib.sha256(arg_bytes).digest(), n_in)


def _key(op: str, arg_hash: bytes, n_in: int) -> bytes:
    return keccak(hashlib.sha256(op.encode()).digest() + arg_hash + n_in.to_bytes(32, "big"))


def scalar_arg(code: int, arg_bytes: bytes) -> int | None:
    """The number of a Tensor-Scalar call (ElementReferee code `code`) as a binary64 pattern, read from its
    argument bytes as `ElementReferee.openArgs` reads it; None where the referee resolves the game
    `Inapplicable` (not the call's template, a bool, an int of magnitude 2^53 or more)."""
    a = arg_bytes
    end = len(a)
    if code >= 50:
        if end < 24 or a[end - 8 :] != _ALPHA_ONE or a[0] != 0x83:
            return None
        end -= 8
    elif end < 16 or a[0] != 0x82:
        return None
    if a[1:15] != _SELF_OTHER:
        return None
    got = _number(a, 15)
    return got[0] if got is not None and got[1] == end else None


def _number(a: bytes, at: int) -> tuple[int, int] | None:
    """The CBOR number at `a[at]` as a binary64 pattern and the offset after it, as the referee reads one (`_number`):
    a float of 16, 32 or 64 bits widened exactly, or an int of magnitude below 2^53; None for anything else."""
    if at >= len(a):
        return None
    head = a[at]
    major, info = head >> 5, head & 31
    v, end = info, at + 1
    if info >= 24:
        if info > 27:
            return None
        end = at + 1 + (1 << (info - 24))
        if end > len(a):
            return None
        v = int.from_bytes(a[at + 1 : end], "big")
    if major == 7:
        if info == 25:
            return int.from_bytes(struct.pack(">d", struct.unpack(">e", v.to_bytes(2, "big"))[0]), "big"), end
        if info == 26:
            return int.from_bytes(struct.pack(">d", struct.unpack(">f", v.to_bytes(4, "big"))[0]), "big"), end
        return (v, end) if info == 27 else None
    if major > 1:
        return None
    n = v if major == 0 else -1 - v
    if abs(n) >= 1 << 53:
        return None
    return int.from_bytes(struct.pack(">d", float(n)), "big"), end


def const_arg(code: int, arg_bytes: bytes) -> int | None:
    """The fill value of a creation call (CONST0: `scalar_tensor(s, dtype=float32)` and `full(size, v,
    dtype=float32)`; CONST1: `full_like(x, v, dtype=None, memory_format=preserve_format or None)`) as a binary64
    pattern, read as `ElementReferee.openArgs` reads it; None where the referee resolves the game `Inapplicable`."""
    a = arg_bytes
    if code == CONST1:
        if a[:20] != _FULL_LIKE_HEAD:
            return None
        got = _number(a, 20)
        return got[0] if got is not None and a[got[1] :] in _FULL_LIKE_TAILS else None
    if code != CONST0:
        return None
    if a[:4] == _SCALAR_TENSOR_HEAD:
        at = 4
    elif a[:7] == _FULL_HEAD and len(a) > 7 and 0x80 <= a[7] < 0x98:  # a list of fewer than 24 sizes
        at = 8
        for _ in range(a[7] - 0x80):  # each a CBOR unsigned int
            if at >= len(a) or a[at] > 0x1B:
                return None
            at += 1 + (0 if a[at] < 24 else 1 << (a[at] - 24))
        if a[at : at + 12] != _FILL_VALUE:
            return None
        at += 12
    else:
        return None
    got = _number(a, at)
    return got[0] if got is not None and a[got[1] :] == _DTYPE_F32 else None


def permute_dims(arg_bytes: bytes) -> tuple[int, ...] | None:
    """permute's dims read from its argument bytes as `ElementReferee.openArgs` reads them; None where the referee
    resolves the game `Inapplicable` (not the template, more than 15 dims, a negative dim, not a permutation)."""
    a = arg_bytes
    if len(a) < 15 or a[:14] != _SELF_DIMS or not 0x80 <= a[14] <= 0x8F:
        return None
    n = a[14] - 0x80
    dims = tuple(a[15:])
    if len(dims) != n or sorted(dims) != list(range(n)):
        return None
    return dims


def packed_dims(dims: tuple[int, ...]) -> int:
    """The dims as the referee keeps them (event ArgsOpened): the count in the low 4 bits, then 4 bits a dim."""
    return len(dims) | sum(d << (4 + 4 * i) for i, d in enumerate(dims))


def input_index(code: int, e: int, out_shape: tuple[int, ...], shape: tuple[int, ...], arg_bytes: bytes) -> int:
    """The flat index of the input element that output element `e` of a node of code `code` reads, as the
    referee computes it (`proveElement`): the same index for COPY, the permuted one for PERMUTE, the broadcast
    one otherwise."""
    from offchain.game.element import broadcast_index

    if code == COPY:
        return e
    if code != PERMUTE:
        return broadcast_index(e, out_shape, shape)
    dims = permute_dims(arg_bytes)
    if dims is None or len(dims) != len(out_shape) or len(shape) != len(out_shape):
        raise ValueError(f"permute dims {dims} do not map an output of shape {out_shape} to one of {shape}")
    index = 0
    for i in reversed(range(len(out_shape))):
        coord, e = e % out_shape[i], e // out_shape[i]
        stride = 1
        for j in range(dims[i] + 1, len(shape)):
            stride *= shape[j]
        index += coord * stride
    return index


def table() -> list[tuple[bytes, int, str]]:
    """(key, code, op) for every entry, in ENTRIES order."""
    out = []
    for op, args, code in ENTRIES:
        n_in = sum(1 for _, v in args if v is TENSOR)
        out.append((key(op, encode_args(list(args)), n_in), code, op))
    for op, code in SCALAR_ENTRIES:
        out.append((_key(op, SCALAR_ARGS, 1), code, op + " (Tensor-Scalar)"))
    for op, code in LAYOUT_ENTRIES:
        out.append((_key(op, SCALAR_ARGS, 1), code, op + " (any arguments)"))
    for op, n_in, code in CONST_ENTRIES:
        out.append((_key(op, SCALAR_ARGS, n_in), code, op + " (any fill value)"))
    out.extend(sum_table())
    return out


def sum_table() -> list[tuple[bytes, int, str]]:
    """(key, code, op) of the sums' entries (docs/game.md 2.10), the last 12 of `table()`: `sum.dim_IntList` keyed by
    its own argument bytes (dims (), 0, 1, 2, -1, (0, 1); keepdim both) to SUM_BASE + its variant. The trainer agents
    hand such a node's element to a sum game (`offchain.agents._element.sum_move`)."""
    out = []
    for keep in (False, True):
        for dims in SUM_DIMS:
            arg_bytes = encode_args(list(sum_args(dims, keep)))
            what = f"aten.sum.dim_IntList dim={list(dims)} keepdim={keep}"
            out.append((key("aten.sum.dim_IntList", arg_bytes, 1), SUM_BASE + sum_variant(dims, keep), what))
    return out


def element_op(op: str, arg_bytes: bytes, n_in: int) -> int | None:
    """The code the game uses for this node (ElementReferee.openNode: keyed by its arguments, else by argHash 0),
    or None (the oracle decides it). A Tensor-Scalar code can still resolve `Inapplicable` (`scalar_arg`)."""
    by_key = _codes_by_key()
    exact = by_key.get(key(op, arg_bytes, n_in))
    return exact if exact is not None else by_key.get(_key(op, SCALAR_ARGS, n_in))


@functools.cache
def _codes_by_key() -> dict[bytes, int]:
    return {k: code for k, code, _ in table()}


KEY_BYTES = 12


def packed() -> bytes:
    """ElementReferee's TABLE: per entry the key's first KEY_BYTES bytes, then code + 1."""
    return b"".join(k[:KEY_BYTES] + bytes([code + 1]) for k, code, _ in table())


if __name__ == "__main__":
    for _, code, op in table():
        print(f"    // {code + 1:3d} {op}")
    print(f'    bytes private constant TABLE = hex"{packed().hex()}";')
