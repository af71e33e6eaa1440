"""The overlap policies' ordering guarantees, max_in_flight, join() and the bounded snapshot pool."""

from __future__ import annotations

from pathlib import Path

import pytest
from zkdv_cases import make_proof, train_step

import zkdv
from zkdv.overlap import ALWAYS, NEVER, UNCHECKED, Overlap

STEPS = 6


def _events(tmp_path: Path, overlap: Overlap, max_in_flight: int = 2) -> list[tuple[str, int]]:
    proof, model, opt = make_proof(tmp_path / "p", policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1),
                                   max_in_flight=max_in_flight)
    proof._check_delay = 0.3  # slow checks, so that any overlap the policy allows shows
    for t in range(STEPS):
        train_step(proof, model, opt, t, overlap)
    proof.close()
    assert len(proof._pool.slots) == max_in_flight + 2
    return list(proof._events)


def _at(events: list[tuple[str, int]], kind: str, step: int) -> int:
    return events.index((kind, step))


def test_never_admits_no_step_before_the_previous_check_retires(tmp_path: Path) -> None:
    ev = _events(tmp_path, NEVER)
    for t in range(STEPS - 1):
        assert _at(ev, "check_done", t) < _at(ev, "admit", t + 1)


def test_unchecked_retains_one_successor(tmp_path: Path) -> None:
    ev = _events(tmp_path, UNCHECKED)
    for t in range(STEPS - 2):
        assert _at(ev, "check_done", t) < _at(ev, "admit", t + 2)
    # the one successor did run alongside the check (the fence is not NEVER)
    assert any(_at(ev, "admit", t + 1) < _at(ev, "check_done", t) for t in range(STEPS - 1))


def test_always_overlaps_up_to_max_in_flight(tmp_path: Path) -> None:
    ev = _events(tmp_path, ALWAYS, max_in_flight=3)
    assert any(_at(ev, "admit", t + 2) < _at(ev, "check_done", t) for t in range(STEPS - 2))
    for t in range(STEPS):  # never more than max_in_flight unresolved, the admitted one included
        admit = _at(ev, "admit", t)
        unresolved = [s for s in range(t) if _at(ev, "check_done", s) > admit]
        assert len(unresolved) <= 2


@pytest.mark.parametrize("max_in_flight", [1, 2])
def test_max_in_flight_bounds_unresolved_transactions(tmp_path: Path, max_in_flight: int) -> None:
    ev = _events(tmp_path, ALWAYS, max_in_flight=max_in_flight)
    for t in range(STEPS):
        admit = _at(ev, "admit", t)
        assert len([s for s in range(t) if _at(ev, "check_done", s) > admit]) <= max_in_flight - 1


def test_join_waits_for_every_check(tmp_path: Path) -> None:
    proof, model, opt = make_proof(tmp_path / "p", policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1))
    proof._check_delay = 0.2
    for t in range(3):
        train_step(proof, model, opt, t, ALWAYS)
    proof.join()
    assert sum(1 for kind, _ in proof._events if kind == "check_done") == 3
    train_step(proof, model, opt, 3)  # join does not close
    proof.close()


def test_the_scheduling_log_keeps_only_the_latest_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of many steps does not grow memory with a record of its scheduling: the latest events only."""
    import zkdv.torch as zt

    monkeypatch.setattr(zt, "EVENTS_KEPT", 5)
    proof, model, opt = make_proof(tmp_path / "p", policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1))
    for t in range(4):
        train_step(proof, model, opt, t, NEVER)
    proof.close()
    assert list(proof._events) == [("check_done", 1), ("admit", 2), ("check_start", 2), ("check_done", 2),
                                   ("admit", 3), ("check_start", 3), ("check_done", 3)][-5:]
