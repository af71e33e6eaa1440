"""Records a dispute reads: CKPT lists, NODE records of a real trace, descriptors of a real program."""

from __future__ import annotations

import hashlib

import pytest
import torch

from offchain.game import (
    CheckpointList,
    GameError,
    RefKind,
    checkpoint_leaf,
    commitments_hash,
    first_differing_input,
    input_reference,
    parse_descriptor,
    parse_node_record,
)
from trainer.commit import name_hash, record_leaf, verify
from trainer.commit import root as merkle_root
from trainer.interp.interpreter import Interpreter, NodeRecord
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
    ProgramInput,
    ProgramOutput,
    TensorType,
)

F32 = torch.float32


def tiny() -> Program:
    """docs/program.md's example: w' = w + x; loss = sum((w' * 0.5) * scale)."""
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


def test_checkpoint_list_matches_the_runner_format() -> None:
    roots = [hashlib.sha256(bytes([i])).digest() for i in range(6)]
    cl = CheckpointList(roots, 5)
    leaves = [record_leaf(b"CKPT", [5 * i, r]) for i, r in enumerate(roots)]
    assert [cl.leaf(i) for i in range(6)] == leaves == [checkpoint_leaf(5 * i, r) for i, r in enumerate(roots)]
    assert cl.root == merkle_root(leaves) == cl.tree.root
    assert cl.steps == 25 and cl.count == 6 and cl.final_root == roots[-1]
    verify(cl.root, 6, 0, checkpoint_leaf(0, roots[0]), cl.proof(0))
    verify(cl.root, 6, 5, checkpoint_leaf(25, roots[5]), cl.proof(5))
    with pytest.raises(GameError, match="multiple"):
        CheckpointList.from_steps(lambda s: roots[0], 7, 5)


def test_node_records_of_a_real_trace_parse_back() -> None:
    program = tiny()
    _, _, trace = Interpreter(program).trace({"param/w": torch.tensor([1.0, 2.0])}, {"x": torch.tensor([3.0, 4.0])})
    for rec in trace.records:
        assert parse_node_record(rec.encode()) == rec
        assert rec.descriptor_hash == parse_descriptor(program.descriptor(rec.index)).hash
    bad = trace.records[0].encode()
    with pytest.raises(GameError, match="2 inputs and 1 outputs has 7 words, this one 6"):
        parse_node_record(bad[:-32])
    with pytest.raises(GameError, match="b'NODE'"):
        parse_node_record(b"NADA" + bad[4:])
    with pytest.raises(GameError, match="32-byte words"):
        parse_node_record(bad + b"\x00")


def test_descriptor_references_name_where_inputs_come_from() -> None:
    program = tiny()
    d0, d2 = program.descriptor(0), program.descriptor(2)
    r = input_reference(d0, 0)
    assert r.kind is RefKind.STATE and r.name_hash == name_hash("param/w") and r.b == bytes(32)
    assert input_reference(d0, 1).kind is RefKind.BATCH and input_reference(d0, 1).name_hash == name_hash("x")
    r = input_reference(d2, 0)
    assert r.kind is RefKind.NODE and (r.node, r.slot) == (1, 0) and r.words == (4, r.a, r.b)
    assert input_reference(d2, 1).kind is RefKind.CONSTANT and input_reference(d2, 1).name_hash == name_hash("scale")
    for i in range(4):
        desc = parse_descriptor(program.descriptor(i))
        assert desc.encode() == program.descriptor(i)
        assert desc.op_hash == name_hash(program.nodes[i].op)
        assert desc.output_types == tuple(t.type_hash() for t in program.nodes[i].outputs)
    with pytest.raises(GameError, match="input 2 does not exist"):
        input_reference(d0, 2)
    with pytest.raises(GameError, match="a name"):
        _ = input_reference(d2, 0).name_hash
    with pytest.raises(GameError, match="has 11 words"):
        parse_descriptor(d0 + bytes(32))


def test_first_differing_input_and_commitment_hashes() -> None:
    c = [hashlib.sha256(bytes([i])).digest() for i in range(4)]
    a = NodeRecord(3, c[0], (c[1], c[2]), (c[3],))
    assert first_differing_input(a, NodeRecord(3, c[0], (c[1], c[3]), (c[3],))) == 1
    assert first_differing_input(a, NodeRecord(3, c[0], (c[1], c[2]), (c[0],))) is None
    assert commitments_hash([c[1], c[2]]) == hashlib.sha256(c[1] + c[2]).digest()
