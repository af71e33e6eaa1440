"""Honest moves of the dispute game, computed off chain and without a chain.

`descent` (Merkle descents over checkpoint lists, traces and post-states), `bisection`
(narrowing a step interval) and `records` (CKPT lists, NODE records, descriptors) are pure
functions of the data a trainer holds; `offchain.contracts.dispute_game` sends the moves.
IDisputeGame's NatSpec (contracts/src/interfaces/IDisputeGame.sol) is the specification.
"""

from offchain.game.bisection import Bisection, split_points
from offchain.game.descent import Descent, LeafTree, first_difference, fold, level_width, log2_arity
from offchain.game.errors import GameError
from offchain.game.records import (
    CheckpointList,
    Descriptor,
    InputReference,
    RefKind,
    checkpoint_leaf,
    checkpoint_record,
    commitments_hash,
    first_differing_input,
    input_reference,
    parse_descriptor,
    parse_node_record,
)

__all__ = [
    "Bisection",
    "CheckpointList",
    "Descent",
    "Descriptor",
    "GameError",
    "InputReference",
    "LeafTree",
    "RefKind",
    "checkpoint_leaf",
    "checkpoint_record",
    "commitments_hash",
    "first_difference",
    "first_differing_input",
    "fold",
    "input_reference",
    "level_width",
    "log2_arity",
    "parse_descriptor",
    "parse_node_record",
    "split_points",
]
