"""A typed JSON-RPC client: local signing, explicit gas, reverts decoded into Python errors.

`ChainClient` holds a web3 connection and, optionally, one local key. It sends
transactions the explicit way (estimate gas, sign with eth_account, `eth_sendRawTransaction`,
wait for the receipt) and turns every failure into a `ChainError` a person can act on:

- a revert, from `eth_call`/`eth_estimateGas` or from a mined transaction with status 0
  (replayed with `eth_call` to get its data), becomes `ContractRevert`, decoded against the
  ABIs of every artifact the client knows;
- a sender that cannot pay becomes `InsufficientFundsError`;
- a node that does not answer becomes `ChainUnreachableError` (reads are retried a few
  times with backoff first; sends are not, since they are not idempotent).

A sender may cap what it pays per gas: `fee_cap` for every transaction of the client, `capped(cap)`
for those sent inside a `with` block (an agent acting for a task caps them at the task's
`gasPriceCap`, which is all the market repays), `max_fee_per_gas=` for one. The lowest cap
applies: `maxFeePerGas` is at most it, and a base fee above it raises `FeeCapBelowBaseFee`
before anything is signed.
"""

from __future__ import annotations

import re
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, NewType, TypeVar, cast

import requests
from eth_abi.exceptions import DecodingError, EncodingError
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_typing import ChecksumAddress
from eth_utils.abi import get_abi_input_types, get_abi_output_types
from hexbytes import HexBytes
from web3 import Web3
from web3._utils.abi import map_abi_data
from web3._utils.error_formatters_utils import raise_contract_logic_error_on_revert
from web3._utils.normalizers import BASE_RETURN_NORMALIZERS
from web3.contract import Contract
from web3.contract.contract import ContractConstructor, ContractFunction
from web3.exceptions import (
    BadFunctionCallOutput,
    BadResponseFormat,
    ContractLogicError,
    ProviderConnectionError,
    TransactionNotFound,
    Web3RPCError,
)
from web3.middleware import Web3Middleware
from web3.types import RPCEndpoint

from offchain.chain._revert import ErrorRegistry, revert_data
from offchain.chain._transport import KeepAliveHTTPProvider
from offchain.chain.build import Artifact
from offchain.chain.errors import (
    ChainError,
    ChainUnreachableError,
    ContractRevert,
    FeeCapBelowBaseFee,
    InsufficientFundsError,
    InvalidKeyError,
    InvalidRpcUrl,
    NoContractCode,
    RpcError,
    TransactionTimeoutError,
)

Wei = NewType("Wei", int)
T = TypeVar("T")
_ERRNO: Final = re.compile(r"\[Errno (-?\d+)\] ([^'\")\]]+)")

_UNREACHABLE: Final = (
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
    requests.exceptions.HTTPError,
    requests.exceptions.ChunkedEncodingError,  # an answer cut off mid-body
    ProviderConnectionError,
    BadResponseFormat,
    ConnectionError,
)


STATE_CHANGE_SLACK_GAS: Final = 25_000  # added to every gas estimate (see `send`)


@dataclass(frozen=True, slots=True)
class Receipt:
    """A mined transaction with status 1."""

    tx_hash: str
    block_number: int
    gas_used: int
    effective_gas_price: Wei
    contract_address: ChecksumAddress | None
    raw: Mapping[str, Any]  # web3's receipt, for event decoding

    @property
    def fee(self) -> Wei:
        return Wei(self.gas_used * self.effective_gas_price)


@dataclass(frozen=True, slots=True)
class Deployed:
    """A contract deployed by `ChainClient.deploy`."""

    name: str
    address: ChecksumAddress
    receipt: Receipt
    contract: Contract


_KNOWN_CHAIN: weakref.WeakKeyDictionary[Web3, int] = weakref.WeakKeyDictionary()  # each client's chain id, read once
_CHAIN_ID_CHECKED: Final = frozenset({"eth_sendTransaction", "eth_estimateGas", "eth_call", "eth_createAccessList"})


class _KnownChainId(Web3Middleware):
    """web3's chain-id check of transaction parameters, against the chain id the client read when it connected
    rather than one more `eth_chainId` request per call: a `chainId` in the parameters of a call, an estimate or
    a node-signed transaction must be the client's, and is removed before the request is sent (as web3 does)."""

    def request_processor(self, method: Any, params: Any) -> Any:
        if method in _CHAIN_ID_CHECKED and params and isinstance(params[0], Mapping) and "chainId" in params[0]:
            tx = dict(params[0])
            declared, known = tx.pop("chainId"), _KNOWN_CHAIN.get(cast(Web3, self._w3))
            value = int(declared, 0) if isinstance(declared, str) else int(declared)
            if known is not None and value != known:
                raise ChainError(f"the transaction declares chain id {value}, but this client's node is on {known}")
            params = (tx, *params[1:])
        return method, params


class ChainClient:
    """One connection to one JSON-RPC endpoint, with an optional local signing key."""

    def __init__(
        self,
        rpc_url: str,
        private_key: str | bytes | None = None,
        *,
        artifacts: Iterable[Artifact] = (),
        request_timeout: float = 10.0,
        receipt_timeout: float = 60.0,
        read_retries: int = 3,
        retry_backoff: float = 0.1,
        gas_margin: float = 1.2,
        fee_cap: int | None = None,
    ) -> None:
        self.rpc_url = check_rpc_url(rpc_url)
        self.receipt_timeout = receipt_timeout
        self.read_retries = read_retries
        self.retry_backoff = retry_backoff
        self.gas_margin = gas_margin
        self.fee_cap = fee_cap  # wei per gas: no transaction of this client bids more (None: no cap)
        self._caps: list[int] = []  # caps of the `capped` blocks we are in
        self.w3 = Web3(KeepAliveHTTPProvider(rpc_url, timeout=request_timeout))
        # web3's validation middleware asks the node for its chain id before every eth_call, eth_estimateGas
        # and eth_sendTransaction (a third of an agent's requests); this client reads it once, below, signs with
        # it, and checks against that value instead (a node restarted on another chain refuses our signed
        # transactions, and the agents find it by its genesis hash).
        self.w3.middleware_onion.remove("validation")
        self.w3.middleware_onion.add(_KnownChainId, "known_chain_id")
        self.account: LocalAccount | None = _account(private_key) if private_key is not None else None
        self.errors = ErrorRegistry()
        # Called with a signed transaction's hash and its call ("Contract.function") just before it is broadcast.
        self.before_broadcast: Callable[[str, str], None] | None = None
        self._names: dict[str, str] = {}  # lower-case address -> contract name
        for artifact in artifacts:
            self.register(artifact)
        self.chain_id: int = self.read(lambda: self.w3.eth.chain_id, "eth_chainId")
        _KNOWN_CHAIN[self.w3] = self.chain_id

    # -- identity and registry ----------------------------------------------------------

    @property
    def address(self) -> ChecksumAddress:
        if self.account is None:
            raise ChainError("this client has no private key; pass one to send transactions")
        return self.account.address

    def register(self, artifact: Artifact) -> None:
        """Know `artifact`'s ABI: its custom errors decode from now on."""
        self.errors.add_abi(artifact.name, artifact.abi)

    def contract(self, artifact: Artifact, address: str) -> Contract:
        """A web3 contract object for `artifact` at `address`; reverts name it."""
        self.register(artifact)
        checksum = Web3.to_checksum_address(address)
        self._names[checksum.lower()] = artifact.name
        return self.w3.eth.contract(address=checksum, abi=artifact.abi)

    def name_of(self, address: str | None) -> str | None:
        return self._names.get(address.lower()) if address else None

    # -- reads ----------------------------------------------------------------------------

    def read(self, fn: Callable[[], T], what: str = "request") -> T:
        """Run an idempotent read; retry connection failures with backoff, then raise."""
        delay = self.retry_backoff
        for attempt in range(self.read_retries + 1):
            try:
                return fn()
            except _UNREACHABLE as e:
                if attempt == self.read_retries:
                    raise ChainUnreachableError(self.rpc_url, f"{what}: {_short(e)}") from None
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def balance(self, address: str | None = None) -> Wei:
        who = Web3.to_checksum_address(address) if address else self.address
        return Wei(self.read(lambda: self.w3.eth.get_balance(who), "eth_getBalance"))

    def block_number(self) -> int:
        return int(self.read(lambda: self.w3.eth.block_number, "eth_blockNumber"))

    def block_hash(self, number: int) -> bytes:
        """The hash of block `number`."""
        block = self.read(lambda: self.w3.eth.get_block(number), "eth_getBlockByNumber")
        return bytes(block["hash"])

    def code(self, address: str) -> bytes:
        return bytes(self.read(lambda: self.w3.eth.get_code(Web3.to_checksum_address(address)), "eth_getCode"))

    def call(self, fn_call: ContractFunction, *, block: int | str = "latest") -> Any:
        """`eth_call` of a contract function; reverts raise `ContractRevert`."""
        params: dict[str, Any] = {"from": self.account.address} if self.account else {}
        name = self.name_of(fn_call.address)
        shape = _call_shape(fn_call)
        if shape is not None:
            try:
                data = shape.selector + self.w3.codec.encode(shape.inputs, fn_call.args)
            except (EncodingError, TypeError, ValueError):
                shape = None  # arguments eth_abi does not take as they are (web3 normalizes them): web3's path
        if shape is None:
            try:
                call = partial(fn_call.call, cast(Any, params), block_identifier=cast(Any, block))
                return self._guard(call, "eth_call", contract=name)
            except BadFunctionCallOutput:
                raise NoContractCode(self.rpc_url, str(fn_call.address), name) from None
        tx = {**params, "to": fn_call.address, "data": "0x" + data.hex()}
        at = hex(block) if isinstance(block, int) else block
        raw = self._guard(lambda: self._eth_call(tx, at), "eth_call", contract=name)
        try:
            out = self.w3.codec.decode(shape.outputs, raw)
        except DecodingError:
            raise NoContractCode(self.rpc_url, str(fn_call.address), name) from None
        if shape.normalize:  # as web3 gives them: addresses checksummed, arrays as lists
            out = map_abi_data(BASE_RETURN_NORMALIZERS, shape.outputs, out)
        return out[0] if len(out) == 1 else list(out)

    def _eth_call(self, tx: dict[str, Any], block: str) -> bytes:
        """One `eth_call` straight to the provider: web3's contract-call path spends about 3 ms of Python a call
        finding and validating the ABI element and formatting the request, four times the request itself.
        Errors are raised as web3 raises them: a revert as ContractLogicError, anything else Web3RPCError."""
        response = self.w3.provider.make_request(RPCEndpoint("eth_call"), [tx, block])
        if "error" in response:
            raise_contract_logic_error_on_revert(response)
            raise Web3RPCError(repr(response["error"]), rpc_response=response)
        result = response.get("result")
        if not isinstance(result, str):  # what web3 refuses too: retried as a connection failure, then reported
            raise BadResponseFormat(f"eth_call answered without a hex result: {str(response)[:200]}")
        return HexBytes(result)

    # -- writes ---------------------------------------------------------------------------

    @contextmanager
    def capped(self, max_fee_per_gas: int | None) -> Iterator[None]:
        """Inside the block, no transaction bids more than `max_fee_per_gas` wei per gas (None: no change)."""
        if max_fee_per_gas is None:
            yield
            return
        self._caps.append(int(max_fee_per_gas))
        try:
            yield
        finally:
            self._caps.pop()

    def cap(self, max_fee_per_gas: int | None = None) -> int | None:
        """The cap a transaction sent now pays at most: the lowest of `fee_cap`, the `capped` blocks and
        `max_fee_per_gas` (None: uncapped)."""
        caps = [c for c in (self.fee_cap, *self._caps, max_fee_per_gas) if c is not None]
        return min(caps) if caps else None

    def send(
        self,
        fn_call: ContractFunction | ContractConstructor,
        *,
        value: int = 0,
        gas: int | None = None,
        contract_name: str | None = None,
        max_fee_per_gas: int | None = None,
    ) -> Receipt:
        """Sign and send `fn_call` from this client's key; the receipt once mined with status 1.

        `gas=None` estimates it (a revert then raises before anything is sent); an explicit
        `gas` skips estimation, and a revert shows up as a failed receipt instead. The bid is
        `2 * baseFee + priority`, at most `cap(max_fee_per_gas)`.
        """
        sender = self.address
        if isinstance(fn_call, ContractConstructor):
            to: ChecksumAddress | None = None
            data = HexBytes(fn_call.data_in_transaction)
            name = contract_name
        else:
            to = Web3.to_checksum_address(fn_call.address)
            data = HexBytes(fn_call._encode_transaction_data())
            name = contract_name or self.name_of(to)
        base: dict[str, Any] = {"from": sender, "data": data, "value": value}
        if to is not None:
            base["to"] = to
        if gas is None:
            estimate = self._guard(lambda: self.w3.eth.estimate_gas(cast(Any, base)), "eth_estimateGas", contract=name)
            # Plus one storage write's zero-to-non-zero price: another transaction mined first can empty a
            # slot this one writes (a withdrawal zeroing the credit a claim adds to), which costs 20,000
            # gas more than the estimate saw.
            gas = max(21_000, int(estimate * self.gas_margin) + STATE_CHANGE_SLACK_GAS)
        priority = int(self._guard(lambda: self.w3.eth.max_priority_fee, "eth_maxPriorityFeePerGas"))
        latest = self._guard(lambda: self.w3.eth.get_block("latest"), "eth_getBlockByNumber")
        base_fee = int(latest.get("baseFeePerGas", 0) or 0)
        max_fee = 2 * base_fee + priority
        cap = self.cap(max_fee_per_gas)
        if cap is not None:
            if cap < base_fee:
                raise FeeCapBelowBaseFee(base_fee, cap)
            max_fee = min(max_fee, cap)
            priority = min(priority, max_fee)
        needed = gas * max_fee + value
        have = self.balance(sender)
        if have < needed:
            raise InsufficientFundsError(sender, have, needed)
        nonce = self._guard(lambda: self.w3.eth.get_transaction_count(sender, "pending"), "eth_getTransactionCount")
        tx: dict[str, Any] = {
            "type": 2,
            "chainId": self.chain_id,
            "nonce": nonce,
            "gas": gas,
            "maxFeePerGas": max_fee,
            "maxPriorityFeePerGas": priority,
            "value": value,
            "data": data,
        }
        if to is not None:
            tx["to"] = to
        assert self.account is not None
        signed = self.account.sign_transaction(tx)
        tx_hash = "0x" + bytes(signed.hash).hex()
        if self.before_broadcast is not None:
            fn_name = getattr(fn_call, "fn_name", "constructor")
            self.before_broadcast(tx_hash, f"{name or '?'}.{fn_name}")
        try:
            self.w3.eth.send_raw_transaction(signed.raw_transaction)
        except _UNREACHABLE as e:
            raise ChainUnreachableError(
                self.rpc_url,
                f"eth_sendRawTransaction of {tx_hash} failed ({_short(e)}); it may or may not have been sent",
            ) from None
        except (Web3RPCError, ContractLogicError, ValueError) as e:
            raise self._translate(e, "eth_sendRawTransaction", contract=name, sender=sender) from None
        raw = self._wait_receipt(tx_hash)
        if int(raw["status"]) != 1:
            raise self._failed_receipt(raw, base, gas, name, tx_hash)
        return _receipt(tx_hash, raw)

    def deploy(self, artifact: Artifact, *args: Any, value: int = 0) -> Deployed:
        """Deploy `artifact` with constructor `args`; returns its address and receipt."""
        if not artifact.deployable:
            raise ChainError(f"{artifact.name} ({artifact.source}) has no creation code: an interface or abstract?")
        self.register(artifact)
        factory = self.w3.eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
        receipt = self.send(factory.constructor(*args), value=value, contract_name=artifact.name)
        if receipt.contract_address is None:
            raise ChainError(f"deploying {artifact.name} in {receipt.tx_hash} produced no contract address")
        contract = self.contract(artifact, receipt.contract_address)
        return Deployed(artifact.name, receipt.contract_address, receipt, contract)

    # -- internals --------------------------------------------------------------------------

    def _guard(self, fn: Callable[[], T], what: str, *, contract: str | None = None) -> T:
        """A read with retries whose node errors become typed ChainErrors."""
        try:
            return self.read(fn, what)
        except (ContractLogicError, Web3RPCError, ValueError) as e:
            raise self._translate(e, what, contract=contract) from None

    def _translate(
        self, e: Exception, what: str, *, contract: str | None = None, sender: str | None = None
    ) -> ChainError:
        if isinstance(e, ChainError):
            return e
        if isinstance(e, ContractLogicError):
            data = revert_data(e.data)
            if data is None and isinstance(e.message, str):
                data = revert_data(e.message)
            return self.errors.decode(data or b"", contract=contract)
        message = _rpc_message(e)
        if "insufficient funds" in message.lower():
            who = sender or (self.account.address if self.account else "the sender")
            have = self.balance(who) if who.startswith("0x") else 0
            return InsufficientFundsError(who, have, detail=f"{what}: {message}")
        data = revert_data(getattr(e, "rpc_response", None) or {})
        if data is not None and "revert" in message.lower():
            return self.errors.decode(data, contract=contract)
        return RpcError(f"{what} at {self.rpc_url} failed: {message}")

    def _wait_receipt(self, tx_hash: str) -> Mapping[str, Any]:
        deadline = time.monotonic() + self.receipt_timeout
        delay = 0.01
        while True:
            try:
                raw = self.read(lambda: self.w3.eth.get_transaction_receipt(HexBytes(tx_hash)), "eth_getReceipt")
            except TransactionNotFound:
                raw = None
            except ChainUnreachableError as e:
                raise ChainUnreachableError(
                    self.rpc_url, f"{e.detail}; transaction {tx_hash} was sent, check its receipt later"
                ) from None
            if raw is not None:
                return cast(Mapping[str, Any], raw)
            if time.monotonic() >= deadline:
                raise TransactionTimeoutError(tx_hash, self.receipt_timeout)
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _failed_receipt(
        self, raw: Mapping[str, Any], tx: Mapping[str, Any], gas: int, contract: str | None, tx_hash: str
    ) -> ChainError:
        """Replay a failed transaction with eth_call on the state before its block to get its revert data."""
        block = int(raw["blockNumber"])
        replay = {**tx, "gas": gas}
        try:
            self.read(lambda: self.w3.eth.call(cast(Any, replay), block_identifier=max(block - 1, 0)), "eth_call")
        except ContractLogicError as e:
            err = self._translate(e, "replay", contract=contract)
            if isinstance(err, ContractRevert):
                err.tx_hash = tx_hash
            return err
        except (Web3RPCError, ValueError) as e:
            return RpcError(f"transaction {tx_hash} failed (status 0) and its replay failed too: {_rpc_message(e)}")
        used = int(raw["gasUsed"])
        hint = " (it used all its gas: raise the gas limit)" if used >= gas else ""
        return ContractRevert(
            "",
            (),
            contract=contract,
            sentence=f"the transaction failed on chain (status 0, gas used {used} of {gas}) but its replay did not "
            f"revert{hint}",
            tx_hash=tx_hash,
        )


# The order n of secp256k1's group: a private key is an integer in 1..n-1.
SECP256K1_N: Final = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def check_private_key(private_key: object) -> bytes:
    """The 32 bytes of a private key given as hex (with or without 0x) or bytes; `InvalidKeyError` saying what is
    wrong with it (never the key itself) otherwise."""
    if isinstance(private_key, bytes | bytearray):
        raw = bytes(private_key)
    elif isinstance(private_key, str):
        text = private_key.strip()
        if not text:
            raise InvalidKeyError("the private key is empty: give 64 hex digits (32 bytes), with or without 0x")
        digits = text[2:] if text[:2].lower() == "0x" else text
        if not re.fullmatch(r"[0-9a-fA-F]*", digits):
            raise InvalidKeyError("the private key is not hex: give 64 hex digits (32 bytes), with or without 0x")
        if len(digits) != 64:
            raise InvalidKeyError(
                f"the private key has {len(digits)} hex digits; a secp256k1 key has 64 (32 bytes), with or without 0x"
            )
        raw = bytes.fromhex(digits)
    else:
        raise InvalidKeyError(f"a private key is hex text or bytes, not {type(private_key).__name__}")
    if len(raw) != 32:
        raise InvalidKeyError(f"the private key is {len(raw)} bytes long; a secp256k1 key is 32 bytes")
    value = int.from_bytes(raw, "big")
    if value == 0:
        raise InvalidKeyError("the private key is zero, which is no secp256k1 key: use a key in 1..n-1")
    if value >= SECP256K1_N:
        raise InvalidKeyError("the private key is not below the secp256k1 group order n: use a key in 1..n-1")
    return raw


def check_rpc_url(url: object) -> str:
    """`url` if it is an http(s) URL with a host and a port in 1..65535; `InvalidRpcUrl` saying how to fix it."""
    from urllib.parse import urlsplit

    if not isinstance(url, str):
        raise InvalidRpcUrl(repr(url), f"an RPC URL is text, not {type(url).__name__}")
    text = url.strip()
    if not text:
        raise InvalidRpcUrl(url, "it is empty; give e.g. http://127.0.0.1:8545")
    if "://" not in text:
        raise InvalidRpcUrl(url, f"it has no scheme; did you mean http://{text}?")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as e:
        raise InvalidRpcUrl(url, f"{e}; a port is 1..65535, e.g. http://127.0.0.1:8545") from None
    if parts.scheme.lower() in ("ws", "wss"):
        raise InvalidRpcUrl(url, "websocket endpoints are not supported; give the node's http:// (or https://) URL")
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidRpcUrl(url, f"the scheme {parts.scheme!r} is not http or https; e.g. http://127.0.0.1:8545")
    if not parts.hostname:
        raise InvalidRpcUrl(url, "it has no host; e.g. http://127.0.0.1:8545")
    if port == 0:
        raise InvalidRpcUrl(url, "port 0 is no port to connect to; a port is 1..65535")
    return text


def _account(private_key: str | bytes) -> LocalAccount:
    raw = check_private_key(private_key)
    try:
        return Account.from_key(raw)
    except (ValueError, TypeError) as e:  # the message never contains the key
        raise InvalidKeyError(f"the private key is not a valid secp256k1 key: {e}") from None


def _receipt(tx_hash: str, raw: Mapping[str, Any]) -> Receipt:
    addr = raw.get("contractAddress")
    return Receipt(
        tx_hash=tx_hash,
        block_number=int(raw["blockNumber"]),
        gas_used=int(raw["gasUsed"]),
        effective_gas_price=Wei(int(raw.get("effectiveGasPrice", 0) or 0)),
        contract_address=Web3.to_checksum_address(addr) if addr else None,
        raw=raw,
    )


def _rpc_message(e: Exception) -> str:
    if isinstance(e, Web3RPCError):
        resp = e.rpc_response or {}
        err = resp.get("error") if isinstance(resp, Mapping) else None
        if isinstance(err, Mapping) and err.get("message"):
            return str(err["message"])
        return str(e.message)
    if e.args and isinstance(e.args[0], Mapping) and "message" in e.args[0]:
        return str(e.args[0]["message"])
    return str(e)


def _short(e: BaseException) -> str:
    """One short line for a connection failure (requests' messages run to several hundred characters)."""
    text = str(e)
    m = _ERRNO.search(text)
    if m:
        return f"{m.group(2).strip()} (errno {m.group(1)})"
    if isinstance(e, requests.exceptions.Timeout):
        return "timed out"
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first[:160]}" if first else type(e).__name__


@dataclass(frozen=True, slots=True)
class _CallShape:
    abi: dict[str, Any]  # the ABI element these types were read from
    selector: bytes
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    normalize: bool  # whether web3's return normalizers change anything (addresses, arrays, tuples)


_SHAPES: dict[tuple[str, str], _CallShape] = {}


def _call_shape(fn_call: ContractFunction) -> _CallShape | None:
    """The selector and the ABI types of a resolved contract function, once per signature; None for what the
    direct eth_call does not serve (keyword arguments, anything but a function)."""
    abi = getattr(fn_call, "abi", None)  # the element the call resolved (its selector is computed from it)
    if fn_call.kwargs or not isinstance(abi, dict) or abi.get("type") != "function":
        return None
    key = (str(fn_call.address), str(fn_call.selector))
    shape = _SHAPES.get(key)
    # One address may hold another contract with a function of the same selector and other outputs: on another
    # chain, or on a fresh anvil where another deployment order put it there. The element decides (the same
    # object on every call of one contract object, so the check is mostly `is`).
    if shape is None or (shape.abi is not abi and shape.abi != abi):
        outputs = tuple(get_abi_output_types(cast(Any, abi)))
        shape = _SHAPES[key] = _CallShape(
            abi=abi,
            selector=bytes.fromhex(str(fn_call.selector).removeprefix("0x")),
            inputs=tuple(get_abi_input_types(cast(Any, abi))),
            outputs=outputs,
            normalize=any(c in "".join(outputs) for c in ("address", "[", "(")),
        )
    return shape
