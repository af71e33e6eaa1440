"""The element table of ElementReferee.elementOp against offchain.game.element_table (docs/game.md 2.7)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from offchain.game.element_table import (
    CONST_OPS,
    ENTRIES,
    KEY_BYTES,
    LAYOUT_OPS,
    PERMUTE,
    SCALAR_ENTRIES,
    SCALAR_OPS,
    const_arg,
    element_op,
    input_index,
    key,
    packed,
    permute_dims,
    scalar_arg,
    table,
)
from trainer.program.program import TENSOR, Node, Program, encode_args

ROOT = Path(__file__).resolve().parents[2]


def test_solidity_table_matches_python_succeeds() -> None:
    src = (ROOT / "contracts/src/ElementReferee.sol").read_text()
    (hexed,) = re.findall(r'bytes private constant TABLE = hex"([0-9a-f]*)";', src)
    got = bytes.fromhex(hexed)
    assert got == packed()
    entries = [(got[i : i + KEY_BYTES], got[i + KEY_BYTES]) for i in range(0, len(got), KEY_BYTES + 1)]
    assert entries == [(k[:KEY_BYTES], code + 1) for k, code, _ in table()]
    assert len({k for k, _ in entries}) == len(entries), "two entries share their truncated key"


def test_captured_arg_bytes_are_keyed_succeeds() -> None:
    # argBytes as the MLP program's capture writes them (docs/program.md section 3)
    add = bytes.fromhex("83826473656c66f782656f74686572f78265616c70686101")
    mul = bytes.fromhex("82826473656c66f782656f74686572f7")
    where = bytes.fromhex("838269636f6e646974696f6ef7826473656c66f782656f74686572f7")
    assert element_op("aten.add.Tensor", add, 2) == 0
    assert element_op("aten.sub.Tensor", add, 2) == 2
    assert element_op("aten.mul.Tensor", mul, 2) == 4
    assert element_op("aten.where.self", where, 3) == 13


def test_every_covered_node_of_the_bundled_workloads_is_fp32_or_inapplicable_succeeds() -> None:
    """The referee's covered ops take and give fp32 (where: a bool condition), and the table keys no dtype:
    a covered node on other dtypes must be one the defender can prove inapplicable from an input's dtype.
    In the bundled workloads those are exactly cross-entropy's where.self on int64 targets (two in each):
    its output dtype is that of its self/other inputs, int64, which WHERE's spec takes as f32."""
    from trainer.workloads import char_transformer, mlp_digits

    covered = {op for op, _, _ in ENTRIES}
    for workload in (mlp_digits(), char_transformer()):
        other = [
            (n.op, [str(o) for o in n.outputs])
            for n in workload.program.nodes
            if n.op in covered and any("float32" not in str(o) for o in n.outputs)
        ]
        assert len(other) == 2 and all(op == "aten.where.self" and "int64" in o[0] for op, o in other), (
            workload.name,
            other,
        )
    assert "aten.where.self" in covered


def test_tensor_scalar_calls_are_keyed_by_operator_and_read_on_chain_succeeds() -> None:
    """A Tensor-Scalar call is not keyed by its arguments (the number varies) but by argHash 0: mul, div, add and
    sub with one tensor go to their scalar codes; the number is read from the argument bytes (`scalar_arg`,
    the same reading as ElementReferee.openArgs, compared bit for bit in ElementRefereeArgs.t.sol)."""
    half = bytes.fromhex("82826473656c66f782656f74686572f93800")  # mul.Tensor(x, 0.5)
    assert element_op("aten.mul.Tensor", half, 1) == 48
    assert scalar_arg(48, half) == 0x3FE0000000000000
    assert element_op("aten.div.Tensor", half, 1) == 49
    add = bytes.fromhex("83826473656c66f782656f74686572fb3e45798ee2308c3a8265616c70686101")  # add(x, 1e-08)
    assert element_op("aten.add.Tensor", add, 1) == 50 and element_op("aten.sub.Tensor", add, 1) == 51
    assert scalar_arg(50, add) == int.from_bytes(struct.pack(">d", 1e-08), "big")
    # Other operators with a number are not covered: the oracle decides them.
    assert element_op("aten.pow.Tensor_Scalar", half, 1) is None
    assert element_op("aten.mul.Tensor", half, 2) is None  # two tensors and a number: no such call
    assert scalar_arg(48, add) is None and scalar_arg(50, half) is None  # not the call's template
    assert element_op("aten.exp.default", bytes.fromhex("81826473656c66f7"), 1) == 66  # one tensor: keyed
    assert element_op("aten.sin.default", bytes.fromhex("81826473656c66f7"), 1) is None
    assert len(ENTRIES) == len({(e[0], e[1]) for e in ENTRIES})  # gelu twice: approximate none and tanh
    assert {code for _, code in SCALAR_ENTRIES} == SCALAR_OPS == set(range(48, 52))


# The input dtypes of the codes that do not take fp32 only (ElementReferee.opSpec): where's condition, the cast.
_NOT_F32 = {13: ("bool", "float32", "float32"), 26: ("int64",)}


def decided_on_chain(program: Program, node: Node) -> bool:
    """Whether the element phase decides `node`: a table entry, its number, dims or fill value read from its
    arguments, its inputs of the dtypes the code takes (else the defender proves one inapplicable), fp32 outputs
    (data movement: any dtype, the input's)."""
    args = encode_args(list(node.args))
    code = element_op(node.op, args, len(node.inputs))
    if code is None or (code in SCALAR_OPS and scalar_arg(code, args) is None):
        return False
    if code == PERMUTE and permute_dims(args) is None:
        return False
    if code in CONST_OPS and const_arg(code, args) is None:
        return False
    got = tuple(str(program.ref_type(r).dtype).removeprefix("torch.") for r in node.inputs)
    if code in LAYOUT_OPS:  # any dtype, the output's
        return got == (str(node.outputs[0].dtype).removeprefix("torch."),)
    want = _NOT_F32.get(code, ("float32",) * len(node.inputs))
    return got == want and all("float32" in str(o) for o in node.outputs)


def test_what_the_oracle_still_decides_in_the_bundled_workloads() -> None:
    """The nodes of the bundled workloads the element phase does not take (`decided_on_chain`): the oracle decides
    them. Pinned so that a change of coverage is seen; the list is docs/game.md section 2.7's."""
    from trainer.workloads import char_transformer, mlp_digits

    left = {}
    for workload in (mlp_digits(), char_transformer()):
        program = workload.program
        n = sum(not decided_on_chain(program, node) for node in program.nodes)
        left[workload.name] = (n, len(program.nodes))
    assert left == {"mlp-digits": (13, 86), "char-transformer": (59, 1011)}, left


def test_data_movement_reads_the_element_torch_moves_succeeds() -> None:
    """`input_index` (ElementReferee's own index: the same one for COPY, the permuted one for PERMUTE, the broadcast
    one for EXPAND) names, for every output element, the input element torch's own view, reshape, squeeze,
    unsqueeze, expand and permute put there: compared on every element of each."""
    import torch

    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    one, column = x[:1].contiguous(), x[0, :1, :, :1].contiguous()  # (1, 3, 4, 5) and (1, 4, 1)
    expand = [("self", TENSOR), ("size", (7, 2, 3, 4, 5)), ("implicit", False)]
    calls = [  # (op, args, input, output)
        ("aten.view.default", [("self", TENSOR), ("size", (6, 20))], x, x.view(6, 20)),
        ("aten.unsqueeze.default", [("self", TENSOR), ("dim", 2)], x, x.unsqueeze(2)),
        ("aten.squeeze.dims", [("self", TENSOR), ("dim", (0,))], one, one.squeeze(0)),
        ("aten.expand.default", expand, x, x.expand(7, -1, -1, -1, -1)),
        ("aten.expand.default", [("self", TENSOR), ("size", (3, 4, 5))], column, column.expand(3, 4, 5)),
    ]
    for dims in [(0, 1, 2, 3), (3, 2, 1, 0), (0, 2, 1, 3), (1, 3, 0, 2)]:
        calls.append(("aten.permute.default", [("self", TENSOR), ("dims", dims)], x, x.permute(dims)))
    for op, args, src, out in calls:
        arg_bytes = encode_args(args)
        code = element_op(op, arg_bytes, 1)
        assert code in LAYOUT_OPS, op
        flat_in, flat_out = src.reshape(-1), out.contiguous().reshape(-1)
        got = [
            int(flat_in[input_index(code, e, tuple(out.shape), tuple(src.shape), arg_bytes)])
            for e in range(out.numel())
        ]
        assert got == [int(v) for v in flat_out], (op, args)


def test_the_bundled_workloads_transcendental_nodes_go_to_the_trace_game_succeeds() -> None:
    """Every exp, erf and gelu node the bundled workloads capture is keyed, by its own argument bytes, to its
    trace-game code (docs/game.md 2.9): none of them reaches the oracle."""
    from offchain.game.element_table import TRACE_OPS, trace_function
    from trainer.program.program import encode_args
    from trainer.workloads import char_transformer, mlp_digits

    want = {"aten.exp.default": "exp", "aten.erf.default": "erf", "aten.gelu.default": "gelu"}
    seen = set()
    for workload in (mlp_digits(), char_transformer()):
        for n in workload.program.nodes:
            if n.op in want:
                code = element_op(n.op, encode_args(list(n.args)), len(n.inputs))
                assert code in TRACE_OPS and trace_function(code) == want[n.op], (workload.name, n.op, code)
                seen.add(n.op)
    assert seen == set(want)


def test_sum_entries_key_the_bundled_workloads_sums_succeeds() -> None:
    """The sums' entries (`sum_table`, docs/game.md 2.10; the last 12 of the contract's table) key every
    sum.dim_IntList node of the bundled workloads to SUM + its variant."""
    from offchain.game.element_table import SUM_BASE, sum_reduced, sum_table
    from trainer.workloads import char_transformer, mlp_digits

    by_key = {k: code for k, code, _ in sum_table()}
    assert len(by_key) == 12 and table()[-12:] == sum_table()
    seen = 0
    for workload in (mlp_digits(), char_transformer()):
        for n in workload.program.nodes:
            if n.op != "aten.sum.dim_IntList":
                continue
            args = dict(n.args)
            code = by_key[key(n.op, encode_args(list(n.args)), 1)]
            ndim = len(workload.program.ref_type(n.inputs[0]).shape)
            want = sorted({d % ndim for d in args["dim"]}) if args["dim"] else list(range(ndim))
            assert list(sum_reduced(code - SUM_BASE, ndim)) == want and (code - SUM_BASE) & 1 == args["keepdim"]
            seen += 1
    assert seen == 70  # 5 and 65, the two bool counts included (their dtype is proved inapplicable)
