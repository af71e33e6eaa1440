"""Revert data decoding against the ABIs the client knows (no node needed)."""

from __future__ import annotations

import pickle

import pytest
from eth_abi import encode
from eth_utils import function_signature_to_4byte_selector

from offchain.chain._revert import ERROR_SENTENCES, ErrorRegistry, revert_data
from offchain.chain.build import Artifact
from offchain.chain.errors import ChainError, ContractRevert
from offchain.errors import OffchainError


@pytest.fixture(scope="module")
def registry(artifacts: dict[str, Artifact]) -> ErrorRegistry:
    reg = ErrorRegistry()
    for art in artifacts.values():
        reg.add_abi(art.name, art.abi)
    return reg


def _data(signature: str, types: list[str], values: list[object]) -> bytes:
    return function_signature_to_4byte_selector(signature) + encode(types, values)


def test_every_error_of_the_contracts_has_a_sentence(artifacts: dict[str, Artifact]) -> None:
    """The commitment libraries' errors have their sentence in the chain layer's registry; the
    protocol contracts' errors in their typed exception's docstring (offchain/contracts)."""
    from offchain.contracts.dispute_game import DISPUTE_GAME_ERRORS
    from offchain.contracts.dot_referee import DOT_REFEREE_ERRORS
    from offchain.contracts.element_referee import ELEMENT_ARITHMETIC_ERRORS, ELEMENT_REFEREE_ERRORS
    from offchain.contracts.payout_distributor import ERRORS as PAYOUT_ERRORS
    from offchain.contracts.recompute_oracle import RANDOMNESS_ERRORS, RECOMPUTE_ORACLE_ERRORS
    from offchain.contracts.sum_referee import SUM_REFEREE_ERRORS
    from offchain.contracts.task_market import TASK_MARKET_ERRORS
    from offchain.contracts.trace_referee import TRACE_REFEREE_ERRORS
    from offchain.contracts.training_ledger import TRAINING_LEDGER_ERRORS

    typed = {**DISPUTE_GAME_ERRORS, **RECOMPUTE_ORACLE_ERRORS, **RANDOMNESS_ERRORS, **TASK_MARKET_ERRORS}
    typed.update(PAYOUT_ERRORS)
    typed.update(TRAINING_LEDGER_ERRORS)
    typed.update(ELEMENT_REFEREE_ERRORS)
    typed.update(ELEMENT_ARITHMETIC_ERRORS)
    typed.update(DOT_REFEREE_ERRORS)
    typed.update(TRACE_REFEREE_ERRORS)
    typed.update(SUM_REFEREE_ERRORS)
    assert all(cls.__dict__.get("__doc__") for cls in typed.values())
    names = {item["name"] for art in artifacts.values() for item in art.abi if item["type"] == "error"}
    assert names, "the contracts declare no custom errors?"
    missing = names - set(ERROR_SENTENCES) - set(typed)
    assert not missing, f"no sentence for {sorted(missing)}"


def test_custom_error_decodes_with_named_args(registry: ErrorRegistry) -> None:
    computed, expected = b"\x11" * 32, b"\x22" * 32
    data = _data("MerkleRootMismatch(bytes32,bytes32)", ["bytes32", "bytes32"], [computed, expected])
    err = registry.decode(data, contract="CommitmentVerifier")
    assert isinstance(err, ContractRevert) and isinstance(err, ChainError) and isinstance(err, OffchainError)
    assert err.error_name == "MerkleRootMismatch"
    assert err.args.computed == computed and err.args.expected == expected
    assert err.args._asdict() == {"computed": computed, "expected": expected}
    assert str(err) == (
        f"CommitmentVerifier reverted MerkleRootMismatch(computed=0x{'11' * 32}, expected=0x{'22' * 32}): "
        "the Merkle opening does not lead to the committed root"
    )


def test_error_without_args_and_contract_defaults_to_declaring_artifact(
    registry: ErrorRegistry, artifacts: dict[str, Artifact]
) -> None:
    err = registry.decode(function_signature_to_4byte_selector("MerklePaddingLeaf()"))
    assert err.error_name == "MerklePaddingLeaf"
    assert tuple(err.args) == ()
    declaring = [a.name for a in artifacts.values() if any(i.get("name") == "MerklePaddingLeaf" for i in a.abi)]
    assert err.contract == declaring[0]  # the first artifact registered that declares it
    assert str(err).startswith(f"{declaring[0]} reverted MerklePaddingLeaf(): the opened leaf is the padding leaf")


def test_revert_string_panic_unknown_and_empty(registry: ErrorRegistry) -> None:
    err = registry.decode(_data("Error(string)", ["string"], ["nope"]), contract="X")
    assert (err.error_name, err.args.reason, str(err)) == ("Error", "nope", "X reverted Error(reason=nope): nope")
    err = registry.decode(_data("Panic(uint256)", ["uint256"], [0x11]))
    assert err.error_name == "Panic" and err.args.code == 0x11 and "overflow" in str(err)
    err = registry.decode(_data("Mystery(uint256)", ["uint256"], [5]))
    assert err.error_name.startswith("0x") and "no known ABI" in str(err)
    err = registry.decode(b"")
    assert err.error_name == "" and "without a reason" in str(err)


def test_truncated_data_of_a_known_error_still_names_it(registry: ErrorRegistry) -> None:
    data = function_signature_to_4byte_selector("MerkleProofLength(uint256,uint256)") + b"\x00" * 10
    err = registry.decode(data)
    assert err.error_name == "MerkleProofLength" and "does not decode" in str(err)


def test_revert_pickles(registry: ErrorRegistry) -> None:
    data = _data("MerkleProofLength(uint256,uint256)", ["uint256", "uint256"], [3, 4])
    err = registry.decode(data, contract="CommitmentVerifier", tx_hash="0xabc")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.args.got == 3 and back.tx_hash == "0xabc"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0x1234", b"\x12\x34"),
        ("Reverted 0xab", b"\xab"),
        ({"data": "0x01"}, b"\x01"),
        ({"message": "x", "data": {"data": "0x02"}}, b"\x02"),
        ("execution reverted", None),
        (None, None),
    ],
)
def test_revert_data_shapes(value: object, expected: bytes | None) -> None:
    assert revert_data(value) == expected
