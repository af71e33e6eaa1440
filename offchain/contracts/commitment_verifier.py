"""Typed client of CommitmentVerifier (contracts/src/CommitmentVerifier.sol).

Openings come from `trainer.commit` (`open_element`, `MerkleTree.open`); failures raise
`ContractRevert` with the contract's custom error decoded, e.g. `TensorCommitmentMismatch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from web3.contract import Contract

from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt
from offchain.chain.errors import ChainError
from trainer.commit import ElementOpening, Opening

CONTRACT_NAME: Final = "CommitmentVerifier"


@dataclass(frozen=True, slots=True)
class VerifiedElement:
    """The chain's verdict on an element opening, sent as a transaction."""

    value_bits: int  # the element's bytes read little-endian, from the ElementVerified event
    gas_used: int
    tx_hash: str
    receipt: Receipt


def _element_args(commitment: bytes, op: ElementOpening) -> tuple[Any, ...]:
    return (
        _word(commitment),
        op.dtype,
        list(op.shape),
        op.index,
        bytes(op.chunk),
        [_word(s) for s in op.proof.siblings],
    )


def _word(b: bytes) -> bytes:
    if len(b) != 32:
        raise ChainError(f"expected a 32-byte hash, got {len(b)} bytes")
    return bytes(b)


class CommitmentVerifierClient:
    """Calls a deployed CommitmentVerifier through a `ChainClient`."""

    def __init__(self, chain: ChainClient, address: str, artifact: Artifact | None = None) -> None:
        if artifact is None:
            from offchain.chain.build import compile_contracts

            artifact = compile_contracts()[CONTRACT_NAME]
        self.chain = chain
        self.contract: Contract = chain.contract(artifact, address)

    @property
    def address(self) -> str:
        return str(self.contract.address)

    def verify_element(self, commitment: bytes, opening: ElementOpening, *, gas: int | None = None) -> VerifiedElement:
        """Check the opening in a transaction; the value bits the contract emitted and the gas it took."""
        receipt = self.chain.send(self.contract.functions.verifyElement(*_element_args(commitment, opening)), gas=gas)
        events = self.contract.events.ElementVerified().process_receipt(receipt.raw)
        if len(events) != 1:
            raise ChainError(f"transaction {receipt.tx_hash} emitted {len(events)} ElementVerified events, expected 1")
        return VerifiedElement(int(events[0]["args"]["valueBits"]), receipt.gas_used, receipt.tx_hash, receipt)

    def element_value(self, commitment: bytes, opening: ElementOpening) -> int:
        """The element's bits if the opening is valid (an eth_call, no transaction)."""
        return int(self.chain.call(self.contract.functions.elementValue(*_element_args(commitment, opening))))

    def verify_leaf(self, root: bytes, leaf: bytes, opening: Opening) -> None:
        """Returns iff `opening` proves `leaf` at `opening.index` of a list of `opening.count` under `root`."""
        fn = self.contract.functions.verifyLeaf(
            _word(root), opening.count, opening.index, _word(leaf), [_word(s) for s in opening.siblings]
        )
        self.chain.call(fn)

    def list_root(self, count: int, top: bytes) -> bytes:
        return bytes(self.chain.call(self.contract.functions.listRoot(count, _word(top))))
