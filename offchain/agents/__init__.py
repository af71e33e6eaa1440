"""The protocol's agents: client, trainer, oracle, watcher (docs/agents.md).

The names below load their module on first use: the chain-only commands (`refereed devnet`, `task show`,
`task wait`, `account`) import a submodule (`home`, `fastforward`), and importing the package must not
pull in the trainer's and oracle's torch (about 3 s of every such process's start).
"""

from typing import TYPE_CHECKING

from trainer._lazy import lazy_exports

_LAZY = {
    "BUSY": "base",
    "DONE": "base",
    "Agent": "base",
    "AgentCrashed": "base",
    "Observer": "base",
    "PrintObserver": "base",
    "Tick": "base",
    "idle": "base",
    "ClientAgent": "client",
    "TaskOrder": "client",
    "Devnet": "devnet",
    "Stalled": "devnet",
    "OracleAgent": "oracle",
    "HONEST": "strategy",
    "Strategy": "strategy",
    "TrainerAgent": "trainer",
    "WatcherAgent": "watcher",
}

if TYPE_CHECKING:
    from offchain.agents.base import BUSY, DONE, Agent, AgentCrashed, Observer, PrintObserver, Tick, idle
    from offchain.agents.client import ClientAgent, TaskOrder
    from offchain.agents.devnet import Devnet, Stalled
    from offchain.agents.oracle import OracleAgent
    from offchain.agents.strategy import HONEST, Strategy
    from offchain.agents.trainer import TrainerAgent
    from offchain.agents.watcher import WatcherAgent


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "BUSY",
    "DONE",
    "HONEST",
    "Agent",
    "AgentCrashed",
    "ClientAgent",
    "Devnet",
    "Observer",
    "OracleAgent",
    "PrintObserver",
    "Stalled",
    "Strategy",
    "TaskOrder",
    "Tick",
    "TrainerAgent",
    "WatcherAgent",
    "idle",
]
