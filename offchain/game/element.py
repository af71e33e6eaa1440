"""The honest moves of an element game (ElementReferee, docs/game.md section 2.7), without a chain.

`ElementSide` holds what one side plays: the agreed input tensors and its own output tensor. It gives
the header move (`header`, `input_headers`), the nodes of each chunk-descent level (`nodes`), its
chunk (`chunk`) and the proof's input openings at an element (`openings`); `first_differing_element`
and `broadcast_index` are the contract's own computations, so a player can predict them.
`offchain.contracts.element_referee.ElementRefereeClient` sends the moves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from offchain.game.descent import LeafTree
from offchain.game.errors import GameError
from trainer.commit import CHUNK, dtype_code, open_element
from trainer.commit.tensor import chunk_leaves, data_root, element_size, tensor_bytes


@dataclass(frozen=True, slots=True)
class TensorHeader:
    """An opened tensor header (IElementReferee.Header)."""

    dtype: int
    shape: tuple[int, ...]
    data_root: bytes

    def to_abi(self) -> tuple[int, list[int], bytes]:
        return (self.dtype, list(self.shape), self.data_root)


@dataclass(frozen=True, slots=True)
class InputOpening:
    """One input element's opening for `proveElement` (IElementReferee.InputOpening)."""

    dtype: int
    shape: tuple[int, ...]
    chunk: bytes
    siblings: tuple[bytes, ...]

    def to_abi(self) -> tuple[int, list[int], bytes, list[bytes]]:
        return (self.dtype, list(self.shape), self.chunk, list(self.siblings))


def header_of(t: torch.Tensor) -> TensorHeader:
    return TensorHeader(dtype_code(t.dtype), tuple(t.shape), data_root(tensor_bytes(t)))


def broadcast_index(e: int, out_shape: Sequence[int], shape: Sequence[int]) -> int:
    """The flat index in an input of `shape` of output element `e` (trailing dimensions aligned, a
    dimension of size 1 taken at 0), as the contract computes it."""
    if len(shape) > len(out_shape):
        raise GameError(f"an input of {len(shape)} dimensions does not broadcast to {len(out_shape)}")
    coords = []
    for d in reversed(out_shape):
        coords.append(e % d)
        e //= d
    index, stride = 0, 1
    for r, dim in enumerate(reversed(shape)):
        if dim != 1:
            if dim != out_shape[len(out_shape) - 1 - r]:
                raise GameError(f"input dimension {dim} does not broadcast to {out_shape[len(out_shape) - 1 - r]}")
            index += coords[r] * stride
        stride *= dim
    return index


def first_differing_element(defender_chunk: bytes, challenger_chunk: bytes, size: int, chunk_index: int) -> int:
    """The output element `e` the contract isolates from the two chunks `chunk_index`."""
    if len(defender_chunk) != len(challenger_chunk):
        raise GameError(f"chunks of {len(defender_chunk)} and {len(challenger_chunk)} bytes")
    for at, (a, b) in enumerate(zip(defender_chunk, challenger_chunk, strict=True)):
        if a != b:
            return (chunk_index * CHUNK + at - at % size) // size
    raise GameError("the two chunks agree: there is nothing to dispute")


class ElementSide:
    """One side of an element game: the agreed inputs (in the operator's argument order), its output, and the
    node's argument bytes (`encode_args`; the defender opens them in a Tensor-Scalar game's ARGS stage)."""

    __slots__ = ("_data", "_tree", "args", "inputs", "output")

    def __init__(self, inputs: Sequence[torch.Tensor], output: torch.Tensor, args: bytes = b"") -> None:
        self.inputs = tuple(inputs)
        self.output = output
        self.args = bytes(args)
        self._data = bytes(tensor_bytes(output))
        leaves = chunk_leaves(self._data)
        self._tree = LeafTree([leaves[i : i + 32] for i in range(0, len(leaves), 32)]) if leaves else None

    def header(self) -> TensorHeader:
        return header_of(self.output)

    def input_headers(self) -> list[TensorHeader]:
        return [header_of(t) for t in self.inputs]

    @property
    def element_size(self) -> int:
        return element_size(dtype_code(self.output.dtype))

    def nodes(self, height: int, position: int, arity: int) -> list[bytes]:
        """The `w` nodes of a chunk-descent level at the current node `(height, position)`."""
        if self._tree is None:
            raise GameError("an empty output has no chunks to descend")
        return self._tree.nodes(height, position, arity)

    def chunk(self, j: int) -> bytes:
        if not 0 <= j * CHUNK < len(self._data):
            raise GameError(f"chunk {j} does not exist in an output of {len(self._data)} bytes")
        return self._data[j * CHUNK : (j + 1) * CHUNK]

    def openings(self, e: int, code: int | None = None) -> list[InputOpening]:
        """The input elements that output element `e` reads, opened: at its broadcast positions, or where the data
        movement of ElementReferee code `code` (COPY, PERMUTE) takes it from."""
        from offchain.game.element_table import input_index

        out: list[InputOpening] = []
        shape = tuple(self.output.shape)
        for t in self.inputs:
            index = broadcast_index(e, shape, tuple(t.shape)) if code is None else input_index(
                code, e, shape, tuple(t.shape), self.args
            )
            o = open_element(t, index)
            out.append(InputOpening(o.dtype, o.shape, o.chunk, tuple(o.proof.siblings)))
        return out
