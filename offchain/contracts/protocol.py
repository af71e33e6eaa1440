"""The protocol clients of one deployment, through one `ChainClient`.

protocol = Protocol.from_deployment(chain, load_deployment(chain.chain_id))
task_id = protocol.market.post_task(spec, reward)
player_b = protocol.connect(other_chain)      # the same contracts, another key

`referee` is the ElementReferee the dispute game is bound to (`DisputeGame.referee()`, read once
when the clients are made), None when it is bound to none: then every node goes to the oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import Deployment
from offchain.contracts._base import ContractClient
from offchain.contracts.dispute_game import DisputeGameClient
from offchain.contracts.element_referee import ElementRefereeClient
from offchain.contracts.recompute_oracle import RecomputeOracleClient
from offchain.contracts.task_market import TaskMarketClient

C = TypeVar("C", bound=ContractClient)


@dataclass(frozen=True, slots=True)
class Protocol:
    market: TaskMarketClient
    game: DisputeGameClient
    oracle: RecomputeOracleClient
    referee: ElementRefereeClient | None = None

    @classmethod
    def from_deployment(
        cls, chain: ChainClient, deployment: Deployment, artifacts: Mapping[str, Artifact] | None = None
    ) -> Protocol:
        """Clients of the deployment's market, game and oracle (`artifacts`: compiled if not given)."""
        if artifacts is None:
            from offchain.chain.build import compile_contracts

            artifacts = compile_contracts()

        def callees(client: type[ContractClient]) -> list[Artifact]:
            return [artifacts[name] for name in client.CALLEES if name in artifacts]

        def make(client: type[C]) -> C:
            name = client.CONTRACT_NAME
            return client(chain, deployment.address(name), artifacts[name], callees(client))

        game = make(DisputeGameClient)
        referee = None
        if ElementRefereeClient.CONTRACT_NAME in artifacts:
            bound = game.referee()
            if int(bound, 16) != 0:
                referee = ElementRefereeClient(chain, bound, artifacts[ElementRefereeClient.CONTRACT_NAME])
        return cls(market=make(TaskMarketClient), game=game, oracle=make(RecomputeOracleClient), referee=referee)

    def connect(self, chain: ChainClient) -> Protocol:
        """The same contracts through another connection (another key)."""
        referee = self.referee.connect(chain) if self.referee is not None else None
        return Protocol(self.market.connect(chain), self.game.connect(chain), self.oracle.connect(chain), referee)
