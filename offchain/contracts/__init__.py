"""Typed clients of the protocol's contracts, one module per contract.

`commitment_verifier`, `recompute_oracle`, `dispute_game`, `task_market`; `protocol` bundles
the last three of one deployment. Each contract's custom errors are exception classes of
its module, named after the error (`dispute_game.DisputeGameFoldMismatch`), under one root
per contract (`DisputeGameError`), all `offchain.chain.errors.ContractRevert`s.

Import from the submodules; this package imports nothing itself.
"""
