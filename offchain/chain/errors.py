"""Errors of the chain side: one root, `ChainError`, and one subclass per thing to act on."""

from __future__ import annotations

from typing import Any, NamedTuple

from offchain.errors import OffchainError


class ChainError(OffchainError):
    """Root of every error raised while building, deploying or talking to contracts."""


class BuildError(ChainError):
    """The contracts could not be compiled or their artifacts read."""


class ChainUnreachableError(ChainError):
    """Nothing answers JSON-RPC at the URL (after a few retries for reads)."""

    def __init__(self, url: str, detail: str = "") -> None:
        self.url = url
        self.detail = detail
        tail = f" ({detail})" if detail else ""
        super().__init__(f"no JSON-RPC node answers at {url}{tail}; is the node running and the URL right?")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.url, self.detail))


class InsufficientFundsError(ChainError):
    """The sender cannot pay for a transaction."""

    def __init__(self, address: str, balance: int, needed: int | None = None, detail: str = "") -> None:
        self.address = address
        self.balance = balance
        self.needed = needed
        self.detail = detail
        need = f" but the transaction needs up to {needed} wei" if needed is not None else ""
        tail = f" ({detail})" if detail else ""
        super().__init__(
            f"account {address} has {balance} wei{need}{tail}; fund it (on anvil: use one of its funded accounts "
            "or `cast send --value`) or use another key"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.address, self.balance, self.needed, self.detail))


class TransactionTimeoutError(ChainError):
    """A sent transaction got no receipt in time (it may still be mined later)."""

    def __init__(self, tx_hash: str, timeout: float) -> None:
        self.tx_hash = tx_hash
        self.timeout = timeout
        super().__init__(
            f"transaction {tx_hash} got no receipt within {timeout:g} s; it may still be mined: "
            "check it with `cast receipt` before sending it again"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.tx_hash, self.timeout))


class FeeCapBelowBaseFee(ChainError):
    """The chain's base fee is above the most this sender pays per gas (its cap, e.g. a task's
    `gasPriceCap`): no transaction it may send can be included now; wait for the base fee to fall."""

    def __init__(self, base_fee: int, cap: int) -> None:
        self.base_fee = base_fee
        self.cap = cap
        super().__init__(
            f"the base fee is {base_fee} wei per gas, above the cap of {cap} wei per gas this transaction may pay; "
            "it is not sent (wait for the base fee to fall, or raise the cap)"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.base_fee, self.cap))


class InvalidKeyError(ChainError):
    """A private key that eth_account cannot use (wrong length, not hex, out of range)."""


class InvalidRpcUrl(ChainError):
    """An RPC URL that is not an http(s) URL with a host and a valid port."""

    def __init__(self, url: str, why: str) -> None:
        self.url = url
        self.why = why
        super().__init__(f"RPC URL {url!r}: {why}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.url, self.why))


class NoContractCode(ChainError):
    """A call to an address without code: the chain is not the one the deployment was made on (a restarted
    devnet), or the deployment file is wrong."""

    def __init__(self, url: str, address: str, name: str | None = None) -> None:
        self.url = url
        self.address = address
        self.name = name
        what = f"{name} at {address}" if name else address
        super().__init__(
            f"no contract code at {what} on the chain at {url}: the chain was reset or is another one; "
            "run `refereed deploy` on it (and start agents with a fresh --home)"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.url, self.address, self.name))


class RpcError(ChainError):
    """The node answered with an error that is neither a revert nor a funds problem."""


class ContractRevert(ChainError):
    """A contract call or transaction reverted.

    `error_name` is the custom error's name ("Error" for a revert string, "Panic" for a
    Solidity panic, "" when the revert carried no data) and `args` its decoded arguments
    as a named tuple (`e.args.computed`, `e.args._asdict()`). `data` holds the raw revert
    bytes, `contract` the name of the contract whose ABI declares the error (if known).
    """

    def __init__(
        self,
        error_name: str,
        args: NamedTuple | tuple[Any, ...],
        *,
        data: bytes = b"",
        contract: str | None = None,
        sentence: str = "",
        tx_hash: str | None = None,
    ) -> None:
        super().__init__(error_name)
        self.error_name = error_name
        self._decoded = args
        self.data = data
        self.contract = contract
        self.sentence = sentence
        self.tx_hash = tx_hash

    @property
    def args(self) -> Any:
        """The decoded error arguments, a named tuple."""
        return self._decoded

    @args.setter
    def args(self, value: Any) -> None:  # BaseException sets it; keep the decoded ones
        pass

    @property
    def signature(self) -> str:
        fields = getattr(self._decoded, "_fields", None)
        if fields is None:
            inner = ", ".join(_fmt(v) for v in self._decoded)
        else:
            inner = ", ".join(f"{k}={_fmt(v)}" for k, v in zip(fields, self._decoded, strict=True))
        return f"{self.error_name}({inner})"

    def __str__(self) -> str:
        who = self.contract or "contract"
        head = f"{who} reverted {self.signature}" if self.error_name else f"{who} reverted without a reason"
        tx = f" [tx {self.tx_hash}]" if self.tx_hash else ""
        return f"{head}: {self.sentence}{tx}" if self.sentence else f"{head}{tx}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_revert,
            (
                type(self),
                self.error_name,
                tuple(self._decoded),
                getattr(self._decoded, "_fields", None),
                self.data,
                self.contract,
                self.sentence,
                self.tx_hash,
            ),
        )


def _rebuild_revert(
    cls: type[ContractRevert],
    error_name: str,
    values: tuple[Any, ...],
    fields: tuple[str, ...] | None,
    data: bytes,
    contract: str | None,
    sentence: str,
    tx_hash: str | None,
) -> ContractRevert:
    from collections import namedtuple

    args: tuple[Any, ...] = namedtuple(error_name or "Revert", fields)(*values) if fields is not None else values
    return cls(error_name, args, data=data, contract=contract, sentence=sentence, tx_hash=tx_hash)


def _fmt(v: Any) -> str:
    if isinstance(v, bytes | bytearray):
        return "0x" + bytes(v).hex()
    if isinstance(v, tuple | list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)
