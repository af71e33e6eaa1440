"""ChainClient against a real anvil: sends, reverts, funds, unreachable nodes."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from eth_account import Account
from web3.middleware import Web3Middleware

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.errors import (
    ChainError,
    ChainUnreachableError,
    ContractRevert,
    InsufficientFundsError,
    InvalidKeyError,
)

pytestmark = pytest.mark.anvil


@pytest.fixture
def client(anvil: Anvil, artifacts: dict[str, Artifact]) -> ChainClient:
    return ChainClient(anvil.rpc_url, anvil.accounts[0].private_key, artifacts=artifacts.values())


def test_connects_and_reads(client: ChainClient, anvil: Anvil) -> None:
    assert client.chain_id == anvil.chain_id == 31337
    assert client.address == anvil.accounts[0].address
    assert client.balance() > 0
    assert client.block_number() >= 0


def test_deploy_returns_address_with_the_artifacts_code(client: ChainClient, artifacts: dict[str, Artifact]) -> None:
    art = artifacts["CommitmentVerifier"]
    deployed = client.deploy(art)
    assert deployed.receipt.gas_used > 0 and deployed.receipt.block_number > 0
    assert client.code(deployed.address) == art.deployed_bytecode
    assert client.name_of(deployed.address) == "CommitmentVerifier"


def test_unreachable_rpc_fails_fast_and_clearly(closed_rpc_url: str) -> None:
    t0 = time.perf_counter()
    with pytest.raises(ChainUnreachableError) as info:
        ChainClient(closed_rpc_url)
    assert time.perf_counter() - t0 < 5.0
    assert closed_rpc_url in str(info.value) and info.value.url == closed_rpc_url
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no requests traceback chained


def test_node_going_away_mid_session_is_unreachable(artifacts: dict[str, Artifact]) -> None:
    with Anvil() as node:
        client = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
        assert client.balance() > 0
    with pytest.raises(ChainUnreachableError, match=node.rpc_url):
        client.balance()
    with pytest.raises(ChainUnreachableError):
        client.deploy(artifacts["CommitmentVerifier"])


def test_reads_are_retried_with_backoff(client: ChainClient) -> None:
    calls = []

    def flaky() -> int:
        calls.append(time.perf_counter())
        if len(calls) < 3:
            raise requests.exceptions.ConnectionError("connection dropped")
        return 42

    assert client.read(flaky, "flaky") == 42
    assert len(calls) == 3 and calls[2] - calls[1] > calls[1] - calls[0]


def test_reads_give_up_after_the_retries(client: ChainClient) -> None:
    calls = []

    def down() -> int:
        calls.append(1)
        raise requests.exceptions.ConnectionError("connection dropped")

    with pytest.raises(ChainUnreachableError, match="flaky read"):
        client.read(down, "flaky read")
    assert len(calls) == client.read_retries + 1


def test_unfunded_deployer_gets_insufficient_funds(anvil: Anvil, artifacts: dict[str, Artifact]) -> None:
    fresh = Account.create()
    poor = ChainClient(anvil.rpc_url, fresh.key, artifacts=artifacts.values())
    with pytest.raises(InsufficientFundsError) as info:
        poor.deploy(artifacts["CommitmentVerifier"])
    err = info.value
    assert err.address == fresh.address and err.balance == 0 and err.needed and err.needed > 0
    assert fresh.address in str(err) and "0 wei" in str(err)


def test_call_without_key_works_and_send_needs_one(
    anvil: Anvil, client: ChainClient, artifacts: dict[str, Artifact]
) -> None:
    deployed = client.deploy(artifacts["CommitmentVerifier"])
    reader = ChainClient(anvil.rpc_url, artifacts=artifacts.values())
    contract = reader.contract(artifacts["CommitmentVerifier"], deployed.address)
    assert len(reader.call(contract.functions.listRoot(0, b"\x00" * 32))) == 32
    with pytest.raises(ContractRevert, match="MerkleCountTooLarge"):
        reader.call(contract.functions.listRoot(2**64, b"\x00" * 32))


def test_node_side_insufficient_funds_is_translated(
    anvil: Anvil, artifacts: dict[str, Artifact], monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = Account.create()
    poor = ChainClient(anvil.rpc_url, fresh.key, artifacts=artifacts.values())
    monkeypatch.setattr(poor, "balance", lambda address=None: 10**30)  # get past the client's own check
    with pytest.raises(InsufficientFundsError) as info:
        poor.deploy(artifacts["CommitmentVerifier"])
    assert info.value.address == fresh.address and "insufficient funds" in info.value.detail.lower()


def test_malformed_key_is_an_invalid_key_error(anvil: Anvil) -> None:
    with pytest.raises(InvalidKeyError, match="has 4 hex digits; a secp256k1 key has 64") as info:
        ChainClient(anvil.rpc_url, "0x1234")
    assert "0x1234" not in str(info.value)


def test_bids_are_capped_per_client_per_block_and_per_call(anvil: Anvil, artifacts: dict[str, Artifact]) -> None:
    """`fee_cap`, `capped` and `max_fee_per_gas` each bound maxFeePerGas (the lowest wins); a cap below the
    base fee sends nothing."""
    from offchain.chain.errors import FeeCapBelowBaseFee

    client = ChainClient(anvil.rpc_url, anvil.accounts[0].private_key, artifacts=artifacts.values(), fee_cap=10**10)
    art = artifacts["CommitmentVerifier"]

    def bid(receipt_hash: str) -> int:
        return int(client.w3.eth.get_transaction(receipt_hash)["maxFeePerGas"])  # type: ignore[arg-type]

    base = int(client.w3.eth.get_block("latest")["baseFeePerGas"])
    assert bid(client.deploy(art).receipt.tx_hash) <= 10**10
    with client.capped(base + 1):
        assert client.cap() == base + 1
        deployed = client.deploy(art)
        assert bid(deployed.receipt.tx_hash) <= base + 1
        assert deployed.receipt.effective_gas_price <= base + 1
        with client.capped(None):  # no change
            assert client.cap() == base + 1
    assert client.cap() == 10**10 and client.cap(5) == 5
    base = int(client.w3.eth.get_block("latest")["baseFeePerGas"])
    nonce = client.w3.eth.get_transaction_count(client.address)
    with client.capped(base - 1), pytest.raises(FeeCapBelowBaseFee) as low:
        client.deploy(art)
    assert (low.value.base_fee, low.value.cap) == (base, base - 1)
    assert client.w3.eth.get_transaction_count(client.address) == nonce, "nothing was sent"


def test_calls_and_sends_ask_the_node_for_its_chain_id_once(
    anvil: Anvil, client: ChainClient, artifacts: dict[str, Artifact]
) -> None:
    """web3's own validation asked `eth_chainId` before every call, estimate and send: a third of an agent's
    requests. The client reads it at connection and checks declared chain ids against that value."""
    deployed = client.deploy(artifacts["CommitmentVerifier"])
    contract = client.contract(artifacts["CommitmentVerifier"], deployed.address)
    sent: list[str] = []

    class Counting(Web3Middleware):
        def request_processor(self, method: Any, params: Any) -> Any:
            sent.append(str(method))
            return method, params

    client.w3.middleware_onion.add(Counting, "counting")
    for _ in range(3):
        client.call(contract.functions.listRoot(0, b"\x00" * 32))
    client.deploy(artifacts["CommitmentVerifier"])
    assert sent.count("eth_call") == 3 and "eth_sendRawTransaction" in sent
    assert "eth_chainId" not in sent, sent
    # A declared chain id is still checked, against the one the client read, and removed from the request.
    call = contract.functions.listRoot(0, b"\x00" * 32)
    assert len(call.call({"chainId": anvil.chain_id})) == 32
    with pytest.raises(ChainError, match="declares chain id 5, but this client's node is on 31337"):
        call.call({"chainId": 5})
