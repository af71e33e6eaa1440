// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";

import {IDisputeGame} from "../src/interfaces/IDisputeGame.sol";
import {DisputeGameBase} from "./DisputeGame.t.sol";
import {Lie, Players, Task} from "./utils/Player.sol";

/// @notice Gas of an honest defender's every move in full games of T = 4096 steps, M = 4096 nodes,
///         arity 16, against a liar whose first wrong state is after step 4094 (the isolated step)
///         and whose trace of that step differs from node 4094 on (node 0 for the batch input):
///         checkpoint interval 64, 1 and 4096, each ending at the oracle and at a node-input proof,
///         and the largest proof (a 24 KiB batch) at c = 64.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own
///      transaction, so storage starts cold and `vm.lastCallGas()` is the transaction's gas used,
///      21,000 and calldata (or the EIP-7623 floor, `10 * tokens`) included. The figures go to
///      the console and to the snapshot group `DisputeGameGas`.
contract DisputeGameGasTest is DisputeGameBase {
    uint64 internal constant T = 4096;
    uint64 internal constant M = 4096;
    uint64 internal constant N = 16;
    uint64 internal constant LATE_STEP = T - 2;
    uint64 internal constant LATE_NODE = M - 2;
    /// @notice Most gas a descent or bisection move may take.
    uint256 internal constant MOVE_LIMIT = 100_000;
    /// @notice Most gas the honest side may take in a whole game.
    uint256 internal constant TOTAL_LIMIT = 3_000_000;
    uint256 internal constant TX_BASE = 21_000;

    /// @notice The measured figures of one game.
    struct Figures {
        uint256 moves; // honest moves
        uint256 opponentMoves;
        uint256 maxMove; // descents and bisection rounds
        uint256 reveal;
        uint256 proof; // the input proof (0 on the oracle path)
        uint256 resolve; // resolveOracle (0 on the proof path)
        uint256 total; // every honest move, and resolveOracle
        uint256 overMoveLimit; // descent or bisection moves above MOVE_LIMIT
        uint256 overMoveGas; // moves (not proofs) above the game's own per-move allowance
        uint256 opponentMaxMove; // the liar's (challenger's) dearest descent or bisection move
        uint256 opponentReveal;
        uint256 opponentTotal; // what an honest challenger would pay for the same moves
        uint256 open; // the owner's open (not the defender's)
    }

    bool internal isolated;

    function setUp() public {
        _deploy();
        _registerOracle(oracleNode);
        vm.warp(1_000_000);
    }

    /// forge-config: default.isolate = true
    function test_gas_c64Oracle_succeeds() public {
        _measure("c64_oracle", _task(64, 2, 2), Lie.Output, LATE_NODE);
    }

    /// forge-config: default.isolate = true
    function test_gas_c64NodeInput_succeeds() public {
        _measure("c64_nodeInput", _task(64, 2, 2), Lie.FirstInput, LATE_NODE);
    }

    /// forge-config: default.isolate = true
    function test_gas_c1Oracle_succeeds() public {
        _measure("c1_oracle", _task(1, 2, 2), Lie.Output, LATE_NODE);
    }

    /// forge-config: default.isolate = true
    function test_gas_c1NodeInput_succeeds() public {
        _measure("c1_nodeInput", _task(1, 2, 2), Lie.FirstInput, LATE_NODE);
    }

    /// forge-config: default.isolate = true
    function test_gas_c4096Oracle_succeeds() public {
        _measure("c4096_oracle", _task(4096, 2, 2), Lie.Output, LATE_NODE);
    }

    /// forge-config: default.isolate = true
    function test_gas_c4096NodeInput_succeeds() public {
        _measure("c4096_nodeInput", _task(4096, 2, 2), Lie.FirstInput, LATE_NODE);
    }

    /// @notice The largest proof: a batch of 64 rows of float32[96] (24 KiB, `MAX_BATCH_BYTES`).
    /// forge-config: default.isolate = true
    function test_gas_c64BatchInput24KiB_succeeds() public {
        _measure("c64_batchInput24KiB", _task(64, 64, 96), Lie.FirstInput, 0);
    }

    /// @notice Every descent and bisection move of the honest side costs at most 100,000 gas
    ///         (c = 64: two checkpoint levels and two bisection rounds; c = 1: four checkpoint levels).
    /// forge-config: default.isolate = true
    function test_gas_descentAndBisectionMovesUnder100k_succeeds() public {
        Figures memory a = _measure("c64_oracle", _task(64, 2, 2), Lie.Output, LATE_NODE);
        Figures memory b = _measure("c1_nodeInput", _task(1, 2, 2), Lie.FirstInput, LATE_NODE);
        assertLe(a.maxMove, MOVE_LIMIT, "c = 64: every descent or bisection move <= 100k gas");
        assertLe(b.maxMove, MOVE_LIMIT, "c = 1: every descent or bisection move <= 100k gas");
    }

    function _task(uint64 c, uint64 batchSize, uint64 rowElems) internal pure returns (Task memory) {
        return Players.taskWithRows(T, c, N, M, batchSize, 16, CLOCK, 42, rowElems);
    }

    /// @notice Plays the game to the end, reports every move's gas and checks the honest
    ///         defender's total and rounds (the 100k cap per move is checked apart).
    function _measure(string memory name, Task memory t, Lie lie, uint64 node)
        internal
        returns (Figures memory f)
    {
        isolated = _probeIsolation();
        assertTrue(isolated, "the gas tests run isolated");
        Match memory m = _newMatch(t, lie, LATE_STEP, node, true);
        f.open = vm.lastCallGas().gasTotalUsed; // open is _newMatch's last call
        console.log("case", name);
        console.log("  side  move  stage  gas  calldata-bytes  21000+floor");
        for (;;) {
            IDisputeGame.GameView memory v = _view(m);
            if (v.stage == IDisputeGame.Stage.Resolved) break;
            if (v.stage == IDisputeGame.Stage.Oracle) {
                _answerHonestly(m, v);
                bytes memory cd = abi.encodeCall(IDisputeGame.resolveOracle, (m.id));
                (bool ok, uint256 g,) = _send(defender, cd);
                assertTrue(ok, "resolveOracle");
                f.resolve = _txGas(g, cd);
                f.total += f.resolve;
                _log("honest", 0, v.stage, f.resolve, cd);
                continue;
            }
            assertFalse(_step(m), "a move was played");
            _account(f, m);
        }
        assertEq(
            uint256(game.outcome(m.id)),
            uint256(IDisputeGame.Outcome.DefenderWins),
            "the honest defender wins"
        );
        _check(name, f, t.cfg, m);
    }

    /// @notice Books the move just played.
    function _account(Figures memory f, Match memory m) internal view {
        uint256 g = _txGas(m.lastGas, m.lastCalldata);
        IDisputeGame.Stage st = m.lastStage;
        bool proof = st == IDisputeGame.Stage.InputProof || st == IDisputeGame.Stage.PostStateProof;
        bool level = !proof && st != IDisputeGame.Stage.NodeReveal && st != IDisputeGame.Stage.PostStateCount;
        if (m.lastSide != m.honestSide) {
            ++f.opponentMoves;
            f.opponentTotal += g;
            _log("liar", f.opponentMoves, st, g, m.lastCalldata);
            if (level && g > f.opponentMaxMove) f.opponentMaxMove = g;
            if (st == IDisputeGame.Stage.NodeReveal) f.opponentReveal = g;
            return;
        }
        ++f.moves;
        f.total += g;
        _log("honest", f.moves, st, g, m.lastCalldata);
        if (st == IDisputeGame.Stage.NodeReveal) f.reveal = g;
        if (proof) f.proof = g;
        if (level && g > f.maxMove) f.maxMove = g;
        if (level && g > MOVE_LIMIT) ++f.overMoveLimit;
        if (!proof && g > game.MOVE_GAS_BASE() + game.MOVE_GAS_PER_WIDTH() * m.players[0].task.cfg.arity) {
            ++f.overMoveGas;
        }
    }

    function _check(string memory name, Figures memory f, IDisputeGame.Config memory cfg, Match memory m)
        internal
    {
        uint256 bound = _ceilLog16(cfg.steps) + _ceilLog16(cfg.nodeCount) + 3;
        // With c = 1 the checkpoint list has T + 1 = 4097 leaves: depth 13, one level more than
        // log16(4096), and the bisection still takes its one round (it opens the checkpoints).
        uint256 allowed = cfg.checkpointInterval == 1 ? bound + 1 : bound;
        uint256 honestBound = game.honestGasBound(cfg);
        uint256 moveGas = game.MOVE_GAS_BASE() + game.MOVE_GAS_PER_WIDTH() * cfg.arity;
        console.log("  honest moves", f.moves, "liar moves", f.opponentMoves);
        console.log("  ceil(log16 T) + ceil(log16 M) + 3 =", bound, "roundBound", game.roundBound(cfg));
        console.log("  honest max descent/bisection move", f.maxMove, "over 100k:", f.overMoveLimit);
        console.log("  honest reveal", f.reveal, "proof", f.proof);
        console.log("  resolveOracle", f.resolve);
        console.log("  honest moves over MOVE_GAS", f.overMoveGas, "MOVE_GAS", moveGas);
        console.log("  liar max descent/bisection move", f.opponentMaxMove, "reveal", f.opponentReveal);
        console.log("  liar total", f.opponentTotal, "open", f.open);
        console.log("  honest total", f.total, "honestGasBound", honestBound);

        console.log("  honest total with the open", f.total + f.open);
        assertLe(f.total + f.open, TOTAL_LIMIT, "honest total, opening the game included, <= 3M gas");
        assertLe(f.total, honestBound, "honest total <= honestGasBound");
        // The liar plays the moves an honest challenger would (same sizes, same storage writes).
        assertLe(f.opponentTotal, honestBound, "a challenger's total <= honestGasBound");
        assertLe(f.open, game.OPEN_GAS(), "open <= OPEN_GAS");
        if (f.proof != 0) assertLe(f.proof, game.PROOF_GAS(), "proof <= PROOF_GAS");
        assertLe(m.moves[0], allowed, "honest rounds");
        assertLe(m.moves[1], allowed, "liar rounds");
        assertLe(m.moves[0], game.roundBound(cfg), "honest moves <= roundBound");
        assertLe(m.moves[1], game.roundBound(cfg), "liar moves <= roundBound");

        vm.snapshotValue("DisputeGameGas", string.concat(name, "_maxMove"), f.maxMove);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_reveal"), f.reveal);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_proof"), f.proof);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_resolveOracle"), f.resolve);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_honestTotal"), f.total);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_honestTotalWithOpen"), f.total + f.open);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_honestMoves"), f.moves);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_challengerMaxMove"), f.opponentMaxMove);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_challengerTotal"), f.opponentTotal);
        vm.snapshotValue("DisputeGameGas", string.concat(name, "_open"), f.open);
    }

    function _log(string memory who, uint256 move, IDisputeGame.Stage st, uint256 g, bytes memory cd)
        internal
        pure
    {
        (, uint256 floor) = _calldataGas(cd);
        console.log(
            string.concat(
                "  ",
                who,
                "  ",
                vm.toString(move),
                "  ",
                _stageName(st),
                "  ",
                vm.toString(g),
                "  ",
                vm.toString(cd.length),
                "  ",
                vm.toString(TX_BASE + floor)
            )
        );
    }

    /// @notice The transaction's gas: `lastCallGas` itself when isolated; otherwise (execution gas
    ///         only) `21000 + max(calldata + execution, floor)`.
    function _txGas(uint256 measured, bytes memory cd) internal view returns (uint256) {
        (uint256 standard, uint256 floor) = _calldataGas(cd);
        if (isolated) {
            assertGe(measured, TX_BASE + standard, "isolated: the intrinsic gas is included");
            assertGe(measured, TX_BASE + floor, "isolated: the EIP-7623 floor is applied");
            return measured;
        }
        uint256 exec = TX_BASE + standard + measured;
        return exec > TX_BASE + floor ? exec : TX_BASE + floor;
    }

    /// @notice Calldata gas: 4 per zero byte, 16 per other byte; and the EIP-7623 floor, 10 per
    ///         token (a zero byte is one token, another byte four).
    function _calldataGas(bytes memory cd) internal pure returns (uint256 standard, uint256 floor) {
        uint256 zeros;
        for (uint256 i; i < cd.length; ++i) {
            if (cd[i] == 0) ++zeros;
        }
        uint256 others = cd.length - zeros;
        standard = 4 * zeros + 16 * others;
        floor = 10 * (zeros + 4 * others);
    }

    /// @notice Whether calls run as their own transactions (then `lastCallGas` includes 21000).
    function _probeIsolation() internal returns (bool) {
        // A CALL, not a STATICCALL: only calls run as transactions of their own.
        (bool ok,) = address(game).call(abi.encodeCall(IDisputeGame.gameCount, ()));
        assertTrue(ok, "probe");
        return vm.lastCallGas().gasTotalUsed >= TX_BASE;
    }

    function _ceilLog16(uint256 x) internal pure returns (uint256 r) {
        while ((uint256(1) << (4 * r)) < x) ++r;
    }

    function _stageName(IDisputeGame.Stage st) internal pure returns (string memory) {
        if (st == IDisputeGame.Stage.CheckpointDescent) return "checkpoint-descent";
        if (st == IDisputeGame.Stage.StepBisection) return "bisection";
        if (st == IDisputeGame.Stage.TraceDescent) return "trace-descent";
        if (st == IDisputeGame.Stage.PostStateCount) return "post-state-count";
        if (st == IDisputeGame.Stage.PostStateDescent) return "post-state-descent";
        if (st == IDisputeGame.Stage.NodeReveal) return "reveal";
        if (st == IDisputeGame.Stage.InputProof) return "input-proof";
        if (st == IDisputeGame.Stage.PostStateProof) return "post-state-proof";
        return "resolve-oracle";
    }
}
