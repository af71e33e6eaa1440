"""Errors of the commitment package: one root, one subclass per kind of bad input."""

from __future__ import annotations


class CommitError(Exception):
    """Root of every error raised by `trainer.commit`."""


class ProofError(CommitError):
    """A Merkle opening is malformed or does not verify."""


class UnsupportedTensorError(CommitError):
    """A tensor cannot be committed as it is (dtype, layout, rank)."""


class StateError(CommitError):
    """A state map cannot be committed (bad or duplicate names)."""
