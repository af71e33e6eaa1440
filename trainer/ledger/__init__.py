"""The per-model training ledger: exact aggregation of contributions, attribution by marginal
loss reduction, hash-chained blocks and replay from genesis (docs/ledger.md).

Pure computation: no chain, no store. The agents that post, contribute, build and claim live
in `offchain/ledger/`.
"""

from trainer.ledger.errors import BlockError, ContributionError, LedgerError, ManifestError

__all__ = ["BlockError", "ContributionError", "LedgerError", "ManifestError"]
