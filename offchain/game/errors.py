"""The root of every error `offchain.game` raises."""

from __future__ import annotations

from offchain.errors import OffchainError


class GameError(OffchainError):
    """A move cannot be computed from what was given: bad arity, lengths that differ, lists
    that do not differ, a record that does not parse, or nodes the contract would refuse."""
