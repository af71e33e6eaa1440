"""deploy_all on anvil: addresses, code hashes and an atomically written deployments file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from eth_utils import keccak

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import (
    BINDINGS,
    ELEMENT_REFEREE_DEFAULT,
    PROTOCOL,
    REFEREE_BINDING,
    Binding,
    ContractSpec,
    deploy_all,
    load_deployment,
)
from offchain.chain.errors import ChainError
from offchain.contracts.protocol import Protocol

pytestmark = pytest.mark.anvil


@pytest.fixture
def client(anvil: Anvil, artifacts: dict[str, Artifact]) -> ChainClient:
    return ChainClient(anvil.rpc_url, anvil.accounts[2].private_key, artifacts=artifacts.values())


def test_deploy_all_writes_the_deployment_file(
    client: ChainClient, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    deployment = deploy_all(client, artifacts=artifacts, out_dir=tmp_path)
    path = tmp_path / f"{client.chain_id}.json"
    assert deployment.path == path
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file left behind
    data = json.loads(path.read_text())
    assert data["chainId"] == 31337 and data["deployer"] == client.address
    assert set(data["contracts"]) == {spec.name for spec in PROTOCOL} >= {"CommitmentVerifier"}
    for name, rec in data["contracts"].items():
        code, compiled = client.code(rec["address"]), artifacts[name].deployed_bytecode
        # Immutables (the game's oracle, the market's game and oracle, ...) are written into the runtime code at
        # deployment where the compiler left zeros; every other byte is the compiler's.
        assert len(code) == len(compiled)
        assert all(want == 0 for got, want in zip(code, compiled, strict=True) if got != want)
        assert rec["codeHash"] == "0x" + keccak(code).hex()
        assert rec["blockNumber"] > 0 and rec["txHash"].startswith("0x") and len(rec["txHash"]) == 66
        assert rec["source"] == artifacts[name].source
    assert load_deployment(client.chain_id, tmp_path) == deployment


def test_redeploy_replaces_the_file(client: ChainClient, artifacts: dict[str, Artifact], tmp_path: Path) -> None:
    first = deploy_all(client, artifacts=artifacts, out_dir=tmp_path)
    second = deploy_all(client, artifacts=artifacts, out_dir=tmp_path)
    assert first.address("CommitmentVerifier") != second.address("CommitmentVerifier")
    assert load_deployment(client.chain_id, tmp_path).address("CommitmentVerifier") == second.address(
        "CommitmentVerifier"
    )


def test_later_contracts_get_earlier_addresses(
    client: ChainClient, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    seen: list[dict[str, str]] = []

    def args(addresses: Mapping[str, str]) -> tuple[()]:
        seen.append(dict(addresses))
        return ()

    protocol = (ContractSpec("CommitmentVerifier"), ContractSpec("CommitmentVerifier", args))
    deployment = deploy_all(client, artifacts=artifacts, protocol=protocol, write=False)
    assert deployment.path is None and not list(tmp_path.iterdir())
    assert len(seen) == 1 and list(seen[0]) == ["CommitmentVerifier"]


def test_unknown_contract_and_missing_file_are_clear(client: ChainClient, tmp_path: Path) -> None:
    with pytest.raises(ChainError, match="no artifact for Nope"):
        deploy_all(client, artifacts={}, protocol=(ContractSpec("Nope"),), write=False)
    with pytest.raises(ChainError, match="refereed deploy"):
        load_deployment(12345, tmp_path)


def test_the_bindings_are_made_recorded_and_read_back(
    client: ChainClient, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    deployment = deploy_all(client, artifacts=artifacts, out_dir=tmp_path)
    data = json.loads((tmp_path / f"{client.chain_id}.json").read_text())
    expected = [*BINDINGS, *([REFEREE_BINDING] if ELEMENT_REFEREE_DEFAULT else [])]
    assert [(b["contract"], b["function"]) for b in data["bindings"]] == [(b.contract, b.function) for b in expected]
    targets = [(b["contract"], b["target"]) for b in data["bindings"]]
    assert targets == [
        ("RecomputeOracle", deployment.address("DisputeGame")),
        ("DisputeGame", deployment.address("TaskMarket")),
        *([("DisputeGame", deployment.address("ElementReferee"))] if ELEMENT_REFEREE_DEFAULT else []),
    ]
    assert all(b["txHash"].startswith("0x") and b["blockNumber"] > 0 for b in data["bindings"])
    assert load_deployment(client.chain_id, tmp_path).bindings == deployment.bindings


def test_a_binding_that_fails_fails_the_deployment(
    client: ChainClient, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    twice = (BINDINGS[0], BINDINGS[0])  # the second bindGame reverts: the game is bound once
    with pytest.raises(ChainError, match=r"binding RecomputeOracle.bindGame\(DisputeGame\) reverted.*AlreadyBound"):
        deploy_all(client, artifacts=artifacts, protocol=PROTOCOL, bindings=twice, out_dir=tmp_path)
    assert not list(tmp_path.iterdir()), "no deployment file for a failed deployment"
    wrong = (Binding("RecomputeOracle", "bindGame", "DisputeGame", "randomness"),)  # reads back another address
    with pytest.raises(ChainError, match=r"RecomputeOracle.randomness\(\) is 0x"):
        deploy_all(client, artifacts=artifacts, protocol=PROTOCOL, bindings=wrong, write=False)


@pytest.mark.parametrize("bound", [True, False], ids=["element-referee", "no-element-referee"])
def test_the_element_referee_is_bound_unless_refused(
    client: ChainClient, artifacts: dict[str, Artifact], bound: bool
) -> None:
    """The ElementReferee is always deployed; `element_referee=True` binds the game to it (read back through
    `referee()`, recorded as the last binding), and the protocol's clients then include its client."""
    deployment = deploy_all(client, artifacts=artifacts, write=False, element_referee=bound)
    protocol = Protocol.from_deployment(client, deployment, artifacts)
    referee = deployment.address("ElementReferee")
    assert client.code(referee)
    made = [(b.contract, b.function) for b in deployment.bindings]
    if bound:
        assert made == [*((b.contract, b.function) for b in BINDINGS), ("DisputeGame", "bindReferee")]
        assert deployment.bindings[-1].target == referee == protocol.game.referee()
        assert protocol.referee is not None and protocol.referee.address == referee
    else:
        assert made == [(b.contract, b.function) for b in BINDINGS]
        assert int(protocol.game.referee(), 16) == 0 and protocol.referee is None
    assert deploy_all(client, artifacts=artifacts, write=False).bindings[-1].function == (
        "bindReferee" if ELEMENT_REFEREE_DEFAULT else "bindMarket"
    )


def test_a_deployment_whose_dot_referee_uses_another_trace_referee_is_refused(
    client: ChainClient, artifacts: dict[str, Artifact]
) -> None:
    """The TraceReferee lives only in the DotReferee's immutable (an ElementReferee constructor argument), so the
    code hashes cannot tell which one decides the transcendental functions: check_deployment reads it back. A
    second, identical TraceReferee put in the file in place of the real one has the right code hash and is
    refused by name."""
    import dataclasses

    from offchain.chain.deploy import DeploymentMismatch, check_deployment

    deployment = deploy_all(client, artifacts=artifacts, write=False)
    assert check_deployment(client, deployment) == deployment
    other = deploy_all(client, artifacts=artifacts, protocol=(ContractSpec("TraceReferee"),), write=False)
    swapped = dict(deployment.contracts, TraceReferee=other.contracts["TraceReferee"])
    assert swapped["TraceReferee"].code_hash == deployment.contracts["TraceReferee"].code_hash
    with pytest.raises(DeploymentMismatch, match="hands the transcendental functions to"):
        check_deployment(client, dataclasses.replace(deployment, contracts=swapped))


def test_a_deployment_whose_dot_referee_uses_another_sum_referee_is_refused(
    client: ChainClient, artifacts: dict[str, Artifact]
) -> None:
    """As the TraceReferee: the SumReferee lives only in the DotReferee's immutable, so check_deployment reads it
    back (`sum()`) and refuses an identical SumReferee put in the file in place of the real one, by name."""
    import dataclasses

    from offchain.chain.deploy import DeploymentMismatch, check_deployment

    deployment = deploy_all(client, artifacts=artifacts, write=False)
    assert check_deployment(client, deployment) == deployment
    other = deploy_all(client, artifacts=artifacts, protocol=(ContractSpec("SumReferee"),), write=False)
    swapped = dict(deployment.contracts, SumReferee=other.contracts["SumReferee"])
    assert swapped["SumReferee"].code_hash == deployment.contracts["SumReferee"].code_hash
    with pytest.raises(DeploymentMismatch, match="hands the sums to"):
        check_deployment(client, dataclasses.replace(deployment, contracts=swapped))
