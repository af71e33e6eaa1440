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
