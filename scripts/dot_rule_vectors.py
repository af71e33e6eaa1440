"""Write the vectors of the DotReferee rule, takeover and move-gas forge tests (docs/game.md section 2.8,
docs/repops/linalg.md "mm"), beside scripts/dot_referee_vectors.py (main's suite, dot_referee.json).

Run `PYTHONPATH=. .venv/bin/python scripts/dot_rule_vectors.py [OUT_DIR]` (default contracts/test/vectors);
it writes dot_rules.json (contracts/test/DotRefereeRules.t.sol), dot_rules_gas.json
(contracts/test/DotRefereeMoveGas.t.sol) and dot_takeover.json (contracts/test/DotRefereeTakeover.t.sol and
the takeover start's gas); tests/game/test_dot_rule_vectors.py checks that the committed files are what this
writes now. Everything derives from fixed seeds.

Each case is one mm or addmm node on small real tensors: A [6, K] whose rows are randn, all zero, subnormal,
holding an inf, holding a NaN, and huge (their products overflow to inf); B [K, 5] whose columns are randn,
all zero, subnormal and randn. The honest output is RepOps' kernel (`trainer.repops` mm / addmm, checked
equal to its scalar reference); `dot_element` recomputes every output element from the grid (exponents,
RNE integers, the exact S, one rounding) and the script fails unless its bits are the kernel's. For the
elements the tests play the file holds the witnesses (first index of the largest magnitude class), the
classes, S and every prefix sum P(0..K); for each input the chunks the tests open (all of them for the small
cases) with their siblings.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import sys
from itertools import accumulate
from pathlib import Path
from typing import Any

import torch

from trainer.commit import commit_tensor
from trainer.commit.merkle import MerkleTree, root
from trainer.commit.tensor import CHUNK, chunk_leaves, tensor_bytes
from trainer.repops import KERNELS
from trainer.repops._fixed import exponent_ref, p_dot, quantize_ref, round_f32, round_f32_dyadic

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "dot_rules.json"
GAS_NAME = "dot_rules_gas.json"
TAKEOVER_NAME = "dot_takeover.json"
NAN_BITS = 0x7FC00000
NON_FINITE = 0xFFFF
MM, ADDMM = 0, 1

Json = dict[str, Any]


def _hex(b: bytes) -> str:
    return "0x" + bytes(b).hex()


def bits(x: float) -> int:
    if math.isnan(x):
        return NAN_BITS
    return struct.unpack("<I", struct.pack("<f", x))[0]


def magnitude_class(b: int) -> int:
    """DotReferee's `_key`, written from its definition: 0 for +-0, 150 + e for 2^(e-1) <= |x| < 2^e."""
    x = struct.unpack("<f", struct.pack("<I", b))[0]
    if math.isnan(x) or math.isinf(x):
        return NON_FINITE
    if x == 0.0:
        return 0
    return 150 + math.frexp(abs(x))[1]


def _kernel(name: str, *args: Any) -> torch.Tensor:
    spec = KERNELS[name]
    fast = spec.fast(*args)
    ref = spec.reference(*args)
    assert bytes(tensor_bytes(fast)) == bytes(tensor_bytes(ref)), f"{name}: fast and reference differ"
    return fast


def _first_max(keys: list[int]) -> int:
    return keys.index(max(keys))


def dot_element(a: torch.Tensor, b: torch.Tensor, i: int, j: int) -> Json:
    """C[i, j] of mm(a, b) from the grid of linalg.md, with the witnesses and prefix sums of the game."""
    k = a.shape[1]
    row = a[i].tolist()
    col = b[:, j].tolist()
    rk = [magnitude_class(bits(v)) for v in row]
    ck = [magnitude_class(bits(v)) for v in col]
    row_at, col_at = _first_max(rk), _first_max(ck)
    out: Json = {"rowAt": row_at, "colAt": col_at, "rowKey": rk[row_at], "colKey": ck[col_at]}
    if NON_FINITE in (rk[row_at], ck[col_at]):
        out.update(value=NAN_BITS, prefix=[0], decided=True)
        return out
    p = p_dot(k)
    ea, eb = exponent_ref(max(abs(v) for v in row)), exponent_ref(max(abs(v) for v in col))
    assert (ea, eb) == (1 if rk[row_at] == 0 else rk[row_at] - 150, 1 if ck[col_at] == 0 else ck[col_at] - 150)
    terms = [quantize_ref(x, ea, p) * quantize_ref(w, eb, p) for x, w in zip(row, col, strict=True)]
    prefix = [0, *accumulate(terms)]
    value = round_f32_dyadic(prefix[-1], ea + eb - 2 * p) + 0.0
    out.update(value=bits(value), prefix=prefix, decided=False)
    return out


def _bias_index(shape: tuple[int, ...], i: int, j: int) -> int:
    index = 0
    if shape:
        if shape[-1] != 1:
            index = j
        if len(shape) == 2 and shape[0] != 1:
            index += i * shape[-1]
    return index


def _tensor(t: torch.Tensor, chunks: set[int] | None = None) -> Json:
    data = tensor_bytes(t)
    leaves = chunk_leaves(data)
    tree = MerkleTree(leaves)
    count = len(leaves) // 32
    want = range(count) if chunks is None else sorted(chunks)
    return {
        "shape": list(t.shape),
        "dataRoot": _hex(root(leaves)),
        "commitment": _hex(commit_tensor(t)),
        "chunks": [
            {
                "index": c,
                "chunk": _hex(bytes(data[c * CHUNK : (c + 1) * CHUNK])),
                "siblings": [_hex(s) for s in tree.open(c).siblings],
            }
            for c in want
        ],
    }


def _case(name: str, op: int, a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None, elements: list[int]) -> Json:
    out = _kernel("aten.mm.default", a, b) if op == MM else _kernel("aten.addmm.default", bias, a, b)
    m, n = out.shape
    flat = out.reshape(-1).tolist()
    played = []
    for e in range(m * n):
        i, j = divmod(e, n)
        d = dot_element(a, b, i, j)
        want = d["value"]
        if op == ADDMM:
            assert bias is not None
            x = bias.reshape(-1)[_bias_index(tuple(bias.shape), i, j)].item()
            mmv = struct.unpack("<f", struct.pack("<I", want))[0]
            want = bits(round_f32(x + mmv))
        assert want == bits(flat[e]), f"{name}: element {e}: grid {want:#x} != kernel {bits(flat[e]):#x}"
        if e in elements:
            played.append({"element": e, **d, "value": want, "prefix": [str(v) for v in d["prefix"]]})
    inputs = ([] if bias is None else [_tensor(bias)]) + [_tensor(a), _tensor(b)]
    return {
        "name": name,
        "op": op,
        "k": a.shape[1],
        "n": n,
        "inputs": inputs,
        "output": {"shape": [m, n], "bits": [bits(v) for v in flat]},
        "elements": played,
    }


def _inputs(gen: torch.Generator, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.randn(6, k, generator=gen)
    a[1] = 0.0  # an all-zero row
    a[2] *= 1e-39  # subnormals (and a few normals near the boundary)
    a[3, k // 2] = float("inf")
    a[4, k - 1] = float("nan")
    a[5] = 3e38  # huge: the products overflow to inf
    b = torch.randn(k, 5, generator=gen)
    b[:, 1] = 0.0  # an all-zero column
    b[:, 2] *= 1e-40
    return a.contiguous(), b.contiguous()


# The elements the tests play: (0, j) for every column, one per edge row at column 0.
ELEMENTS = [0, 1, 2, 3, 4, 5, 10, 15, 20, 25]


def cases() -> list[Json]:
    gen = torch.Generator().manual_seed(28)
    out: list[Json] = []
    for k in (1, 2, 7, 64, 300):
        a, b = _inputs(gen, k)
        out.append(_case(f"mm_k{k}", MM, a, b, None, ELEMENTS))
    a, b = _inputs(gen, 7)
    for label, shape in (("n", (5,)), ("1n", (1, 5)), ("mn", (6, 5)), ("scalar", ()), ("m1", (6, 1))):
        bias = torch.randn(shape, generator=gen) * 4
        out.append(_case(f"addmm_{label}", ADDMM, a, b, bias, ELEMENTS))
    return out


LIE_AT = 2345  # the gas games' first wrong prefix sum: the term played is LIE_AT - 1


def gas_cases() -> list[Json]:
    gen = torch.Generator().manual_seed(4096)
    k, i, j = 4096, 2, 77
    a = torch.randn(4, k, generator=gen).contiguous()
    b = torch.randn(k, 256, generator=gen).contiguous()
    bias = torch.randn(256, generator=gen)
    out = []
    for name, op, bi in (("mm_4096", MM, None), ("addmm_4096", ADDMM, bias)):
        res = _kernel("aten.mm.default", a, b) if op == MM else _kernel("aten.addmm.default", bi, a, b)
        e = i * 256 + j
        d = dot_element(a, b, i, j)
        want = d["value"]
        if op == ADDMM:
            mmv = struct.unpack("<f", struct.pack("<I", want))[0]
            want = bits(round_f32(bias[j].item() + mmv))
        assert want == bits(res.reshape(-1)[e].item()), name
        t = LIE_AT - 1
        ca = {(i * k + d["rowAt"]) * 4 // CHUNK, (i * k + t) * 4 // CHUNK}
        cb = {(d["colAt"] * 256 + j) * 4 // CHUNK, (t * 256 + j) * 4 // CHUNK}
        inputs = ([] if bi is None else [_tensor(bi)]) + [_tensor(a, ca), _tensor(b, cb)]
        out.append(
            {
                "name": name,
                "op": op,
                "k": k,
                "n": 256,
                "lieAt": LIE_AT,
                "inputs": inputs,
                "output": {"shape": [4, 256], "bits": []},
                "elements": [{"element": e, **d, "value": want, "prefix": [str(v) for v in d["prefix"]]}],
            }
        )
    return out


def takeover_cases() -> list[Json]:
    """mm and addmm nodes in the format of element_referee.json (ElementGames plays them to ElementProof)."""
    spec = importlib.util.spec_from_file_location(
        "element_referee_vectors", Path(__file__).parent / "element_referee_vectors.py"
    )
    assert spec is not None and spec.loader is not None
    ev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ev)
    gen = torch.Generator().manual_seed(64)
    a, b = _inputs(gen, 300)
    tie = torch.randn(5, generator=gen)  # element 0's neighbour value is a tie of bias + mm: no S makes it
    bias = torch.randint(-3, 4, (5,), generator=gen).float()  # integers: every neighbour value has an S
    mm = _kernel("aten.mm.default", a, b)
    out = [ev._case("mm", 64, [a, b], mm, (0, 0))]
    nodes = [(MM, mm, None)]
    for name, bi in (("addmm", bias), ("addmm_tie", tie)):
        res = _kernel("aten.addmm.default", bi, a, b)
        out.append(ev._case(name, 65, [bi, a, b], res, (0, 0)))
        nodes.append((ADDMM, res, bi))
    for c, (op, res, bi) in zip(out, nodes, strict=True):
        # the dot game's side of the same node
        c["dot"] = _case(c["name"], op, a, b, bi, [0])
        assert c["dot"]["output"]["bits"] == [bits(v) for v in res.reshape(-1).tolist()]
    return out


def vectors() -> dict[str, Json]:
    return {
        TAKEOVER_NAME: {"version": 1, "chunk": CHUNK, "cases": takeover_cases()},
        NAME: {"version": 1, "chunk": CHUNK, "cases": cases()},
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
        print(path, path.stat().st_size)


if __name__ == "__main__":
    main()
