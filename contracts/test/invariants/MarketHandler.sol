// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {IDisputeGame} from "../../src/interfaces/IDisputeGame.sol";
import {IRecomputeOracle} from "../../src/interfaces/IRecomputeOracle.sol";
import {ITaskMarket} from "../../src/interfaces/ITaskMarket.sol";
import {CheckpointLists} from "../utils/CheckpointLists.sol";
import {Reference} from "../utils/Reference.sol";
import {ProtocolModel} from "./ProtocolModel.sol";

/// @title MarketHandler
/// @notice Drives the task market, its dispute games and the recompute oracle through random but
///         meaningful sequences: tasks of random shapes, honest trainers and cheaters joining and
///         submitting real checkpoint lists (ProtocolModel), disputes between any two live groups,
///         games played move by move down to the proofs and the oracle, timeouts, settlements,
///         finalizations and withdrawals, with the clock advanced by `warp`.
/// @dev Actors and what they assume (PROPERTIES.md):
///      - Honest trainers submit the true list with their join, and answer every turn of their games
///        at once: `warp` first lets them move (they are always online), so their clocks never run
///        out.
///      - Cheaters submit a list with some lying checkpoints (or never submit), lie at random points
///        of the bisection, pick a phase-2 strategy per game (ProtocolModel), stop when they cannot
///        prove, and may stop at any move for good.
///      - The copier submits the true root without computing it, possibly before every honest
///        trainer, and never moves: it loses its own games, which must cost the honest trainers of
///        its group nothing.
///      - Oracles answer truthfully or stay silent; committees vote truthfully or stay silent. Silent
///        oracles' questions are reassigned by `oracleStep` at random times, or by a keeper as soon
///        as a window ends (on some `warp`s): the bound on a game's length must hold either way.
///      Every move the handler scripts must be accepted: a revert is counted in `honestMoveFailures`
///      or `scriptedMoveFailures`, which the test asserts to be zero.
contract MarketHandler is Test {
    using CheckpointLists for CheckpointLists.List;

    uint256 internal constant MAX_TASKS = 32;
    /// @dev Actions pick among the newest tasks and games, where the action is.
    uint256 internal constant RECENT_TASKS = 4;
    uint256 internal constant RECENT_GAMES = 12;
    uint256 internal constant MAX_WARP = 12 hours;
    uint256 internal constant NEVER = type(uint256).max;

    /// @notice What the handler remembers of a game.
    struct GameGhost {
        uint256 taskId;
        uint256 openedAt;
        uint256 timeBound;
        uint256 roundBound;
        uint256[2] moves; // successful moves per side, proofs included
        uint256[2] stopAfter; // a cheater makes no move after this many (NEVER: it plays on)
        uint8[2] strategy; // phase-2 trace strategy of a lying side
        bool[2] postLie; // the side's post-state of the isolated step is its lie
        uint256 lieSeed; // which bisection points a cheater lies about
        uint256 rounds; // bisection rounds completed
        bytes32[] pending; // the defender's last nodes or roots, passed back by the challenger
        bytes pendingRecord; // the defender's NODE record, passed back by the challenger
    }

    /// @notice An oracle question one of the games asked.
    struct QuestionGhost {
        bytes32 programHash;
        uint256 node;
        bytes32 input;
    }

    ITaskMarket public immutable market;
    IDisputeGame public immutable game;
    IRecomputeOracle public immutable oracle;

    address[] internal _trainers; // honest ones first
    address[] internal _clients;
    address[] internal _oracles;
    address internal immutable _anyone;
    address internal immutable _copier; // submits the true root it copied, never moves
    uint256 internal immutable _honestCount;
    mapping(address => bool) public isHonest;
    mapping(address => bytes32) internal _saltOf;

    uint256[] internal _taskIds;
    mapping(uint256 taskId => ProtocolModel.Run) internal _runs;
    mapping(uint256 taskId => mapping(address trainer => ProtocolModel.Claims)) internal _claims;
    mapping(uint256 taskId => mapping(address trainer => bool)) internal _joined;
    mapping(uint256 taskId => mapping(address trainer => bool)) internal _submitted;
    mapping(uint256 taskId => mapping(bytes32 pair => bool)) internal _played;
    mapping(uint256 taskId => bool) public hasHonestSubmitter;
    mapping(address trainer => uint256[]) internal _tasksOf;

    uint256[] internal _gameIds;
    mapping(uint256 gameId => GameGhost) internal _games;
    uint256[] internal _questionIds;
    mapping(uint256 questionId => QuestionGhost) internal _questions;

    /// @notice Ether each actor sent to the market, and took out of it.
    mapping(address => uint256) public deposited;
    mapping(address => uint256) public withdrawn;

    uint256 public honestMoveFailures;
    uint256 public scriptedMoveFailures;
    bytes public lastFailure;
    uint256 public clientViolations;
    mapping(bytes32 => uint256) public calls;
    /// @notice Coverage: moves made per stage, games settled per outcome.
    mapping(IDisputeGame.Stage => uint256) public movesIn;
    mapping(IDisputeGame.Outcome => uint256) public settled;

    constructor(ITaskMarket market_, IDisputeGame game_, IRecomputeOracle oracle_) {
        market = market_;
        game = game_;
        oracle = oracle_;
        _anyone = makeAddr("anyone");
        _trainers.push(makeAddr("honest0"));
        _trainers.push(makeAddr("honest1"));
        _honestCount = 2;
        _trainers.push(makeAddr("cheater0"));
        _trainers.push(makeAddr("cheater1"));
        _trainers.push(makeAddr("cheater2"));
        _trainers.push(makeAddr("copier"));
        for (uint256 i; i < _trainers.length; ++i) {
            isHonest[_trainers[i]] = i < 2;
            _saltOf[_trainers[i]] = keccak256(abi.encode("trainer", i));
        }
        _copier = _trainers[5];
        _clients.push(makeAddr("client0"));
        _clients.push(makeAddr("client1"));
        for (uint256 i; i < 4; ++i) {
            address o = makeAddr(string.concat("oracle", vm.toString(i)));
            _oracles.push(o);
            _register(o);
        }
    }

    // ---- tasks -----------------------------------------------------------------------------------

    /// @notice A client posts a task of a random shape.
    function postTask(uint256 clientSeed, uint256 shapeSeed, uint256 reward, uint256 deadlineSeed) external {
        if (_taskIds.length >= MAX_TASKS || _openTasks() >= RECENT_TASKS) return;
        ++calls["postTask"];
        ProtocolModel.Run memory run = _shape(shapeSeed, _taskIds.length);
        ITaskMarket.TaskSpec memory spec = _spec(run, shapeSeed, deadlineSeed);
        spec.bond = market.minBond(spec) + ((shapeSeed >> 40) % 2) * 1e15;
        reward = _bound(reward, 1, 5 ether);
        address client = _clients[clientSeed % _clients.length];
        vm.deal(client, client.balance + reward);
        vm.prank(client);
        uint256 taskId = market.postTask{value: reward}(spec);
        deposited[client] += reward;
        _runs[taskId] = run;
        _taskIds.push(taskId);
        // Trainers waiting for work join at once; others may join later.
        uint256 waiting = uint256(keccak256(abi.encode(clientSeed, "waiting")));
        for (uint256 i; i < _trainers.length; ++i) {
            if ((waiting >> i) & 1 == 1) {
                _join(taskId, _trainers[i], waiting >> (8 + i * 32), waiting >> (i + 100));
            }
        }
    }

    /// @notice The trainers of `trainerMask` join a task. An honest one submits the true list at once;
    ///         a cheater picks its lies and submits them at once, later (`submit`) or never.
    function join(uint256 trainerMask, uint256 taskSeed, uint256 extra, uint256 maskSeed) external {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        trainerMask = uint256(keccak256(abi.encode(trainerMask)));
        for (uint256 i; i < _trainers.length; ++i) {
            if ((trainerMask >> i) & 1 == 0) continue;
            _join(taskId, _trainers[i], extra >> (i * 32), uint256(keccak256(abi.encode(maskSeed, i))));
        }
    }

    function _join(uint256 taskId, address trainer, uint256 extra, uint256 maskSeed) internal {
        ITaskMarket.TaskSpec memory spec = market.specOf(taskId);
        ITaskMarket.TaskView memory t = market.task(taskId);
        if (t.status != ITaskMarket.TaskStatus.Open || block.timestamp > spec.joinDeadline) return;
        if (t.joined >= spec.slots || _joined[taskId][trainer]) return;
        ++calls["join"];
        uint256 value = spec.bond + (extra % 3 == 0 ? (extra >> 8) % 1e15 : 0);
        vm.deal(trainer, trainer.balance + value);
        vm.prank(trainer);
        market.join{value: value}(taskId);
        deposited[trainer] += value;
        _joined[taskId][trainer] = true;
        _tasksOf[trainer].push(taskId);
        if (isHonest[trainer]) {
            _submit(taskId, trainer);
            hasHonestSubmitter[taskId] = true;
            return;
        }
        if (trainer == _copier) {
            // It copies the true root (from the mempool, say): it may even be the group's first member.
            if ((maskSeed >> 120) % 4 != 0) _submit(taskId, trainer);
            return;
        }
        ProtocolModel.Run memory run = _runs[taskId];
        uint256 k = run.steps / run.interval;
        _claims[taskId][trainer] = ProtocolModel.Claims({
            salt: _saltOf[trainer],
            ckptMask: ((maskSeed % ((uint256(1) << k) - 1)) + 1) << 1,
            // Half the liars get node 0 wrong: two of them then disagree with the truth on the same
            // node, which the oracle answers with BothLose.
            bugMask: (((maskSeed >> 128) % ((uint256(1) << run.nodes) - 1)) + 1) | ((maskSeed >> 127) & 1)
        });
        if ((maskSeed >> 120) % 4 != 0) _submit(taskId, trainer);
    }

    /// @notice A cheater that joined submits its lying list.
    function submit(uint256 trainerSeed, uint256 taskSeed) external {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        address trainer = _trainers[_honestCount + trainerSeed % (_trainers.length - _honestCount)];
        if (!_joined[taskId][trainer] || _submitted[taskId][trainer]) return;
        if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) return;
        if (block.timestamp > market.specOf(taskId).submitDeadline) return;
        ++calls["submit"];
        _submit(taskId, trainer);
    }

    /// @notice Anyone opens a game between two trainers of different groups, neither eliminated, that
    ///         have not played each other; or (one time in four) every such game of the task at once.
    function openDispute(uint256 taskSeed, uint256 a, uint256 b, uint256 playSeed) external {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) return;
        if (block.timestamp > market.specOf(taskId).disputeDeadline) return;
        uint256 n = _trainers.length;
        if (playSeed % 4 != 0) {
            _open(taskId, _trainers[a % n], _trainers[b % n], playSeed);
            return;
        }
        for (uint256 i; i < n; ++i) {
            for (uint256 j; j < n; ++j) {
                _open(taskId, _trainers[i], _trainers[j], uint256(keccak256(abi.encode(playSeed, i, j))));
            }
        }
    }

    function _open(uint256 taskId, address defender, address challenger, uint256 playSeed) internal {
        ITaskMarket.TrainerView memory d = market.trainerOf(taskId, defender);
        ITaskMarket.TrainerView memory c = market.trainerOf(taskId, challenger);
        if (!d.submitted || !c.submitted || d.eliminated || c.eliminated || d.group == c.group) return;
        bytes32 pair = defender < challenger
            ? keccak256(abi.encode(defender, challenger))
            : keccak256(abi.encode(challenger, defender));
        if (_played[taskId][pair]) return;
        ++calls["openDispute"];
        vm.prank(_anyone);
        uint256 gameId = market.openDispute(taskId, defender, challenger);
        _played[taskId][pair] = true;
        _gameIds.push(gameId);
        GameGhost storage gg = _games[gameId];
        gg.taskId = taskId;
        gg.openedAt = block.timestamp;
        IDisputeGame.Config memory cfg = game.configOf(gameId);
        gg.timeBound = game.timeBound(cfg);
        gg.roundBound = game.roundBound(cfg);
        gg.lieSeed = uint256(keccak256(abi.encode(playSeed, gameId)));
        for (uint256 s; s < 2; ++s) {
            uint256 seed = playSeed >> (s * 64);
            gg.stopAfter[s] = seed % 3 != 0 ? NEVER : (seed >> 8) % 24; // for a cheater
            uint8 strategy = uint8((seed >> 16) % 4); // the oracle's path twice as often
            gg.strategy[s] = strategy == ProtocolModel.STRATEGIES ? ProtocolModel.WRONG_OUTPUT : strategy;
        }
    }

    /// @notice Plays up to `count` moves of a game (one time in four: of every game), each side by
    ///         its script.
    function play(uint256 gameSeed, uint256 count) external {
        if (_gameIds.length == 0) return;
        ++calls["play"];
        count = _bound(count, 1, 24);
        if (gameSeed % 4 != 0) {
            _play(_recentGame(gameSeed >> 2), count);
            return;
        }
        for (uint256 i; i < _gameIds.length; ++i) {
            _play(_gameIds[i], count);
        }
    }

    function _play(uint256 gameId, uint256 count) internal {
        for (uint256 i; i < count; ++i) {
            if (!_step(gameId)) break;
        }
        // The oracles are online too: a question the game asked may move on at once.
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage == IDisputeGame.Stage.Oracle) {
            _oracleStep(v.questionId, uint256(keccak256(abi.encode(gameId, count, block.timestamp))));
        }
    }

    /// @notice Anyone ends a game (one time in two: every game) whose mover ran out of time.
    function timeout(uint256 gameSeed) external {
        _forGames(gameSeed, this.timeoutGame.selector);
    }

    /// @notice Anyone ends a game (one time in two: every game) whose oracle question is decided or
    ///         abandoned.
    function resolveOracle(uint256 gameSeed) external {
        _forGames(gameSeed, this.resolveOracleGame.selector);
    }

    /// @notice Anyone settles an ended game (one time in two: every ended game).
    function settleDispute(uint256 gameSeed) external {
        _forGames(gameSeed, this.settleDisputeGame.selector);
    }

    /// @dev Not a target of the fuzzer (see the test's selectors): `timeout` on one game.
    function timeoutGame(uint256 gameId) external {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage == IDisputeGame.Stage.Oracle || v.stage == IDisputeGame.Stage.Resolved) return;
        if (block.timestamp <= uint256(v.turnStartedAt) + v.clockLeft[uint8(v.toMove)]) return;
        ++calls["timeout"];
        vm.prank(_anyone);
        game.timeout(gameId);
    }

    /// @dev Not a target of the fuzzer: `resolveOracle` on one game.
    function resolveOracleGame(uint256 gameId) external {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage != IDisputeGame.Stage.Oracle) return;
        (IRecomputeOracle.QuestionStatus status,) = oracle.result(v.questionId);
        if (
            status != IRecomputeOracle.QuestionStatus.Final
                && status != IRecomputeOracle.QuestionStatus.Abandoned
        ) {
            return;
        }
        ++calls["resolveOracle"];
        vm.prank(_anyone);
        game.resolveOracle(gameId);
    }

    /// @dev Not a target of the fuzzer: `settleDispute` on one game.
    function settleDisputeGame(uint256 gameId) external {
        if (market.disputeOf(gameId).settled || game.outcome(gameId) == IDisputeGame.Outcome.Pending) return;
        ++calls["settleDispute"];
        ++settled[game.outcome(gameId)];
        vm.prank(_anyone);
        market.settleDispute(gameId);
    }

    /// @dev Calls `selector` (one of the `*Game` functions) on one game, or on every game.
    function _forGames(uint256 gameSeed, bytes4 selector) internal {
        if (_gameIds.length == 0) return;
        if (gameSeed % 2 == 0) {
            _self(selector, _recentGame(gameSeed >> 1));
            return;
        }
        for (uint256 i; i < _gameIds.length; ++i) {
            _self(selector, _gameIds[i]);
        }
    }

    function _self(bytes4 selector, uint256 gameId) internal {
        (bool ok, bytes memory err) = address(this).call(abi.encodeWithSelector(selector, gameId));
        if (!ok) {
            assembly ("memory-safe") {
                // Bubble the revert up unchanged: a refused call is the contract's answer, not ours.
                revert(add(err, 0x20), mload(err))
            }
        }
    }

    /// @notice Anyone finalizes a task (when the market allows it); checks the client's outcome.
    function finalize(uint256 taskSeed) external {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        ITaskMarket.TaskView memory t = market.task(taskId);
        if (t.status != ITaskMarket.TaskStatus.Open || t.activeGames != 0) return;
        uint256 before = market.creditOf(t.client);
        vm.prank(_anyone);
        try market.finalize(taskId) {
            ++calls["finalize"];
            _checkClient(taskId, t, before);
        } catch {}
    }

    /// @notice An actor takes its credit out of the market.
    function withdraw(uint256 actorSeed) external {
        uint256 i = actorSeed % (_trainers.length + _clients.length);
        address actor = i < _trainers.length ? _trainers[i] : _clients[i - _trainers.length];
        uint256 credit = market.creditOf(actor);
        if (credit == 0) return;
        ++calls["withdraw"];
        uint256 balance = actor.balance;
        vm.prank(actor);
        market.withdraw();
        withdrawn[actor] += actor.balance - balance;
    }

    // ---- the oracle ------------------------------------------------------------------------------

    /// @notice Moves one of the games' questions on: an answer (true) or silence, a reassignment, a
    ///         challenge by a cheater, committee votes (true) or silence, a settlement.
    function oracleStep(uint256 questionSeed, uint256 seed) external {
        if (_questionIds.length == 0) return;
        _oracleStep(_questionIds[questionSeed % _questionIds.length], seed);
    }

    function _oracleStep(uint256 qid, uint256 seed) internal {
        IRecomputeOracle.Question memory q = oracle.question(qid);
        if (q.status == IRecomputeOracle.QuestionStatus.Assigned) {
            if (block.timestamp > q.deadline) {
                ++calls["oracle.reassign"];
                vm.prank(_anyone);
                oracle.reassign(qid);
            } else if (seed % 4 != 0) {
                ++calls["oracle.answer"];
                vm.prank(q.oracle);
                oracle.answer(qid, _truth(qid));
            }
        } else if (q.status == IRecomputeOracle.QuestionStatus.Answered) {
            if (block.timestamp > q.deadline) {
                ++calls["oracle.settle"];
                vm.prank(_anyone);
                oracle.settle(qid);
            } else if (seed % 3 == 0) {
                address challenger = _trainers[_honestCount + (seed >> 8) % (_trainers.length - _honestCount)];
                uint256 bond = oracle.challengeBond();
                vm.deal(challenger, challenger.balance + bond);
                vm.prank(challenger);
                try oracle.challenge{value: bond}(qid) {
                    ++calls["oracle.challenge"];
                } catch {}
            }
        } else if (q.status == IRecomputeOracle.QuestionStatus.Final && !q.feePaid && seed % 5 == 0) {
            // Anyone may pay a fee; the market then pays none when it settles the game.
            uint256 fee = oracle.fee();
            vm.deal(_anyone, _anyone.balance + fee);
            vm.prank(_anyone);
            oracle.payFee{value: fee}(qid);
            ++calls["oracle.payFee"];
        } else if (
            q.status == IRecomputeOracle.QuestionStatus.Drawing
                || q.status == IRecomputeOracle.QuestionStatus.CommitteeDrawing
        ) {
            // The draw's randomness comes from a later block.
            if (!oracle.drawReady(qid)) vm.roll(block.number + 1);
            vm.prank(_anyone);
            try oracle.draw(qid) {
                ++calls["oracle.draw"];
            } catch {}
        } else if (q.status == IRecomputeOracle.QuestionStatus.Voting) {
            address[] memory seated = oracle.committeeOf(qid);
            uint256 size = oracle.params().committeeSize;
            bytes32 truth = sha256(abi.encodePacked(_truth(qid)));
            for (uint256 i = seated.length - size; i < seated.length; ++i) {
                if ((seed >> (16 + 2 * i)) % 4 == 0) continue; // silent
                vm.prank(seated[i]);
                try oracle.commitVote(qid, keccak256(abi.encode(qid, seated[i], truth, bytes32(i)))) {
                    ++calls["oracle.commitVote"];
                } catch {}
                vm.prank(seated[i]);
                try oracle.revealVote(qid, truth, bytes32(i)) {
                    ++calls["oracle.revealVote"];
                } catch {}
            }
            vm.prank(_anyone);
            try oracle.settle(qid) {
                ++calls["oracle.settleChallenge"];
            } catch {}
        }
    }

    /// @notice An oracle that left the active set (slashed) bonds again.
    function oracleRegister(uint256 oracleSeed) external {
        address o = _oracles[oracleSeed % _oracles.length];
        if (oracle.isActive(o)) return;
        ++calls["oracle.register"];
        _register(o);
    }

    // ---- time ------------------------------------------------------------------------------------

    /// @notice Advances the clock. Honest players move first (they are always online), and one time in
    ///         two everyone else does too; one time in two a keeper reassigns every silent oracle's
    ///         question at the first second it may.
    function warp(uint256 dt) external {
        ++calls["warp"];
        uint256 target = block.timestamp + _bound(dt, 1, MAX_WARP);
        _catchUp((dt >> 129) % 2 == 0);
        for (uint256 guard; guard < 32 && (dt >> 128) % 2 == 0; ++guard) {
            (uint256 qid, uint256 due) = _nextReassign(target);
            if (qid == 0) break;
            if (due > block.timestamp) vm.warp(due);
            vm.prank(_anyone);
            oracle.reassign(qid);
        }
        vm.warp(target);
    }

    // ---- views for the test ----------------------------------------------------------------------

    function gameIds() external view returns (uint256[] memory) {
        return _gameIds;
    }

    function taskIds() external view returns (uint256[] memory) {
        return _taskIds;
    }

    function trainers() external view returns (address[] memory) {
        return _trainers;
    }

    function clients() external view returns (address[] memory) {
        return _clients;
    }

    function tasksOf(address trainer) external view returns (uint256[] memory) {
        return _tasksOf[trainer];
    }

    function ghostOf(uint256 gameId)
        external
        view
        returns (uint256 openedAt, uint256 timeBound, uint256 roundBound, uint256[2] memory moves)
    {
        GameGhost storage gg = _games[gameId];
        return (gg.openedAt, gg.timeBound, gg.roundBound, gg.moves);
    }

    /// @notice The root of the true checkpoint list of a task.
    function trueCheckpointRoot(uint256 taskId) public view returns (bytes32) {
        ProtocolModel.Claims memory honest;
        return ProtocolModel.checkpointList(_runs[taskId], honest).root;
    }

    // ---- moves -----------------------------------------------------------------------------------

    /// @dev One move of the side to move, if its script makes one now.
    function _step(uint256 gameId) internal returns (bool moved) {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage == IDisputeGame.Stage.Resolved || v.stage == IDisputeGame.Stage.Oracle) return false;
        uint8 side = uint8(v.toMove);
        if (block.timestamp > uint256(v.turnStartedAt) + v.clockLeft[side]) return false;
        GameGhost storage gg = _games[gameId];
        address player = v.players[side];
        if (!isHonest[player] && (player == _copier || gg.moves[side] >= gg.stopAfter[side])) return false;
        IDisputeGame.Stage stage = v.stage;
        if (
            stage == IDisputeGame.Stage.CheckpointDescent || stage == IDisputeGame.Stage.TraceDescent
                || stage == IDisputeGame.Stage.PostStateDescent
        ) {
            moved = _descend(gameId, v, side);
        } else if (stage == IDisputeGame.Stage.StepBisection) {
            moved = _bisect(gameId, v, side);
        } else if (stage == IDisputeGame.Stage.PostStateCount) {
            moved = _openCount(gameId, v);
        } else if (stage == IDisputeGame.Stage.NodeReveal) {
            moved = _reveal(gameId, v, side);
        } else if (stage == IDisputeGame.Stage.InputProof) {
            moved = _proveInput(gameId, v);
        } else {
            moved = _provePost(gameId, v);
        }
        if (moved) {
            ++gg.moves[side];
            ++movesIn[stage];
        }
    }

    function _descend(uint256 gameId, IDisputeGame.GameView memory v, uint8 side) internal returns (bool ok) {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        bytes32[][] memory levels = _descentTree(gameId, v, side);
        uint256 t = ProtocolModel.log2(run.arity);
        if (t > v.height) t = v.height;
        uint256 w = uint256(1) << t;
        bytes32[] memory mine = ProtocolModel.nodesAt(levels, v.height - t, v.position * w, w);
        bytes32[] memory theirs = side == 0 ? new bytes32[](0) : gg.pending;
        ok = _call(v.players[side], abi.encodeCall(IDisputeGame.descend, (gameId, mine, theirs)));
        if (ok && side == 0) gg.pending = mine;
    }

    /// @dev The tree the side descends in the current stage.
    function _descentTree(uint256 gameId, IDisputeGame.GameView memory v, uint8 side)
        internal
        view
        returns (bytes32[][] memory)
    {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[side]];
        if (v.stage == IDisputeGame.Stage.CheckpointDescent) {
            return ProtocolModel.checkpointList(run, c).levels;
        }
        if (v.stage == IDisputeGame.Stage.TraceDescent) {
            bytes[] memory records = ProtocolModel.trace(run, c, v.lo, gg.postLie[side], gg.strategy[side]);
            return Reference.levels(ProtocolModel.leavesOf(records));
        }
        return Reference.levels(
            ProtocolModel.stateLeaves(ProtocolModel.entries(run, c, v.lo + 1, gg.postLie[side]))
        );
    }

    function _bisect(uint256 gameId, IDisputeGame.GameView memory v, uint8 side) internal returns (bool ok) {
        GameGhost storage gg = _games[gameId];
        (bytes32[] memory mine, bytes32[] memory loProof) = _bisectRoots(gameId, v, side);
        bytes32[] memory theirs = side == 0 ? new bytes32[](0) : gg.pending;
        ok = _call(v.players[side], abi.encodeCall(IDisputeGame.bisect, (gameId, mine, theirs, loProof)));
        if (!ok) return false;
        if (side == 0) {
            gg.pending = mine;
            return true;
        }
        ++gg.rounds;
        if (game.gameOf(gameId).stage != IDisputeGame.Stage.TraceDescent) return true;
        // The step is isolated: each side's post-state is its root at the first differing point.
        uint256 w = mine.length - 1;
        uint256 i = 1;
        while (i < w && mine[i] == theirs[i]) ++i;
        bytes32 truth = ProtocolModel.trueRoot(_runs[gg.taskId], v.lo + (i * (v.hi - v.lo)) / w);
        gg.postLie[0] = theirs[i] != truth;
        gg.postLie[1] = mine[i] != truth;
    }

    /// @dev The side's roots at the split points (and, for the defender's first round, the opening
    ///      of its root at lo): the claims of its list at lo and hi, its truth or lie between.
    function _bisectRoots(uint256 gameId, IDisputeGame.GameView memory v, uint8 side)
        internal
        view
        returns (bytes32[] memory mine, bytes32[] memory loProof)
    {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[side]];
        uint256 span = v.hi - v.lo;
        uint256 w = run.arity < span ? run.arity : span;
        mine = new bytes32[](w + 1);
        if (gg.rounds == 0) {
            CheckpointLists.List memory list = ProtocolModel.checkpointList(run, c);
            mine[0] = list.stateRoots[v.lo / run.interval];
            mine[w] = list.stateRoots[v.hi / run.interval];
            if (side == 0) loProof = list.opening(v.lo / run.interval);
        } else {
            mine[0] = v.agreedRoot;
            mine[w] = v.current[side];
        }
        uint256 lies =
            isHonest[v.players[side]] ? 0 : uint256(keccak256(abi.encode(gg.lieSeed, gg.rounds, side)));
        _fillBetween(run, c, mine, v.lo, span, lies);
    }

    /// @dev Roots at the inner split points: the truth, or the lie where bit `i` of `lies` is set.
    function _fillBetween(
        ProtocolModel.Run memory run,
        ProtocolModel.Claims memory c,
        bytes32[] memory roots,
        uint256 lo,
        uint256 span,
        uint256 lies
    ) internal pure {
        uint256 w = roots.length - 1;
        for (uint256 i = 1; i < w; ++i) {
            roots[i] = ProtocolModel.claimRoot(run, c, lo + (i * span) / w, (lies >> i) & 1 == 1);
        }
    }

    function _openCount(uint256 gameId, IDisputeGame.GameView memory v) internal returns (bool) {
        ProtocolModel.Run memory run = _runs[_games[gameId].taskId];
        bytes32[] memory pre = ProtocolModel.trueEntries(run, v.lo);
        bytes32 preTop = ProtocolModel.top(Reference.levels(ProtocolModel.stateLeaves(pre)));
        return
            _call(v.players[0], abi.encodeCall(IDisputeGame.openPostStateCount, (gameId, run.nodes, preTop)));
    }

    function _reveal(uint256 gameId, IDisputeGame.GameView memory v, uint8 side) internal returns (bool ok) {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        bytes memory rec = _record(gameId, v, side);
        bytes memory desc = ProtocolModel.descriptor(v.position);
        if (side == 0) {
            bytes32[] memory graphProof =
                ProtocolModel.opening(Reference.levels(ProtocolModel.graphLeaves(run.nodes)), v.position);
            ok = _call(
                v.players[0],
                abi.encodeCall(IDisputeGame.revealNode, (gameId, rec, bytes(""), desc, graphProof))
            );
            if (ok) gg.pendingRecord = rec;
            return ok;
        }
        ok = _call(
            v.players[1],
            abi.encodeCall(IDisputeGame.revealNode, (gameId, rec, gg.pendingRecord, desc, new bytes32[](0)))
        );
        if (!ok) return false;
        IDisputeGame.GameView memory after_ = game.gameOf(gameId);
        if (after_.stage == IDisputeGame.Stage.Oracle && after_.questionId != 0) {
            _questionIds.push(after_.questionId);
            _questions[after_.questionId] = QuestionGhost({
                programHash: run.programHash, node: v.position, input: ProtocolModel.inputOf(rec)
            });
        }
    }

    /// @dev The side's NODE record of the node the trace descent isolated.
    function _record(uint256 gameId, IDisputeGame.GameView memory v, uint8 side)
        internal
        view
        returns (bytes memory)
    {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[side]];
        return ProtocolModel.trace(_runs[gg.taskId], c, v.lo, gg.postLie[side], gg.strategy[side])[v.position];
    }

    /// @dev The defender proves its input from the pre-state, if it holds the true one.
    function _proveInput(uint256 gameId, IDisputeGame.GameView memory v) internal returns (bool) {
        ProtocolModel.Run memory run = _runs[_games[gameId].taskId];
        bytes memory rec = _record(gameId, v, 0);
        bytes32[] memory pre = ProtocolModel.trueEntries(run, v.lo);
        if (ProtocolModel.inputOf(rec) != pre[v.position]) return false; // a lie cannot be proven
        IDisputeGame.EntryProof memory entry = IDisputeGame.EntryProof({
            count: run.nodes,
            index: v.position,
            siblings: ProtocolModel.opening(Reference.levels(ProtocolModel.stateLeaves(pre)), v.position)
        });
        return _call(
            v.players[0],
            abi.encodeCall(
                IDisputeGame.proveStateInput, (gameId, rec, ProtocolModel.descriptor(v.position), entry)
            )
        );
    }

    /// @dev The defender proves its post-state entry from the agreed (true) trace, if it is the truth.
    function _provePost(uint256 gameId, IDisputeGame.GameView memory v) internal returns (bool) {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[0]];
        uint256 e = v.position;
        bytes32 mine = ProtocolModel.entries(run, c, v.lo + 1, gg.postLie[0])[e];
        if (mine != ProtocolModel.trueEntries(run, v.lo + 1)[e]) return false; // a lie cannot be proven
        return
            _call(
                v.players[0], abi.encodeCall(IDisputeGame.provePostState, (gameId, _postProof(run, v.lo, e)))
            );
    }

    function _postProof(ProtocolModel.Run memory run, uint256 step, uint256 e)
        internal
        pure
        returns (IDisputeGame.PostStateProof memory p)
    {
        bytes32[] memory pre = ProtocolModel.trueEntries(run, step);
        ProtocolModel.Claims memory honest;
        bytes[] memory records = ProtocolModel.trace(run, honest, step, false, ProtocolModel.TRUE_TRACE);
        p.nameHash = ProtocolModel.nameHash(e);
        p.commitment = ProtocolModel.outputOf(records[e]);
        p.preSiblings = ProtocolModel.opening(Reference.levels(ProtocolModel.stateLeaves(pre)), e);
        p.preCommitment = pre[e];
        p.programRoots = ProtocolModel.programRoots(run.nodes);
        p.outputCount = run.nodes;
        p.outputIndex = uint64(e);
        p.typeHash = ProtocolModel.TYPE_HASH;
        p.ref = [uint256(4), e, 0];
        p.outputSiblings = ProtocolModel.opening(Reference.levels(ProtocolModel.outputLeaves(run.nodes)), e);
        p.sourceRecord = records[e];
        p.sourceSiblings = ProtocolModel.opening(Reference.levels(ProtocolModel.leavesOf(records)), e);
    }

    /// @dev Calls the game as `player`; a revert is a failure of the script (or of the game).
    function _call(address player, bytes memory data) internal returns (bool ok) {
        bytes memory err;
        vm.prank(player);
        (ok, err) = address(game).call(data);
        if (!ok) {
            if (isHonest[player]) ++honestMoveFailures;
            else ++scriptedMoveFailures;
            lastFailure = abi.encodePacked(bytes4(data.length >= 4 ? bytes4(data) : bytes4(0)), err);
        }
    }

    /// @dev Every honest player to move makes its moves now; with `everyone`, so do the cheaters (as
    ///      far as their scripts go), and the oracles of the games' questions take a step.
    function _catchUp(bool everyone) internal {
        for (uint256 i; i < _gameIds.length; ++i) {
            uint256 gameId = _gameIds[i];
            if (everyone) {
                _play(gameId, 24);
                continue;
            }
            for (uint256 k; k < 8; ++k) {
                IDisputeGame.GameView memory v = game.gameOf(gameId);
                if (v.stage == IDisputeGame.Stage.Resolved || v.stage == IDisputeGame.Stage.Oracle) break;
                if (!isHonest[v.players[uint8(v.toMove)]] || !_step(gameId)) break;
            }
        }
    }

    /// @dev The assigned question whose answer window ends first, and the first second it can be
    ///      reassigned, if that is no later than `target`.
    function _nextReassign(uint256 target) internal view returns (uint256 qid, uint256 due) {
        due = type(uint256).max;
        for (uint256 i; i < _questionIds.length; ++i) {
            IRecomputeOracle.Question memory q = oracle.question(_questionIds[i]);
            if (q.status != IRecomputeOracle.QuestionStatus.Assigned) continue;
            uint256 at = uint256(q.deadline) + 1;
            if (at <= target && at < due) (qid, due) = (_questionIds[i], at);
        }
    }

    // ---- helpers ---------------------------------------------------------------------------------

    /// @dev One of the `RECENT_TASKS` newest tasks (the caller checks there is one).
    function _recentTask(uint256 seed) internal view returns (uint256) {
        uint256 n = _taskIds.length;
        return _taskIds[n - 1 - seed % (n < RECENT_TASKS ? n : RECENT_TASKS)];
    }

    /// @dev One of the `RECENT_GAMES` newest games (the caller checks there is one).
    function _recentGame(uint256 seed) internal view returns (uint256) {
        uint256 n = _gameIds.length;
        return _gameIds[n - 1 - seed % (n < RECENT_GAMES ? n : RECENT_GAMES)];
    }

    function _openTasks() internal view returns (uint256 open) {
        for (uint256 i; i < _taskIds.length; ++i) {
            if (market.task(_taskIds[i]).status == ITaskMarket.TaskStatus.Open) ++open;
        }
    }

    function _submit(uint256 taskId, address trainer) internal {
        CheckpointLists.List memory list =
            ProtocolModel.checkpointList(_runs[taskId], _claims[taskId][trainer]);
        vm.prank(trainer);
        market.submit(taskId, list.stateRoots);
        _submitted[taskId][trainer] = true;
    }

    /// @dev With an honest submitter, the client gets a correct result (the one live group is the
    ///      true list) or its reward back.
    function _checkClient(uint256 taskId, ITaskMarket.TaskView memory t, uint256 creditBefore) internal {
        if (!hasHonestSubmitter[taskId]) return;
        if (t.liveGroups == 1) {
            for (uint32 g; g < t.groupCount; ++g) {
                ITaskMarket.GroupView memory group = market.groupOf(taskId, g);
                if (group.live != 0 && group.checkpointRoot != trueCheckpointRoot(taskId)) {
                    ++clientViolations;
                }
            }
        } else if (market.creditOf(t.client) < creditBefore + t.reward) {
            ++clientViolations;
        }
    }

    function _truth(uint256 qid) internal view returns (bytes32[] memory outputs) {
        QuestionGhost storage q = _questions[qid];
        outputs = new bytes32[](1);
        outputs[0] = ProtocolModel.next(q.programHash, q.node, q.input);
    }

    function _register(address o) internal {
        uint256 bond = oracle.minBond();
        vm.deal(o, o.balance + bond);
        vm.prank(o);
        oracle.register{value: bond}();
        vm.roll(block.number + 1); // eligible for the draws requested from the next block
    }

    /// @dev A task shape: `(T, c)` from a table, `M` nodes, arity `N`.
    function _shape(uint256 seed, uint256 index) internal pure returns (ProtocolModel.Run memory run) {
        uint64[2][8] memory shapes = [
            [uint64(4), uint64(1)],
            [uint64(4), uint64(2)],
            [uint64(6), uint64(3)],
            [uint64(8), uint64(2)],
            [uint64(8), uint64(4)],
            [uint64(3), uint64(1)],
            [uint64(6), uint64(6)],
            [uint64(8), uint64(8)]
        ];
        uint64[4] memory nodes = [uint64(1), uint64(2), uint64(3), uint64(5)];
        uint64[3] memory arities = [uint64(2), uint64(4), uint64(8)];
        uint64[2] memory shape = shapes[seed % 8];
        run.steps = shape[0];
        run.interval = shape[1];
        run.nodes = nodes[(seed >> 8) % 4];
        run.arity = arities[(seed >> 16) % 3];
        run.salt = keccak256(abi.encode("task", index, seed));
        run.programHash = ProtocolModel.programHash(run.nodes);
    }

    function _spec(ProtocolModel.Run memory run, uint256 seed, uint256 deadlineSeed)
        internal
        view
        returns (ITaskMarket.TaskSpec memory spec)
    {
        uint64[3] memory clocks = [uint64(30 minutes), uint64(2 hours), uint64(5 hours)];
        spec.programHash = run.programHash;
        spec.graphRoot = Reference.root(ProtocolModel.graphLeaves(run.nodes));
        spec.datasetRoot = keccak256("model dataset");
        spec.initialStateRoot = ProtocolModel.trueRoot(run, 0);
        spec.seed = seed;
        spec.datasetSize = 16;
        spec.steps = run.steps;
        spec.checkpointInterval = run.interval;
        spec.batchSize = 1;
        spec.nodeCount = run.nodes;
        spec.arity = run.arity;
        spec.clock = clocks[(seed >> 24) % 3];
        spec.slots = uint32(1 + (seed >> 32) % 4);
        spec.gasPriceCap = (seed >> 48) % 2 == 0 ? 0 : 1 gwei;
        spec.joinDeadline = uint64(block.timestamp + 1 hours + deadlineSeed % 1 days);
        spec.submitDeadline = spec.joinDeadline + uint64((deadlineSeed >> 64) % 12 hours);
        spec.disputeDeadline = spec.submitDeadline + uint64(1 hours + (deadlineSeed >> 128) % 1 days);
    }
}
