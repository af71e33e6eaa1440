"""Fixtures shared by the agents' tests: a module's anvil, a fresh deployment per test, the small workload."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import Deployment, deploy_all
from offchain.contracts.protocol import Protocol
from trainer.workloads import Workload, mlp_digits


@pytest.fixture(scope="module")
def node() -> Iterator[Anvil]:
    """One anvil per test module (a module may override it, e.g. for more accounts)."""
    with Anvil(accounts=12) as n:
        yield n


@pytest.fixture(scope="module")
def workload() -> Workload:
    return mlp_digits(steps=8, checkpoint_interval=4, batch_size=8, seed=11)


@pytest.fixture
def deployment(node: Anvil, artifacts: dict[str, Artifact]) -> Deployment:
    """A fresh deployment per test: no test sees another's tasks, games or oracles."""
    deployer = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
    return deploy_all(deployer, artifacts=artifacts, write=False)


@pytest.fixture
def protocol(node: Anvil, deployment: Deployment, artifacts: dict[str, Artifact]) -> Protocol:
    """The test's own view of the chain (straight to anvil, never through a proxy)."""
    return Protocol.from_deployment(ChainClient(node.rpc_url), deployment, artifacts)
