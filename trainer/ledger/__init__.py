"""Pure computation of the per-model training ledger (docs/ledger.md): no chain code."""
