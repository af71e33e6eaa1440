from __future__ import annotations

import dataclasses
from pathlib import Path

import onnx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import AttributeProto, helper, numpy_helper
from program_cases import Case
from test_program import tiny

from trainer.program import TENSOR, ProgramError, ProgramFormatError
from trainer.program.onnx_io import DOMAIN, from_bytes, from_onnx, load, save, to_bytes, to_onnx


def test_checker_accepts_the_artifact(case: Case) -> None:
    model = to_onnx(case.program)
    onnx.checker.check_model(model, full_check=True)
    assert {(o.domain, o.version) for o in model.opset_import} == {("", 21), (DOMAIN, 1)}


def test_round_trip_gives_the_same_program(case: Case, tmp_path: Path) -> None:
    p = case.program
    q = from_bytes(to_bytes(p))
    assert q == p
    assert q.program_hash == p.program_hash and q.graph_root == p.graph_root
    path = tmp_path / f"{case.name}.onnx"
    save(p, path)
    r = load(path, expected_hash=p.program_hash)
    assert r.program_hash == p.program_hash
    assert [r.descriptor(i) for i in range(len(r.nodes))] == [p.descriptor(i) for i in range(len(p.nodes))]


def test_nodes_map_to_standard_ops_only_where_exact(mlp: Case) -> None:
    p = mlp.program
    model = to_onnx(p)
    by_name = {n.name: n for n in model.graph.node}
    seen = set()
    for node in p.nodes:
        proto = by_name[f"node:{node.index}"]
        args = dict(node.args)
        types = [p.ref_type(r).dtype for r in node.inputs] + [t.dtype for t in node.outputs]
        if node.op == "aten.mul.Tensor" and args["other"] is TENSOR and set(types) == {torch.float32}:
            assert (proto.domain, proto.op_type) == ("", "Mul")
            seen.add("Mul")
        elif node.op == "aten.mul.Tensor":
            assert (proto.domain, proto.op_type) == (DOMAIN, "mul.Tensor")
            if not isinstance(args["other"], bool) and args["other"] is not TENSOR:
                (attr,) = proto.attribute
                assert attr.name == "other" and attr.type == AttributeProto.TENSOR
                assert numpy_helper.to_array(attr.t).item() == args["other"]
                seen.add("scalar mul")
        elif node.op == "aten.permute.default":
            assert proto.op_type == "Transpose" and list(proto.attribute[0].ints) == list(args["dims"])  # type: ignore[arg-type]
            seen.add("Transpose")
        elif node.op == "aten.view.default":
            assert proto.op_type == "Reshape"
            assert helper.get_attribute_value(proto.attribute[0]) == 1  # allowzero
            seen.add("Reshape")
        elif node.op in ("aten.mm.default", "aten.sum.dim_IntList", "aten.exp.default", "aten.erf.default"):
            assert proto.domain == DOMAIN  # accumulation order or libm-free functions: RepOps semantics
            seen.add(node.op)
    assert {"Mul", "scalar mul", "Transpose", "Reshape", "aten.mm.default"} <= seen
    outputs = [n for n in model.graph.node if n.op_type == "Identity"]
    assert [n.output[0] for n in outputs] == [f"out:state:{n}" for n in p.state_names] + ["out:loss:loss"]


def test_list_and_multi_output_ops_round_trip(transformer: Case) -> None:
    p = transformer.program
    model = to_onnx(p)
    by_name = {n.name: n for n in model.graph.node}
    put = next(n for n in p.nodes if n.op == "aten.index_put.default")
    proto = by_name[f"node:{put.index}"]
    assert helper.get_attribute_value(next(a for a in proto.attribute if a.name == "indices")) == 1
    assert len(proto.input) == 3
    ln = next(n for n in p.nodes if n.op == "aten.native_layer_norm.default")
    assert list(by_name[f"node:{ln.index}"].output) == [f"node:{ln.index}:{s}" for s in range(3)]
    assert {i.name for i in model.graph.initializer if i.name.startswith("const:")} == {
        "const:" + c.name for c in p.constants
    }


@settings(max_examples=60, deadline=None)
@given(st.floats(allow_nan=False) | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.booleans())
def test_scalar_arguments_round_trip_exactly(value: float | int | bool) -> None:
    p = tiny()
    node = dataclasses.replace(p.nodes[1], args=(("self", TENSOR), ("other", value)))
    q = dataclasses.replace(p, nodes=(p.nodes[0], node, *p.nodes[2:]))
    r = from_bytes(to_bytes(q))
    got = r.nodes[1].arg("other")
    assert type(got) is type(value) and repr(got) == repr(value)
    assert r.program_hash == q.program_hash


def mutate(p_bytes: bytes, edit: object) -> bytes:
    model = onnx.load_model_from_string(p_bytes)
    edit(model)  # type: ignore[operator]
    return model.SerializeToString()


def first_custom_scalar_mul(model: onnx.ModelProto) -> onnx.NodeProto:
    return next(n for n in model.graph.node if n.op_type == "mul.Tensor" and n.attribute)


def test_corrupt_bytes_are_refused(mlp: Case) -> None:
    data = to_bytes(mlp.program)
    for bad in (b"", b"not onnx at all", data[: len(data) // 2], b"\xff" * 64):
        with pytest.raises(ProgramFormatError):
            from_bytes(bad)


def test_tampered_attribute_is_detected(mlp: Case) -> None:
    def edit(model: onnx.ModelProto) -> None:
        attr = first_custom_scalar_mul(model).attribute[0]
        attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t) * 2))

    data = mutate(to_bytes(mlp.program), edit)
    with pytest.raises(ProgramFormatError, match="modified after it was written"):
        from_bytes(data)

    def edit_and_drop_hash(model: onnx.ModelProto) -> None:
        edit(model)
        props = [p for p in model.metadata_props if p.key != "refereed.program.hash"]
        del model.metadata_props[:]
        model.metadata_props.extend(props)

    data = mutate(to_bytes(mlp.program), edit_and_drop_hash)
    assert from_bytes(data).program_hash != mlp.program.program_hash  # readable, but another program
    with pytest.raises(ProgramFormatError, match="not to the expected"):
        from_bytes(data, expected_hash=mlp.program.program_hash)


def test_tampered_constant_is_detected(transformer: Case) -> None:
    def edit(model: onnx.ModelProto) -> None:
        init = next(i for i in model.graph.initializer if i.name == "const:buffer/positions")
        raw = bytearray(init.raw_data)
        raw[0] ^= 1
        init.raw_data = bytes(raw)

    with pytest.raises(ProgramFormatError, match="modified"):
        from_bytes(mutate(to_bytes(transformer.program), edit))


def test_rewired_inputs_are_detected(mlp: Case) -> None:
    def edit(model: onnx.ModelProto) -> None:
        node = next(n for n in model.graph.node if n.op_type == "Add" and n.input[0] != n.input[1])
        node.input[0], node.input[1] = node.input[1], node.input[0]

    with pytest.raises(ProgramFormatError, match="modified"):
        from_bytes(mutate(to_bytes(mlp.program), edit))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.graph.node[3].input.__setitem__(0, "node:999:0"), "invalid|not an input"),
        (lambda m: setattr(m.graph.node[3], "name", "node:77"), "named 'node:77'"),
        (lambda m: setattr(first_custom_scalar_mul(m), "domain", "com.example"), "domain|invalid"),
        (lambda m: first_custom_scalar_mul(m).attribute.append(helper.make_attribute("bogus", 1)), "bogus"),
        (
            lambda m: m.graph.initializer.append(numpy_helper.from_array(__import__("numpy").zeros(1), "extra")),
            "neither a constant",
        ),
        (lambda m: m.graph.input.__getitem__(0).__setattr__("name", "weird"), "invalid|neither state"),
        (lambda m: m.metadata_props.__delitem__(slice(None)), "format"),
    ],
)
def test_malformed_models_give_clear_errors(mlp: Case, edit: object, message: str) -> None:
    with pytest.raises(ProgramFormatError, match=message) as info:
        from_bytes(mutate(to_bytes(mlp.program), edit))
    assert isinstance(info.value, ProgramError)


def test_from_onnx_takes_a_model_proto(mlp: Case) -> None:
    assert from_onnx(to_onnx(mlp.program)) == mlp.program
