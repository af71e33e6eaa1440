from __future__ import annotations

import dataclasses
import hashlib

import pytest
import torch
from program_cases import Case

from trainer.commit import ProofError, leaf_hash, name_hash, state_root, verify
from trainer.program import (
    TENSOR,
    Constant,
    ConstRef,
    InputKind,
    InputRef,
    Node,
    NodeRef,
    OutputKind,
    Program,
    ProgramFormatError,
    ProgramInput,
    ProgramOutput,
    TensorType,
    graph_leaf,
    verify_node,
)
from trainer.program.program import encode_args
from trainer.program.torch_exec import run_with_aten

F32 = torch.float32


def u256(v: int) -> bytes:
    return v.to_bytes(32, "big")


def sha(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def tiny() -> Program:
    """w' = w + x; loss = sum((w' * 0.5) * scale), scale a constant."""
    vec = TensorType(F32, (2,))
    return Program(
        inputs=(ProgramInput("param/w", InputKind.STATE, vec), ProgramInput("x", InputKind.BATCH, vec)),
        constants=(Constant.of("scale", torch.tensor([0.5, 0.5])),),
        nodes=(
            Node(0, "aten.add.Tensor", (("self", TENSOR), ("other", TENSOR), ("alpha", 1)),
                 (InputRef("param/w"), InputRef("x")), (vec,)),
            Node(1, "aten.mul.Tensor", (("self", TENSOR), ("other", 0.5)), (NodeRef(0),), (vec,)),
            Node(2, "aten.mul.Tensor", (("self", TENSOR), ("other", TENSOR)), (NodeRef(1), ConstRef("scale")), (vec,)),
            Node(3, "aten.sum.dim_IntList", (("self", TENSOR), ("dim", ()), ("keepdim", False), ("dtype", None)),
                 (NodeRef(2),), (TensorType(F32, ()),)),
        ),
        outputs=(
            ProgramOutput("param/w", OutputKind.STATE, vec, NodeRef(0)),
            ProgramOutput("loss", OutputKind.LOSS, TensorType(F32, ()), NodeRef(3)),
        ),
    )  # fmt: skip


def test_tiny_program_runs() -> None:
    new_state, loss = run_with_aten(tiny(), {"param/w": torch.tensor([1.0, 2.0])}, {"x": torch.tensor([3.0, 4.0])})
    assert new_state["param/w"].tolist() == [4.0, 6.0]
    assert loss.item() == (4.0 * 0.5 * 0.5 + 6.0 * 0.5 * 0.5)


def test_argument_bytes_follow_the_spec() -> None:
    # docs/program.md, "Arguments": the example spelled out byte by byte.
    args = (("self", TENSOR), ("other", 0.5))
    assert encode_args(args) == bytes.fromhex("82826473656c66f782656f74686572f93800")
    assert encode_args((("a", 1),)) == bytes.fromhex("81 82 6161 01")
    assert encode_args((("a", True),)) == bytes.fromhex("81 82 6161 f5")
    assert encode_args((("a", 1.0),)) == bytes.fromhex("81 82 6161 f93c00")
    assert encode_args((("a", 0.1),)) == bytes.fromhex("81 82 6161 fb3fb999999999999a")
    assert encode_args((("a", -0.0),)) == bytes.fromhex("81 82 6161 f98000")
    assert encode_args((("a", float("-inf")),)) == bytes.fromhex("81 82 6161 f9fc00")
    assert encode_args((("a", None),)) == bytes.fromhex("81 82 6161 f6")
    assert encode_args((("a", (1, -2)),)) == bytes.fromhex("81 82 6161 82 01 21")
    assert encode_args((("a", torch.float32),)) == bytes.fromhex("81 82 6161 67") + b"float32"
    assert encode_args((("a", torch.contiguous_format),)) == bytes.fromhex("81 82 6161 71") + b"contiguous_format"
    assert encode_args((("a", (TENSOR, None)),)) == bytes.fromhex("81 82 6161 82 f7 f6")


def test_descriptor_bytes_follow_the_spec() -> None:
    p = tiny()
    vec_type = sha(bytes([1, 1]) + (2).to_bytes(8, "big"))
    want1 = (
        b"DESC"
        + sha(b"aten.mul.Tensor")
        + sha(bytes.fromhex("8282 6473656c66 f7 82 656f74686572 f93800"))
        + u256(1)
        + u256(1)
        + u256(4) + u256(0) + u256(0)
        + vec_type
    )  # fmt: skip
    assert p.descriptor(1) == want1
    want0 = (
        b"DESC"
        + sha(b"aten.add.Tensor")
        + sha(encode_args((("self", TENSOR), ("other", TENSOR), ("alpha", 1))))
        + u256(2)
        + u256(1)
        + u256(1) + name_hash("param/w") + u256(0)
        + u256(2) + name_hash("x") + u256(0)
        + vec_type
    )  # fmt: skip
    assert p.descriptor(0) == want0
    assert p.descriptor(2)[4 + 32 * 7 : 4 + 32 * 10] == u256(3) + name_hash("scale") + u256(0)


def test_roots_and_program_hash_follow_the_spec() -> None:
    p = tiny()
    leaves = [leaf_hash(b"NDSC" + u256(i) + sha(p.descriptor(i))) for i in range(4)]
    from trainer.commit import root

    assert p.graph_root == root(leaves)
    assert graph_leaf(2, p.descriptor_hash(2)) == leaves[2]
    vec_type = sha(bytes([1, 1]) + (2).to_bytes(8, "big"))
    scalar_type = sha(bytes([1, 0]))
    assert p.inputs_root == root(
        [
            leaf_hash(b"PINP" + u256(1) + name_hash("param/w") + vec_type),
            leaf_hash(b"PINP" + u256(2) + name_hash("x") + vec_type),
        ]
    )
    assert p.outputs_root == root(
        [
            leaf_hash(b"POUT" + u256(1) + name_hash("param/w") + vec_type + u256(4) + u256(0) + u256(0)),
            leaf_hash(b"POUT" + u256(2) + name_hash("loss") + scalar_type + u256(4) + u256(3) + u256(0)),
        ]
    )
    assert p.constants_root == state_root({"scale": torch.tensor([0.5, 0.5])})
    assert p.program_hash == sha(b"PROG" + u256(1) + p.graph_root + p.inputs_root + p.outputs_root + p.constants_root)


def with_node(p: Program, node: Node) -> Program:
    nodes = list(p.nodes)
    nodes[node.index] = node
    return dataclasses.replace(p, nodes=tuple(nodes))


def test_descriptor_changes_with_every_field(mlp: Case) -> None:
    p = mlp.program
    base = {i: p.descriptor_hash(i) for i in range(len(p.nodes))}
    scalar_mul = next(n for n in p.nodes if n.op == "aten.mul.Tensor" and isinstance(n.arg("other"), float))
    binary = next(n for n in p.nodes if n.op == "aten.add.Tensor" and len(n.inputs) == 2 and n.index > 3)
    permute = next(n for n in p.nodes if n.op == "aten.permute.default")
    args = dict(scalar_mul.args)
    variants = [
        # a float argument, one ulp away
        dataclasses.replace(
            scalar_mul,
            args=tuple((k, float(torch.nextafter(torch.tensor(v, dtype=torch.float64), torch.tensor(2.0)))
                        if k == "other" else v) for k, v in args.items()),
        ),
        # the same number as an int instead of a float (a different wrapped-scalar type)
        dataclasses.replace(scalar_mul, args=(("self", TENSOR), ("other", 1))) if args["other"] != 1.0 else None,
        # an int-list argument
        dataclasses.replace(permute, args=(("self", TENSOR), ("dims", tuple(reversed(permute.arg("dims")))))),  # type: ignore[arg-type]
        # an input reference: another node, another slot kind, an input
        dataclasses.replace(binary, inputs=(binary.inputs[1], binary.inputs[0])),
        dataclasses.replace(binary, inputs=(binary.inputs[0], NodeRef(0))),
        dataclasses.replace(binary, inputs=(binary.inputs[0], InputRef("param/fc1.bias"))),
        # the alpha argument
        dataclasses.replace(binary, args=(("self", TENSOR), ("other", TENSOR), ("alpha", 2))),
    ]  # fmt: skip
    for v in variants:
        if v is None:
            continue
        h = Program.descriptor_hash(with_node_unchecked(p, v), v.index)
        assert h != base[v.index], v
    # the operator itself
    op_changed = dataclasses.replace(binary, op="aten.sub.Tensor")
    assert Program.descriptor_hash(with_node_unchecked(p, op_changed), binary.index) != base[binary.index]
    # output type
    out_changed = dataclasses.replace(binary, outputs=(TensorType(torch.float64, binary.outputs[0].shape),))
    assert Program.descriptor_hash(with_node_unchecked(p, out_changed), binary.index) != base[binary.index]


def with_node_unchecked(p: Program, node: Node) -> Program:
    """A program with one node replaced, without validation (types may no longer line up)."""
    nodes = list(p.nodes)
    nodes[node.index] = node
    q = object.__new__(Program)
    object.__setattr__(q, "inputs", p.inputs)
    object.__setattr__(q, "constants", p.constants)
    object.__setattr__(q, "nodes", tuple(nodes))
    object.__setattr__(q, "outputs", p.outputs)
    return q


def test_changing_a_node_changes_graph_root_and_program_hash(mlp: Case) -> None:
    p = mlp.program
    node = next(n for n in p.nodes if n.op == "aten.mul.Tensor" and isinstance(n.arg("other"), float))
    q = with_node(p, dataclasses.replace(node, args=(("self", TENSOR), ("other", 0.25))))
    assert q.graph_root != p.graph_root and q.program_hash != p.program_hash
    assert [q.descriptor_hash(i) == p.descriptor_hash(i) for i in range(len(p.nodes))].count(False) == 1


@pytest.mark.parametrize("which", ["first", "middle", "last"])
def test_graph_root_opening_verifies(case: Case, which: str) -> None:
    p = case.program
    d = {"first": 0, "middle": len(p.nodes) // 2, "last": len(p.nodes) - 1}[which]
    descriptor, opening = p.open_node(d)
    verify(p.graph_root, len(p.nodes), d, graph_leaf(d, sha(descriptor)), opening.siblings)
    verify_node(p.graph_root, len(p.nodes), d, descriptor, opening)
    with pytest.raises(ProofError):
        verify_node(p.graph_root, len(p.nodes), d, descriptor[:-1] + bytes([descriptor[-1] ^ 1]), opening)
    other = (d + 1) % len(p.nodes)
    with pytest.raises(ProofError):
        verify(p.graph_root, len(p.nodes), other, graph_leaf(other, sha(descriptor)), opening.siblings)


def test_descriptor_words_name_where_inputs_come_from(transformer: Case) -> None:
    p = transformer.program
    for node in p.nodes[:50]:
        desc = p.descriptor(node.index)

        def word(k: int, desc: bytes = desc) -> bytes:
            return desc[4 + 32 * k : 4 + 32 * (k + 1)]

        assert word(2) == u256(len(node.inputs)) and word(3) == u256(len(node.outputs))
        assert len(desc) == 4 + 32 * (4 + 3 * len(node.inputs) + len(node.outputs))
        for j, ref in enumerate(node.inputs):
            kind, a, b = word(4 + 3 * j), word(5 + 3 * j), word(6 + 3 * j)
            if isinstance(ref, NodeRef):
                assert (kind, a, b) == (u256(4), u256(ref.index), u256(ref.slot))
            elif isinstance(ref, ConstRef):
                assert (kind, a, b) == (u256(3), name_hash(ref.name), u256(0))
            else:
                k = 1 if p.input(ref.name).kind is InputKind.STATE else 2
                assert (kind, a, b) == (u256(k), name_hash(ref.name), u256(0))


def test_validation_refuses_malformed_programs() -> None:
    p = tiny()
    bad_ref = dataclasses.replace(p.nodes[1], inputs=(NodeRef(1),))
    with pytest.raises(ProgramFormatError, match="does not come before"):
        with_node(p, bad_ref)
    with pytest.raises(ProgramFormatError, match="does not have"):
        with_node(p, dataclasses.replace(p.nodes[1], inputs=(InputRef("nope"),)))
    with pytest.raises(ProgramFormatError, match="output 1 of node 0"):
        with_node(p, dataclasses.replace(p.nodes[1], inputs=(NodeRef(0, 1),)))
    with pytest.raises(ProgramFormatError, match="tensor arguments"):
        with_node(p, dataclasses.replace(p.nodes[1], inputs=(NodeRef(0), NodeRef(0))))
    with pytest.raises(ProgramFormatError, match="schema has"):
        with_node(p, dataclasses.replace(p.nodes[1], args=(("other", 0.5), ("self", TENSOR))))
    with pytest.raises(ProgramFormatError, match="not a valid bool"):
        with_node(
            p, dataclasses.replace(p.nodes[3], args=(("self", TENSOR), ("dim", ()), ("keepdim", 1), ("dtype", None)))
        )
    with pytest.raises(ProgramFormatError, match="NaN"):
        Node(1, "aten.mul.Tensor", (("self", TENSOR), ("other", float("nan"))), (NodeRef(0),), p.nodes[1].outputs)
    with pytest.raises(ProgramFormatError, match="not an ATen overload"):
        with_node(p, dataclasses.replace(p.nodes[1], op="aten.no_such_op.default"))
    with pytest.raises(ProgramFormatError, match="canonical order"):
        dataclasses.replace(
            p,
            inputs=(
                p.inputs[0],
                ProgramInput("b", InputKind.BATCH, p.inputs[1].type),
                ProgramInput("a", InputKind.BATCH, p.inputs[1].type),
            ),
        )
    with pytest.raises(ProgramFormatError, match="state outputs"):
        dataclasses.replace(p, outputs=p.outputs[1:])
    with pytest.raises(ProgramFormatError, match="its source has type"):
        dataclasses.replace(p, outputs=(p.outputs[0], dataclasses.replace(p.outputs[1], ref=NodeRef(2))))
    with pytest.raises(ProgramFormatError, match="needs 8 bytes"):
        Constant("c", TensorType(F32, (2,)), b"\x00" * 7)
    with pytest.raises(ProgramFormatError, match="dtype"):
        TensorType(torch.complex64, (1,))  # fmt: skip


def test_constants_keep_their_bits() -> None:
    t = torch.tensor([-0.0, float("inf"), float("nan"), 1e-45])
    c = Constant.of("c", t)
    assert c.tensor().view(torch.int32).tolist() == t.view(torch.int32).tolist()
    assert c.commitment() == __import__("trainer.commit", fromlist=["commit_tensor"]).commit_tensor(t)
    empty = Constant.of("e", torch.zeros(0, 3, dtype=torch.int64))
    assert empty.tensor().shape == (0, 3)
