"""The protocol's agents: client, trainer, oracle, watcher (docs/agents.md)."""

from offchain.agents.base import BUSY, DONE, Agent, AgentCrashed, Observer, PrintObserver, Tick, idle
from offchain.agents.client import ClientAgent, TaskOrder
from offchain.agents.devnet import Devnet, Stalled
from offchain.agents.oracle import OracleAgent
from offchain.agents.strategy import HONEST, Strategy
from offchain.agents.trainer import TrainerAgent
from offchain.agents.watcher import WatcherAgent

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
