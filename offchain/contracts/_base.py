"""What every typed contract client shares: typed reverts, sending, calling, reading events.

`ChainClient` decodes a revert into `ContractRevert` (name, arguments, sentence) against the
ABIs it knows. A typed client re-raises it as the subclass named after the custom error, e.g.
`DisputeGameFoldMismatch(DisputeGameError(TypedRevert(ContractRevert)))`, looked up by the
error's name in the tables (`ErrorTable`) of its contract and of the contracts it calls: a
revert bubbles up unchanged through external calls, so `TaskMarket.openDispute` can fail with
`DisputeGameBadConfig`. The class's docstring is the sentence a person reads.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, NewType, Self, cast

from eth_typing import ChecksumAddress
from web3 import Web3
from web3.contract import Contract
from web3.contract.contract import ContractFunction
from web3.logs import EventLogErrorFlags

from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt, Wei
from offchain.chain.errors import ChainError, ContractRevert

TaskId = NewType("TaskId", int)
GameId = NewType("GameId", int)
QuestionId = NewType("QuestionId", int)

ErrorTable = Mapping[str, type["TypedRevert"]]


@dataclass(frozen=True, slots=True)
class Withdrawal:
    """A `withdraw`: the amount sent and the receipt (whose fee the caller paid on top)."""

    amount: Wei
    receipt: Receipt


class TypedRevert(ContractRevert):
    """A custom error of a protocol contract, as its own exception class (the class name is the
    error's name; `args` holds its decoded arguments, by name). A leaf class's docstring is the
    sentence its message ends with, unless `OWN_SENTENCE` is false."""

    OWN_SENTENCE: ClassVar[bool] = True

    @classmethod
    def from_revert(cls, e: ContractRevert) -> Self:
        own = cls.__dict__.get("__doc__") if cls.OWN_SENTENCE else None
        args = e.args
        if not hasattr(args, "_fields"):  # data that does not decode: keep the registry's explanation
            return cls(e.error_name, args, data=e.data, contract=e.contract, sentence=e.sentence, tx_hash=e.tx_hash)
        sentence = " ".join(inspect.cleandoc(own).split()) if own else e.sentence
        # Addresses decode lower-case; give them checksummed, as web3 does everywhere else.
        args = args._replace(**{k: _checksum(v) for k, v in args._asdict().items() if _is_address(v)})
        return cls(e.error_name, args, data=e.data, contract=e.contract, sentence=sentence, tx_hash=e.tx_hash)


def _is_address(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 42 and v.startswith("0x") and Web3.is_address(v)


def _checksum(v: str) -> ChecksumAddress:
    return Web3.to_checksum_address(v)


def error_table(base: type[TypedRevert]) -> ErrorTable:
    """Error name -> class for every direct subclass of `base` (one per custom error)."""
    return MappingProxyType({cls.__name__: cls for cls in base.__subclasses__()})


def typed_revert(e: ContractRevert, tables: Iterable[ErrorTable]) -> ContractRevert:
    """`e` as the class its error name has in `tables`; `e` itself if none has it."""
    if isinstance(e, TypedRevert):
        return e
    for table in tables:
        cls = table.get(e.error_name)
        if cls is not None:
            return cls.from_revert(e)
    return e


# -- errors of the shared libraries (contracts/src/lib/Errors.sol) ---------------------------------
# Their sentences come from the chain client's registry (offchain/chain/_revert.py).


class MerkleError(TypedRevert):
    """A Merkle opening was refused (MerkleLib, docs/commitments.md section 2)."""

    OWN_SENTENCE = False


class MerkleIndexOutOfRange(MerkleError):
    """The opened index is not below the leaf count."""


class MerklePaddingLeaf(MerkleError):
    """The opened leaf is PAD."""


class MerkleProofLength(MerkleError):
    """The opening has the wrong number of siblings."""


class MerkleRootMismatch(MerkleError):
    """The opening folds to another root."""


class MerkleCountTooLarge(MerkleError):
    """The leaf count does not fit in 64 bits."""


class TensorError(TypedRevert):
    """A tensor commitment or element opening was refused (TensorLib, docs/commitments.md section 3)."""

    OWN_SENTENCE = False


class TensorUnsupportedDtype(TensorError):
    """The dtype code is unknown."""


class TensorTooManyDims(TensorError):
    """The shape has more than 32 dimensions."""


class TensorTooLarge(TensorError):
    """The shape has too many elements."""


class TensorElementOutOfRange(TensorError):
    """The element index is out of range."""


class TensorChunkLength(TensorError):
    """The chunk has the wrong length."""


class TensorCommitmentMismatch(TensorError):
    """The element opening leads to another tensor commitment."""


LIBRARY_ERRORS: ErrorTable = MappingProxyType({**error_table(MerkleError), **error_table(TensorError)})


# -- the client base ------------------------------------------------------------------------------


class ContractClient:
    """One deployed contract seen through one `ChainClient` (hence one signing key).

    A revert decodes only against ABIs the `ChainClient` knows: the client registers its own
    artifact and `callees` (the artifacts of the contracts it calls, whose errors bubble up
    through it). Without `artifact`, it compiles the contracts and takes both from there.
    """

    CONTRACT_NAME: ClassVar[str]
    CALLEES: ClassVar[tuple[str, ...]] = ()  # names of the contracts it calls
    ERRORS: ClassVar[tuple[ErrorTable, ...]]  # this contract's table first, then those of its callees

    def __init__(
        self, chain: ChainClient, address: str, artifact: Artifact | None = None, callees: Iterable[Artifact] = ()
    ) -> None:
        if artifact is None:
            from offchain.chain.build import compile_contracts

            compiled = compile_contracts()
            artifact = compiled[self.CONTRACT_NAME]
            callees = [compiled[name] for name in self.CALLEES if name in compiled]
        if artifact.name != self.CONTRACT_NAME:
            raise ChainError(f"{type(self).__name__} drives {self.CONTRACT_NAME}, not {artifact.name}")
        self.chain = chain
        self.artifact = artifact
        self.callees = tuple(callees)
        for callee in self.callees:
            chain.register(callee)
        self.contract: Contract = chain.contract(artifact, address)

    @property
    def address(self) -> ChecksumAddress:
        return self.contract.address

    def connect(self, chain: ChainClient) -> Self:
        """The same contract through another connection (another player's key)."""
        return type(self)(chain, self.address, self.artifact, self.callees)

    def _send(self, fn: ContractFunction, *, value: int = 0, gas: int | None = None) -> Receipt:
        try:
            return self.chain.send(fn, value=value, gas=gas)
        except ContractRevert as e:
            raise typed_revert(e, self.ERRORS) from None

    def _call(self, fn: ContractFunction) -> Any:
        try:
            return self.chain.call(fn)
        except ContractRevert as e:
            raise typed_revert(e, self.ERRORS) from None

    def _events(self, receipt: Receipt, event: str) -> list[Mapping[str, Any]]:
        """The `event` logs this contract emitted in `receipt`, decoded (their `args`)."""
        mine = self.address.lower()
        raw = {**receipt.raw, "logs": [log for log in receipt.raw["logs"] if str(log["address"]).lower() == mine]}
        logs = self.contract.events[event]().process_receipt(cast(Any, raw), errors=EventLogErrorFlags.Discard)
        return [log["args"] for log in logs]

    def _event(self, receipt: Receipt, event: str) -> Mapping[str, Any]:
        found = self._events(receipt, event)
        if len(found) != 1:
            raise ChainError(f"transaction {receipt.tx_hash} emitted {len(found)} {event} events, expected 1")
        return found[0]

    def _logs(
        self, event: str, filters: Mapping[str, Any] | None = None, *, from_block: int = 0
    ) -> list[Mapping[str, Any]]:
        """Every `event` log of this contract from `from_block` on whose indexed fields match `filters`."""
        logs = self.chain.read(
            lambda: list(
                self.contract.events[event]().get_logs(
                    argument_filters=dict(filters or {}), from_block=from_block, to_block="latest"
                )
            ),
            f"eth_getLogs {event}",
        )
        logs.sort(key=lambda log: (log["blockNumber"], log["logIndex"]))
        return [_with_block(log) for log in logs]


def _with_block(log: Mapping[str, Any]) -> Mapping[str, Any]:
    return {**log["args"], "_block": int(log["blockNumber"]), "_tx": "0x" + bytes(log["transactionHash"]).hex()}


def word(value: bytes, what: str = "value") -> bytes:
    """A 32-byte word, checked."""
    if len(value) != 32:
        raise ChainError(f"{what} is {len(value)} bytes, expected a 32-byte hash")
    return bytes(value)


def words(values: Sequence[bytes], what: str = "list") -> list[bytes]:
    return [word(v, f"{what}[{i}]") for i, v in enumerate(values)]


def address(value: str) -> ChecksumAddress:
    return Web3.to_checksum_address(value)


__all__ = [
    "LIBRARY_ERRORS",
    "ContractClient",
    "ErrorTable",
    "GameId",
    "MerkleError",
    "QuestionId",
    "TaskId",
    "TensorError",
    "TypedRevert",
    "Wei",
    "Withdrawal",
    "error_table",
    "typed_revert",
]
