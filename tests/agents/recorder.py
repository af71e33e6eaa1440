"""An agent observer for tests: it keeps every event each agent reported (progress is not kept)."""

from __future__ import annotations


class Events:
    """What each agent said, in order: `seen` as (agent, message) pairs, `of(agent)` one agent's."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def event(self, agent: str, message: str) -> None:
        self.seen.append((agent, message))

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        pass

    def of(self, agent: str) -> list[str]:
        return [m for a, m in self.seen if a == agent]
