"""Programs: a client's training step captured as primitive ATen operators, hashed and serialized.

`build_step` turns a model, loss and optimizer config into a pure step function;
`capture` traces it into a `Program`; `to_onnx`/`from_onnx` (de)serialize the artifact.
Formats: docs/program.md.
"""

from trainer.program._schema import bind_args
from trainer.program.capture import capture, trace
from trainer.program.dropout import KeyedDropout, dropout_masks
from trainer.program.errors import CaptureError, ProgramError, ProgramFormatError, UnsupportedOperatorsError
from trainer.program.optim import AdamWConfig, OptimizerConfig, SGDConfig
from trainer.program.program import (
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
    Ref,
    TensorType,
    graph_leaf,
    verify_node,
)
from trainer.program.step import TrainStep, build_step

__all__ = [
    "TENSOR",
    "AdamWConfig",
    "CaptureError",
    "ConstRef",
    "Constant",
    "InputKind",
    "InputRef",
    "KeyedDropout",
    "Node",
    "NodeRef",
    "OptimizerConfig",
    "OutputKind",
    "Program",
    "ProgramError",
    "ProgramFormatError",
    "ProgramInput",
    "ProgramOutput",
    "Ref",
    "SGDConfig",
    "TensorType",
    "TrainStep",
    "UnsupportedOperatorsError",
    "bind_args",
    "build_step",
    "capture",
    "dropout_masks",
    "graph_leaf",
    "trace",
    "verify_node",
]
