"""The ledger's off-chain side (docs/ledger.md): its objects in the public store, replay from the
store, a contributors' scenario, and the `refereed ledger` commands."""
