"""The root of every error the chain side raises."""

from __future__ import annotations


class OffchainError(Exception):
    """Root of every error raised by `offchain` (chain clients, build, deploy, CLI)."""
