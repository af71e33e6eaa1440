"""Revert data -> `ContractRevert`: a selector registry built from every known ABI."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from eth_abi import decode as abi_decode
from eth_abi.exceptions import DecodingError
from eth_utils import abi_to_signature, function_signature_to_4byte_selector, get_abi_input_types

from offchain.chain.errors import ContractRevert

# One sentence per custom error: what it means for the person who sent the call. Errors of
# contracts added later get their sentence here; unknown ones fall back to the signature.
ERROR_SENTENCES: Final[dict[str, str]] = {
    # Merkle openings (contracts/src/lib, docs/commitments.md section 2)
    "MerkleIndexOutOfRange": "the opened leaf index is not below the committed leaf count "
    "(padding positions can never be opened)",
    "MerklePaddingLeaf": "the opened leaf is the padding leaf (32 zero bytes), which no valid opening may name",
    "MerkleProofLength": "the opening has the wrong number of siblings; the committed leaf count fixes the depth",
    "MerkleRootMismatch": "the Merkle opening does not lead to the committed root",
    "MerkleCountTooLarge": "the leaf count does not fit in 64 bits",
    # Tensor element openings (docs/commitments.md section 3)
    "TensorUnsupportedDtype": "the dtype code is not one of the codes in docs/commitments.md section 3",
    "TensorTooManyDims": "the shape has more dimensions than the 32 a tensor commitment allows",
    "TensorTooLarge": "the shape has more elements than a tensor commitment can hold (its chunk count must fit "
    "in 64 bits)",
    "TensorElementOutOfRange": "the element index is not below the number of elements of the shape",
    "TensorChunkLength": "the chunk's length does not match its position in a tensor of this dtype and shape",
    "TensorCommitmentMismatch": "the element opening (dtype, shape, chunk and siblings) does not lead to the "
    "committed tensor: wrong data, wrong shape or a stale commitment",
}

PANIC_REASONS: Final[dict[int, str]] = {
    0x00: "generic compiler panic",
    0x01: "an assert failed",
    0x11: "arithmetic overflow or underflow",
    0x12: "division or modulo by zero",
    0x21: "conversion to an invalid enum value",
    0x22: "corrupt storage byte array",
    0x31: "pop() on an empty array",
    0x32: "array index out of bounds",
    0x41: "too much memory allocated",
    0x51: "call to a zero-initialized internal function",
}

_ERROR_STRING: Final = bytes.fromhex("08c379a0")  # Error(string)
_PANIC: Final = bytes.fromhex("4e487b71")  # Panic(uint256)


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """A custom error as declared in an ABI."""

    name: str
    types: tuple[str, ...]
    fields: tuple[str, ...]
    contract: str  # the first artifact whose ABI declares it

    @property
    def signature(self) -> str:
        return f"{self.name}({','.join(self.types)})"

    @property
    def selector(self) -> bytes:
        return function_signature_to_4byte_selector(self.signature)


class ErrorRegistry:
    """Selector -> `ErrorSpec` over the ABIs of every contract the client knows."""

    __slots__ = ("_specs",)

    def __init__(self) -> None:
        self._specs: dict[bytes, ErrorSpec] = {}

    def add_abi(self, contract: str, abi: Iterable[Mapping[str, Any]]) -> None:
        for item in abi:
            if item.get("type") != "error":
                continue
            types = tuple(get_abi_input_types(item))  # type: ignore[arg-type]
            fields = tuple(str(i.get("name") or f"arg{n}") for n, i in enumerate(item.get("inputs", [])))
            spec = ErrorSpec(str(item["name"]), types, fields, contract)
            assert spec.signature == abi_to_signature(item)  # type: ignore[arg-type]
            self._specs.setdefault(spec.selector, spec)

    def __contains__(self, selector: bytes) -> bool:
        return selector in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def get(self, selector: bytes) -> ErrorSpec | None:
        return self._specs.get(selector)

    def decode(self, data: bytes, *, contract: str | None = None, tx_hash: str | None = None) -> ContractRevert:
        """The exception for revert `data` from a call to `contract` (its name, if known)."""
        data = bytes(data)
        if len(data) < 4:
            return ContractRevert(
                "",
                (),
                data=data,
                contract=contract,
                sentence="the revert carried no error data (a bare `revert()`, out of gas, or a call to an "
                "address without code)",
                tx_hash=tx_hash,
            )
        selector, body = data[:4], data[4:]
        if selector == _ERROR_STRING:
            decoded = _try_decode(("string",), body)
            if decoded is not None:
                (reason,) = decoded
                return ContractRevert(
                    "Error",
                    _named("Error", ("reason",), decoded),
                    data=data,
                    contract=contract,
                    sentence=str(reason),
                    tx_hash=tx_hash,
                )
        if selector == _PANIC:
            decoded = _try_decode(("uint256",), body)
            if decoded is not None:
                (code,) = decoded
                sentence = f"Solidity panic 0x{code:02x}: {PANIC_REASONS.get(code, 'unknown panic code')}"
                return ContractRevert(
                    "Panic",
                    _named("Panic", ("code",), decoded),
                    data=data,
                    contract=contract,
                    sentence=sentence,
                    tx_hash=tx_hash,
                )
        spec = self._specs.get(selector)
        if spec is not None:
            decoded = _try_decode(spec.types, body)
            if decoded is not None:
                return ContractRevert(
                    spec.name,
                    _named(spec.name, spec.fields, decoded),
                    data=data,
                    contract=contract or spec.contract,
                    sentence=ERROR_SENTENCES.get(spec.name, f"custom error {spec.signature}"),
                    tx_hash=tx_hash,
                )
            return ContractRevert(
                spec.name,
                (body,),
                data=data,
                contract=contract or spec.contract,
                sentence=f"its data does not decode as {spec.signature}",
                tx_hash=tx_hash,
            )
        return ContractRevert(
            f"0x{selector.hex()}",
            (body,),
            data=data,
            contract=contract,
            sentence="an error no known ABI declares (selector 0x" + selector.hex() + ")",
            tx_hash=tx_hash,
        )


def _try_decode(types: tuple[str, ...], body: bytes) -> tuple[Any, ...] | None:
    try:
        return tuple(abi_decode(list(types), body))
    except (DecodingError, ValueError, OverflowError):
        return None


def _named(name: str, fields: tuple[str, ...], values: tuple[Any, ...]) -> tuple[Any, ...]:
    # Solidity names like `_count` become `count`: namedtuple would rename a leading underscore to `_0`.
    clean = [f.lstrip("_") or f"arg{i}" for i, f in enumerate(fields)]
    cls = namedtuple(name if name.isidentifier() else "Revert", clean, rename=True)  # type: ignore[misc]
    return cast(tuple[Any, ...], cls._make(values))


def revert_data(value: Any) -> bytes | None:
    """Revert bytes from what web3 or a node puts in an error's `data` (hex string or dict)."""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, str):
        text = value.removeprefix("Reverted ").strip()
        if text.startswith("0x"):
            try:
                return bytes.fromhex(text[2:])
            except ValueError:
                return None
        return None
    if isinstance(value, Mapping):
        for key in ("data", "result", "output"):
            found = revert_data(value.get(key))
            if found is not None:
                return found
        for v in value.values():
            if isinstance(v, Mapping | str):
                found = revert_data(v)
                if found is not None:
                    return found
    return None
