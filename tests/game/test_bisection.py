"""Bisection: split points, narrowing, and simulated games that isolate the first differing step."""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest

from offchain.game import Bisection, CheckpointList, Descent, GameError, first_difference, split_points
from offchain.game.bisection import play
from offchain.game.descent import play as play_descent


def state(tag: str, step: int) -> bytes:
    return hashlib.sha256(f"{tag} {step}".encode()).digest()


def diverging(at: int):  # state roots equal to the honest ones up to `at`, different after
    return lambda s: state("honest", s) if s <= at else state("cheat", s)


def honest(s: int) -> bytes:
    return state("honest", s)


@pytest.mark.parametrize(
    ("lo", "hi", "arity", "points"),
    [
        (0, 8, 4, [0, 2, 4, 6, 8]),
        (0, 10, 4, [0, 2, 5, 7, 10]),
        (3, 6, 4, [3, 4, 5, 6]),  # w = min(N, L) = 3
        (5, 6, 64, [5, 6]),
        (12, 24, 2, [12, 18, 24]),
        (0, 100, 64, [(i * 100) // 64 for i in range(65)]),
    ],
)
def test_split_points(lo: int, hi: int, arity: int, points: list[int]) -> None:
    assert split_points(lo, hi, arity) == points
    b = Bisection(lo, hi, arity)
    assert b.points == points and b.width == len(points) - 1
    assert all(x < y for x, y in itertools.pairwise(points))  # strictly increasing: L >= w


def test_narrowing_keeps_the_first_differing_sub_interval() -> None:
    b = Bisection(0, 10, 4)  # 0, 2, 5, 7, 10
    mine = b.roots(honest)
    theirs = b.roots(diverging(5))  # differs at 7 and 10
    assert first_difference(mine, theirs) == 3
    assert b.narrow(mine, theirs) == Bisection(5, 7, 4)
    assert Bisection(5, 7, 4).narrow_at(1) == Bisection(5, 6, 4)


def test_refusals() -> None:
    b = Bisection(0, 8, 4)
    same = b.roots(honest)
    with pytest.raises(GameError, match="agree everywhere"):
        b.narrow(same, same)
    with pytest.raises(GameError, match="index 0 is the agreed root"):
        b.narrow_at(0)
    with pytest.raises(GameError, match="posts 5 roots, not 4"):
        b.narrow(same[:4], same[:4])
    with pytest.raises(GameError, match="empty"):
        Bisection(3, 3, 4)
    with pytest.raises(GameError, match="j >= 1"):
        Bisection.after_checkpoint(0, 4, 4)
    done = Bisection(4, 5, 4)
    assert done.done and done.step == 4 and done.max_rounds == 0
    assert done.roots(honest) == [honest(4), honest(5)] and done.narrow_at(1) == done  # a round at c = 1
    with pytest.raises(GameError, match="not one step yet"):
        _ = b.step


@pytest.mark.parametrize("arity", [2, 4, 16, 64])
def test_max_rounds_bounds_every_game(arity: int) -> None:
    for span in range(1, 130):
        bound = Bisection(0, span, arity).max_rounds if span > 0 else 0
        for s in range(span):  # the game isolating step s
            b, rounds = Bisection(0, span, arity), 0
            while not b.done:
                b = b.narrow(b.roots(honest), b.roots(diverging(s)))
                rounds += 1
            assert b.step == s and rounds <= bound


def test_simulated_games_isolate_the_first_differing_step() -> None:
    """Checkpoint descent, then bisection, between a run and one that diverges after step s."""
    rng = random.Random(7)
    for _ in range(200):
        interval = rng.randint(1, 40)
        count = rng.randint(2, 40)  # checkpoints: T = (count - 1) * interval
        steps = (count - 1) * interval
        arity = rng.choice([2, 4, 16, 64])
        s = rng.randrange(steps)  # pre-state root at s agreed, post-state at s + 1 differs
        a = CheckpointList.from_steps(honest, steps, interval)
        b = CheckpointList.from_steps(diverging(s), steps, interval)
        assert a.initial_root == b.initial_root and a.final_root != b.final_root
        j = play_descent(a.tree, b.tree, arity).leaf_index
        assert j == s // interval + 1
        assert Descent.start(a.count, arity).levels_left >= 1
        bis = Bisection.after_checkpoint(j, interval, arity)
        assert a.roots[j - 1] == b.roots[j - 1] and a.roots[j] != b.roots[j]
        first = bis.roots(honest)
        assert first[0] == a.roots[j - 1] and first[-1] == a.roots[j]  # the roots the first round proves
        assert play(bis.lo, bis.hi, arity, honest, diverging(s)).step == s
