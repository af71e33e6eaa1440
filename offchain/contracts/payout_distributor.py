"""Typed client of PayoutDistributor (contracts/src/PayoutDistributor.sol): create a distribution of a
Merkle-sum payout tree (trainer.ledger.payout) with its pool, claim leaves, sweep what is left."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from offchain.chain.client import Receipt
from offchain.contracts._base import ContractClient, ErrorTable, TypedRevert, address, error_table, word
from trainer.ledger.payout import PayoutProof, PayoutTree


class PayoutDistributorError(TypedRevert):
    """A payout distributor rule refused the call."""


class PayoutDistributorZeroPool(PayoutDistributorError):
    """A distribution needs a pool: send wei with it."""


class PayoutDistributorPoolTooLarge(PayoutDistributorError):
    """The pool is larger than a payout tree's sums may be (2^96 - 1 wei)."""


class PayoutDistributorBadLeafCount(PayoutDistributorError):
    """A payout tree has 1 to 2^16 leaves."""


class PayoutDistributorZeroTopHash(PayoutDistributorError):
    """The tree's top hash is zero, which no tree has."""


class PayoutDistributorZeroRefundTo(PayoutDistributorError):
    """The refund account of a distribution cannot be the zero address."""


class PayoutDistributorBadDeadline(PayoutDistributorError):
    """The claim deadline must lie between one hour and four years from now."""


class PayoutDistributorUnknown(PayoutDistributorError):
    """No distribution has this id."""


class PayoutDistributorClaimClosed(PayoutDistributorError):
    """The claim deadline has passed; what is unclaimed goes back by sweep."""


class PayoutDistributorIndexOutOfRange(PayoutDistributorError):
    """The leaf index is beyond the tree's leaves."""


class PayoutDistributorZeroAmount(PayoutDistributorError):
    """A leaf pays a positive amount."""


class PayoutDistributorZeroAccount(PayoutDistributorError):
    """A leaf pays a nonzero account."""


class PayoutDistributorAlreadyClaimed(PayoutDistributorError):
    """This leaf was claimed already: each leaf pays once."""


class PayoutDistributorProofLength(PayoutDistributorError):
    """The proof has the wrong number of steps for the tree's depth."""


class PayoutDistributorSumTooLarge(PayoutDistributorError):
    """A sum in the proof is larger than a payout tree's sums may be."""


class PayoutDistributorRootMismatch(PayoutDistributorError):
    """The proof does not lead to the distribution's root: wrong account, amount, index or siblings."""


class PayoutDistributorTransferFailed(PayoutDistributorError):
    """The account refused the ether; its share goes back in the sweep."""


class PayoutDistributorSweepTooEarly(PayoutDistributorError):
    """A distribution can be swept only from its claim deadline on."""


class PayoutDistributorAlreadySwept(PayoutDistributorError):
    """The distribution was swept already."""


ERRORS: ErrorTable = error_table(PayoutDistributorError)


@dataclass(frozen=True, slots=True)
class Distribution:
    id: int
    receipt: Receipt


class PayoutDistributorClient(ContractClient):
    CONTRACT_NAME: ClassVar[str] = "PayoutDistributor"
    ERRORS: ClassVar[tuple[ErrorTable, ...]] = (ERRORS,)

    def create(self, tree: PayoutTree, refund_to: str, claim_deadline: int) -> Distribution:
        fn = self.contract.functions.createDistribution(
            word(tree.top_hash, "top hash"), tree.leaf_count, address(refund_to), claim_deadline
        )
        receipt = self._send(fn, value=tree.total)
        return Distribution(int(self._event(receipt, "DistributionCreated")["id"]), receipt)

    def claim(self, distribution: int, proof: PayoutProof) -> Receipt:
        fn = self.contract.functions.claim(
            distribution, proof.index, address("0x" + proof.account.hex()), proof.amount, proof.steps_abi()
        )
        return self._send(fn)

    def is_claimed(self, distribution: int, index: int) -> bool:
        return bool(self._call(self.contract.functions.isClaimed(distribution, index)))

    def claimed_total(self, distribution: int) -> int:
        return int(self._call(self.contract.functions.claimedTotal(distribution)))

    def sweep(self, distribution: int) -> Receipt:
        return self._send(self.contract.functions.sweep(distribution))

    def view(self, distribution: int) -> Any:
        return self._call(self.contract.functions.distribution(distribution))
