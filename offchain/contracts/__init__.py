"""Typed clients of the protocol's contracts, one module per contract."""
