"""Deploy the protocol's contracts and record where they are.

`PROTOCOL` lists the contracts in deployment order; a new contract is one more entry
(its constructor arguments may use the addresses deployed before it). `deploy_all`
writes `deployments/<chainId>.json` atomically: a temporary file in the same folder,
then `os.replace` (`_files.write_json_atomically`), so a reader never sees half a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from eth_utils import keccak

from offchain.chain._files import write_json_atomically
from offchain.chain.build import Artifact, compile_contracts, repo_root
from offchain.chain.client import ChainClient
from offchain.chain.errors import ChainError

DEPLOYMENTS_DIR: Final = "deployments"
FORMAT: Final = 1


@dataclass(frozen=True, slots=True)
class ContractSpec:
    """One protocol contract: its name and its constructor arguments given earlier addresses."""

    name: str
    args: Callable[[Mapping[str, str]], tuple[Any, ...]] = field(default=lambda _addresses: ())


# RecomputeOracle's constructor arguments for a local chain: fee 0.01 ether, minBond 1 ether,
# challengeBond 1 ether, silenceSlash 0.1 ether, answer/challenge/vote windows 600 s each,
# exitDelay 3600 s, a committee of 3, at most 3 oracles tried per question.
ORACLE_ARGS: Final[tuple[int, ...]] = (10**16, 10**18, 10**18, 10**17, 600, 600, 600, 3600, 3, 3)

# The protocol's contracts in deployment order; a contract's arguments may use the addresses
# deployed before it.
PROTOCOL: Final[tuple[ContractSpec, ...]] = (
    ContractSpec("CommitmentVerifier"),
    ContractSpec("RecomputeOracle", lambda _addresses: ORACLE_ARGS),
    ContractSpec("DisputeGame", lambda a: (a["RecomputeOracle"],)),
    ContractSpec("TaskMarket", lambda a: (a["DisputeGame"], a["RecomputeOracle"])),
)


@dataclass(frozen=True, slots=True)
class DeployedRecord:
    name: str
    address: str
    tx_hash: str
    block_number: int
    code_hash: str  # keccak256 of the runtime code on chain (what EXTCODEHASH returns)
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "txHash": self.tx_hash,
            "blockNumber": self.block_number,
            "codeHash": self.code_hash,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class Deployment:
    chain_id: int
    deployer: str
    contracts: dict[str, DeployedRecord]
    path: Path | None = None

    def address(self, name: str) -> str:
        try:
            return self.contracts[name].address
        except KeyError:
            raise ChainError(f"{name} is not in the deployment on chain {self.chain_id}") from None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "chainId": self.chain_id,
            "deployer": self.deployer,
            "contracts": {name: rec.to_json() for name, rec in self.contracts.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: Path | None = None) -> Deployment:
        try:
            contracts = {
                name: DeployedRecord(
                    name, c["address"], c["txHash"], int(c["blockNumber"]), c["codeHash"], c.get("source", "")
                )
                for name, c in data["contracts"].items()
            }
            return cls(int(data["chainId"]), str(data["deployer"]), contracts, path)
        except (KeyError, TypeError, ValueError) as e:
            raise ChainError(f"deployment file {path or ''} is malformed: {e!r}") from e


def deployment_path(chain_id: int, out_dir: Path | None = None) -> Path:
    return (out_dir or repo_root() / DEPLOYMENTS_DIR) / f"{chain_id}.json"


def load_deployment(chain_id: int, out_dir: Path | None = None) -> Deployment:
    path = deployment_path(chain_id, out_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ChainError(f"no deployment for chain {chain_id} at {path}; run `refereed deploy` first") from None
    except (OSError, ValueError) as e:
        raise ChainError(f"cannot read {path}: {e}") from e
    return Deployment.from_json(data, path)


def deploy_all(
    client: ChainClient,
    *,
    artifacts: Mapping[str, Artifact] | None = None,
    protocol: tuple[ContractSpec, ...] = PROTOCOL,
    out_dir: Path | None = None,
    write: bool = True,
) -> Deployment:
    """Deploy every contract of `protocol` in order; write `<out_dir>/<chainId>.json`."""
    artifacts = artifacts if artifacts is not None else compile_contracts()
    missing = [spec.name for spec in protocol if spec.name not in artifacts]
    if missing:
        raise ChainError(f"no artifact for {', '.join(missing)}; is it under contracts/src?")
    addresses: dict[str, str] = {}
    records: dict[str, DeployedRecord] = {}
    for spec in protocol:
        artifact = artifacts[spec.name]
        deployed = client.deploy(artifact, *spec.args(addresses))
        code = client.code(deployed.address)
        if not code:
            raise ChainError(f"{spec.name} at {deployed.address} has no code after deployment")
        addresses[spec.name] = deployed.address
        records[spec.name] = DeployedRecord(
            spec.name,
            deployed.address,
            deployed.receipt.tx_hash,
            deployed.receipt.block_number,
            "0x" + keccak(code).hex(),
            artifact.source,
        )
    path = deployment_path(client.chain_id, out_dir) if write else None
    deployment = Deployment(client.chain_id, client.address, records, path)
    if path is not None:
        write_json_atomically(path, deployment.to_json(), indent=2)
    return deployment
