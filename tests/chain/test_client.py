"""ChainClient against a real anvil: sends, reverts, funds, unreachable nodes."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from eth_account import Account

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
    provider: Any = client.w3.provider
    post = provider._make_request

    def counting(method: Any, request_data: bytes) -> Any:  # every request that goes to the node
        sent.append(str(method))
        return post(method, request_data)

    provider._make_request = counting
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


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, all the way down (a tuple is not a list, a str not a HexBytes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_the_direct_eth_call_answers_exactly_as_web3s_contract_call(
    anvil: Anvil, artifacts: dict[str, Artifact]
) -> None:
    """`ChainClient.call` sends eth_call straight to the provider (web3's contract-call path costs ~3 ms of Python a
    call). Every view of every deployed contract, called with small arguments, must give what web3's own
    `ContractFunction.call` gives, value and type (checksummed addresses, tuples of structs, bytes), and a
    revert the same typed error; so must a call at a past block and a call to an address without code."""
    from functools import partial

    from offchain.chain.deploy import deploy_all
    from offchain.chain.errors import NoContractCode

    client = ChainClient(anvil.rpc_url, anvil.accounts[7].private_key, artifacts=artifacts.values())
    deployment = deploy_all(client, artifacts=artifacts, write=False)
    me = client.address
    sample = {"bool": True, "address": me, "bytes32": b"\x01" * 32, "bytes": b"\x02\x03", "string": "x"}

    def web3_path(fn: Any, block: int | str = "latest") -> Any:
        call = partial(fn.call, {"from": me}, block_identifier=block)
        return client._guard(call, "eth_call", contract=client.name_of(fn.address))

    compared, reverts, addresses = 0, 0, 0
    for name, record in deployment.contracts.items():
        contract = client.contract(artifacts[name], record.address)
        for element in artifacts[name].abi:
            if element.get("type") != "function" or element.get("stateMutability") not in ("view", "pure"):
                continue
            types = [i["type"] for i in element["inputs"]]
            if not all(t in sample or t.startswith(("uint", "int")) for t in types):
                continue
            for small in (0, 1):
                # an array (SumReferee.inputIndex's uint64[] shape) gets one small item
                args = [[small] if t.endswith("[]") else sample.get(t, small) for t in types]
                fn = contract.functions[element["name"]](*args)
                try:
                    want: Any = web3_path(fn)
                except ChainError as e:
                    with pytest.raises(type(e)) as got:
                        client.call(fn)
                    assert getattr(got.value, "error_name", None) == getattr(e, "error_name", None)
                    assert got.value.args == e.args, (name, element["name"], args)
                    reverts += 1
                    continue
                got_value = client.call(fn)
                assert _same(got_value, want), (name, element["name"], args, got_value, want)
                addresses += "address" in str(element["outputs"])
                compared += 1
    assert compared >= 40 and reverts >= 5 and addresses >= 5, (compared, reverts, addresses)

    past = client.block_number() - 1
    count = client.contract(artifacts["TaskMarket"], deployment.address("TaskMarket")).functions.taskCount()
    assert _same(client.call(count, block=past), web3_path(count, past))
    nowhere = client.contract(artifacts["TaskMarket"], "0x" + "11" * 20).functions.taskCount()
    with pytest.raises(NoContractCode):
        client.call(nowhere)


class OneShotServer:
    """A JSON-RPC server on a local port that never says `Connection: close`. With `keep=False` it answers one
    request per connection and closes it (`closed` is released after each close); with `keep=True` it answers
    a connection's first request, keeps the connection open, and closes it on reading the next request,
    without answering (`dropped` lists those requests' methods). `answer(request)` gives the JSON-RPC fields."""

    def __init__(self, answer: Any, *, keep: bool = False) -> None:
        import socket
        import threading

        self.answer, self.keep, self.accepted, self.dropped = answer, keep, 0, []
        self.closed = threading.Semaphore(0)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    @staticmethod
    def _read(conn: Any) -> Any:
        import json

        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        sizes = [h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")]
        while len(body) < int(sizes[0]):
            body += conn.recv(65536)
        return json.loads(body)

    def _serve(self) -> None:
        import json

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            with conn:
                ask = self._read(conn)
                out = json.dumps({"jsonrpc": "2.0", "id": ask["id"], **self.answer(ask)}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(out)).encode() + b"\r\n\r\n" + out)  # fmt: skip
                if self.keep:
                    self.dropped.append(self._read(conn)["method"])
            self.closed.release()

    def close(self) -> None:
        self.listener.close()


def _chain_id_or(result: Any) -> Any:
    return lambda ask: {"result": "0x7a69" if ask["method"] == "eth_chainId" else result}


def test_a_connection_the_server_closed_while_idle_is_replaced_not_failed() -> None:
    """The client keeps its HTTP connection open between requests. A server may close it while idle (this one
    closes after every answer without saying so); the next request must go out on a new connection."""
    server = OneShotServer(_chain_id_or("0x2a"))
    try:
        client = ChainClient(server.url, read_retries=0)
        for _ in range(3):
            assert server.closed.acquire(timeout=10)  # the server has closed the connection of the last request
            assert client.block_number() == 42
        assert server.accepted == 4  # eth_chainId at connection, then one connection a read
    finally:
        server.close()


def test_a_connection_closed_as_a_request_crosses_it_is_retried_for_a_read_never_for_a_transaction() -> None:
    """The close a server makes can cross our next request on the wire: it reads the request and closes without
    an answer. A read goes again on a new connection (nothing came back, and reads are idempotent); a signed
    transaction is not sent twice by the transport: the caller hears of the failure (an agent journals each
    transaction's hash before broadcasting it and reconciles pending ones by hash, offchain/agents/base.py)."""
    import json

    import requests as rq

    server = OneShotServer(_chain_id_or("0x2a"), keep=True)
    try:
        client = ChainClient(server.url, read_retries=0)
        assert client.block_number() == 42  # its first connection was dropped on this request; the retry answered
        assert server.dropped == ["eth_blockNumber"] and server.accepted == 2
        provider: Any = client.w3.provider
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "eth_sendRawTransaction", "params": ["0x01"]})
        with pytest.raises(rq.exceptions.ConnectionError, match="eth_sendRawTransaction"):
            provider._make_request("eth_sendRawTransaction", body.encode())
        assert server.dropped == ["eth_blockNumber", "eth_sendRawTransaction"] and server.accepted == 2
    finally:
        server.close()


def test_an_eth_call_answered_without_a_result_is_a_chain_error_not_a_crash(artifacts: dict[str, Artifact]) -> None:
    """A node (or something posing as one) that answers eth_call with no hex result: the client retries it as
    a bad answer and then raises ChainUnreachableError, as for any node it cannot use (not a KeyError)."""
    server = OneShotServer(_chain_id_or(None))
    try:
        client = ChainClient(server.url, read_retries=1, retry_backoff=0.01)
        contract = client.contract(artifacts["TaskMarket"], "0x" + "11" * 20)
        with pytest.raises(ChainUnreachableError, match="without a hex result"):
            client.call(contract.functions.taskCount())
        assert server.accepted == 3  # eth_chainId, then the call and its one retry
    finally:
        server.close()
