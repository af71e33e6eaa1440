// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "../src/interfaces/IDisputeGame.sol";
import {DisputeGameBase} from "./DisputeGame.t.sol";
import {Lie, Players, Task} from "./utils/Player.sol";

/// @notice Random tasks, random lies, both sides: the honest player always wins, within
///         `roundBound` moves per side and `timeBound` seconds.
/// @dev T in 1..4096 with c a divisor of T, N in {2, .., 64}, M in 1..300; the liar's states
///      agree with the honest ones up to a random step and its trace (or post-state) differs from
///      a random node (or entry) on. It plays on consistently with its claims, or stops at a random
///      move. Its oracle questions are answered honestly by the one registered oracle.
contract DisputeGameFuzzTest is DisputeGameBase {
    /// @notice The drawn parameters of one game.
    struct Draw {
        uint64 steps;
        uint64 interval;
        uint64 arity;
        uint64 nodeCount;
        uint64 step;
        uint64 node;
        Lie lie;
        uint256 stopAt;
    }

    function setUp() public {
        _deploy();
        _registerOracle(oracleNode);
        vm.warp(1_000_000);
    }

    function testFuzz_game_honestDefenderWins(
        uint256 steps,
        uint256 interval,
        uint256 arity,
        uint256 nodeCount,
        uint256 step,
        uint256 node,
        uint256 lie,
        uint256 stopAt
    ) public {
        _check(_draw(steps, interval, arity, nodeCount, step, node, lie, stopAt), true);
    }

    function testFuzz_game_honestChallengerWins(
        uint256 steps,
        uint256 interval,
        uint256 arity,
        uint256 nodeCount,
        uint256 step,
        uint256 node,
        uint256 lie,
        uint256 stopAt
    ) public {
        _check(_draw(steps, interval, arity, nodeCount, step, node, lie, stopAt), false);
    }

    function _draw(
        uint256 steps,
        uint256 interval,
        uint256 arity,
        uint256 nodeCount,
        uint256 step,
        uint256 node,
        uint256 lie,
        uint256 stopAt
    ) internal pure returns (Draw memory d) {
        d.steps = uint64(bound(steps, 1, 4096));
        d.interval = _divisor(d.steps, interval);
        d.arity = uint64(2 << (arity % 6));
        d.nodeCount = uint64(bound(nodeCount, 1, 300));
        d.step = uint64(bound(step, 0, d.steps - 1));
        d.node = uint64(bound(node, 0, d.nodeCount - 1));
        d.lie = Lie(1 + lie % uint256(Lie.PostStateK));
        // Half of the games the liar plays to the end; else it stops before its move `stopAt`.
        d.stopAt = stopAt % 2 == 0 ? NEVER : bound(stopAt >> 1, 0, 40);
    }

    /// @notice The `pick`-th divisor of `n` (mod their count).
    function _divisor(uint64 n, uint256 pick) internal pure returns (uint64) {
        uint256 count;
        for (uint256 c = 1; c <= n; ++c) {
            if (n % c == 0) ++count;
        }
        uint256 k = pick % count;
        for (uint64 c = 1; c <= n; ++c) {
            if (n % c == 0) {
                if (k == 0) return c;
                --k;
            }
        }
        return n;
    }

    function _check(Draw memory d, bool honestDefends) internal {
        Task memory t = Players.task(d.steps, d.interval, d.arity, d.nodeCount, 2, 5, CLOCK, d.steps);
        Match memory m = _newMatch(t, d.lie, d.step, d.node, honestDefends);
        m.stopAt = d.stopAt;
        uint256 openedAt = block.timestamp;

        IDisputeGame.Outcome o = _play(m);

        assertEq(uint256(o), uint256(_honestWin(m)), "the honest player wins");
        uint256 bound_ = game.roundBound(t.cfg);
        assertLe(m.moves[0], bound_, "defender's moves <= roundBound");
        assertLe(m.moves[1], bound_, "challenger's moves <= roundBound");
        assertLe(block.timestamp - openedAt, game.timeBound(t.cfg), "ended within timeBound");
        IDisputeGame.GameView memory v = game.gameOf(m.id);
        if (d.stopAt == NEVER) {
            // A liar that plays on reaches the decision its lie leads to.
            assertEq(v.questionId != 0, d.lie == Lie.Output, "the oracle decides output lies only");
            assertEq(v.lo, d.step, "the isolated step is the first wrong one");
            bool postPath = d.lie == Lie.PostStateM || d.lie == Lie.PostStateK;
            // Equal traces send the game down the post-state path, whose descent is over the 3 entries.
            if (postPath) assertEq(v.leafCount, 3, "the post-state path after equal traces");
            if (!postPath) assertEq(v.position, d.node, "the first wrong node");
        }
    }
}
