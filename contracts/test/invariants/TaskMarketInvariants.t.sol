// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {OracleSetup} from "../utils/OracleSetup.sol";
import {StdInvariant} from "forge-std/StdInvariant.sol";
import {Test} from "forge-std/Test.sol";

import {DisputeGame} from "../../src/DisputeGame.sol";
import {RecomputeOracle} from "../../src/RecomputeOracle.sol";
import {TaskMarket} from "../../src/TaskMarket.sol";
import {IDisputeGame} from "../../src/interfaces/IDisputeGame.sol";
import {IRecomputeOracle} from "../../src/interfaces/IRecomputeOracle.sol";
import {ITaskMarket} from "../../src/interfaces/ITaskMarket.sol";
import {MarketHandler} from "./MarketHandler.sol";

/// @title TaskMarketInvariantsTest
/// @notice Properties of the market, its games and its players under random task, commit, reveal,
///         entry, copy, dispute, game, oracle, claim and payment traffic (MarketHandler; PROPERTIES.md).
contract TaskMarketInvariantsTest is Test {
    RecomputeOracle internal recompute;
    DisputeGame internal game;
    TaskMarket internal market;
    MarketHandler internal handler;

    function setUp() public {
        recompute = OracleSetup.deploy(
            OracleSetup.params(0.01 ether, 1 ether, 0.1 ether, 0.1 ether, 1 hours, 1 days, 1, 2)
        );
        game = new DisputeGame(recompute);
        market = new TaskMarket(game, recompute);
        recompute.bindGame(address(game));
        game.bindMarket(address(market));
        handler = new MarketHandler(market, game, recompute);
        targetContract(address(handler));
        bytes4[] memory selectors = new bytes4[](22);
        selectors[0] = MarketHandler.postTask.selector;
        selectors[1] = MarketHandler.join.selector;
        selectors[2] = MarketHandler.join.selector;
        selectors[3] = MarketHandler.commit.selector;
        selectors[4] = MarketHandler.openDispute.selector;
        selectors[5] = MarketHandler.openDispute.selector;
        selectors[6] = MarketHandler.play.selector;
        selectors[7] = MarketHandler.play.selector;
        selectors[8] = MarketHandler.timeout.selector;
        selectors[9] = MarketHandler.resolveOracle.selector;
        selectors[10] = MarketHandler.settleDispute.selector;
        selectors[11] = MarketHandler.finalize.selector;
        selectors[12] = MarketHandler.withdraw.selector;
        selectors[13] = MarketHandler.oracleStep.selector;
        selectors[14] = MarketHandler.oracleRegister.selector;
        selectors[15] = MarketHandler.warp.selector;
        selectors[16] = MarketHandler.warp.selector;
        selectors[17] = MarketHandler.reveal.selector;
        selectors[18] = MarketHandler.copy.selector;
        selectors[19] = MarketHandler.challenge.selector;
        selectors[20] = MarketHandler.claim.selector;
        selectors[21] = MarketHandler.finalize.selector;
        targetSelector(StdInvariant.FuzzSelector({addr: address(handler), selectors: selectors}));
    }

    /// @notice Every wei the market holds is escrow, a bond, a pool, a credit or burnt.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_market_fundsConserved() public view {
        assertEq(
            address(market).balance,
            market.totalEscrow() + market.totalBonds() + market.totalPools() + market.totalCredits()
                + market.totalBurnt(),
            "balance != escrow + bonds + pools + credits + burnt"
        );
    }

    /// @notice The totals are the sums of the ledgers they summarize: escrow the rewards of open
    ///         tasks and the unclaimed shares of won ones, bonds the bonds of open tasks' entrants not
    ///         eliminated and of finalized tasks' unclaimed live entrants, pools what is left of the
    ///         eliminated entrants' bonds of open tasks (each task's `pools`, read from storage, is the
    ///         sum of its entrants' and zero once finalized), credits the actors' credits; and each open
    ///         task's counts of live members, live groups and running games are right.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_market_ledgersMatch() public view {
        uint256[] memory tasks = handler.taskIds();
        uint256 escrow;
        uint256 bonds;
        uint256 pools;
        uint256 taskPools;
        for (uint256 i; i < tasks.length; ++i) {
            ITaskMarket.TaskView memory t = market.task(tasks[i]);
            (uint256 e, uint256 b, uint256 p) = _ledgersOf(tasks[i], t);
            escrow += e;
            bonds += b;
            pools += p;
            uint256 taskPool = handler.poolsOf(tasks[i]);
            if (t.status == ITaskMarket.TaskStatus.Open) {
                assertEq(taskPool, p, "a task's pools != its entrants' pools");
                _checkLiveCounts(tasks[i], t);
            } else {
                assertEq(taskPool, 0, "a finalized task keeps pools");
            }
            taskPools += taskPool;
        }
        assertEq(market.totalEscrow(), escrow, "escrow != rewards of open tasks + unclaimed shares");
        assertEq(market.totalBonds(), bonds, "bonds != bonds of live entrants, unclaimed");
        assertEq(market.totalPools(), pools, "pools != pools of open tasks");
        assertEq(market.totalPools(), taskPools, "totalPools != sum of the tasks' pools");
        address[] memory trainers = handler.trainers();
        address[] memory clients = handler.clients();
        uint256 credits = market.creditOf(handler.anyone());
        for (uint256 i; i < trainers.length; ++i) {
            credits += market.creditOf(trainers[i]);
        }
        for (uint256 i; i < clients.length; ++i) {
            credits += market.creditOf(clients[i]);
        }
        assertEq(market.totalCredits(), credits, "credits != sum of credits");
    }

    /// @dev What one task holds in escrow, bonds and pools by its entrants' states.
    function _ledgersOf(uint256 taskId, ITaskMarket.TaskView memory t)
        internal
        view
        returns (uint256 escrow, uint256 bonds, uint256 pools)
    {
        bool open = t.status == ITaskMarket.TaskStatus.Open;
        if (open) escrow = t.reward;
        uint256 bond = market.specOf(taskId).bond;
        address[] memory entrants = market.trainersOf(taskId);
        for (uint256 j; j < entrants.length; ++j) {
            ITaskMarket.TrainerView memory tr = market.trainerOf(taskId, entrants[j]);
            if (open) {
                pools += tr.pool;
                if (!tr.eliminated) bonds += bond;
            } else if (tr.submitted && !tr.eliminated && !tr.claimed) {
                bonds += bond;
                if (t.won && tr.group == t.winningGroup) escrow += t.share;
            }
        }
    }

    /// @dev A group's `live` counts its members not eliminated, the task's `liveGroups` its groups
    ///      with one, and `activeGames` its games not settled.
    function _checkLiveCounts(uint256 taskId, ITaskMarket.TaskView memory t) internal view {
        uint256 liveGroups;
        for (uint32 g; g < t.groupCount; ++g) {
            ITaskMarket.GroupView memory group = market.groupOf(taskId, g);
            uint256 live;
            for (uint256 k; k < group.members.length; ++k) {
                if (!market.trainerOf(taskId, group.members[k]).eliminated) ++live;
            }
            assertEq(group.live, live, "group.live != members not eliminated");
            if (live != 0) ++liveGroups;
        }
        assertEq(t.liveGroups, liveGroups, "liveGroups != groups with a live member");
        uint256[] memory ids = handler.gameIds();
        uint256 active;
        for (uint256 k; k < ids.length; ++k) {
            ITaskMarket.DisputeView memory d = market.disputeOf(ids[k]);
            if (d.taskId == taskId && !d.settled) ++active;
        }
        assertEq(t.activeGames, active, "activeGames != games not settled");
    }

    /// @notice From `openedAt + timeBound(cfg)` on, every game has ended or one call ends it: `timeout`,
    ///         or `resolveOracle` once the oracle is moved on as anyone may (`reassign`, `settle`).
    /// @dev Tried on a snapshot that is thrown away.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_game_terminates() public {
        uint256[] memory ids = handler.gameIds();
        for (uint256 i; i < ids.length; ++i) {
            (uint256 openedAt, uint256 timeBound,,) = handler.ghostOf(ids[i]);
            if (block.timestamp < openedAt + timeBound) continue;
            if (game.gameOf(ids[i]).stage == IDisputeGame.Stage.Resolved) continue;
            uint256 snapshot = vm.snapshotState();
            bool ended = _tryEnd(ids[i]);
            vm.revertToState(snapshot);
            assertTrue(ended, string.concat("game ", vm.toString(ids[i]), " outlived its time bound"));
        }
    }

    /// @notice No side of any game moves more than `roundBound(cfg)` times (proofs included).
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_game_movesBounded() public view {
        uint256[] memory ids = handler.gameIds();
        for (uint256 i; i < ids.length; ++i) {
            (,, uint256 roundBound, uint256[2] memory moves) = handler.ghostOf(ids[i]);
            assertLe(moves[0], roundBound, "defender moves > roundBound");
            assertLe(moves[1], roundBound, "challenger moves > roundBound");
            assertLe(game.gameOf(ids[i]).moves, moves[0] + moves[1], "game counts moves nobody made");
        }
    }

    /// @notice An honest trainer (on a slot or entering from outside) never ends with less ether than
    ///         it put in: what it took out, plus its credit, plus the bonds of its unfinished tasks and
    ///         what it can still claim of finished ones, covers its deposits; it is never eliminated,
    ///         never misses its reveal, and every honest move is accepted. An honest client gets a
    ///         correct result (the true list's group) or its reward back.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_honest_neverLoses() public view {
        assertEq(
            handler.honestMoveFailures(),
            0,
            string.concat("honest move refused: ", vm.toString(handler.lastFailure()))
        );
        assertEq(handler.clientViolations(), 0, "client neither refunded nor given the true result");
        address[] memory trainers = handler.trainers();
        for (uint256 i; i < trainers.length; ++i) {
            address trainer = trainers[i];
            if (!handler.isHonest(trainer)) continue;
            uint256[] memory tasks = handler.tasksOf(trainer);
            uint256 locked;
            for (uint256 j; j < tasks.length; ++j) {
                ITaskMarket.TrainerView memory tr = market.trainerOf(tasks[j], trainer);
                ITaskMarket.TaskView memory t = market.task(tasks[j]);
                assertFalse(tr.eliminated, "honest trainer eliminated");
                if (t.status == ITaskMarket.TaskStatus.Open) {
                    locked += market.specOf(tasks[j]).bond;
                    continue;
                }
                assertTrue(tr.submitted, "honest trainer forfeited (never revealed)");
                if (!tr.claimed) {
                    locked += market.specOf(tasks[j]).bond;
                    if (t.won && tr.group == t.winningGroup) locked += t.share;
                }
            }
            assertGe(
                handler.withdrawn(trainer) + market.creditOf(trainer) + locked,
                handler.deposited(trainer),
                "honest trainer lost ether"
            );
        }
    }

    /// @notice After finalize, every honest entrant that revealed and was not eliminated can claim, and
    ///         the claim credits at least its bond.
    /// @dev Each claim is tried on a snapshot that is thrown away.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_honest_claimsAtLeastBond() public {
        address[] memory trainers = handler.trainers();
        for (uint256 i; i < trainers.length; ++i) {
            if (!handler.isHonest(trainers[i])) continue;
            uint256[] memory tasks = handler.tasksOf(trainers[i]);
            for (uint256 j; j < tasks.length; ++j) {
                if (market.task(tasks[j]).status != ITaskMarket.TaskStatus.Finalized) continue;
                ITaskMarket.TrainerView memory tr = market.trainerOf(tasks[j], trainers[i]);
                if (!tr.submitted || tr.eliminated || tr.claimed) continue;
                uint256 before = market.creditOf(trainers[i]);
                uint256 snapshot = vm.snapshotState();
                (bool ok,) = address(market).call(abi.encodeCall(market.claim, (tasks[j], trainers[i])));
                uint256 gained = market.creditOf(trainers[i]) - before;
                vm.revertToState(snapshot);
                assertTrue(ok, "honest entrant cannot claim");
                assertGe(gained, market.specOf(tasks[j]).bond, "claim below the bond");
            }
        }
    }

    /// @notice At every finalize the client is credited exactly the reward (unless one group is live)
    ///         + the forfeited bonds + the division's remainder; every claim credits the bond (+ the
    ///         share in the winning group); no copy of an honest result is ever accepted.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_market_payoutsExact() public view {
        assertEq(handler.clientCreditMismatches(), 0, "client credited other than reward/forfeits/remainder");
        assertEq(handler.claimMismatches(), 0, "claim credited other than bond + share");
        assertEq(handler.copiesAccepted(), 0, "a copied result was accepted");
    }

    /// @notice The handler's scripts are sound: no scripted cheater move was refused either.
    function afterInvariant() public view {
        assertEq(
            handler.scriptedMoveFailures(),
            0,
            string.concat("scripted move refused: ", vm.toString(handler.lastFailure()))
        );
    }

    /// @dev Ends the game with one call, after moving its oracle question on as anyone may.
    function _tryEnd(uint256 gameId) internal returns (bool) {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage != IDisputeGame.Stage.Oracle) {
            try game.timeout(gameId) {
                return true;
            } catch {
                return false;
            }
        }
        for (uint256 k; k < 8; ++k) {
            IRecomputeOracle.QuestionStatus status = recompute.question(v.questionId).status;
            if (status == IRecomputeOracle.QuestionStatus.Assigned) {
                try recompute.reassign(v.questionId) {}
                catch {
                    break;
                }
            } else if (
                status == IRecomputeOracle.QuestionStatus.Drawing
                    || status == IRecomputeOracle.QuestionStatus.CommitteeDrawing
            ) {
                vm.roll(block.number + 1);
                try recompute.draw(v.questionId) {}
                catch {
                    break;
                }
            } else if (
                status == IRecomputeOracle.QuestionStatus.Answered
                    || status == IRecomputeOracle.QuestionStatus.Voting
            ) {
                try recompute.settle(v.questionId) {}
                catch {
                    break;
                }
            } else {
                break;
            }
        }
        try game.resolveOracle(gameId) {
            return true;
        } catch {
            return false;
        }
    }
}
