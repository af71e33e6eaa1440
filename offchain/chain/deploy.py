"""Deploy the protocol's contracts and record where they are.

`PROTOCOL` lists the contracts in deployment order; a new contract is one more entry
(its constructor arguments may use the addresses deployed before it). `BINDINGS` are the
calls the deployer makes once everything is deployed, so that each entry point that costs
someone else is reachable only from the protocol's own flow: the oracle answers only the
dispute game (`RecomputeOracle.bindGame`), the game opens only for the task market
(`DisputeGame.bindMarket`), and, with `element_referee`, the game decides covered nodes through the
ElementReferee (`DisputeGame.bindReferee`, `REFEREE_BINDING`). Each binding is read back through its
getter; a binding that reverts or reads back wrong fails the deployment (no file is written).

`deploy_all` writes `deployments/<chainId>.json` atomically: a temporary file in the same
folder, then `os.replace` (`_files.write_json_atomically`), so a reader never sees half a
file. The file lists the contracts (address, transaction, block, code hash, source) and
the bindings (contract, function, target, transaction).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from eth_utils import keccak
from web3 import Web3

from offchain.chain._files import write_json_atomically
from offchain.chain.build import Artifact, compile_contracts, repo_root
from offchain.chain.client import ChainClient
from offchain.chain.errors import ChainError, ContractRevert

DEPLOYMENTS_DIR: Final = "deployments"
FORMAT: Final = 1


@dataclass(frozen=True, slots=True)
class ContractSpec:
    """One protocol contract: its name and its constructor arguments given earlier addresses."""

    name: str
    args: Callable[[Mapping[str, str]], tuple[Any, ...]] = field(default=lambda _addresses: ())


@dataclass(frozen=True, slots=True)
class Binding:
    """A call `contract.function(target)` the deployer makes after deploying, checked by `getter()`.

    `target` names a contract of the deployment, or is an address (`0x...`).
    """

    contract: str
    function: str
    target: str
    getter: str

    def target_address(self, addresses: Mapping[str, str]) -> str:
        if self.target.startswith("0x"):
            return self.target
        try:
            return addresses[self.target]
        except KeyError:
            raise ChainError(f"binding {self.contract}.{self.function}: {self.target} is not deployed") from None


# BlockhashRandomness's delay: the value of a request made in block b is the hash of block b + 1.
RANDOMNESS_DELAY: Final = 1

# RecomputeOracle's Params for a local chain, in the struct's order: fee 0.01 ether, minBond 1 ether (one
# stake unit), challengeBond 1 ether, silenceSlash 0.1 ether, answer/challenge/vote windows 600 s each,
# exitDelay 3600 s, waitLimit 3600 s (how long a draw waits for enough oracles), a committee of 3, at most
# 3 oracles tried per question, at most 2 committee rounds. A question is assigned only when
# committeeSize + 2 = 5 eligible oracles exist (offchain.contracts.recompute_oracle.OracleParams).
ORACLE_ARGS: Final[tuple[int, ...]] = (10**16, 10**18, 10**18, 10**17, 600, 600, 600, 3600, 3600, 3, 3, 2)

# The protocol's contracts in deployment order; a contract's arguments may use the addresses
# deployed before it.
PROTOCOL: Final[tuple[ContractSpec, ...]] = (
    ContractSpec("CommitmentVerifier"),
    ContractSpec("BlockhashRandomness", lambda _addresses: (RANDOMNESS_DELAY,)),
    ContractSpec("RecomputeOracle", lambda a: (a["BlockhashRandomness"], ORACLE_ARGS)),
    ContractSpec("DisputeGame", lambda a: (a["RecomputeOracle"],)),
    ContractSpec("TaskMarket", lambda a: (a["DisputeGame"], a["RecomputeOracle"])),
    ContractSpec("TrainingLedger"),  # stands alone: ledgers of docs/ledger.md
    ContractSpec("TraceReferee"),  # the transcendental functions' trace game (docs/game.md 2.9)
    ContractSpec("SumReferee"),  # the sums' game (docs/game.md 2.10)
    # Stands alone until DisputeGame is bound to it (REFEREE_BINDING); deploys its DotReferee, which hands the
    # transcendental functions to the TraceReferee and the sums to the SumReferee.
    ContractSpec("ElementReferee", lambda a: (a["TraceReferee"], a["SumReferee"])),
)

# What the deployer binds once every contract is deployed: only the game asks the oracle, only the
# market opens games.
BINDINGS: Final[tuple[Binding, ...]] = (
    Binding("RecomputeOracle", "bindGame", "DisputeGame", "game"),
    Binding("DisputeGame", "bindMarket", "TaskMarket", "market"),
)

# With `deploy_all(element_referee=True)`: the game sends a node the element table covers to the
# ElementReferee's element phase, decided on chain, instead of the oracle (docs/game.md 2.7).
REFEREE_BINDING: Final = Binding("DisputeGame", "bindReferee", "ElementReferee", "referee")

# Whether a deployment binds the ElementReferee unless told otherwise. On: a covered node is then decided
# by the contract's own arithmetic, with no trust in an oracle committee. A covered operator on tensors of
# other dtypes (an int64 where or add; the table keys operators, not dtypes) is proved inapplicable by the
# defender and goes to the oracle (ElementReferee.proveInapplicable). The referee meters its moves and the
# market repays the winner's at the gas price cap (docs/game.md 2.7). `--no-element-referee` (refereed
# deploy, ./scripts/demo) sends every node to the oracle.
ELEMENT_REFEREE_DEFAULT: Final = True


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
class BoundRecord:
    """A binding the deployer made: `contract.function(target)` in transaction `tx_hash`."""

    contract: str
    function: str
    target: str  # the bound address
    tx_hash: str
    block_number: int

    def to_json(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "function": self.function,
            "target": self.target,
            "txHash": self.tx_hash,
            "blockNumber": self.block_number,
        }


@dataclass(frozen=True, slots=True)
class Deployment:
    chain_id: int
    deployer: str
    contracts: dict[str, DeployedRecord]
    path: Path | None = None
    bindings: tuple[BoundRecord, ...] = ()

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
            "bindings": [b.to_json() for b in self.bindings],
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
            bindings = tuple(  # absent from files written before bindings existed
                BoundRecord(b["contract"], b["function"], b["target"], b["txHash"], int(b["blockNumber"]))
                for b in data.get("bindings", [])
            )
            return cls(int(data["chainId"]), str(data["deployer"]), contracts, path, bindings)
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
    bindings: tuple[Binding, ...] | None = None,
    out_dir: Path | None = None,
    write: bool = True,
    element_referee: bool | None = None,
) -> Deployment:
    """Deploy every contract of `protocol` in order, make `bindings` (default: `BINDINGS` when `protocol` is
    `PROTOCOL`, none otherwise) and check each; write `<out_dir>/<chainId>.json`. `element_referee` (default
    `ELEMENT_REFEREE_DEFAULT`) adds `REFEREE_BINDING` to them: DisputeGame then decides the nodes of the
    element table on chain, and asks the oracle only about the others."""
    if bindings is None:
        bindings = BINDINGS if protocol is PROTOCOL else ()
    if element_referee is None:  # the default binds it in the whole protocol only (a subset may lack either)
        element_referee = ELEMENT_REFEREE_DEFAULT and protocol is PROTOCOL
    if element_referee and REFEREE_BINDING not in bindings:
        bindings = (*bindings, REFEREE_BINDING)
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
    bound = tuple(_bind(client, artifacts, addresses, b) for b in bindings)
    path = deployment_path(client.chain_id, out_dir) if write else None
    deployment = Deployment(client.chain_id, client.address, records, path, bound)
    if path is not None:
        write_json_atomically(path, deployment.to_json(), indent=2)
    return deployment


def _bind(
    client: ChainClient, artifacts: Mapping[str, Artifact], addresses: Mapping[str, str], b: Binding
) -> BoundRecord:
    """Make binding `b` from the deployer's key and read it back; a ChainError that says which one failed."""
    what = f"{b.contract}.{b.function}({b.target})"
    if b.contract not in addresses:
        raise ChainError(f"binding {what}: {b.contract} is not deployed")
    target = b.target_address(addresses)
    contract = client.contract(artifacts[b.contract], addresses[b.contract])
    try:
        receipt = client.send(contract.functions[b.function](target))
        got = str(client.call(contract.functions[b.getter]()))
    except ContractRevert as e:
        raise ChainError(f"deployment failed: binding {what} reverted: {e}") from e
    except ChainError as e:
        raise ChainError(f"deployment failed: binding {what}: {e}") from e
    if got.lower() != target.lower():
        raise ChainError(f"deployment failed: after {what}, {b.contract}.{b.getter}() is {got}, not {target}")
    return BoundRecord(b.contract, b.function, target, receipt.tx_hash, receipt.block_number)


class DeploymentMismatch(ChainError):
    """A deployment file that does not describe the chain it is used on."""


def _address_at(client: ChainClient, contract: str, signature: str) -> str:
    """The address a no-argument view `signature` of `contract` returns (a raw eth_call)."""
    data = keccak(text=signature)[:4]
    to = Web3.to_checksum_address(contract)
    out = client.read(lambda: client.w3.eth.call({"to": to, "data": data}), f"eth_call {signature}")
    return "0x" + bytes(out)[-20:].hex()


def check_deployment(client: ChainClient, deployment: Deployment) -> Deployment:
    """`deployment` if it describes the chain `client` is on: the same chain id, and at each contract's address
    code whose keccak256 is the recorded code hash. `DeploymentMismatch` saying what differs otherwise."""
    where = deployment.path or "the deployment"
    if deployment.chain_id != client.chain_id:
        raise DeploymentMismatch(
            f"{where} is for chain {deployment.chain_id}, but the node at {client.rpc_url} is chain {client.chain_id}: "
            "run `refereed deploy` on this chain, or point --rpc at the chain the file was written for"
        )
    problems = []
    for name, rec in deployment.contracts.items():
        code = client.code(rec.address)
        if not code:
            problems.append(f"{name}: no code at {rec.address}")
        elif "0x" + keccak(code).hex() != rec.code_hash.lower():
            problems.append(f"{name}: the code at {rec.address} is not the deployed {name} (its code hash differs)")
    if not problems and {"ElementReferee", "TraceReferee"} <= set(deployment.contracts):
        # The TraceReferee is a constructor argument, kept only in the DotReferee ElementReferee deployed: its
        # code hash cannot tell which one it hands the transcendental functions to, so read it back.
        dot = _address_at(client, deployment.contracts["ElementReferee"].address, "dot()")
        trace = _address_at(client, dot, "trace()")
        if trace.lower() != deployment.contracts["TraceReferee"].address.lower():
            problems.append(
                f"ElementReferee's DotReferee {dot} hands the transcendental functions to {trace}, not to the "
                f"deployed TraceReferee {deployment.contracts['TraceReferee'].address}"
            )
        if "SumReferee" in deployment.contracts:
            summer = _address_at(client, dot, "sum()")
            if summer.lower() != deployment.contracts["SumReferee"].address.lower():
                problems.append(
                    f"ElementReferee's DotReferee {dot} hands the sums to {summer}, not to the deployed SumReferee "
                    f"{deployment.contracts['SumReferee'].address}"
                )
    if problems:
        raise DeploymentMismatch(
            f"{where} does not match chain {client.chain_id} at {client.rpc_url}: {'; '.join(problems)}. "
            "The chain was reset or the file is for another deployment: run `refereed deploy` again"
        )
    return deployment
