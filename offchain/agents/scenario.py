"""A whole protocol run with agents: one client, k trainers, oracles, a watcher, on one chain.

`Scenario` gives each party its own key (anvil's dev accounts, in the order client,
trainers, oracles, watcher, after the deployer's account 0: start anvil with enough
accounts, e.g. `Anvil(accounts=16)`) and its own home folder (`<folder>/<name>/`, holding its
SQLite records and private store); all share one public store (`<folder>/public/`), the
stand-in for the network's content-addressed storage. `run()` drives them with a
`Devnet` until the task is finalized, every live entrant has claimed and every party has
withdrawn what it was credited, and returns what happened, read back from the chain and the
agents' journals.

Trainers open their own games; the watcher (`watcher=False`: none) opens those nobody opened
after its grace period and tends everyone's games. Trainers that find the task full enter as
outside challengers (`challenge_if_full`). Every agent bids at most the order's
`gas_price_cap` per gas. The client verifies the revealed results (`client_verifies`) and, with
`client_challenges`, trains the task itself and enters it.

`ScenarioResult.journal` merges every party's journal (each transaction and note, with its
wall time) and `ScenarioResult.phases` cuts the run into phases by it (post, join, train,
audit and submit, dispute, finalize and withdraw), in seconds from the run's start.

The demo and the adversary tests are both a `Scenario`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offchain.agents.base import Agent, Observer, PrintObserver
from offchain.agents.client import ClientAgent, TaskOrder
from offchain.agents.devnet import Devnet
from offchain.agents.oracle import OracleAgent
from offchain.agents.strategy import Strategy
from offchain.agents.trainer import TrainerAgent
from offchain.agents.watcher import WatcherAgent
from offchain.chain.anvil import DevAccount
from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient
from offchain.chain.deploy import Deployment
from offchain.contracts.dispute_game import Outcome
from offchain.contracts.protocol import Protocol
from offchain.contracts.task_market import TaskStatus
from offchain.store import Store


@dataclass(frozen=True)
class TrainerRole:
    name: str
    strategy: Strategy
    agent: type[TrainerAgent] = TrainerAgent  # an adversary's own agent, for moves beyond its strategy's
    allies: tuple[str, ...] = ()  # other parties it controls: the agent gets their addresses (`allies=`)


@dataclass(frozen=True)
class OracleRole:
    name: str
    liar: bool = False
    lies_only_when_answering: bool = False  # a liar that checks others' answers and votes honestly
    agent: type[OracleAgent] = OracleAgent
    allies: tuple[str, ...] = ()


# A question is assigned only when committeeSize + 2 distinct eligible oracles (besides the two parties)
# exist: the answering oracle, a challenger and a committee of 3 with the deployment's parameters.
ORACLES: int = 5


def oracle_roles(n: int = ORACLES) -> tuple[OracleRole, ...]:
    """`n` honest oracles, named oracle-1, oracle-2, ..."""
    return tuple(OracleRole(f"oracle-{i + 1}") for i in range(n))


@dataclass
class GameResult:
    game_id: int
    defender: str  # agent names
    challenger: str
    outcome: Outcome
    moves: int
    step: int | None  # the step the game isolated, if it got that far


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One line of a party's journal (`AgentDB.actions`): a mined transaction or a note."""

    at: float  # unix seconds, wall clock
    agent: str
    kind: str  # "tx" or "note"
    detail: str  # "TaskMarket.join" for a transaction; the note's text
    gas: int
    fee: int  # wei
    tx: str

    @property
    def function(self) -> str:
        """The function a transaction called ("join"), "" for a note."""
        return self.detail.rpartition(".")[2] if self.kind == "tx" else ""


@dataclass(frozen=True, slots=True)
class Phase:
    """A stretch of the run, in wall seconds from its start."""

    name: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class ScenarioResult:
    task_id: int
    status: TaskStatus
    winning_group: int | None
    games: list[GameResult]
    eliminated: dict[str, bool]  # trainer name -> eliminated
    balances_before: dict[str, int]  # wei, every party
    balances_after: dict[str, int]
    gas: dict[str, int]  # gas used by each party's transactions
    fees: dict[str, int]  # wei spent on gas
    bond: int
    reward: int
    wall_s: float
    warped_s: int
    crashes: list[str] = field(default_factory=list)
    rpc_failures: int = 0
    refused: list[str] = field(default_factory=list)  # transactions refused during a tick (lost races)
    started_at: float = 0.0  # unix seconds when run() started
    journal: list[JournalEntry] = field(default_factory=list)  # every party's, by time
    phases: list[Phase] = field(default_factory=list)
    verdicts: dict[int, str] = field(default_factory=dict)  # group -> the client's verification (ClientAgent.verdicts)

    def net(self, name: str) -> int:
        """Balance change of `name` over the run (wei), gas included."""
        return self.balances_after[name] - self.balances_before[name]


class Scenario:
    def __init__(
        self,
        *,
        rpc_url: str,
        accounts: Sequence[DevAccount],
        deployment: Deployment,
        artifacts: dict[str, Artifact],
        folder: Path,
        order: TaskOrder,
        trainers: Sequence[TrainerRole],
        oracles: Sequence[OracleRole] = oracle_roles(),
        observer: Observer | None = None,
        agent_rpc_url: str | None = None,
        defender: str = "first",
        watcher: bool = True,
        opener_defends: bool = False,
        challenge_if_full: bool = True,
        client_verifies: bool = True,
        client_challenges: bool = False,
        client_samples: int = 2,
        block_time: int | None = None,
    ) -> None:
        need = 3 + len(trainers) + len(oracles)  # with the deployer's account 0, the client and the watcher
        if len(accounts) < need:
            raise ValueError(
                f"the scenario needs {need} funded accounts, the chain has {len(accounts)} "
                f"(start anvil with --accounts {need} or more)"
            )
        self.rpc_url = rpc_url
        self._protocol: Protocol | None = None
        self.agent_rpc_url = agent_rpc_url or rpc_url  # e.g. through a proxy that drops connections
        self.deployment = deployment
        self.artifacts = artifacts
        self.folder = Path(folder)
        self.public = Store(self.folder / "public")
        self.observer: Observer = observer or PrintObserver()
        self.order = order
        self.defender = defender  # which group the watcher makes defend: the first to submit, or the last
        self.opener_defends = opener_defends  # a trainer defends in the games it opens (default: it challenges)
        self.challenge_if_full = challenge_if_full
        self.client_verifies = client_verifies
        self.client_challenges = client_challenges
        self.client_samples = client_samples  # intervals of each revealed result the client replays
        self.block_time = block_time  # the devnet's seconds per block (None: anvil's wall clock)
        self.trainer_roles = list(trainers)
        self.oracle_roles = list(oracles)
        self.keys: dict[str, DevAccount] = {}
        names = ["client", *(t.name for t in trainers), *(o.name for o in oracles), "watcher"]
        for i, name in enumerate(names):
            self.keys[name] = accounts[i + 1]
        self.client = self._make("client")
        self.trainers = {t.name: self._make(t.name) for t in trainers}
        self.oracles = {o.name: self._make(o.name) for o in oracles}
        self.watcher: Agent | None = self._make("watcher") if watcher else None
        self.devnet: Devnet | None = None
        self._started_at = 0.0  # unix seconds when run() started

    def _make(self, name: str) -> Agent:
        common: dict[str, Any] = {
            "rpc_url": self.agent_rpc_url,
            "private_key": self.keys[name].private_key,
            "deployment": self.deployment,
            "artifacts": self.artifacts,
            "home": self.folder / name,
            "public": self.public,
            "observer": self.observer,
            "fee_cap": self.order.gas_price_cap,
        }
        if name == "client":
            return ClientAgent(
                name,
                order=self.order,
                verify=self.client_verifies,
                verify_samples=self.client_samples,
                challenge=self.client_challenges,
                **common,
            )
        if name == "watcher":
            return WatcherAgent(name, defender=self.defender, **common)
        for t in self.trainer_roles:
            if t.name == name:
                return t.agent(
                    name,
                    strategy=t.strategy,
                    challenge_if_full=self.challenge_if_full,
                    opener_defends=self.opener_defends,
                    **self._allies(t.allies),
                    **common,
                )
        for o in self.oracle_roles:
            if o.name == name:
                return o.agent(
                    name,
                    liar=o.liar,
                    lies_only_when_answering=o.lies_only_when_answering,
                    **self._allies(o.allies),
                    **common,
                )
        raise KeyError(name)

    def _allies(self, names: tuple[str, ...]) -> dict[str, Any]:
        """`allies={name: address}` for an agent that controls other parties, nothing for the others."""
        return {"allies": {n: self.keys[n].address for n in names}} if names else {}

    def restart(self, agent: Agent) -> Agent:
        """A fresh agent over the same home folder (what a supervisor does after a crash)."""
        fresh = self._make(agent.name)
        if agent.name in self.trainers:
            self.trainers[agent.name] = fresh  # type: ignore[assignment]
        return fresh

    @property
    def agents(self) -> list[Agent]:
        watcher = [self.watcher] if self.watcher is not None else []
        return [self.client, *self.trainers.values(), *self.oracles.values(), *watcher]

    def protocol(self) -> Protocol:
        """A read-only view of the deployment, made once: `finished` asks it every round, and a fresh client
        each time took a tenth of the samples of a profiled scenario (its ABIs parsed again, its chain id asked)."""
        if self._protocol is None:
            self._protocol = Protocol.from_deployment(ChainClient(self.rpc_url), self.deployment, self.artifacts)
        return self._protocol

    def balances(self) -> dict[str, int]:
        chain = ChainClient(self.rpc_url)
        return {name: int(chain.balance(acct.address)) for name, acct in self.keys.items()}

    def finished(self) -> bool:
        """The task is finalized, every live entrant that revealed has claimed, and nobody has anything left to
        withdraw."""
        task_id = self.client.task_id  # type: ignore[attr-defined]
        if task_id is None:
            return False
        p = self.protocol()
        if p.market.task(task_id).status is not TaskStatus.FINALIZED:
            return False
        for n in ("client", *self.trainers):
            v = p.market.trainer_of(task_id, self.keys[n].address)
            if v.submitted and not v.eliminated and not v.claimed:
                return False
        return all(p.market.credit_of(self.keys[n].address) == 0 for n in ("client", *self.trainers))

    def journal(self) -> list[JournalEntry]:
        """Every party's journal, merged and in time order."""
        out = []
        for agent in self.agents:
            for a in agent.db.actions():
                out.append(JournalEntry(a.at, agent.name, a.kind, a.detail, a.gas, a.fee, a.tx))
        out.sort(key=lambda e: e.at)
        return out

    def steps_replayed(self) -> dict[str, int]:
        """Steps each trainer's `RunWitness` has computed so far (training, and replays for its games).

        A trainer drops a run's witness once the task is done, so read this while it runs
        (e.g. from `run`'s `on_round`); a trainer without a live run counts 0.
        """
        return {
            name: sum(run.witness.steps_run for run in agent._runs.values())  # type: ignore[attr-defined]
            for name, agent in self.trainers.items()
        }

    def run(
        self,
        *,
        timeout_s: float = 600.0,
        on_round: Callable[[], None] | None = None,
        restart: bool = True,
    ) -> ScenarioResult:
        before = self.balances()
        self._started_at = time.time()
        t0 = time.perf_counter()
        self.devnet = Devnet(
            self.rpc_url,
            self.agents,
            observer=self.observer,
            restart=self.restart if restart else None,
            block_time=self.block_time,
        )
        try:
            self.devnet.run(self.finished, timeout_s=timeout_s, on_round=on_round)
        finally:
            self.devnet.close()
        wall = time.perf_counter() - t0
        return self.result(before, wall)

    def result(self, before: dict[str, int], wall_s: float) -> ScenarioResult:
        p = self.protocol()
        task_id = self.client.task_id  # type: ignore[attr-defined]
        assert task_id is not None
        by_address = {acct.address: name for name, acct in self.keys.items()}
        games = []
        for d in p.market.disputes(task_id):
            view = p.game.game_of(d.game_id)
            isolated = p.game.step_isolated(d.game_id)
            games.append(
                GameResult(
                    d.game_id,
                    by_address.get(d.defender, d.defender),
                    by_address.get(d.challenger, d.challenger),
                    p.game.outcome(d.game_id),
                    view.moves,
                    isolated.step if isolated else None,
                )
            )
        fin = [e for e in p.market._logs("TaskFinalized", {"taskId": task_id})]
        for a in self.agents:  # journal the transactions whose answers never came back
            a.chain.reconcile()  # type: ignore[attr-defined]
        gas: dict[str, int] = {}
        fees: dict[str, int] = {}
        for name in self.keys:
            agent = next((a for a in self.agents if a.name == name), None)
            actions = agent.db.actions() if agent is not None else []
            gas[name] = sum(a.gas for a in actions)
            fees[name] = sum(a.fee for a in actions)
        spec = p.market.spec_of(task_id)
        started_at = self._started_at or time.time() - wall_s
        journal = self.journal()
        return ScenarioResult(
            task_id=task_id,
            status=p.market.task(task_id).status,
            winning_group=int(fin[0]["winningGroup"]) if fin else None,
            games=games,
            eliminated={n: p.market.trainer_of(task_id, self.keys[n].address).eliminated for n in self.trainers},
            balances_before=before,
            balances_after=self.balances(),
            gas=gas,
            fees=fees,
            bond=int(spec.bond),
            reward=int(self.order.reward),
            wall_s=wall_s,
            warped_s=self.devnet.warped_s if self.devnet else 0,
            crashes=list(self.devnet.crashes) if self.devnet else [],
            rpc_failures=self.devnet.rpc_failures if self.devnet else 0,
            refused=list(self.devnet.refused) if self.devnet else [],
            started_at=started_at,
            journal=journal,
            phases=phases(journal, started_at, started_at + wall_s),
            verdicts={g: str(v["status"]) for g, v in self.client.verdicts(task_id).items()},  # type: ignore[attr-defined]
        )


def phases(journal: list[JournalEntry], start: float, end: float) -> list[Phase]:
    """The run's phases, found in the parties' journals (seconds from `start`); a phase that did not
    happen (no game: no dispute) is left out.

    post: until the task is posted; join: until the last trainer joined; train: until the last
    trainer finished training; submit: self-audits and submissions, until the last one;
    dispute: from the first game opened to the last withdrawal; finalize: from finalization to
    the last withdrawal.
    """

    def times(fn: str) -> list[float]:
        return [e.at - start for e in journal if e.kind == "tx" and e.function == fn]

    posted, joins, submits = times("postTask"), times("join"), times("submit")
    opened, finalized, withdrawn = times("openDispute"), times("finalize"), times("withdraw")
    trained = [e.at - start for e in journal if e.kind == "note" and re.match(r"task \d+: trained ", e.detail)]
    out: list[Phase] = []

    def add(name: str, a: float | None, b: float | None) -> None:
        if a is not None and b is not None:
            out.append(Phase(name, round(a, 3), round(max(a, b), 3)))

    last = end - start
    add("post", 0.0, min(posted, default=None))
    add("join", min(posted, default=None), max(joins, default=None))
    add("train", max(joins, default=None), max(trained, default=None))
    add("submit", max(trained, default=None), max(submits, default=None))
    add("dispute", min(opened, default=None), max(withdrawn, default=last) if opened else None)
    add("finalize", min(finalized, default=None), max(withdrawn, default=last) if finalized else None)
    return out
