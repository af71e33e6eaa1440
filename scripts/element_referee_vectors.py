"""Write the vectors of the ElementReferee forge tests (docs/game.md section 2.7).

Run `PYTHONPATH=. .venv/bin/python scripts/element_referee_vectors.py [OUT_DIR]` (default
contracts/test/vectors); it writes element_referee.json, element_referee_gas.json and
element_referee_scalar.json (Tensor-Scalar nodes), element_referee_args.json (their argument bytes) and
element_referee_layout.json (data movement: view, squeeze, unsqueeze, clone, expand, permute) and
element_referee_const.json (creation: scalar_tensor, full, full_like).
contracts/test/ElementReferee.t.sol, ElementRefereeGas.t.sol and ElementRefereeArgs.t.sol play games with them;
tests/game/test_element_referee_vectors.py checks that the committed files are what this writes now.
Everything derives from fixed seeds.

Each case is one elementwise node: its agreed inputs (random fp32 values from a fixed seed, with
broadcasting), the honest output computed by the RepOps kernel (`KERNELS[name].fast`, checked equal to
its reference), both committed with trainer.commit. A lie changes one output element (the lowest bit
of its pattern) at the first, middle or last position; for each lie the file holds the differing chunk
of both sides, both values, the liar's commitment and the openings of the input elements at the
element's broadcast positions, which the honest side passes to `proveElement`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from offchain.game.element_table import (
    ARGS_OPS,
    CONST0,
    CONST1,
    SCALAR_ENTRIES,
    const_arg,
    element_op,
    input_index,
    packed_dims,
    permute_dims,
    scalar_arg,
)
from trainer.commit import commit_tensor, open_element
from trainer.commit.merkle import MerkleTree
from trainer.commit.tensor import CHUNK, chunk_leaves, dtype_code, element_size, tensor_bytes
from trainer.program.program import TENSOR, encode_args
from trainer.repops import KERNELS

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "element_referee.json"
GAS_NAME = "element_referee_gas.json"
SCALAR_NAME = "element_referee_scalar.json"
ARGS_NAME = "element_referee_args.json"
LAYOUT_NAME = "element_referee_layout.json"
CONST_NAME = "element_referee_const.json"

Json = dict[str, Any]

# RepOpsElement codes (contracts/src/lib/RepOpsElement.sol).
ADD, MUL, DIV, NEG, RELU, WHERE, THRESHOLD_BACKWARD, LT, F32_TO_F64 = 0, 4, 5, 6, 12, 13, 17, 20, 24
HALF64 = 0x3FE0000000000000  # binary64 0.5, threshold_backward's threshold
# ElementReferee's Tensor-Scalar codes (MUL_SCALAR ..), by operator.
SCALAR_CODE = dict(SCALAR_ENTRIES)


def _hex(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def _f32(gen: torch.Generator, *shape: int) -> torch.Tensor:
    t = torch.randn(tuple(shape), generator=gen, dtype=torch.float32) * 4
    flat = t.view(-1)
    # A few special values among the random ones: signed zeros, a subnormal, infinities, NaN.
    specials = [0.0, -0.0, 1e-40, float("inf"), float("-inf"), float("nan"), 1.0, -1.0]
    if flat.numel() >= 64:
        for i, v in enumerate(specials):
            flat[i * 7] = v
    return t


def _kernel(name: str, *args: Any, **kwargs: Any) -> torch.Tensor:
    spec = KERNELS[name]
    fast = spec.fast(*args, **kwargs)
    ref = spec.reference(*args, **kwargs)
    fast = fast.contiguous()  # a view (expand, permute) committed in row-major order, as the trace commits it
    assert bytes(tensor_bytes(fast)) == bytes(tensor_bytes(ref.contiguous())), f"{name}: fast and reference differ"
    return fast


def _header(t: torch.Tensor) -> Json:
    from trainer.commit.merkle import root

    return {
        "dtype": dtype_code(t.dtype),
        "shape": list(t.shape),
        "dataRoot": _hex(root(chunk_leaves(tensor_bytes(t)))),
        "commitment": _hex(commit_tensor(t)),
    }


def _broadcast_index(e: int, out_shape: tuple[int, ...], shape: tuple[int, ...]) -> int:
    coords = []
    for d in reversed(out_shape):
        coords.append(e % d)
        e //= d
    index, stride = 0, 1
    for r, dim in enumerate(reversed(shape)):
        if dim != 1:
            index += coords[r] * stride
        stride *= dim
    return index


def _lie(out: torch.Tensor, e: int) -> torch.Tensor:
    """`out` with element `e`'s lowest bit flipped (a one-ulp error; True <-> False for bool)."""
    size = element_size(dtype_code(out.dtype))
    raw = bytearray(tensor_bytes(out))
    raw[e * size] ^= 1
    return torch.frombuffer(raw, dtype=out.dtype).reshape(out.shape).clone()


def _scalar_args(op: str, s: float | int) -> bytes:
    """The argument bytes the capture writes for `op(x, s)` (alpha 1 for add and sub)."""
    args: list[tuple[str, Any]] = [("self", TENSOR), ("other", s)]
    if op in ("aten.add.Tensor", "aten.sub.Tensor"):
        args.append(("alpha", 1))
    return encode_args(args)


def _scalar_case(name: str, op: str, a: torch.Tensor, s: float | int) -> Json:
    """A Tensor-Scalar node: opened by `openNode` with its argument bytes' hash, the number read by `openArgs`."""
    code = SCALAR_CODE[op]
    args = _scalar_args(op, s)
    bits = scalar_arg(code, args)
    assert bits is not None, (name, args.hex())
    case = _case(name, code, [a], _kernel(op, a, s), (bits, 0))
    return {**case, "opName": op, "args": _hex(args)}


def arg_vectors() -> list[Json]:
    """Argument bytes of Tensor-Scalar calls and the number the referee must read from each (`ok` false: the
    game resolves Inapplicable), for every CBOR form: floats of 16, 32 and 64 bits (zeros, subnormals, the
    largest, infinities, NaNs), ints of every head width up to the 2^53 limit, and bytes that are not the
    template (a bool, None, alpha 2, a trailing or a missing byte, a list)."""
    import math
    import struct

    def f32(v: float) -> float:
        return float(struct.unpack(">f", struct.pack(">f", v))[0])

    numbers: list[Any] = [0.5, -0.0, 0.0, 65504.0, 2.0**-24, -(2.0**-14), math.inf, -math.inf, math.nan,
                          f32(0.1), f32(1e-45), f32(3.4028234663852886e38), f32(-1e-40), 0.9, 1e-08, 1e-300,
                          5e-324, 1.7976931348623157e308, 0, 1, 23, 24, 255, 256, 65535, 65536, 2**32,
                          2**53 - 1, 2**53, 2**64 - 1, -1, -24, -25, -256, -(2**53) + 1, -(2**53), -(2**64),
                          True, False, None]  # fmt: skip
    out: list[Json] = []
    for op, code in SCALAR_ENTRIES:
        for s in numbers if op == "aten.mul.Tensor" else numbers[:3] + numbers[18:20]:
            args = _scalar_args(op, s)
            bits = scalar_arg(code, args)
            ok = bits is not None
            out.append({"opName": op, "code": code, "args": _hex(args), "ok": ok, "scalar": str(bits or 0)})
    mul = _scalar_args("aten.mul.Tensor", 0.5)
    add = _scalar_args("aten.add.Tensor", 0.5)
    bad = [
        ("aten.mul.Tensor", encode_args([("self", TENSOR), ("other", TENSOR)])),  # mul(x, x): a tensor
        ("aten.mul.Tensor", mul + b"\x00"),
        ("aten.mul.Tensor", mul[:-1]),
        ("aten.mul.Tensor", b"\x83" + mul[1:]),
        ("aten.mul.Tensor", bytes.fromhex("82826473656c66f782656f74686572fa3f80")),  # a float cut short
        ("aten.mul.Tensor", bytes.fromhex("82826473656c66f782656f746865721c")),  # head 28: reserved
        ("aten.mul.Tensor", encode_args([("self", TENSOR), ("other", (1, 2))])),
        ("aten.mul.Tensor", encode_args([("self", TENSOR), ("factor", 0.5)])),
        ("aten.add.Tensor", encode_args([("self", TENSOR), ("other", 0.5), ("alpha", 2)])),
        ("aten.add.Tensor", mul),
        ("aten.div.Tensor", add),
        ("aten.sub.Tensor", add[:-1]),
    ]
    for op, args in bad:
        code = SCALAR_CODE[op]
        assert scalar_arg(code, args) is None, args.hex()
        out.append({"opName": op, "code": code, "args": _hex(args), "ok": False, "scalar": "0"})
    return out


def _case(
    name: str,
    op: int,
    inputs: list[torch.Tensor],
    out: torch.Tensor,
    scalars: tuple[int, int],
    args: bytes = b"",
) -> Json:
    data = tensor_bytes(out)
    leaves = chunk_leaves(data)
    size = element_size(dtype_code(out.dtype))
    n = out.numel()
    lies = []
    for e in sorted({0, n // 2, n - 1}):
        liar = _lie(out, e)
        liar_data = tensor_bytes(liar)
        j = e * size // CHUNK
        openings = []
        for t in inputs:
            if args and op in (52, 54):  # ElementReferee.COPY, PERMUTE: the element a data movement reads
                index = input_index(op, e, tuple(out.shape), tuple(t.shape), args)
            else:
                index = _broadcast_index(e, tuple(out.shape), tuple(t.shape))
            o = open_element(t, index)
            openings.append({"index": o.index, "chunk": _hex(o.chunk), "siblings": [_hex(s) for s in o.proof.siblings]})
        at = e * size
        lies.append(
            {
                "element": e,
                "chunkIndex": j,
                "commitment": _hex(commit_tensor(liar)),
                "dataRoot": _header(liar)["dataRoot"],
                "leaf": _hex(chunk_leaves(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestChunk": _hex(bytes(data[j * CHUNK : (j + 1) * CHUNK])),
                "liarChunk": _hex(bytes(liar_data[j * CHUNK : (j + 1) * CHUNK])),
                "honestValue": int.from_bytes(bytes(data[at : at + size]), "little"),
                "liarValue": int.from_bytes(bytes(liar_data[at : at + size]), "little"),
                "openings": openings,
            }
        )
    tree = MerkleTree(leaves)
    assert _hex(tree.root) == _header(out)["dataRoot"]
    return {
        "name": name,
        "op": op,
        "scalars": [str(s) for s in scalars],
        "inputs": [_header(t) for t in inputs],
        "output": {
            **_header(out),
            "nbytes": len(data),
            "chunkCount": len(leaves) // 32,
            "leaves": [_hex(leaves[i : i + 32]) for i in range(0, len(leaves), 32)],
        },
        "lies": lies,
    }


def cases() -> list[Json]:
    gen = torch.Generator().manual_seed(17)
    out: list[Json] = []
    a, b = _f32(gen, 3, 1500), _f32(gen, 1500)
    out.append(_case("add", ADD, [a, b], _kernel("aten.add.Tensor", a, b), (0, 0)))
    a, b = _f32(gen, 2000), _f32(gen)
    out.append(_case("mul", MUL, [a, b], _kernel("aten.mul.Tensor", a, b), (0, 0)))
    a, b = _f32(gen, 4, 1, 700), _f32(gen, 1, 3, 700)
    out.append(_case("div", DIV, [a, b], _kernel("aten.div.Tensor", a, b), (0, 0)))
    a = _f32(gen, 5000)
    out.append(_case("relu", RELU, [a], _kernel("aten.relu.default", a), (0, 0)))
    cond = torch.rand(10, 300, generator=gen) < 0.5
    a, b = _f32(gen, 10, 300), _f32(gen, 1, 300)
    out.append(_case("where", WHERE, [cond, a, b], _kernel("aten.where.self", cond, a, b), (0, 0)))
    g, x = _f32(gen, 3000), _f32(gen, 3000)
    out.append(
        _case(
            "threshold_backward",
            THRESHOLD_BACKWARD,
            [g, x],
            _kernel("aten.threshold_backward.default", g, x, 0.5),
            (HALF64, 0),
        )
    )
    a, b = _f32(gen, 6000), _f32(gen, 6000)
    out.append(_case("lt", LT, [a, b], _kernel("aten.lt.Tensor", a, b), (0, 0)))
    a = torch.tensor(-2.5, dtype=torch.float32)  # 0-dimensional: one element, one chunk of 4 bytes
    out.append(_case("neg_scalar", NEG, [a], _kernel("aten.neg.default", a), (0, 0)))
    a = _f32(gen, 1500)
    out.append(_case("f32_to_f64", F32_TO_F64, [a], _kernel("aten._to_copy.default", a, dtype=torch.float64), (0, 0)))
    return out


def scalar_cases() -> list[Json]:
    gen = torch.Generator().manual_seed(48)
    out: list[Json] = []
    # Tensor-Scalar nodes as the workloads capture them (AdamW's and GELU's constants, a division by an int),
    # each form of the number's CBOR: binary64, int, binary16 (a normal and a subnormal), binary32, a negative int.
    out.append(_scalar_case("mul_scalar", "aten.mul.Tensor", _f32(gen, 2, 900), 0.9))
    out.append(_scalar_case("div_scalar_int", "aten.div.Tensor", _f32(gen, 16, 32, 1), 64))
    out.append(_scalar_case("add_scalar", "aten.add.Tensor", _f32(gen, 1300), 1e-08))
    out.append(_scalar_case("sub_scalar_half", "aten.sub.Tensor", _f32(gen, 700), 0.5))
    out.append(_scalar_case("mul_scalar_subnormal_half", "aten.mul.Tensor", _f32(gen, 600), 2.0**-24))
    out.append(_scalar_case("mul_scalar_single", "aten.mul.Tensor", _f32(gen, 300), 0.10000000149011612))
    out.append(_scalar_case("mul_scalar_negative_int", "aten.mul.Tensor", _f32(gen, 3, 5), -100))
    return out


def _layout_case(name: str, op: str, args: list[tuple[str, Any]], a: torch.Tensor) -> Json:
    """A data-movement node as the capture writes it, opened by `openNode` with its argument bytes' hash (keyed by
    the operator alone); its output computed by the RepOps kernel and made contiguous, as trainer.commit commits it."""
    arg_bytes = encode_args(args)
    code = element_op(op, arg_bytes, 1)
    assert code is not None, op
    kwargs = {k: v for k, v in args[1:]}
    out = _kernel(op, a, **kwargs).contiguous()
    case = _case(name, code, [a], out, (0, 0), arg_bytes)
    return {**case, "opName": op, "args": _hex(arg_bytes), "argsMoves": int(code in ARGS_OPS)}


def layout_cases() -> list[Json]:
    """Data movement (ElementReferee.COPY, EXPAND, PERMUTE): the output element is one input element, of any dtype."""
    gen = torch.Generator().manual_seed(52)
    out: list[Json] = []
    flat = [("self", TENSOR), ("size", (2400,))]
    out.append(_layout_case("view_flatten", "aten.view.default", flat, _f32(gen, 40, 60)))
    out.append(
        _layout_case("view_split", "aten.view.default", [("self", TENSOR), ("size", (16, 32, 3))], _f32(gen, 512, 3))
    )
    out.append(
        _layout_case("unsqueeze", "aten.unsqueeze.default", [("self", TENSOR), ("dim", 1)], _f32(gen, 1100))
    )
    out.append(_layout_case("squeeze_dims", "aten.squeeze.dims", [("self", TENSOR), ("dim", (1,))], _f32(gen, 700, 1)))
    out.append(
        _layout_case(
            "clone",
            "aten.clone.default",
            [("self", TENSOR), ("memory_format", torch.contiguous_format)],
            _f32(gen, 4, 300),
        )
    )
    out.append(
        _layout_case(
            "expand",
            "aten.expand.default",
            [("self", TENSOR), ("size", (6, 4, 64)), ("implicit", False)],
            _f32(gen, 4, 1),
        )
    )
    # Data movement takes any dtype (the input's is the output's): int64 targets, a bool mask.
    targets = torch.randint(-(2**40), 2**40, (900,), generator=gen, dtype=torch.int64)
    out.append(_layout_case("unsqueeze_int64", "aten.unsqueeze.default", [("self", TENSOR), ("dim", 1)], targets))
    mask = torch.rand(20, 300, generator=gen) < 0.5
    out.append(_layout_case("permute_bool", "aten.permute.default", [("self", TENSOR), ("dims", (1, 0))], mask))
    t = [("self", TENSOR), ("dims", (1, 0))]
    out.append(_layout_case("permute_t", "aten.permute.default", t, _f32(gen, 30, 70)))
    out.append(
        _layout_case(
            "permute_heads",
            "aten.permute.default",
            [("self", TENSOR), ("dims", (0, 2, 1, 3))],
            _f32(gen, 3, 16, 4, 8),
        )
    )
    out.append(
        _layout_case("permute_3d", "aten.permute.default", [("self", TENSOR), ("dims", (2, 0, 1))], _f32(gen, 5, 7, 40))
    )
    return out


def permute_arg_vectors() -> list[Json]:
    """permute's argument bytes and the dims the referee must read from each (`ok` false: the game resolves
    Inapplicable): permutations of 0 to 15 dims, and bytes that are not one (a repeated, a negative, an out-of-range
    dim, 16 dims, another key, a trailing or a missing byte, a tuple of lists)."""
    def args(dims: Any, key: str = "dims") -> bytes:
        return encode_args([("self", TENSOR), (key, dims)])

    good = [(), (0,), (1, 0), (0, 2, 1, 3), (2, 0, 1), tuple(reversed(range(15)))]
    bad = [args((0, 0)), args((0, 2)), args((0, -1)), args(tuple(range(16))), args((1, 0), "dim"),
           args((1, 0)) + b"\x00", args((1, 0))[:-1], args(((0,), (1,))), args(1)]  # fmt: skip
    out: list[Json] = []
    for a in [args(d) for d in good] + bad:
        dims = permute_dims(a)
        assert (dims is not None) == (a in [args(d) for d in good]), a.hex()
        out.append({"args": _hex(a), "ok": dims is not None, "dims": str(packed_dims(dims) if dims else 0)})
    return out


def _const_case(name: str, op: str, args: list[tuple[str, Any]], inputs: list[torch.Tensor]) -> Json:
    """A creation node as the capture writes it (`scalar_tensor`, `full`, `full_like`), opened by `openNode` with its
    argument bytes' hash (keyed by the operator and its input count); the fill value read by `openArgs`."""
    arg_bytes = encode_args(args)
    code = element_op(op, arg_bytes, len(inputs))
    assert code in (CONST0, CONST1) and const_arg(code, arg_bytes) is not None, (op, arg_bytes.hex())
    values = [v for _, v in args]
    if op == "aten.scalar_tensor.default":
        out = _kernel(op, values[0], dtype=values[1])
    elif op == "aten.full.default":
        out = _kernel(op, values[0], values[1], dtype=values[2])
    else:
        out = _kernel(op, inputs[0], values[1], dtype=values[2], memory_format=values[3])
    case = _case(name, code, inputs, out, (0, 0), arg_bytes)
    return {**case, "opName": op, "args": _hex(arg_bytes), "argsMoves": 1}


def const_cases() -> list[Json]:
    """Creation ops (ElementReferee.CONST0, CONST1): every output element is the fill value rounded to fp32."""
    gen = torch.Generator().manual_seed(55)
    f32 = ("dtype", torch.float32)
    out = [
        _const_case("scalar_tensor_neg_inf", "aten.scalar_tensor.default", [("s", float("-inf")), f32], []),
        _const_case("scalar_tensor_tenth", "aten.scalar_tensor.default", [("s", 0.1), f32], []),
        _const_case("full_zero", "aten.full.default", [("size", (32, 64)), ("fill_value", 0), f32], []),
        _const_case("full_int_rounded", "aten.full.default", [("size", (3, 300)), ("fill_value", 2**40 + 1), f32], []),
        _const_case("full_large_sizes", "aten.full.default", [("size", (1, 300, 2)), ("fill_value", 1e-08), f32], []),
    ]
    x = _f32(gen, 40, 30)
    for name, v, fmt in [("full_like_one", 1, torch.preserve_format), ("full_like_half", 0.5, None),
                         ("full_like_nan", float("nan"), None), ("full_like_tiny", 1e-300, None)]:  # fmt: skip
        args = [("self", TENSOR), ("fill_value", v), ("dtype", None), ("memory_format", fmt)]
        out.append(_const_case(name, "aten.full_like.default", args, [x]))
    return out


def const_arg_vectors() -> list[Json]:
    """Creation calls' argument bytes and the fill value the referee must read (`ok` false: Inapplicable)."""
    f32 = ("dtype", torch.float32)
    like = [("self", TENSOR), ("fill_value", 0.1)]
    calls: list[tuple[str, int, list[tuple[str, Any]]]] = [
        ("aten.scalar_tensor.default", 0, [("s", 0.25), f32]),
        ("aten.scalar_tensor.default", 0, [("s", -7), f32]),
        ("aten.scalar_tensor.default", 0, [("s", 0), ("dtype", torch.int64)]),  # not fp32
        ("aten.scalar_tensor.default", 0, [("s", True), f32]),  # a bool
        ("aten.scalar_tensor.default", 0, [("s", 0.5)]),  # no dtype
        ("aten.full.default", 0, [("size", (2**32, 70000, 300, 24, 23, 0)), ("fill_value", 1.5), f32]),
        ("aten.full.default", 0, [("size", ()), ("fill_value", -0.0), f32]),
        ("aten.full.default", 0, [("size", (3, -1)), ("fill_value", 1.5), f32]),  # a negative size
        ("aten.full.default", 0, [("size", (3,)), ("fill_value", 2**53), f32]),  # too large an int
        ("aten.full.default", 0, [("size", (3,)), ("fill_value", 1.5), ("dtype", torch.float64)]),
        ("aten.full_like.default", 1, [("self", TENSOR), ("fill_value", 3), ("dtype", None), ("memory_format", None)]),
        ("aten.full_like.default", 1, [*like, f32, ("memory_format", None)]),  # a dtype given
        ("aten.full_like.default", 1, [*like, ("dtype", None), ("memory_format", torch.contiguous_format)]),
    ]
    out: list[Json] = []
    for op, n_in, args in calls:
        a = encode_args(args)
        code = element_op(op, a, n_in)
        assert code in (CONST0, CONST1), op
        bits = const_arg(code, a)
        out.append({"opName": op, "nIn": n_in, "code": code, "args": _hex(a), "ok": bits is not None,
                    "scalar": str(bits or 0)})  # fmt: skip
    full = encode_args(calls[5][2])
    for bad in (full[:-1], full + b"\x00", full[:9]):  # cut short, a trailing byte, the sizes cut
        assert const_arg(CONST0, bad) is None
        out.append({"opName": "aten.full.default", "nIn": 0, "code": CONST0, "args": _hex(bad), "ok": False,
                    "scalar": "0"})  # fmt: skip
    return out


def gas_cases() -> list[Json]:
    """The gas test's cases: 4 MiB of fp32 output, 1024 chunks (three descent levels at arity 16)."""
    gen = torch.Generator().manual_seed(4096)
    a, b = _f32(gen, 1024, 1024), _f32(gen, 1024, 1024)
    cond = torch.rand(1024, 1024, generator=gen) < 0.5
    return [
        _case("add_4MiB", ADD, [a, b], _kernel("aten.add.Tensor", a, b), (0, 0)),
        _case("where_4MiB", WHERE, [cond, a, b], _kernel("aten.where.self", cond, a, b), (0, 0)),
    ]


def vectors() -> dict[str, Json]:
    """{file name: contents}."""
    return {
        NAME: {"version": 1, "chunk": CHUNK, "cases": cases()},
        SCALAR_NAME: {"version": 1, "chunk": CHUNK, "cases": scalar_cases()},
        ARGS_NAME: {"version": 1, "args": arg_vectors()},
        LAYOUT_NAME: {"version": 1, "chunk": CHUNK, "cases": layout_cases(), "args": permute_arg_vectors()},
        CONST_NAME: {"version": 1, "chunk": CHUNK, "cases": const_cases(), "args": const_arg_vectors()},
        GAS_NAME: {"version": 1, "chunk": CHUNK, "cases": gas_cases()},
    }


def write(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in vectors().items():
        path = out_dir / name
        path.write_text(json.dumps(data, indent=1) + "\n")
        paths.append(path)
    return paths


def main() -> None:
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT):
        print(path)


if __name__ == "__main__":
    main()
