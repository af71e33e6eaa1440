"""The anvil fixture and `Anvil`: ready when it answers, stopped without leftovers, clear failures."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from offchain.chain.anvil import DEFAULT_MNEMONIC, Anvil, AnvilError, _rpc_chain_id, dev_accounts

pytestmark = pytest.mark.anvil


def _alive(pid: int) -> bool:
    """True while `pid` exists, zombie included (a zombie means nobody reaped it)."""
    return Path(f"/proc/{pid}").exists()


def test_fixture_answers_with_its_chain_id(anvil: Anvil) -> None:
    assert anvil.rpc_url.startswith("http://127.0.0.1:")
    assert _rpc_chain_id(anvil.rpc_url) == anvil.chain_id == 31337
    assert len(anvil.accounts) == 10


def test_default_accounts_are_anvils_well_known_ones() -> None:
    accounts = dev_accounts(2, DEFAULT_MNEMONIC)
    assert accounts[0].address == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
    assert accounts[0].private_key == "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
    assert accounts[1].address == "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def test_stop_leaves_no_process_behind() -> None:
    with Anvil(chain_id=1337, accounts=2) as node:
        pid = node.pid
        assert pid is not None and _alive(pid)
        assert _rpc_chain_id(node.rpc_url) == 1337
        url = node.rpc_url
    assert not _alive(pid)  # terminated and reaped: not even a zombie
    assert _rpc_chain_id(url) is None
    assert node.stop() == node.stop()  # idempotent


def test_stop_after_an_exception_inside_the_block() -> None:
    with pytest.raises(RuntimeError, match="boom"), Anvil() as node:
        pid = node.pid
        raise RuntimeError("boom")
    assert pid is not None and not _alive(pid)


def test_port_in_use_gives_a_clear_error_with_anvils_stderr() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        node = Anvil(port=port)
        with pytest.raises(AnvilError, match=r"(?s)exited with status .*in use"):
            node.start()
    assert node.pid is not None and not _alive(node.pid)


def test_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AnvilError, match="could not start"):
        Anvil(binary=tmp_path / "no-anvil").start()


def test_children_are_in_their_own_process_group(anvil: Anvil) -> None:
    assert anvil.pid is not None
    assert os.getpgid(anvil.pid) == anvil.pid != os.getpgid(0)


def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_a_node_writes_no_state_to_disk_and_keeps_its_bounded_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Left to its default, anvil writes one JSON file of the whole state per block under
    ~/.foundry/anvil/tmp once a few hundred are in memory, and leaves them there when it stops
    (a test run once filled a CI machine's disk with them). Here the node runs with HOME in a
    fresh folder: 600 blocks later, nothing is on disk, the last `history` states answer, older
    ones are refused by name."""
    from web3 import Web3
    from web3.exceptions import Web3RPCError

    monkeypatch.setenv("HOME", str(tmp_path))
    with Anvil(accounts=2, history=64) as node:
        w3 = Web3(Web3.HTTPProvider(node.rpc_url))
        a, b = node.accounts[0].address, node.accounts[1].address
        for _ in range(600):
            sent = w3.eth.send_transaction({"from": a, "to": b, "value": 1})
        # The hash comes back before the block is mined; under load the head could still be 599.
        w3.eth.wait_for_transaction_receipt(sent, timeout=60)
        head = w3.eth.block_number
        assert head == 600
        assert w3.eth.get_balance(b, block_identifier=head - 60) == w3.eth.get_balance(b) - 60
        with pytest.raises(Web3RPCError, match="BlockOutOfRange"):
            w3.eth.get_balance(b, block_identifier=head - 200)
        assert _files_under(tmp_path / ".foundry") == []
    assert _files_under(tmp_path / ".foundry") == []


def test_history_must_keep_a_block() -> None:
    with pytest.raises(AnvilError, match="at least 1 block"):
        Anvil(history=0)
